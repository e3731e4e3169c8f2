"""GEMM throughput: tilec (SIMT and mma.sync) against torch (cuBLAS) and Triton, same run.

C = A @ B with float16 A, B and a float16 C accumulated in float32. Every implementation is
checked against a float32 torch product first; the table gives TFLOP/s and the ratio to cuBLAS.
Writes $OUT/bench_gemm.json when OUT is set.
"""

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
import tilec  # noqa: E402
from gemm import matmul  # noqa: E402 - examples/gemm.py, the kernel `make run` runs
from _common import bench_ms, device_name, print_table, rel_err, write_log  # noqa: E402

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 1024)]
if os.environ.get("BENCH_GEMM_SHAPES"):  # e.g. "4096x4096x4096" for a short run
    SHAPES = [tuple(int(x) for x in s.split("x")) for s in os.environ["BENCH_GEMM_SHAPES"].split(",")]


def _triton_matmul():
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
            y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16))

    def run(x, y):
        m, k = x.shape
        n = y.shape[1]
        out = torch.empty(m, n, device=x.device, dtype=torch.float16)
        kernel[(m // 128, n // 128)](x, y, out, m, n, k, BM=128, BN=128, BK=32)
        return out

    return run


def main() -> int:
    rows, log = [], []
    triton_mm = _triton_matmul()
    for m, n, k in SHAPES:
        a = torch.randn(m, k, device="cuda").half()
        b = torch.randn(k, n, device="cuda").half()
        ref = a.float() @ b.float()
        flops = 2 * m * n * k
        impls = {"cublas": lambda: a @ b}
        if triton_mm is not None:
            impls["triton"] = lambda: triton_mm(a, b)
        variants = [("tilec simt", {"tilec.enable_mma": False}, {})]
        variants += [(f"tilec mma {s}st", None, {"num_stages": s}) for s in (1, 2, 3, 4)]
        variants += [("tilec mma 3st 128x256x32 256t", None, {"num_stages": 3, "block_N": 256, "threads": 256}),
                     ("tilec mma 4st 128x128x64 256t", None, {"num_stages": 4, "block_K": 64, "threads": 256})]
        wgmma = {"tilec.enable_wgmma": True}
        variants += [(f"tilec wgmma {s}st {bm}x{bn}x{bk} {t}t", wgmma,
                      {"num_stages": s, "block_M": bm, "block_N": bn, "block_K": bk, "threads": t})
                     for s, bm, bn, bk, t in ((3, 128, 128, 32, 128), (3, 128, 128, 64, 128), (3, 128, 256, 64, 256),
                                              (4, 128, 128, 64, 256))]
        for name, configs, tiles in variants:
            try:
                tiles = {"block_M": 128, "block_N": 128, **tiles}
                kernel = tilec.compile(matmul.fn(m, n, k, **tiles), out_idx=[-1], pass_configs=configs)
            except Exception as e:  # noqa: BLE001 - e.g. a tile config over the shared-memory budget
                print(f"{name}: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
                continue
            impls[name] = lambda kernel=kernel: kernel(a, b)
        results = {}
        for name, fn in impls.items():
            err = rel_err(fn(), ref)
            ms = bench_ms(fn) if err < 1e-2 else float("nan")
            results[name] = (ms, err)
        base = results["cublas"][0]
        for name, (ms, err) in results.items():
            tflops = flops / (ms * 1e-3) / 1e12
            rows.append([f"{m}x{n}x{k}", name, f"{ms * 1e3:.0f}", f"{tflops:.0f}", f"{base / ms:.2f}", f"{err:.1e}"])
            log.append({"shape": [m, n, k], "impl": name, "ms": ms, "tflops": tflops, "rel_err": err})
    write_log("bench_gemm", {"device": device_name(), "rows": log})
    print(f"float16 GEMM on {device_name()} (median, L2 flushed)")
    print_table(["shape", "impl", "us", "TFLOP/s", "x cuBLAS", "rel err"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
