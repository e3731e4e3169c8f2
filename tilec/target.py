"""Targets are data: the facts passes and the runtime need about a machine."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from tilec import config
from tilec.errors import TilecError, error_at


@dataclass(frozen=True)
class Target:
    """A compilation target: `Target("sm_90a")`, `Target("sm_80")`, `Target("interp")`."""

    name: str
    kind: str  # "interp", "cuda" or "hip"
    arch: str = ""
    warp_size: int = 32
    smem_per_block: int = 0  # bytes of shared memory a block may use
    has_tma: bool = False
    has_wgmma: bool = False

    def build(self, program, pass_configs: dict, *, execution_backend: str = "auto", build_key: str | None = None):
        if self.kind == "interp":
            return InterpBackend(program)
        check_one_kernel(program, self)
        if self.kind == "sim":
            return SimBackend(program, self, pass_configs)
        from tilec.targets.cuda_backend import CudaBackend  # the NVVM path, imported only when used

        return CudaBackend(program, self, pass_configs, execution_backend=execution_backend, build_key=build_key)


_CUDA = {
    "sm_80": dict(smem_per_block=163 * 1024),
    "sm_86": dict(smem_per_block=99 * 1024),
    "sm_89": dict(smem_per_block=99 * 1024),
    "sm_90": dict(smem_per_block=227 * 1024, has_tma=True),
    "sm_90a": dict(smem_per_block=227 * 1024, has_tma=True, has_wgmma=True),
}


def gpu_visible() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _visible_arch() -> str:
    import torch

    major, minor = torch.cuda.get_device_capability()
    arch = f"sm_{major}{minor}"
    return "sm_90a" if arch == "sm_90" else arch


_ALIASES = {"interp": ("interp", "cpu", "numpy"), "sim": ("sim", "simt")}
TARGET_NAMES = ("auto", "cuda", *_CUDA, "interp", "sim")
"""The names `target=` accepts (besides aliases and `Target` objects), for messages."""


def resolve_target(target="auto", *, loc=None) -> Target:
    """The `Target` for a name: "auto", "cuda", "sm_80", "sm_90", "sm_90a", "interp", "sim" or a Target.

    `loc` (the kernel's definition) locates the error for a name that is not a target.
    """
    if isinstance(target, Target):
        return target
    if target is not None and not isinstance(target, str):
        raise TilecError(f"target must be a name such as 'cuda' or 'interp', got {type(target).__name__} "
                         f"{target!r}", loc=loc, hint=f"use one of {', '.join(map(repr, TARGET_NAMES))}")
    name = str(target or "auto").lower()
    if name == "auto" and config.DEFAULT_TARGET not in (None, "auto"):
        target = name = str(config.DEFAULT_TARGET).lower()
        if name not in _ALIASES["interp"] + _ALIASES["sim"] + TARGET_NAMES:
            raise TilecError(f"unknown target {name!r} in TILEC_DEFAULT_TARGET", loc=loc,
                             hint=f"set it to one of {', '.join(map(repr, TARGET_NAMES))}")
    if name == "auto":
        name = "cuda" if gpu_visible() else "interp"
    if name in _ALIASES["interp"]:
        return Target("interp", "interp")
    if name in _ALIASES["sim"]:  # the CUDA lowering, run by the thread-level simulator
        return Target("sim", "sim", "sm_90a", **_CUDA["sm_90a"])
    if name == "cuda":
        name = _visible_arch() if gpu_visible() else "sm_90a"
    if name in _CUDA:
        return Target(name, "cuda", name, **_CUDA[name])
    if name in ("hip", "rocm", "gfx90a", "gfx942"):
        raise TilecError(f"target {name!r} (ROCm) is not supported yet", loc=loc, hint="use 'cuda' or 'interp'")
    if name.startswith("sm_"):
        raise TilecError(f"unknown target {target!r}: tilec generates code for sm_80 and later "
                         f"({', '.join(_CUDA)})", loc=loc, hint="use 'cuda' for the visible GPU, or 'interp'")
    close = difflib.get_close_matches(name, TARGET_NAMES, n=1)
    raise TilecError(f"unknown target {target!r}", loc=loc,
                     hint=(f"did you mean {close[0]!r}? " if close else "") +
                     f"targets: {', '.join(map(repr, TARGET_NAMES))}")


def check_target(target, *, loc=None) -> None:
    """Raises the located error `resolve_target` would, without looking for a GPU (at decoration)."""
    if target is None or isinstance(target, Target):
        return
    if isinstance(target, str) and target.lower() in ("auto", "cuda"):
        default = str(config.DEFAULT_TARGET or "auto").lower()
        if target.lower() == "auto" and default not in ("auto", "cuda"):
            resolve_target("auto", loc=loc)  # checks TILEC_DEFAULT_TARGET
        return
    resolve_target(target, loc=loc)


def largest_smem_per_block() -> tuple[int, list[str]]:
    """The most shared memory a block may use on any supported GPU target, and those targets."""
    most = max(facts["smem_per_block"] for facts in _CUDA.values())
    return most, [name for name, facts in _CUDA.items() if facts["smem_per_block"] == most]


def check_gpu_limits(program) -> None:
    """Refuses, for the CPU interpreter too, a kernel that no supported GPU target can run.

    Shared memory is counted as tile-plan-shared-memory places it (buffers whose live ranges
    do not overlap share bytes), before any pipelining multiplies buffers.
    """
    from tilec.dialects import tile
    from tilec.passes.tile_plan_shared_memory import shared_memory_bytes

    most, archs = largest_smem_per_block()
    for kernel in program.module.walk():
        if not isinstance(kernel, tile.KernelOp):
            continue
        need, listing = shared_memory_bytes(kernel)
        if need > most:
            raise error_at(kernel, f"the kernel needs {need} bytes of shared memory, more than any GPU target "
                                   f"can give a block: at most {most} bytes, on {' and '.join(archs)}; "
                                   f"shared buffers: {listing}",
                           hint="use smaller tiles (block_M / block_N / block_K), or keep some buffers in fragments")


def check_one_kernel(program, target: Target) -> None:
    """The CUDA path launches one grid per kernel function (the interpreter runs any number in turn)."""
    if program.module is None:
        return  # from the cache: it was checked when it was built
    from tilec.dialects import tile

    kernels = [op for op in program.func.body.block.ops if isinstance(op, tile.KernelOp)]
    if len(kernels) > 1:
        raise error_at(kernels[1], f"the {target.name} target launches one T.Kernel per kernel function, and this "
                                   f"is number 2 of {len(kernels)} in {program.name} (the interpreter runs them in turn)",
                       hint="write each launch as its own kernel function and call them one after the other")


class InterpBackend:
    """Runs the tile IR with numpy (targets/interp)."""

    def __init__(self, program):
        self.program = program
        check_gpu_limits(program)

    def get_ir(self, stage: str) -> str:
        from tilec.dialects import print_ir

        if stage != "tile":
            raise TilecError(f"the interpreter target has only the 'tile' IR stage, not {stage!r}",
                             loc=self.program.loc, hint="compile for 'sim' or a GPU target to see the later stages")
        return print_ir(self.program.module)

    def kernel_source(self) -> str:
        return self.get_ir("tile")

    def launch_description(self) -> str:
        return "numpy interpreter: one block at a time, tiles as arrays"

    def run(self, arrays: list, sizes: dict) -> None:
        from tilec.targets.interp import run

        run(self.program.module, arrays, func_name=self.program.name)


class SimBackend:
    """The CUDA target's passes and lowering, with the thread-level IR run on the CPU
    (targets/interp/simt.py): the lowering's oracle where no GPU is at hand."""

    def __init__(self, program, target: Target, pass_configs: dict):
        from tilec.pipeline import lower_to_thread

        self.program = program
        self.module, self.spec, self._stages = lower_to_thread(program, target, pass_configs)

    def get_ir(self, stage: str) -> str:
        from tilec.dialects import print_ir

        if stage == "tile":
            return print_ir(self.program.module)
        if stage not in self._stages:
            raise TilecError(f"the sim target has the IR stages tile, {', '.join(self._stages)}; not {stage!r}",
                             loc=self.program.loc)
        return self._stages[stage]()

    def kernel_source(self) -> str:
        return self.get_ir("thread")

    def launch_description(self) -> str:
        s = self.spec
        return f"simulated CUDA launch: block {s.block}, {s.smem_bytes} bytes of shared memory, args {s.args}"

    def run(self, arrays: list, sizes: dict) -> None:
        from tilec.targets.interp.simt import run_kernel

        args = [_sim_arg(self.program, kind, value, arrays, sizes) for kind, value in self.spec.args]
        run_kernel(self.module, args, self.spec.grid.evaluate(sizes), self.spec.block, self.spec.smem_bytes,
                   self.spec.kernel_name)


def _sim_arg(program, kind: str, value, arrays: list, sizes: dict):
    """One simulated kernel argument: a tensor's array, a size, or a tensor map over a tensor."""
    if kind == "tensor":
        return arrays[value]
    if kind == "size":
        return sizes[value]
    from tilec.targets.interp.simt_hopper import TensorMapSim

    array = arrays[value["tensor"]]
    shape = tuple(array.shape)
    strides = tuple(s // array.itemsize for s in array.strides)
    return TensorMapSim(array.reshape(-1), shape, strides, tuple(value["box"]), value["swizzle"])
