"""Attention on the sm_90a path (issue 10): S = Q K^T by wgmma SS with K-major operands in
64-column chunks, O += P V by wgmma RS with P converted in registers from S's accumulator,
row reductions of the accumulator by quad shuffles. Simulated against torch, assembled by
ptxas, and (where cuobjdump is) read back as SASS; the `gpu` tests run the same cases on
an H100/H200."""

import re
import subprocess

import pytest
import torch
from kernel_cases import ATTENTION_CASES, Case, run_case
from tilec.targets.nvptx import assemble, emit_ptx

import tilec
import tilec.language as T
from tilec.layout import make_swizzled_layout
from tilec.compiler.lower import lower_to_thread
from tilec.frontend import build_prim_func
from tilec.target import resolve_target

_NO_WS = {"tl.disable_warp_specialized": True}
_RS = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.(?:f16|bf16)\.(?:f16|bf16) \{[^}]*\}, \{")


def _sm90a(case, configs: dict | None = None):
    """(PTX, ptxas report, cubin, kernel name) of `case` for sm_90a."""
    lowered = lower_to_thread(build_prim_func(case.prim, case.out_idx), resolve_target("sm_90a"), configs or {})
    ptx = emit_ptx(lowered.thread, "sm_90a")
    cubin, report = assemble(ptx, "sm_90a")
    return ptx, report, cubin, lowered.spec.kernel_name


@pytest.mark.parametrize("specialized", [True, False], ids=["ws", "cp_async"])
@pytest.mark.parametrize("case", ATTENTION_CASES, ids=[c.name for c in ATTENTION_CASES])
def test_attention_on_the_simulator(case, specialized):
    """Warp-specialized (a TMA producer warpgroup: Q once, K and V through the stages) or with
    cp.async stages."""
    run_case(case, "sim", "cpu", pass_configs={} if specialized else _NO_WS,
             expect_ir="nvvm.cp.async.bulk.tensor" if specialized else "nvvm.wgmma.mma_async")


@pytest.mark.parametrize("case", ATTENTION_CASES, ids=[c.name for c in ATTENTION_CASES])
def test_attention_on_the_interpreter(case):
    run_case(case, "interp", "cpu")


@pytest.mark.parametrize("case", ATTENTION_CASES, ids=[c.name for c in ATTENTION_CASES])
def test_attention_assembles_with_wgmma_only(case, ptxas):
    """Both gemms are wgmma (P V in the RS form, one per k16 step of each m64 block), no mma.sync;
    no spills, no wgmma serialization (C7510-C7520)."""
    ptx, report, _, name = _sm90a(case)
    assert "mma.sync" not in ptx
    ss = ptx.count("wgmma.mma_async") - len(_RS.findall(ptx))
    assert ss > 0 and len(_RS.findall(ptx)) > 0, "Q K^T from shared tiles (SS) and P V from registers (RS)"
    assert not report.kernels[name].spills
    assert "C75" not in report.log, report.log



def test_attention_sass_has_hgmma_with_register_a(ptxas, tmp_path, cuobjdump):
    """The SASS: HGMMA from two descriptors for Q K^T, HGMMA with a register A for P V, TMA loads
    (UTMALDG) and the register split of the warp-specialized roles (SETMAXREG). With the softmax
    overlap (`tilec.softmax_overlap`, the default) the first block's Q K^T and the last block's P V
    are peeled out of the loop: twice the HGMMAs, half of them with a register A."""
    case = next(c for c in ATTENTION_CASES if "d128_128x128" in c.name)
    for configs, copies in (({"tilec.softmax_overlap": False}, 1), ({}, 2)):
        _, _, cubin, _ = _sm90a(case, configs)
        _check_hgmma(cubin, copies, tmp_path, cuobjdump)


def _check_hgmma(cubin, copies, tmp_path, cuobjdump):
    path = tmp_path / "attention.cubin"
    path.write_bytes(cubin)
    sass = subprocess.run([cuobjdump, "--dump-sass", str(path)], capture_output=True, text=True, check=True).stdout
    hgmma = [line for line in sass.splitlines() if "HGMMA.64x128x16.F32" in line]
    register_a = [line for line in hgmma if re.search(r"HGMMA\S* R\d+, R\d+, gdesc", line)]
    assert len(hgmma) == 16 * copies and len(register_a) == 8 * copies, "\n".join(hgmma)
    assert "HMMA" not in sass
    assert "UTMALDG" in sass and "USETMAXREG" in sass


def register_a_from_an_mma_sync_accumulator():
    """P computed from a tile wgmma cannot read (annotated with a swizzle that is not its rows':
    mma.sync) has that accumulator's layout: the RS gemm converts it through shared memory first."""

    @T.prim_func
    def main(X: T.Tensor((64, 64), T.float16), V: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128):
            x = T.alloc_shared((64, 64), T.float16)
            v = T.alloc_shared((64, 64), T.float16)
            d = T.alloc_fragment((64, 64), T.float32)
            p = T.alloc_fragment((64, 64), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.annotate_layout({x: make_swizzled_layout(x, swizzle_bytes=64)})
            T.copy(X, x)
            T.copy(V, v)
            T.gemm(x, x, d, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                p[i, j] = d[i, j] * 0.125
            T.gemm(p, v, c, clear_accum=True)
            T.copy(c, C)

    return main


def _register_a_ref(x, v):
    return ((x.float() @ x.float()) * 0.125).half().float() @ v.float()


REGISTER_A_CASE = Case("register_a_converted", register_a_from_an_mma_sync_accumulator(), [2],
                       lambda d: [(torch.randn(64, 64, device=d) * 0.3).half(), torch.randn(64, 64, device=d).half()],
                       _register_a_ref, tol=1e-2)


def test_register_a_in_another_layout_is_converted():
    kernel = tilec.compile(REGISTER_A_CASE.prim, out_idx=[2], target="sim")
    tile_ir = kernel.get_ir("tile-opt")
    assert tile_ir.count('mma = "wgmma"') == 1 and 'mma = "m16n8k16"' in tile_ir
    run_case(REGISTER_A_CASE, "sim", "cpu", expect_ir="!llvm.struct<(i32, i32, i32, i32)>")


@pytest.mark.gpu
@pytest.mark.parametrize("case", [*ATTENTION_CASES, REGISTER_A_CASE], ids=lambda c: c.name)
def test_attention_on_the_gpu(case):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma needs sm_90a")
    for configs in ({}, _NO_WS):
        for _ in range(2):
            run_case(case, "cuda", "cuda", pass_configs=configs, expect_ir="nvvm.wgmma.mma_async")
