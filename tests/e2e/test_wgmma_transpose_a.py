"""`T.gemm(..., transpose_A=True)` on wgmma (sm_90a): A stored [K, M], M-major, read by the tensor cores
from shared memory as an N-major B is (the 128-byte swizzle, 64-column chunks for wider tiles,
imm-trans-a), K-major or N-major B, warp-specialized (TMA boxes of the [K, M] tile), persistent,
ping-pong and plain; M-major A from registers has no wgmma and stays on mma.sync. Simulated against
float64 with tails in M, N and K; assembled by ptxas without spills (HGMMA in the SASS); on the GPU."""

import re

import pytest
import torch
from kernel_cases import gemm_tiles
from sass_testing import spill_free_sass
from tilec.targets.nvptx import emit_ptx

import tilec
from tilec.compiler.lower import lower_to_thread
from tilec.frontend import build_prim_func
from tilec.target import resolve_target


def _gemm(m, n, k, bm=128, bn=256, bk=64, threads=256, dtype="float16", trans_b=False):
    return gemm_tiles(m, n, k, bm, bn, bk, dtype, transpose_b=trans_b, threads=threads, stages=3, transpose_a=True)


CASES = [
    ({"tilec.persistent": False}, (200, 328, 192), {}),  # two consumer warpgroups, A in two 64-column chunks
    ({"tilec.persistent": True}, (320, 600, 256), {}),
    ({}, (192, 136, 128), {"bm": 64, "bn": 128, "threads": 128, "dtype": "bfloat16", "trans_b": True}),  # ping-pong
    ({"tl.disable_warp_specialized": True}, (256, 256, 128), {"bn": 128}),  # cp.async stages, wgmma still
]
IDS = ["plain_tails", "persistent_tails", "pingpong_bf16_kmajor_b", "not_warp_specialized"]


def _compare(kernel, shape, kw, device="cpu", seed=5):
    m, n, k = shape
    dtype = getattr(torch, kw.get("dtype", "float16"))
    torch.manual_seed(seed)
    a = torch.randn(k, m, device=device).to(dtype)
    b = torch.randn(*((n, k) if kw.get("trans_b") else (k, n)), device=device).to(dtype)
    ref = a.double().T @ (b.double().T if kw.get("trans_b") else b.double())
    got = kernel(a, b).double()
    assert float((got - ref).norm() / ref.norm()) < 1e-5


@pytest.mark.parametrize("configs,shape,kw", CASES, ids=IDS)
def test_transposed_a_on_wgmma_on_the_simulator(configs, shape, kw):
    kernel = tilec.compile(_gemm(*shape, **kw), out_idx=[2], target="sim", pass_configs=configs)
    _compare(kernel, shape, kw)
    assert re.search(r'tile.gemm .*\{transpose_a = true, (transpose_b = true, )?mma = "wgmma"', kernel.get_ir("tile-opt"))
    thread = kernel.get_ir("thread")
    assert set(re.findall(r"layoutA = #nvvm.mma_layout<(\w+)>", thread)) == {"col"}  # imm-trans-a


def test_transposed_a_assembles_without_spills(ptxas, cuobjdump, tmp_path):
    lowered = lower_to_thread(build_prim_func(_gemm(4096, 4096, 4096), [2]), resolve_target("sm_90a"),
                              {"tilec.persistent": True})
    ptx = emit_ptx(lowered.thread, "sm_90a")
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.f16\.f16 .*, 1, 1, 1, 1;", ptx)
    sass = spill_free_sass(ptx, lowered.spec.kernel_name, cuobjdump, tmp_path)
    assert "HGMMA" in sass and "UTMALDG" in sass


@pytest.mark.gpu
@pytest.mark.parametrize("configs,shape,kw", CASES, ids=IDS)
def test_transposed_a_on_wgmma_on_the_gpu(configs, shape, kw):
    kernel = tilec.compile(_gemm(*shape, **kw), out_idx=[2], target="sm_90a", pass_configs=configs)
    assert "wgmma.mma_async" in kernel.get_kernel_source()
    _compare(kernel, shape, kw, "cuda", seed=6)
