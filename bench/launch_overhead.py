"""Host time per kernel call (microseconds), tilec's two loaders against torch and Triton.

A small element-wise add (4096 float16) is called back to back many times; the GPU work is
tiny, so the wall time per call is the host's launch path.  With `--profile`, the tilec
pycuda path is profiled and the top functions are printed.
"""

import cProfile
import os
import pstats
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tilec  # noqa: E402
from _common import print_table  # noqa: E402
from bench_memory import add, triton_add  # noqa: E402

N, CALLS = 4096, 2000


def per_call_us(fn) -> float:
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(CALLS):
        fn()
    torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - start) / CALLS


def main() -> int:
    a, b = torch.randn(N, device="cuda").half(), torch.randn(N, device="cuda").half()
    rows = [["torch a + b", per_call_us(lambda: a + b)], ["triton", per_call_us(lambda: triton_add(a, b))]]
    for loader in ("pycuda", "cuda-bindings"):
        fresh = tilec.jit(add.fn, execution_backend=loader).compile(N=N, block_N=1024, threads=256)
        assert torch.allclose(fresh(a, b).float(), (a + b).float(), atol=1e-3)
        rows.append([f"tilec ({loader})", per_call_us(lambda k=fresh: k(a, b))])
    print(f"host time per call, {N}-element float16 add, {CALLS} calls back to back")
    print_table(["impl", "us per call"], [[n, f"{us:.1f}"] for n, us in rows])
    if "--profile" in sys.argv:
        k = tilec.jit(add.fn, execution_backend="pycuda").compile(N=N, block_N=1024, threads=256)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(CALLS):
            k(a, b)
        profiler.disable()
        torch.cuda.synchronize()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(18)
    return 0


if __name__ == "__main__":
    sys.exit(main())
