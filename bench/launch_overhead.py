"""Host time per kernel call (microseconds): tilec's compiled and eager calls, with each loader,
against torch and Triton.

A small element-wise add (4096 float16) is called back to back many times; the GPU work is
tiny, so the wall time per call is the host's launch path. The "compiled" row calls the
JITKernel that `add.compile(N=...)` returns; the "eager" row calls the `@tilec.jit` function
itself with the tensors, which binds `T.const N` from their shapes and looks the kernel up on
every call (issue 8: within 10 % of the compiled call). With `--profile`, the eager call
(`--loader=cuda-bindings` for that loader, pycuda by default) is profiled and the top functions
are printed.

On a GPU it also times the reference gemm_bias_gelu (4096x4096x1024, the bench's gelu shape:
TMA tensor maps, the output allocated per call by `out_idx`): the host time of a call (200 calls
without waiting for the device), the device time per call (CUDA events over the same calls) and
the wall time per call back to back, per loader. A call is host-bound where its host time exceeds
its device time (issue 9: 79 us of host time for a 60 us kernel before the fixed-shape call).

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


def gemm_rows(calls: int = 200) -> None:
    """Host, device and back-to-back wall time per call of the reference gemm_bias_gelu, per loader."""
    from kernels_dir import reference_kernels

    sys.path.insert(0, reference_kernels())
    sys.modules.pop("_common", None)
    from gemm_bias_gelu import gemm_bias_gelu  # shared/kernels/gemm_bias_gelu.py

    sys.path.pop(0)
    sys.modules.pop("_common", None)
    from _common import print_table

    M, N_, K = 4096, 4096, 1024
    a, b = torch.randn(M, K, device="cuda").half(), torch.randn(K, N_, device="cuda").half()
    bias = torch.randn(N_, device="cuda").half()
    rows = [("cuBLAS a @ b", lambda: a @ b)]
    for loader in ("pycuda", "cuda-bindings"):
        k = tilec.jit(gemm_bias_gelu.fn, out_idx=[-1], execution_backend=loader)(M, N_, K, 128, 256, 64, 4, 256)
        ref = torch.nn.functional.gelu(a.float() @ b.float() + bias.float(), approximate="tanh")
        assert (k(a, b, bias).float() - ref).abs().max().item() < 0.05 * ref.abs().max().item(), "wrong result"
        rows.append((f"tilec gemm_bias_gelu ({loader})", lambda k=k: k(a, b, bias)))
    out = []
    for name, call in rows:
        for _ in range(20):
            call()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        for _ in range(calls):
            call()
        host = 1e6 * (time.perf_counter() - t0) / calls
        end.record()
        torch.cuda.synchronize()
        wall = 1e6 * (time.perf_counter() - t0) / calls
        out.append([name, f"{host:.1f}", f"{1e3 * start.elapsed_time(end) / calls:.1f}", f"{wall:.1f}"])
    print(f"gemm_bias_gelu {M}x{N_}x{K} float16, {calls} calls back to back (us per call)")
    print_table(["impl", "host", "device (events)", "wall"], out)


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
    if not cpu:
        gemm_rows()
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
