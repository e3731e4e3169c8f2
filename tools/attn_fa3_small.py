"""FlashAttention-3 consumer schedules (issue 10) on the GPU, small shapes with tails, against float32:
the reference kernel with each pass-config mode of bench/bench_attention.py that touches the schedule.

    python tools/attn_fa3_small.py                 # every mode below
    python tools/attn_fa3_small.py ws-overlap      # some of them (names of MODES)
    SMALL=1 python tools/attn_fa3_small.py ws      # the first two shapes only
Under compute-sanitizer (racecheck / synccheck) as tools/sanitize.py runs other kernels."""
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = next(p for p in (os.environ.get("TILEC_SHARED_KERNELS", ""), os.path.join(ROOT, ".gpu", "kernels"),
                           os.path.join(os.path.dirname(ROOT), "shared", "kernels"), "/work/shared/kernels")
               if p and os.path.isfile(os.path.join(p, "flash_attention.py")))
sys.path.insert(0, KERNELS)
from flash_attention import flash_fwd, reference  # noqa: E402  (the reference kernel, unmodified)

MODES = {"ws": {}, "ws-nooverlap": {"tilec.softmax_overlap": False},
         "ws-inorder": {"tilec.longest_first": False},
         "ws-persistent": {"tilec.persistent": True},
         "ws-rings": {"tilec.softmax_overlap": False, "tilec.operand_rings": True},
         "ws-overlap": {"tilec.softmax_overlap": True},
         "ws-pingpong": {"tilec.softmax_overlap": False, "tilec.warpgroup_pingpong": True},
         "ws-overlap-pingpong": {"tilec.softmax_overlap": True, "tilec.warpgroup_pingpong": True}}
# The reference kernel masks no keys past the end when not causal (T.clear(s)): its non-causal
# sequence lengths here are multiples of block_N; the causal ones have tails.
SHAPES = [(384, 128, False, (128, 128, 2, 256)), (320, 128, True, (128, 128, 2, 256)),
          (256, 64, True, (128, 64, 2, 256)), (128, 64, False, (128, 128, 2, 256)),
          (1000, 256, True, (128, 64, 2, 256)), (1024, 64, False, (128, 128, 2, 256)),
          (3000, 128, True, (128, 128, 3, 256)),
          (700, 64, True, (192, 128, 2, 384)), (768, 64, False, (192, 128, 2, 384))]  # three consumer warpgroups


def main(names) -> bool:
    torch.manual_seed(7)
    ok = True
    shapes = SHAPES[:2] if os.environ.get("SMALL") == "1" else SHAPES  # (under compute-sanitizer)
    for name in names:
        for S, D, causal, tiles in shapes:
            flash_fwd.pass_configs = MODES[name]
            heads = int(os.environ.get("HEADS", "2"))
            kernel = flash_fwd(1, heads, S, D, causal, *tiles)
            q, k, v = (torch.randn(1, S, heads, D, device="cuda").half() for _ in range(3))
            rotated = "tilec.softmax_overlap" in kernel.get_ir("tile-opt")
            wanted = MODES[name].get("tilec.softmax_overlap", True)  # on by default
            out = kernel(q, k, v)
            torch.cuda.synchronize()
            ref = reference(q.float(), k.float(), v.float(), causal)
            err = float((out.float() - ref).norm() / ref.norm())
            good = err < 1e-2 and not torch.isnan(out).any() and rotated == wanted
            ok &= good
            print(name, S, D, causal, tiles, f"rotated {rotated}", f"err {err:.1e}", "PASS" if good else "FAIL",
                  flush=True)
    print("ALL PASS" if ok else "SOME FAIL")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main(sys.argv[1:] or list(MODES)) else 1)
