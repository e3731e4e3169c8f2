"""A 192x192 gemm tile on three consumer warpgroups (threads=384, a 64-row block of wgmma
m64n192k16 each; cuBLAS's tile at 3072x3072x4096, where it makes 1.94 rounds of 132 tiles and
128x256 makes 2.2: bench/NOTES.md, runs s12d/s12e). Warp-specialized and persistent on sm_90a
(the producer makes 512 threads, `setmaxnreg` splits the registers), simulated against torch with
tails in M, N and K, and assembled by ptxas without spills."""

import pytest
import torch
from kernel_cases import gemm_tiles
from tilec.targets.nvptx import assemble, emit_ptx

import tilec
import tilec.language as T
from tilec.compiler.lower import lower_to_thread
from tilec.frontend import build_prim_func
from tilec.target import resolve_target


def _prim(m, n, k, stages=4):
    """The reference gemm's kernel with 192x192x64 tiles, f16 in and out, threads=384."""
    return gemm_tiles(m, n, k, 192, 192, 64, T.float16, threads=384, stages=stages, out_dtype=T.float16)


@pytest.mark.parametrize("shape", [(384, 384, 128), (400, 392, 136)], ids=["tiles", "tails"])  # (rows of 16-byte multiples: TMA)
def test_three_consumer_warpgroups_on_the_simulator(shape):
    m, n, k = shape
    kernel = tilec.compile(_prim(m, n, k, stages=3), out_idx=[2], target="sim")
    tile_ir = kernel.get_ir("tile-opt")
    assert 'mma = "wgmma"' in tile_ir and "tile.persistent" in tile_ir and "tile.warp_specialize" in tile_ir
    torch.manual_seed(0)
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    ref = a.float() @ b.float()
    assert float((kernel(a, b).float() - ref).norm() / ref.norm()) < 2e-3


def test_three_consumer_warpgroups_assemble_without_spills(ptxas):
    lowered = lower_to_thread(build_prim_func(_prim(3072, 3072, 4096), [2]), resolve_target("sm_90a"), {})
    assert lowered.spec.block == (512, 1, 1)  # the producer warpgroup added
    ptx = emit_ptx(lowered.thread, "sm_90a")
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16") >= 4  # a k64 step: 4 of k16
    assert "setmaxnreg.inc" in ptx and "cp.async.bulk.tensor" in ptx
    _, report = assemble(ptx, "sm_90a")
    assert not report.kernels[lowered.spec.kernel_name].spills
