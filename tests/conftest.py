"""Test-suite plumbing: `.mlir` lit-style tests, the `gpu` marker, the `ptxas` fixture.

- Each `tests/**/*.mlir` file becomes pytest items: one `directives` item (lint for
  misspelled CHECK / expected-* directives) and one `runN` item per `// RUN:` line, run
  by bash with `tilec` -> `<python> -m tilec.cli` and `filecheck` -> the installed script
  (see tests/_mlir_lit.py). Files under a folder named `Inputs/` are inputs, not tests.
- `@pytest.mark.gpu` tests are skipped unless a CUDA GPU is visible.
- `ptxas` fixture: the path of a ptxas binary, or the test is skipped.
"""

import functools
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import _mlir_lit

# Verify the IR after every pass in every test (STYLE.md section 2).
os.environ["TILEC_VERIFY"] = "1"

REPO_ROOT = Path(__file__).resolve().parent.parent


# --- .mlir tests -------------------------------------------------------------------------


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".mlir" and "Inputs" not in file_path.parts:
        return MlirFile.from_parent(parent, path=file_path)
    return None


class MlirFile(pytest.File):
    def collect(self):
        text = self.path.read_text(encoding="utf-8")
        runs = _mlir_lit.parse_run_lines(text)
        yield MlirLintItem.from_parent(self, name="directives", text=text, runs=runs)
        if not runs:
            yield MlirRunItem.from_parent(self, name="run", command=None)
        for i, cmd in enumerate(runs, 1):
            yield MlirRunItem.from_parent(self, name=f"run{i}", command=cmd)


class MlirTestFailure(Exception):
    pass


class MlirLintItem(pytest.Item):
    def __init__(self, *, text, runs, **kwargs):
        super().__init__(**kwargs)
        self.text, self.runs = text, runs

    def runtest(self):
        errors = _mlir_lit.lint_directives(
            self.text, _mlir_lit.check_prefixes(self.runs)
        )
        if errors:
            raise MlirTestFailure(
                "\n".join(f"{self.path}:{n}: {msg}" for n, msg in errors)
            )

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, MlirTestFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, 0, f"{self.path.name}::{self.name}"


class MlirRunItem(pytest.Item):
    def __init__(self, *, command, **kwargs):
        super().__init__(**kwargs)
        self.command = command

    def runtest(self):
        if self.command is None:
            raise MlirTestFailure(f"{self.path}: no `// RUN:` line")
        script = _mlir_lit.bash_script(
            _mlir_lit.substitute(self.command, str(self.path))
        )
        proc = subprocess.run(
            ["bash", "-c", script],
            check=False,
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            raise MlirTestFailure(
                f"RUN: {self.command}\n$ {script.splitlines()[-1]}\n"
                f"exit status {proc.returncode}\n{proc.stdout}"
            )

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, MlirTestFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, 0, f"{self.path.name}::{self.name}: {self.command}"


# --- GPU marker and ptxas ------------------------------------------------------------------


@functools.cache
def cuda_gpu_visible() -> bool:
    try:
        import torch

        if torch.cuda.is_available():
            return True
    except Exception:  # noqa: BLE001, S110 -- a broken torch install must not break collection
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        out = subprocess.run(
            [smi, "-L"], check=False, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if gpu_items and not cuda_gpu_visible():
        skip = pytest.mark.skip(reason="needs an NVIDIA GPU (none visible)")
        for item in gpu_items:
            item.add_marker(skip)


def find_ptxas() -> str | None:
    """ptxas on PATH, in $CUDA_HOME, /usr/local/cuda, or the nvidia-cuda-nvcc wheel."""
    found = shutil.which("ptxas")
    if found:
        return found
    candidates = [
        os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")
    ]
    for site in sys.path:
        candidates += glob.glob(os.path.join(site, "nvidia", "cu*", "bin", "ptxas"))
        candidates += glob.glob(
            os.path.join(site, "nvidia", "cuda_nvcc", "bin", "ptxas")
        )
    return next(
        (c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)), None
    )


def find_cuobjdump() -> str | None:
    """cuobjdump on PATH or in the nvidia-cuda-cuobjdump wheel (reads SASS without a GPU)."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    paths = [p for site in sys.path for p in glob.glob(os.path.join(site, "nvidia", "cu*", "bin", "cuobjdump"))]
    return next((p for p in paths if os.path.isfile(p) and os.access(p, os.X_OK)), None)


@pytest.fixture(scope="session")
def cuobjdump() -> str:
    path = find_cuobjdump()
    if path is None:
        pytest.skip("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    return path


@pytest.fixture(scope="session")
def ptxas() -> str:
    path = find_ptxas()
    if path is None:
        pytest.skip("ptxas not found (install the CUDA toolkit or nvidia-cuda-nvcc)")
    return path
