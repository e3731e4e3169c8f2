"""Compute-capability helpers TileLang keeps in `contrib.nvcc` (tilec compiles with LLVM, not nvcc).

    nvcc.get_target_compute_version()     # "9.0" on an H100/H200
    nvcc.parse_compute_version("9.0")     # (9, 0)
"""

from __future__ import annotations

__all__ = ["get_target_arch", "get_target_compute_version", "have_bf16", "have_fp8", "have_tma",
           "have_tensorcore", "is_hopper", "parse_compute_version"]


def get_target_compute_version(target=None) -> str:
    """The visible GPU's compute capability as "major.minor" (or the arch of `target`, e.g. "sm_90a")."""
    if target is not None:
        arch = str(getattr(target, "arch", target)).removeprefix("sm_").rstrip("a")
        if arch.isdigit():
            return f"{arch[:-1]}.{arch[-1]}"
    import torch

    if not torch.cuda.is_available():
        raise ValueError("no CUDA GPU is visible to give a compute version")
    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}"


def parse_compute_version(compute_version) -> tuple[int, int]:
    """(major, minor) of "9.0" (or of a tuple)."""
    if isinstance(compute_version, tuple):
        return int(compute_version[0]), int(compute_version[1])
    parts = str(compute_version).split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise ValueError(f"compute version must be like '9.0', got {compute_version!r}") from None


def get_target_arch(compute_version) -> str:
    major, minor = parse_compute_version(compute_version)
    return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")


def have_tensorcore(compute_version=None, target=None) -> bool:
    return parse_compute_version(compute_version or get_target_compute_version(target)) >= (7, 0)


def have_bf16(compute_version) -> bool:
    return parse_compute_version(compute_version) >= (8, 0)


def have_fp8(compute_version) -> bool:
    return parse_compute_version(compute_version) >= (8, 9)


def have_tma(target=None) -> bool:
    return parse_compute_version(get_target_compute_version(target)) >= (9, 0)


def is_hopper(target=None) -> bool:
    return parse_compute_version(get_target_compute_version(target)) == (9, 0)
