"""ptxas refusing tilec's PTX: a located TilecError that says what to change, and TILEC_DUMP_IR
writes the PTX it refused (the hint's promise)."""

import os
import shutil

import pytest

import tilec
import tilec.language as T
from tilec import config
from tilec.compiler.cuda_build import _ptxas_hint
from tilec.compiler.launch import GridExpr, LaunchSpec
from tilec.errors import TilecError

import kernel_cases
from kernel_cases import gemm_tiles

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")


def test_a_register_shortfall_names_the_threads_budget():
    spec = LaunchSpec("main", (512, 1, 1), 0, GridExpr([["const", 1]], [0]), [])
    hint = _ptxas_hint("ptxas fatal   : (C7602) Insufficient registers (128) to compile instruction", spec, None)
    assert hint.startswith("the block's 512 threads leave 128 registers a thread")
    assert "fewer threads" in hint and hint.endswith("TILEC_DUMP_IR=dir writes the PTX for inspection")
    assert _ptxas_hint("ptxas fatal   : something else", spec, "/d") == "the PTX is in /d"


@needs_ptxas
def test_three_warpgroups_of_64x256_accumulators_do_not_fit_and_the_ptx_is_dumped(monkeypatch, tmp_path):
    # 3 consumer warpgroups + the producer: 512 threads, 128 registers each; a 64x256 float32
    # accumulator alone is 128 registers a consumer thread
    monkeypatch.setattr(config, "DISABLE_CACHE", True)
    monkeypatch.setattr(config, "DUMP_IR", str(tmp_path))
    with pytest.raises(TilecError) as info:
        tilec.compile(gemm_tiles(384, 512, 256, 192, 256, 64, T.float16, threads=384, stages=3), target="sm_90a")
    text = str(info.value)
    assert "ptxas rejected the PTX" in text and "C7602" in text
    with open(kernel_cases.__file__) as f:  # located at the kernel's def, the `def main` of gemm_tiles
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("def gemm_tiles("))
    line = next(i for i in range(start, len(lines)) if lines[i].lstrip().startswith("def main(")) + 1
    assert f"{os.path.basename(kernel_cases.__file__)}:{line}:" in text
    assert "the block's 512 threads leave 128 registers a thread" in text and f"the PTX is in {tmp_path}" in text
    ptx = [f for f in os.listdir(tmp_path) if f.endswith(".ptx")]
    assert ptx and "setmaxnreg.inc" in open(tmp_path / ptx[0]).read()
