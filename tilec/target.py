"""`tilec.Target`: the facts passes and the runtime need about a machine, as plain data, and
the names `target=` accepts.

The module is `target.py`, singular, beside the `targets/` package on purpose: this is the
*value* a compilation is for (what a pass or the driver reads: arch, shared memory per block,
warp size, which instructions exist), while `tilec.targets` holds the *code* per target
(nvptx translation, CUDA loaders, the numpy interpreter). Building for a target is the
driver's job (`tilec.compiler.build`), not the Target's.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from tilec import config
from tilec.errors import TilecError


@dataclass(frozen=True)
class Target:
    """A compilation target: what `resolve_target("sm_90a")`, `("sm_80")`, `("sim")`, `("interp")` return."""

    name: str
    kind: str  # "interp", "sim" (the CUDA lowering, simulated on the CPU) or "cuda"
    arch: str = ""  # "sm_80", "sm_90a", ...; "" for the interpreter
    warp_size: int = 32
    smem_per_block: int = 0  # bytes of shared memory a block may use
    has_cp_async: bool = False  # cp.async, and mma.sync m16n8k16 (sm_80+)
    has_tma: bool = False  # cp.async.bulk.tensor and mbarriers (sm_90+)
    has_wgmma: bool = False  # wgmma.mma_async (sm_90a)
    has_fp8: bool = False  # float8 e4m3 / e5m2 conversions and tensor cores (sm_89+)
    has_clusters: bool = False  # thread-block clusters: TMA multicast, mapa, remote mbarriers (sm_90+)


_CUDA = {
    "sm_80": dict(smem_per_block=163 * 1024, has_cp_async=True),
    "sm_86": dict(smem_per_block=99 * 1024, has_cp_async=True),
    "sm_89": dict(smem_per_block=99 * 1024, has_cp_async=True, has_fp8=True),
    "sm_90": dict(smem_per_block=227 * 1024, has_cp_async=True, has_tma=True, has_fp8=True, has_clusters=True),
    "sm_90a": dict(smem_per_block=227 * 1024, has_cp_async=True, has_tma=True, has_wgmma=True, has_fp8=True,
                   has_clusters=True),
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
