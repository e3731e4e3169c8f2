"""`tilec.testing`: TileLang's test helpers (`tilelang.testing`), for pytest.

    @tilec.testing.requires_cuda
    @tilec.testing.requires_cuda_compute_version_ge(9, 0)
    def test_hopper_gemm(): ...

    if __name__ == "__main__":
        tilec.testing.main()        # pytest on the calling file

A requirement is a decorator that adds a `pytest.mark.skipif` (evaluated when the test module
is imported), as TileLang's (TVM's) are. The GPU is the one torch sees, or the stand-in of
`tilec.testing.cuda_on_cpu` when that is installed.
"""

from __future__ import annotations

import importlib.util
import inspect
import random
import sys

from tilec.utils.tensor import torch_assert_close

__all__ = [
    "main", "requires_cdna", "requires_cuda", "requires_cuda_compute_version", "requires_cuda_compute_version_eq",
    "requires_cuda_compute_version_ge", "requires_cuda_compute_version_gt", "requires_cuda_compute_version_le",
    "requires_cuda_compute_version_lt", "requires_cuda_or_cdna", "requires_gfx950", "requires_llvm",
    "requires_metal", "requires_package", "requires_rocm", "set_random_seed", "torch_assert_close",
]


class Requirement:
    """A test decorator that skips the test unless `check()` holds; `marks()` for composing."""

    def __init__(self, check, reason: str, *, also=()):
        self._check, self.reason, self._also = check, reason, tuple(also)

    def marks(self) -> list:
        import pytest

        return [*(m for r in self._also for m in r.marks()), pytest.mark.skipif(not self._check(), reason=self.reason)]

    def __call__(self, func):
        for mark in self.marks():
            func = mark(func)
        return func


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _compute_version() -> tuple[int, int]:
    if not _cuda_available():
        return (0, 0)
    import torch

    return tuple(torch.cuda.get_device_capability())


def _never() -> bool:
    return False


requires_cuda = Requirement(_cuda_available, "Requires CUDA (no GPU visible)")
requires_rocm = Requirement(_never, "Requires ROCm: tilec targets CUDA only")
requires_cdna = Requirement(_never, "Requires a CDNA ROCm GPU: tilec targets CUDA only")
requires_gfx950 = Requirement(_never, "Requires gfx950 (CDNA4): tilec targets CUDA only")
requires_metal = Requirement(_never, "Requires Metal: tilec targets CUDA only")
requires_llvm = Requirement(_never, "Requires TVM's LLVM CPU backend, which tilec does not emulate")
requires_cuda_or_cdna = Requirement(_cuda_available, "Requires CUDA or CDNA ROCm (no GPU visible)")


def requires_package(*names: str) -> Requirement:
    """Skips unless every package in `names` imports."""
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    return Requirement(lambda: not missing, f"Requires package(s) {', '.join(missing)}")


_COMPARE = {"ge": lambda a, b: a >= b, "gt": lambda a, b: a > b, "le": lambda a, b: a <= b,
            "lt": lambda a, b: a < b, "eq": lambda a, b: a == b}


def requires_cuda_compute_version(major_version: int, minor_version: int = 0, mode: str = "ge") -> Requirement:
    """Skips unless the GPU's compute capability compares to (major, minor) by `mode` (ge/gt/le/lt/eq)."""
    if mode not in _COMPARE:
        raise ValueError(f"Invalid mode: {mode!r} (one of {', '.join(_COMPARE)})")
    want = (major_version, minor_version)
    have = _compute_version()
    return Requirement(lambda: _COMPARE[mode](have, want),
                       f"Requires CUDA compute {mode} {want[0]}.{want[1]}, but have {have[0]}.{have[1]}",
                       also=(requires_cuda,))


def requires_cuda_compute_version_ge(major_version: int, minor_version: int = 0) -> Requirement:
    return requires_cuda_compute_version(major_version, minor_version, "ge")


def requires_cuda_compute_version_gt(major_version: int, minor_version: int = 0) -> Requirement:
    return requires_cuda_compute_version(major_version, minor_version, "gt")


def requires_cuda_compute_version_eq(major_version: int, minor_version: int = 0) -> Requirement:
    return requires_cuda_compute_version(major_version, minor_version, "eq")


def requires_cuda_compute_version_lt(major_version: int, minor_version: int = 0) -> Requirement:
    return requires_cuda_compute_version(major_version, minor_version, "lt")


def requires_cuda_compute_version_le(major_version: int, minor_version: int = 0) -> Requirement:
    return requires_cuda_compute_version(major_version, minor_version, "le")


def set_random_seed(seed: int = 42) -> None:
    """Seeds Python's, numpy's and torch's generators (and CUDA's when there is a GPU)."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def main() -> None:
    """Runs pytest on the file that calls it (`if __name__ == "__main__": tilec.testing.main()`)."""
    import pytest

    test_file = inspect.getsourcefile(sys._getframe(1))
    sys.exit(pytest.main([test_file, *sys.argv[1:]]))
