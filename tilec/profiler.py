"""Timing and checking compiled kernels: `Profiler` (TileLang's) and `do_bench`.

GPU timing follows the device method (shared/device METHOD.md): synchronize, warm up, then
time every repetition with its own pair of CUDA events on the current stream, writing a
256 MB buffer before each one so that no run finds its inputs in the 50 MB L2 left warm by
the previous one. `warmup` and `rep` are budgets in milliseconds, as in Triton and TileLang;
the repetition count comes from a 5-run estimate. On the CPU (the interpreter target, or no
GPU) the same function times with `time.perf_counter`.

    from tilec.profiler import do_bench
    ms = do_bench(lambda: kernel(a, b), return_mode="median")

    prof = kernel.get_profiler()           # inputs drawn from the kernel's static shapes
    prof.assert_allclose(lambda a, b: a + b, atol=1e-2, rtol=1e-2)
    ms = prof.do_bench()                   # the kernel itself;  prof.do_bench(ref) for a reference
"""

from __future__ import annotations

import time

import numpy as np

from tilec.errors import TilecError
from tilec.utils.tensor import TensorSupplyType, get_tensor_supply

__all__ = ["L2_FLUSH_BYTES", "Profiler", "TensorSupplyType", "do_bench"]

L2_FLUSH_BYTES = 256 * 1024 * 1024
RETURN_MODES = ("min", "max", "mean", "median", "all")
BACKENDS = ("event", "cupti", "cudagraph")


def _report_backend(backend: str) -> None:
    import warnings

    from tilec.errors import TilecWarning

    warnings.warn(f"do_bench(backend={backend!r}): tilec times with CUDA events, not {backend}", TilecWarning,
                  stacklevel=3)


def _clearing_grads(fn, tensors: list):
    def run():
        for t in tensors:
            t.grad = None
        return fn()

    return run


def _summarize(times_ms: list[float], return_mode: str, quantiles=None):
    t = np.asarray(times_ms, dtype=np.float64)
    if quantiles is not None:
        out = [float(q) for q in np.quantile(t, quantiles)]
        return out[0] if len(out) == 1 else out
    if return_mode == "all":
        return [float(x) for x in t]
    return float(getattr(np, return_mode)(t))


