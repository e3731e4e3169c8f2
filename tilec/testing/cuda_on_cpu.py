"""Programs written for a CUDA GPU, run on the CPU: torch's CUDA calls go to the CPU, kernels to the interpreter.

For testing CUDA programs (TileLang's examples, `tools/run_tilelang_examples.py`) on a machine
without a GPU. `install()`:

- puts a `TorchFunctionMode` on torch's stack that turns `device="cuda"` (and `"cuda:0"`,
  `torch.device("cuda")`) into the CPU in every torch call, and makes `.cuda()` / `.to("cuda")`
  keep the tensor on the CPU;
- makes `torch.cuda` answer as one GPU of compute capability `capability` would
  (`is_available`, `get_device_capability`, `get_device_properties`, `synchronize`, events timed
  with `time.perf_counter`, streams that run in order, seeds and RNG states that are the CPU
  generator's), and `torch.Generator(device="cuda")` a CPU generator;
- sets tilec's default target to the interpreter, so `target="auto"` kernels run there;
- with `also_compile="sm_90a"` (or `TILEC_ALSO_COMPILE=sm_90a` in the environment), builds every
  kernel that runs on the interpreter for that GPU target too (lowering, PTX, ptxas; nothing is
  launched), so a run on the CPU also says whether each kernel compiles for the GPU: a kernel
  that does not fails where it is built, with the GPU build's error. With `compile_only=True`
  (`TILEC_COMPILE_ONLY=1`) the kernels are then not run at all (their outputs stay as allocated):
  a diagnostic that gets every kernel of a program built quickly, whose results are wrong.

What it cannot make true: the speed of a GPU, and code that checks `tensor.is_cuda`.
`active()` says whether it is installed (tilec's profiler then times with one call).
"""

from __future__ import annotations

import contextlib
import time
import types

_STATE: dict = {}

DEFAULT_CAPABILITY = (9, 0)
DEFAULT_SMS = 132  # an H100/H200 SXM


def active() -> bool:
    return bool(_STATE)


def capability() -> tuple[int, int] | None:
    """The compute capability the stand-in reports (None when not installed)."""
    return _STATE.get("capability")


def _is_cuda(device) -> bool:
    import torch

    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.split(":")[0].strip() == "cuda"
    return False


def _cpu(device):
    return "cpu" if _is_cuda(device) else device


def _make_mode():
    import torch
    from torch.overrides import TorchFunctionMode

    to_methods = {torch.Tensor.to}
    stay = {torch.Tensor.cuda, torch.Tensor.pin_memory}  # the tensor is where "cuda" is: on the CPU

    class CudaToCpu(TorchFunctionMode):
        """Every torch call that names a CUDA device gets the CPU instead."""

        def __torch_function__(self, func, types_, args=(), kwargs=None):
            kwargs = dict(kwargs) if kwargs else {}
            if func in stay:
                return args[0]
            if "device" in kwargs:
                kwargs["device"] = _cpu(kwargs["device"])
            if func in to_methods or func is torch.Tensor.new_tensor:
                args = tuple(_cpu(a) for a in args)
            return func(*args, **kwargs)

    return CudaToCpu()


