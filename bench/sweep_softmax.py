"""Row softmax 8192x1024 float16: tilec tile shapes and math modes against torch, Triton and copy.

Each tilec variant is checked against torch before it is timed; the table prints GB/s
(bytes = input + output) and the ratio to a device-to-device copy of the same bytes.
"""

import os
import sys

import torch

import tilec

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import bench_ms, device_name, gbps, print_table, rel_err  # noqa: E402
from bench_memory import softmax, triton_softmax  # noqa: E402

M, N = 8192, 1024
VARIANTS = [(1, 32), (2, 64), (4, 128), (8, 256), (16, 512)]


def _registers(kernel) -> str:
    report = kernel._backend.report
    if report is None:
        return "-"
    return str(next(iter(report.kernels.values())).registers)


def main() -> int:
    x = torch.randn(M, N, device="cuda").half()
    ref = torch.softmax(x.float(), -1)
    nbytes = 2 * x.numel() * x.element_size()
    dst = torch.empty_like(x)
    rows = [["copy", "-", "-", bench_ms(lambda: dst.copy_(x))]]
    rows.append(["torch", "-", f"{rel_err(torch.softmax(x, -1), ref):.1e}", bench_ms(lambda: torch.softmax(x, -1))])
    rows.append(["triton", "-", f"{rel_err(triton_softmax(x), ref):.1e}", bench_ms(lambda: triton_softmax(x))])
    for fast in (False, True):
        for block_m, threads in VARIANTS:
            configs = {"tl.enable_fast_math": True} if fast else None
            k = tilec.compile(softmax.fn(M, N, block_M=block_m, threads=threads), out_idx=[1], pass_configs=configs)
            err = rel_err(k(x), ref)
            name = f"tilec {block_m}x{N}/{threads}{' fast' if fast else ''}"
            rows.append([name, _registers(k), f"{err:.1e}", bench_ms(lambda: k(x)) if err < 1e-2 else float("nan")])
    copy_ms = rows[0][3]
    table = [[n, r, e, f"{ms * 1e3:.1f}", f"{gbps(nbytes, ms):.0f}", f"{100 * copy_ms / ms:.0f}"]
             for n, r, e, ms in rows]
    print(f"softmax {M}x{N} float16 on {device_name()} (median, L2 flushed)")
    print_table(["impl", "regs", "rel err", "us", "GB/s", "% copy"], table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
