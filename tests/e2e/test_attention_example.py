"""examples/flash_attention.py (GQA, the log-sum-exp output) on the sm_90a path: simulated
warp-specialized and with cp.async stages against a float32 attention, and assembled by ptxas
with no spills."""

import importlib.util
import os

import pytest
import torch
from tilec.targets.nvptx import assemble, emit_ptx

from tilec.compiler.lower import lower_to_thread
from tilec.frontend import build_prim_func
from tilec.target import resolve_target

_EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "flash_attention.py")
_spec = importlib.util.spec_from_file_location("tilec_example_flash_attention", _EXAMPLE)
example = importlib.util.module_from_spec(_spec)  # by path: the reference kernel's module has its name
_spec.loader.exec_module(example)

_NO_WS = {"tl.disable_warp_specialized": True}


@pytest.mark.parametrize("configs", [{}, _NO_WS], ids=["ws", "cp_async"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_gqa_with_lse_on_the_simulator(causal, configs):
    """4 query heads on 2 KV heads, a sequence the blocks do not divide; O and LSE both checked."""
    torch.manual_seed(7)
    q = torch.randn(1, 200, 4, 64).half()
    k, v = (torch.randn(1, 200, 2, 64).half() for _ in range(2))
    kernel = example.flash_fwd(1, 4, 2, 200, 64, causal, lse=True, target="sim", pass_configs=configs,
                               block_M=64, block_N=64, threads=128)
    tile_ir = kernel.get_ir("tile-opt")
    assert ("tile.warp_specialize" in tile_ir) == (not configs)
    assert "tilec.split_mask" in tile_ir  # the causal diagonal, or the key tail
    out, lse = kernel(q, k, v)
    ref_out, ref_lse = example.reference(q, k, v, causal)
    assert ((out.float() - ref_out).norm() / ref_out.norm()).item() < 1e-2
    torch.testing.assert_close(lse, ref_lse, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("lse", [False, True], ids=["out", "out_lse"])
def test_gqa_assembles_warp_specialized(lse, ptxas):
    """32 query heads on 8 KV heads at D = 128, 128x128 tiles over two consumer warpgroups: TMA,
    wgmma only, no spills, no wgmma serialization."""
    prim = example.flash_attention(1, 32, 8, 1024, 128, True, lse=lse)
    lowered = lower_to_thread(build_prim_func(prim, [3, 4] if lse else [3]), resolve_target("sm_90a"), {})
    ptx = emit_ptx(lowered.thread, "sm_90a")
    _, report = assemble(ptx, "sm_90a")
    assert "cp.async.bulk.tensor" in ptx and "mma.sync" not in ptx and "wgmma.mma_async" in ptx
    assert not report.kernels[lowered.spec.kernel_name].spills
    assert "C75" not in report.log, report.log


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dim,tiles", [(64, (128, 128, 2, 256)), (128, (128, 128, 2, 256)), (256, (128, 64, 2, 256))],
                         ids=["d64", "d128", "d256"])
def test_gqa_with_lse_on_the_gpu(dim, tiles, causal):
    """32 query heads on 8 KV heads, S = 1000 (not a multiple of the blocks), fresh inputs twice."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma needs sm_90a")
    bm, bn, stages, threads = tiles
    kernel = example.flash_fwd(2, 32, 8, 1000, dim, causal, lse=True, target="cuda", block_M=bm, block_N=bn,
                               num_stages=stages, threads=threads)
    for _ in range(2):
        q = torch.randn(2, 1000, 32, dim, device="cuda").half()
        k, v = (torch.randn(2, 1000, 8, dim, device="cuda").half() for _ in range(2))
        out, lse = kernel(q, k, v)
        ref_out, ref_lse = example.reference(q, k, v, causal)
        assert ((out.float() - ref_out).norm() / ref_out.norm()).item() < 1e-2
        torch.testing.assert_close(lse, ref_lse, rtol=1e-4, atol=1e-3)
