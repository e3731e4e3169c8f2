"""TileLang's hand-written FlashMLA decode (examples/warp_specialize/example_warp_specialize_flashmla.py,
unmodified, through tilec.compat) with its asynchronous wgmmas left running as written and with each
completed where it stands (pass config `tilec.async_wgmma=False`): both checked against the example's
torch reference at a small KV length, then timed in alternating rounds at the example's own size
(B=132, H=128, KV=8192, D=512+64), as µs and TFLOP/s:

    python tools/flashmla_once.py [--examples .gpu/tilelang-examples] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", default=os.path.join(ROOT, ".gpu", "tilelang-examples"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=132)
    parser.add_argument("--kv", type=int, default=8192)
    args = parser.parse_args()

    import tilec.compat

    tilec.compat.install()
    import torch

    sys.path.insert(0, os.path.join(args.examples, "warp_specialize"))
    import example_warp_specialize_flashmla as ex

    configs = {"async": {}, "in order": {"tilec.async_wgmma": False}}
    heads, dim, pe = 128, 512, 64

    def build(batch, kv, configs):
        ex.flashattn.pass_configs = configs
        return ex.flashattn(batch, heads, 1, kv, dim, pe, 64, 64, 1)

    def inputs(batch, kv):
        q = torch.randn(batch, heads, dim, dtype=torch.float16, device="cuda")
        q_pe = torch.randn(batch, heads, pe, dtype=torch.float16, device="cuda")
        kvs = torch.randn(batch, kv, 1, dim, dtype=torch.float16, device="cuda")
        k_pe = torch.randn(batch, kv, 1, pe, dtype=torch.float16, device="cuda")
        glse = torch.empty(batch, heads, 1, dtype=torch.float16, device="cuda")
        partial = torch.empty(batch, heads, 1, dim, dtype=torch.float16, device="cuda")
        return q, q_pe, kvs, k_pe, glse, partial

    torch.manual_seed(0)
    small = inputs(2, 512)
    ref = ex.ref_program(*(t.float() for t in small[:4]), small[4], small[5])
    for name, cfg in configs.items():
        out = build(2, 512, cfg)(*small).float()
        rel = ((out - ref).norm() / ref.norm()).item()
        print(f"{name}: relative error {rel:.2e} against the torch reference (B=2, KV=512)")
        torch.testing.assert_close(out, ref, rtol=0.01, atol=0.01)

    big = inputs(args.batch, args.kv)
    kernels = {name: build(args.batch, args.kv, cfg) for name, cfg in configs.items()}
    flops = 2 * args.batch * heads * args.kv * (dim + pe) + 2 * args.batch * heads * args.kv * dim
    times = {name: [] for name in kernels}
    for name, k in kernels.items():  # warm-up
        for _ in range(20):
            k(*big)
    torch.cuda.synchronize()
    for _ in range(args.rounds):
        for name, k in kernels.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            n = 50
            start.record()
            for _ in range(n):
                k(*big)
            end.record()
            torch.cuda.synchronize()
            times[name].append(start.elapsed_time(end) * 1e3 / n)
    print(f"| FlashMLA decode B={args.batch} H={heads} KV={args.kv} | us (median of {args.rounds}) | TFLOP/s |")
    print("| --- | --- | --- |")
    for name, ts in times.items():
        us = sorted(ts)[len(ts) // 2]
        print(f"| {name} | {us:.1f} ({min(ts):.1f}-{max(ts):.1f}) | {flops / us * 1e-6:.0f} |")


if __name__ == "__main__":
    main()
