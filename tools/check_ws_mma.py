"""GPU check of TileLang's barrierpipe kernel shape (issue 11): a hand-written T.ws kernel whose
consumer runs an mma.sync gemm of TMA-filled stage views, at the example's test shape, against
torch; prints the max error and whether the PTX fences the consumer's reads before each release.

    python tools/check_ws_mma.py                      # M = N = K = 1024, blocks 128x128x64
    python tools/check_ws_mma.py --shape 4096 4096 4096 --repeat 20
    compute-sanitizer --tool racecheck --racecheck-report all python tools/check_ws_mma.py --repeat 1
    compute-sanitizer --tool synccheck python tools/check_ws_mma.py --repeat 1

Exit status 0 when every repeat matches torch (rtol = atol = 1e-2, the example's own check).
"""

from __future__ import annotations

import argparse
import sys

import torch

import tilec
import tilec.language as T


def barrierpipe(M, N, K, bm=128, bn=128, bk=64, stages=2):
    """The kernel of ../tilelang-examples/warp_specialize/example_warp_specialize_gemm_barrierpipe_stage2.py."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=256) as (bx, by):
            A_s = T.alloc_shared((stages, bm, bk), T.float16)
            B_s = T.alloc_shared((stages, bk, bn), T.float16)
            C_l = T.alloc_fragment((bm, bn), T.float32)
            bars = T.alloc_barrier([128, 128] * stages)
            with T.ws(0):
                T.clear(C_l)
            for ko in range(T.ceildiv(K, bk)):
                with T.ws(1):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages + stages], parity=((ko // stages) % 2) ^ 1)
                    T.tma_copy(A[by * bm:(by + 1) * bm, ko * bk:(ko + 1) * bk], A_s[ko % stages, :, :],
                               barrier=bars[ko % stages])
                    T.tma_copy(B[ko * bk:(ko + 1) * bk, bx * bn:(bx + 1) * bn], B_s[ko % stages, :, :],
                               barrier=bars[ko % stages])
                    T.mbarrier_arrive(mbarrier=bars[ko % stages])
                with T.ws(0):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages], parity=(ko // stages) % 2)
                    T.gemm(A_s[ko % stages, :, :], B_s[ko % stages, :, :], C_l)
                    T.mbarrier_arrive(mbarrier=bars[ko % stages + stages])
            with T.ws(0):
                T.copy(C_l, C[by * bm, bx * bn])

    return main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", type=int, nargs=3, default=[1024, 1024, 1024], metavar=("M", "N", "K"))
    ap.add_argument("--repeat", type=int, default=5, help="fresh random inputs each time")
    ap.add_argument("--target", default="cuda")
    args = ap.parse_args(argv)
    M, N, K = args.shape
    kernel = tilec.compile(barrierpipe(M, N, K), out_idx=[-1], target=args.target)
    ptx = (kernel if args.target != "sim" else
           tilec.compile(barrierpipe(M, N, K), out_idx=[-1], target="sm_90a")).get_kernel_source()
    body = ptx[ptx.index("ldmatrix"):]
    fenced = "fence.proxy.async.shared::cta" in body and \
        body.index("fence.proxy.async.shared::cta") < body.index("mbarrier.arrive.shared")
    print(f"shape {M}x{N}x{K}: mma.sync {'mma.sync' in ptx}, wgmma {'wgmma' in ptx}, "
          f"consumer reads fenced before the release {fenced}")
    device = "cuda" if args.target != "sim" else "cpu"
    worst, bad = 0.0, 0
    for i in range(args.repeat):
        a = torch.randn(M, K, device=device, dtype=torch.float16)
        b = torch.randn(K, N, device=device, dtype=torch.float16)
        c = kernel(a, b)
        ref = (a.float() @ b.float()).half() if device == "cpu" else a @ b
        err = (c.float() - ref.float()).abs().max().item()
        ok = torch.allclose(c.float(), ref.float(), rtol=1e-2, atol=1e-2)
        worst, bad = max(worst, err), bad + (not ok)
        print(f"run {i}: max |C - torch| = {err:.4g} {'ok' if ok else 'MISMATCH'}")
    print(f"max error {worst:.4g}; {bad} of {args.repeat} runs mismatch")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
