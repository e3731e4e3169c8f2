"""FlashAttention-3 consumer schedules (issue 10) on the GPU, small shapes with tails, against float32:
the reference kernel with each pass-config mode of bench/bench_attention.py that touches the schedule.

    python tools/attn_fa3_small.py                 # every mode below
    python tools/attn_fa3_small.py ws-overlap      # some of them (names of MODES)
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

MODES = {"ws": {}, "ws-rings": {"tilec.operand_rings": True}, "ws-overlap": {"tilec.softmax_overlap": True},
         "ws-pingpong": {"tilec.warpgroup_pingpong": True},
         "ws-overlap-pingpong": {"tilec.softmax_overlap": True, "tilec.warpgroup_pingpong": True}}
SHAPES = [(320, 128, False, (128, 128, 2, 256)), (320, 128, True, (128, 128, 2, 256)),
          (256, 64, True, (128, 64, 2, 256)), (100, 64, False, (128, 128, 2, 256)),
          (1000, 256, True, (128, 64, 2, 256)), (1000, 64, False, (128, 128, 2, 256))]


def main(names) -> bool:
    torch.manual_seed(7)
    ok = True
    for name in names:
        for S, D, causal, tiles in SHAPES:
            flash_fwd.pass_configs = MODES[name]
            kernel = flash_fwd(1, 2, S, D, causal, *tiles)
            q, k, v = (torch.randn(1, S, 2, D, device="cuda").half() for _ in range(3))
            out = kernel(q, k, v)
            torch.cuda.synchronize()
            ref = reference(q.float(), k.float(), v.float(), causal)
            err = float((out.float() - ref).norm() / ref.norm())
            good = err < 1e-2 and not torch.isnan(out).any()
            ok &= good
            print(name, S, D, causal, tiles, f"err {err:.1e}", "PASS" if good else "FAIL", flush=True)
    print("ALL PASS" if ok else "SOME FAIL")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main(sys.argv[1:] or list(MODES)) else 1)