def _cuda_ready() -> bool:
    from tilec.testing import cuda_on_cpu

    if cuda_on_cpu.active():  # "cuda" is the CPU: time with the CPU clock
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _cpu_bench(fn, warmup: float, rep: float, return_mode: str, quantiles, n_warmup: int, n_repeat: int):
    t0 = time.perf_counter()
    fn()
    first = (time.perf_counter() - t0) * 1e3
    if not (n_warmup or n_repeat) and first >= warmup + rep:
        return _summarize([first], return_mode, quantiles)  # one call already spends both budgets: it is the timing
    start = time.perf_counter()
    for _ in range(3):
        fn()
    estimate = max((time.perf_counter() - start) * 1e3 / 3, 1e-6)
    n_warmup = n_warmup or max(1, int(warmup / estimate))
    n_repeat = n_repeat or max(1, int(rep / estimate))
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(n_repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return _summarize(times, return_mode, quantiles)


def do_bench(fn, warmup: float = 25, rep: float = 100, return_mode: str = "mean", *, quantiles=None,
             flush_l2: bool = True, n_warmup: int = 0, n_repeat: int = 0, device: str | None = None,
             _n_warmup: int = 0, _n_repeat: int = 0, backend: str = "event", grad_to_none=None):
    """Milliseconds per call of `fn` (CUDA events with an L2 flush; perf_counter on the CPU).

    `backend`: "event" (TileLang's default); "cupti" and "cudagraph" time with events too, and
    say so with a warning. `grad_to_none`: tensors whose `.grad` is cleared before each call.
    `return_mode`: "mean" (TileLang's default), "median", "min", "max" or "all" (every
    repetition); `quantiles=[0.5, 0.2, 0.8]` returns those instead. `n_warmup` / `n_repeat`
    fix the counts instead of deriving them from the `warmup` / `rep` budgets in ms.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend != "event":
        _report_backend(backend)
    if grad_to_none is not None:
        fn = _clearing_grads(fn, list(grad_to_none))
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {RETURN_MODES}, got {return_mode!r}")
    n_warmup, n_repeat = n_warmup or _n_warmup, n_repeat or _n_repeat
    if device == "cpu" or not _cuda_ready():
        return _cpu_bench(fn, warmup, rep, return_mode, quantiles, n_warmup, n_repeat)
    import torch

    fn()
    torch.cuda.synchronize()
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if flush_l2 else None
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        if flush is not None:
            flush.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-4)
    n_warmup = n_warmup or max(1, int(warmup / estimate))
    n_repeat = n_repeat or max(1, min(int(rep / estimate), 100_000))
    for _ in range(n_warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for i in range(n_repeat):
        if flush is not None:
            flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return _summarize([s.elapsed_time(e) for s, e in zip(starts, ends)], return_mode, quantiles)


class Profiler:
    """Draws inputs for a `JITKernel` from its parameters; runs, times and checks it."""

    def __init__(self, kernel, tensor_supply_type=None):
        self.kernel = kernel
        self.supply = tensor_supply_type or TensorSupplyType.Auto
        self._inputs = None

    @property
    def device(self) -> str:
        return "cpu" if self.kernel.target.kind == "interp" else "cuda"

    def _input_params(self):
        return [p for p in self.kernel.params if not p.is_output]

    def _make(self, param):
        from tilec.language.structure import is_symbolic

        if param.shape is None or any(is_symbolic(d) for d in param.shape):
            raise TilecError(f"{self.kernel.program.name}: the profiler needs static shapes, but `{param.name}` "
                             f"has shape {param.shape}", loc=self.kernel.program.loc,
                             hint="pass input_tensors=[...] to do_bench / assert_allclose / run_once")
        return get_tensor_supply(self.supply)(param).to(self.device)  # TileLang's distributions

    def inputs(self, refresh: bool = False) -> list:
        """One tensor per input parameter (drawn once and reused unless `refresh`)."""
        if self._inputs is None or refresh:
            self._inputs = [self._make(p) for p in self._input_params()]
        return self._inputs

    def run_once(self, func=None, input_tensors=None):
        ins = input_tensors if input_tensors is not None else self.inputs()
        return (func or self.kernel)(*ins)

    def do_bench(self, func=None, warmup: float = 25, rep: float = 100, return_mode: str = "mean",
                 input_tensors=None, **kwargs):
        ins = input_tensors if input_tensors is not None else self.inputs()
        target = func or self.kernel
        return do_bench(lambda: target(*ins), warmup=warmup, rep=rep, return_mode=return_mode,
                        device="cpu" if self.device == "cpu" else None, **kwargs)

    def assert_allclose(self, ref_prog, atol: float = 1e-2, rtol: float = 1e-2, max_mismatched_ratio: float = 0.01,
                        input_tensors=None) -> None:
        """Raises AssertionError when more than `max_mismatched_ratio` of any output's elements
        differ from `ref_prog(*inputs)` beyond atol + rtol * |ref| (a NaN always differs)."""
        ins = input_tensors if input_tensors is not None else self.inputs(refresh=True)
        outs = self.kernel(*[t.clone() for t in ins])
        refs = ref_prog(*ins)
        outs = list(outs) if isinstance(outs, list | tuple) else [outs]
        refs = list(refs) if isinstance(refs, list | tuple) else [refs]
        if len(outs) != len(refs):
            raise AssertionError(f"the kernel returns {len(outs)} output(s), the reference {len(refs)}")
        for n, (out, ref) in enumerate(zip(outs, refs)):
            _compare(n, out, ref, atol, rtol, max_mismatched_ratio)


def _compare(n: int, out, ref, atol, rtol, max_ratio) -> None:
    import torch

    out = torch.as_tensor(out).detach().to("cpu", torch.float64)
    ref = torch.as_tensor(ref).detach().to("cpu", torch.float64)
    if out.shape != ref.shape:
        raise AssertionError(f"output {n}: shape {tuple(out.shape)} vs reference {tuple(ref.shape)}")
    bad = ~torch.isclose(out, ref, rtol=rtol, atol=atol, equal_nan=False)
    count, total = int(bad.sum()), max(out.numel(), 1)
    if count / total > max_ratio:
        diff = (out - ref).abs().nan_to_num(nan=float("inf"))
        first = [tuple(int(i) for i in idx) for idx in bad.nonzero()[:5]]
        raise AssertionError(
            f"output {n}: {count} of {total} elements ({count / total:.2%}) differ beyond atol={atol}, rtol={rtol} "
            f"(allowed {max_ratio:.2%}); max |diff| {float(diff.max()):.4g}; first at {first}: "
            f"got {[float(out[i]) for i in first]}, expected {[float(ref[i]) for i in first]}")