class _Event:
    """`torch.cuda.Event`: work runs in order on the CPU, so recording is reading the clock."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end) -> float:
        if self.t is None or end.t is None:
            raise RuntimeError("elapsed_time: both events must be recorded first")
        return (end.t - self.t) * 1e3


class _Stream:
    """`torch.cuda.Stream`: one in-order queue, which the CPU already is."""

    cuda_stream = 0
    device = None

    def __init__(self, device=None, priority: int = 0, **_):
        pass

    def synchronize(self):
        pass

    def wait_stream(self, other):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or _Event()
        event.record()
        return event

    def query(self) -> bool:
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _properties(cap: tuple[int, int], sms: int):
    return types.SimpleNamespace(name="CPU stand-in for a CUDA GPU (tilec.testing.cuda_on_cpu)", major=cap[0],
                                 minor=cap[1], multi_processor_count=sms, total_memory=80 * 1024**3,
                                 warp_size=32, max_threads_per_multi_processor=2048, L2_cache_size=50 * 1024**2,
                                 regs_per_multiprocessor=65536, shared_memory_per_block_optin=227 * 1024)


def _seed(seed) -> None:
    import torch

    torch.random.default_generator.manual_seed(int(seed))


def _generator_class():
    import torch

    real = torch.Generator  # the class itself: `torch.Generator` is this subclass once installed

    class Generator(real):
        """`torch.Generator(device="cuda")` is a CPU generator (tensors made with it are on the CPU)."""

        def __new__(cls, device="cpu"):
            return real.__new__(cls, device=_cpu(device))

        def __init__(self, device="cpu"):
            pass

    return Generator


def _rng_state(device="cuda"):
    import torch

    return torch.random.get_rng_state()


def _set_rng_state(state, device="cuda"):
    import torch

    torch.random.set_rng_state(state)


def _cuda_functions(cap: tuple[int, int], sms: int) -> dict:
    stream = _Stream()
    return {
        "get_rng_state": _rng_state,
        "set_rng_state": _set_rng_state,
        "get_rng_state_all": lambda: [_rng_state()],
        "set_rng_state_all": lambda states: _set_rng_state(states[0]),
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "init": lambda: None,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "get_device_capability": lambda device=None: cap,
        "get_device_name": lambda device=None: _properties(cap, sms).name,
        "get_device_properties": lambda device=None: _properties(cap, sms),
        "get_arch_list": lambda: [f"sm_{cap[0]}{cap[1]}"],
        "synchronize": lambda device=None: None,
        "empty_cache": lambda: None,
        "manual_seed": _seed,
        "manual_seed_all": _seed,
        "seed": lambda: None,
        "seed_all": lambda: None,
        "memory_allocated": lambda device=None: 0,
        "max_memory_allocated": lambda device=None: 0,
        "memory_reserved": lambda device=None: 0,
        "reset_peak_memory_stats": lambda device=None: None,
        "Event": _Event,
        "Stream": _Stream,
        "current_stream": lambda device=None: stream,
        "default_stream": lambda device=None: stream,
        "stream": lambda s=None: contextlib.nullcontext(s),
        "device": lambda device=None: contextlib.nullcontext(device),
    }


ALSO_COMPILE_ENV = "TILEC_ALSO_COMPILE"
COMPILE_ONLY_ENV = "TILEC_COMPILE_ONLY"


class _NotRun:
    """An interpreter backend whose kernel is built for the GPU and never run (compile-only runs)."""

    def __init__(self, backend):
        self._backend = backend

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def run(self, arrays: list, sizes: dict) -> None:
        pass


def _compiling_also(build, arch: str, compile_only: bool):
    """`tilec.compiler.build` that, for the interpreter, first builds the kernel for `arch` (not launched)."""
    from tilec.target import resolve_target

    gpu = resolve_target(arch)

    def build_also(program, target, pass_configs, **kwargs):
        if target.kind != "interp":
            return build(program, target, pass_configs, **kwargs)
        from tilec.compiler.cuda_build import CudaBuild

        CudaBuild(program, gpu, pass_configs)
        backend = build(program, target, pass_configs, **kwargs)
        return _NotRun(backend) if compile_only else backend

    build_also.__wrapped__ = build
    return build_also


def install(capability: tuple[int, int] = DEFAULT_CAPABILITY, sms: int = DEFAULT_SMS, *,
            also_compile: str | None = None, compile_only: bool | None = None) -> None:
    """Maps torch's CUDA calls to the CPU and tilec's default target to the interpreter (idempotent).
    `also_compile`: a GPU target every interpreted kernel is also built for (default: $TILEC_ALSO_COMPILE);
    `compile_only`: then do not run the kernels (default: $TILEC_COMPILE_ONLY)."""
    if _STATE:
        return
    import os

    also_compile = also_compile or os.environ.get(ALSO_COMPILE_ENV) or None
    if compile_only is None:
        compile_only = os.environ.get(COMPILE_ONLY_ENV, "") not in ("", "0")
    if compile_only and not also_compile:
        raise ValueError("cuda_on_cpu: compile_only needs a GPU target to build for (also_compile=, "
                         f"${ALSO_COMPILE_ENV})")
    import torch

    from tilec import compiler, config

    cap = (int(capability[0]), int(capability[1]))
    saved = {name: getattr(torch.cuda, name, None) for name in _cuda_functions(cap, sms)}
    for name, fn in _cuda_functions(cap, sms).items():
        setattr(torch.cuda, name, fn)
    saved_generator = torch.Generator
    torch.Generator = _generator_class()
    mode = _make_mode()
    mode.__enter__()
    _STATE.update(capability=cap, saved=saved, mode=mode, target=config.DEFAULT_TARGET, generator=saved_generator,
                  build=compiler.build)
    config.DEFAULT_TARGET = "interp"
    if also_compile:
        compiler.build = _compiling_also(compiler.build, also_compile, compile_only)


def uninstall() -> None:
    """Undoes `install()`."""
    if not _STATE:
        return
    import torch

    from tilec import compiler, config

    _STATE["mode"].__exit__(None, None, None)
    compiler.build = _STATE["build"]
    for name, fn in _STATE["saved"].items():
        if fn is None:
            delattr(torch.cuda, name)
        else:
            setattr(torch.cuda, name, fn)
    torch.Generator = _STATE["generator"]
    config.DEFAULT_TARGET = _STATE["target"]
    _STATE.clear()
