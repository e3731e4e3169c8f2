"""Assemble PTX into a cubin with NVIDIA's ptxas and parse its resource report (`-v`).

ptxas is looked up once, in order: `shutil.which("ptxas")`,
`$CUDA_HOME/bin` (and `$CUDA_PATH/bin`), then the `nvidia-cuda-nvcc` wheel's
`nvidia/cuda_nvcc/bin`. Without one, `PtxasNotFoundError` is raised and callers fall back to
the driver's JIT.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "KernelResources",
    "PtxasError",
    "PtxasNotFoundError",
    "PtxasReport",
    "assemble",
    "find_ptxas",
]


class PtxasError(RuntimeError):
    """ptxas rejected the PTX; the message carries ptxas's own diagnostics."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class PtxasNotFoundError(PtxasError):
    """No ptxas on PATH, in $CUDA_HOME/bin or in the nvidia-cuda-nvcc wheel."""


@dataclass(frozen=True)
class KernelResources:
    """What `ptxas -v` reports for one function (entry or device function)."""

    name: str
    registers: int = 0
    stack_frame_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    shared_bytes: int = 0
    barriers: int = 0

    @property
    def spills(self) -> bool:
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0


@dataclass(frozen=True)
class PtxasReport:
    arch: str
    kernels: dict[str, KernelResources] = field(default_factory=dict)
    log: str = ""

    def __getitem__(self, name: str) -> KernelResources:
        return self.kernels[name]


def _candidates() -> list[Path]:
    paths = [Path(p) for p in [shutil.which("ptxas")] if p]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if root := os.environ.get(var):
            paths.append(Path(root) / "bin" / "ptxas")
    try:
        import nvidia.cuda_nvcc as wheel  # the nvidia-cuda-nvcc wheel

        paths += [Path(p) / "bin" / "ptxas" for p in wheel.__path__]
    except ImportError:
        pass
    return paths


@functools.lru_cache(maxsize=1)
def find_ptxas() -> str | None:
    """The path of a runnable ptxas, or None."""
    for path in _candidates():
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


_FUNCTION = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
_USED = re.compile(
    r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?"
)


def parse_report(log: str, arch: str) -> PtxasReport:
    """Fold ptxas's per-function lines into one `KernelResources` per function."""
    found: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in log.splitlines():
        if m := _FUNCTION.search(line):
            current = found.setdefault(m.group(1), {})
        elif current is not None and (m := _FRAME.search(line)):
            frame, stores, loads = map(int, m.groups())
            current.update(
                stack_frame_bytes=frame,
                spill_store_bytes=stores,
                spill_load_bytes=loads,
            )
        elif current is not None and (m := _USED.search(line)):
            current.update(registers=int(m.group(1)), barriers=int(m.group(2) or 0),
                           shared_bytes=int(m.group(3) or 0))  # fmt: skip
    kernels = {name: KernelResources(name, **fields) for name, fields in found.items()}
    return PtxasReport(arch, kernels, log)


def assemble(
    ptx: str,
    arch: str = "sm_90a",
    *,
    opt_level: int = 3,
    extra_args: tuple[str, ...] = (),
    meanwhile: Callable[[], object] | None = None,
) -> tuple[bytes, PtxasReport]:
    """`ptxas -arch=<arch> -v` on `ptx`; returns the cubin and the parsed report. `meanwhile`, if
    given, is called while the ptxas process runs (the caller's work that needs no cubin)."""
    ptxas = find_ptxas()
    if ptxas is None:
        raise PtxasNotFoundError(
            "ptxas not found (PATH, $CUDA_HOME/bin, nvidia-cuda-nvcc wheel)"
        )
    with tempfile.TemporaryDirectory(prefix="tilec-ptxas-") as tmp:
        src, out = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        src.write_text(ptx)
        cmd = [
            ptxas,
            f"-arch={arch}",
            f"-O{opt_level}",
            "-v",
            *extra_args,
            "-o",
            str(out),
            str(src),
        ]
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            try:
                if meanwhile is not None:
                    meanwhile()
                stdout, stderr = proc.communicate()
            except BaseException:  # as subprocess.run: no ptxas left behind
                proc.kill()
                raise
        log = (stdout + stderr).replace(str(src), "kernel.ptx")
        if proc.returncode != 0:
            errors = [
                line for line in log.splitlines() if "error" in line or "fatal" in line
            ]
            raise PtxasError(
                f"ptxas -arch={arch} failed:\n" + "\n".join(errors or [log]), log
            )
        return out.read_bytes(), parse_report(log, arch)
