"""Gemm operands that are regions of a shared tile at run-time offsets (issue 8, item 5).

`T.gemm(a, B_s[k * 32:k * 32 + 32, :], c)` inside a loop: ldmatrix cannot address such a B (its
offset is not a constant), so mma.sync reads it by pairs of elements. That path was dead code (a
raw LLVM error on sm_80 and sm_90a, an IndexError on `sim`); now every target agrees with the
interpreter, and the PTX assembles for both architectures. On sm_90a such regions are wgmma's
operands (descriptors from the region's start in the allocation's swizzled rows); mma.sync stays
the sm_80 path and sm_90a's with wgmma off.
"""

import pytest
from kernel_cases import REGION_OPERAND_CASES, run_case

_IDS = [c.name for c in REGION_OPERAND_CASES]


@pytest.mark.parametrize("case", REGION_OPERAND_CASES, ids=_IDS)
def test_region_operand_gemm_on_the_interpreter(case):
    run_case(case, "interp", "cpu")


_KINDS = {"wgmma": ({}, "nvvm.wgmma.mma_async"), "mma": ({"tilec.enable_wgmma": False}, "nvvm.mma.sync"),
          "simt": ({"tilec.enable_mma": False}, "math.fma")}


@pytest.mark.parametrize("kind", list(_KINDS))
@pytest.mark.parametrize("case", REGION_OPERAND_CASES, ids=_IDS)
def test_region_operand_gemm_on_the_simulator(case, kind):
    configs, instruction = _KINDS[kind]
    run_case(case, "sim", "cpu", pass_configs=configs, expect_ir=instruction)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", REGION_OPERAND_CASES, ids=_IDS)
def test_region_operand_gemm_assembles(case, arch, ptxas):
    from tilec.targets.nvptx import assemble, emit_ptx

    from tilec.compiler.lower import lower_to_thread
    from tilec.frontend import build_prim_func
    from tilec.target import resolve_target

    lowered = lower_to_thread(build_prim_func(case.prim, case.out_idx), resolve_target(arch), {})
    ptx = emit_ptx(lowered.thread, arch)
    cubin, report = assemble(ptx, arch)
    assert cubin.startswith(b"\x7fELF") and not report.kernels[lowered.spec.kernel_name].spills
    if arch == "sm_80":
        assert "mma.sync.aligned.m16n8k16.row.col.f32" in ptx and "wgmma" not in ptx
    else:
        assert "wgmma.mma_async" in ptx and "mma.sync" not in ptx
