"""A kernel's PTX assembled by ptxas and read back as SASS (the `ptxas` and `cuobjdump` fixtures of
conftest.py skip where the tools are absent)."""

from __future__ import annotations

import subprocess

from tilec.targets.nvptx import assemble


def spill_free_sass(ptx: str, kernel_name: str, cuobjdump: str, tmp_path) -> str:
    """The SASS of `ptx` for sm_90a, after checking that ptxas spilled no register of `kernel_name`."""
    cubin, report = assemble(ptx, "sm_90a")
    assert not report.kernels[kernel_name].spills
    path = tmp_path / f"{kernel_name}.cubin"
    path.write_bytes(cubin)
    return subprocess.run([cuobjdump, "--dump-sass", str(path)], capture_output=True, text=True, check=True).stdout
