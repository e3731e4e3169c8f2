"""Host time per kernel call (microseconds): tilec's compiled and eager calls, with each loader,
against torch and Triton.

A small element-wise add (4096 float16) is called back to back many times; the GPU work is
tiny, so the wall time per call is the host's launch path. The "compiled" row calls the
JITKernel that `add.compile(N=...)` returns; the "eager" row calls the `@tilec.jit` function
itself with the tensors, which binds `T.const N` from their shapes and looks the kernel up on
every call (issue 8: within 10 % of the compiled call). With `--profile`, the eager call
(`--loader=cuda-bindings` for that loader, pycuda by default) is profiled and the top functions
are printed.

    python bench/launch_overhead.py            # on a GPU
    python bench/launch_overhead.py --cpu      # the same rows on the interpreter (no GPU needed)
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
from elementwise_add import add  # noqa: E402 - examples/elementwise_add.py, an eager kernel

import tilec  # noqa: E402

N, CALLS = 4096, 2000


def per_call_us(fn, calls: int = CALLS, sync=None) -> float:
    """Microseconds per call of `fn`, back to back after a warm-up (`sync` waits for the device)."""
    sync = sync or (lambda: None)
    for _ in range(min(50, calls)):
        fn()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return 1e6 * (time.perf_counter() - start) / calls


def tilec_rows(a, b, *, target="auto", loaders=("pycuda", "cuda-bindings")) -> list[tuple[str, object]]:
    """(row name, call) for the compiled and the eager call of the add, per loader, each checked once."""
    rows = []
    for loader in loaders:
        eager = tilec.jit(add.fn, target=target, execution_backend=loader)
        compiled = eager.compile(N=a.shape[0])
        for how, call in (("compiled", lambda k=compiled: k(a, b)), ("eager", lambda f=eager: f(a, b))):
            assert torch.allclose(call().float(), (a + b).float(), atol=1e-3), f"{how} {loader}: wrong result"
            rows.append((f"tilec {how} ({loader})", call))
    return rows


def main(argv: list[str]) -> int:
    from _common import print_table

    cpu = "--cpu" in argv
    if cpu:
        a, b = torch.randn(N).half(), torch.randn(N).half()
        rows = tilec_rows(a, b, target="interp", loaders=("auto",))
        timed = [[name, per_call_us(call, calls=200)] for name, call in rows]
        print(f"host time per call on the interpreter, {N}-element float16 add, 200 calls")
    else:
        from bench_memory import triton_add

        a, b = torch.randn(N, device="cuda").half(), torch.randn(N, device="cuda").half()
        rows = [("torch a + b", lambda: a + b), ("triton", lambda: triton_add(a, b)), *tilec_rows(a, b)]
        timed = [[name, per_call_us(call, sync=torch.cuda.synchronize)] for name, call in rows]
        print(f"host time per call, {N}-element float16 add, {CALLS} calls back to back")
    print_table(["impl", "us per call"], [[n, f"{us:.1f}"] for n, us in timed])
    if "--profile" in argv:
        loader = next((a.split("=", 1)[1] for a in argv if a.startswith("--loader=")), "pycuda")
        eager = tilec.jit(add.fn, target="interp" if cpu else "auto", execution_backend="auto" if cpu else loader)
        eager(a, b)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(200 if cpu else CALLS):
            eager(a, b)
        profiler.disable()
        if not cpu:
            torch.cuda.synchronize()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(18)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    sys.exit(main(sys.argv[1:]))
