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

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")


@tilec.jit(out_idx=[-1], target="sm_90a")
def wide(M, N, K, block_M=192, block_N=256, block_K=64, threads=384):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_K, block_N), T.float16)
            C_f = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[ko * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return main


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
        wide(384, 512, 256)
    text = str(info.value)
    assert "ptxas rejected the PTX" in text and "C7602" in text
    assert f"{os.path.basename(__file__)}:22:" in text  # located at the kernel's def
    assert "the block's 512 threads leave 128 registers a thread" in text and f"the PTX is in {tmp_path}" in text
    ptx = [f for f in os.listdir(tmp_path) if f.endswith(".ptx")]
    assert ptx and "setmaxnreg.inc" in open(tmp_path / ptx[0]).read()
