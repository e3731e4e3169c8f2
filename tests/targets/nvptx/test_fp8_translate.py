"""fp8 in the NVPTX translation: stored as i8, converted with the sm_89+ cvt (two values per
instruction for a vector pair), torch's rule restored after cvt.satfinite, arithmetic in f32,
constants as codes, and a refusal naming the feature for sm_80."""

from __future__ import annotations

import re
import pytest
from nvptx_testing import parse, requires_ptxas
from tilec.targets.nvptx import TranslationError, assemble, emit_llvm_ir, emit_ptx

CASTS = """
func.func @casts(%x: memref<?xf32>, %h: memref<?xf16>, %bf: memref<?xbf16>, %q: memref<?xf8E4M3FN>,
                 %r: memref<?xf8E5M2>, %o: memref<?xf32>)
    attributes {nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>} {
  %i = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %a = memref.load %x[%i] : memref<?xf32>
  %qa = arith.truncf %a : f32 to f8E4M3FN
  memref.store %qa, %q[%i] : memref<?xf8E4M3FN>
  %ra = arith.truncf %a : f32 to f8E5M2
  memref.store %ra, %r[%i] : memref<?xf8E5M2>
  %hv = memref.load %h[%i] : memref<?xf16>
  %qh = arith.truncf %hv : f16 to f8E4M3FN
  %bv = memref.load %bf[%i] : memref<?xbf16>
  %qb = arith.truncf %bv : bf16 to f8E5M2
  %back = arith.extf %qh : f8E4M3FN to f32
  %back2 = arith.extf %qb : f8E5M2 to bf16
  %w = arith.extf %back2 : bf16 to f32
  %s = arith.addf %back, %w : f32
  memref.store %s, %o[%i] : memref<?xf32>
  func.return
}
"""

PAIRS = """
func.func @pairs(%x: memref<?xf32>, %q: memref<?xf8E4M3FN>, %o: memref<?xf16>)
    attributes {nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>} {
  %i = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %v = vector.load %x[%i] : memref<?xf32>, vector<2xf32>
  %p = arith.truncf %v : vector<2xf32> to vector<2xf8E4M3FN>
  vector.store %p, %q[%i] : memref<?xf8E4M3FN>, vector<2xf8E4M3FN>
  %l = vector.load %q[%i] : memref<?xf8E4M3FN>, vector<2xf8E4M3FN>
  %h = arith.extf %l : vector<2xf8E4M3FN> to vector<2xf16>
  vector.store %h, %o[%i] : memref<?xf16>, vector<2xf16>
  func.return
}
"""

SCALAR_PAIRS = """
func.func @scalar_pairs(%x: memref<?xf32>, %q: memref<?xf8E4M3FN>, %o: memref<?xf32>)
    attributes {nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>} {
  %i = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %c1 = arith.constant 1 : index
  %j = arith.addi %i, %c1 : index
  %a = memref.load %x[%i] : memref<?xf32>
  %b = memref.load %x[%j] : memref<?xf32>
  %qa = arith.truncf %a : f32 to f8E4M3FN
  memref.store %qa, %q[%i] : memref<?xf8E4M3FN>
  %qb = arith.truncf %b : f32 to f8E4M3FN
  memref.store %qb, %q[%j] : memref<?xf8E4M3FN>
  %wa = arith.extf %qa : f8E4M3FN to f32
  %wb = arith.extf %qb : f8E4M3FN to f32
  %s = arith.addf %wa, %wb : f32
  memref.store %s, %o[%i] : memref<?xf32>
  func.return
}
"""

ARITH = """
func.func @arith(%q: memref<?xf8E5M2>)
    attributes {nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>} {
  %i = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %a = memref.load %q[%i] : memref<?xf8E5M2>
  %two = arith.constant 2.0 : f8E5M2
  %s = arith.mulf %a, %two : f8E5M2
  %z = arith.constant 0.0 : f8E5M2
  %c = arith.cmpf ogt, %s, %z : f8E5M2
  %m = arith.select %c, %s, %z : f8E5M2
  memref.store %m, %q[%i] : memref<?xf8E5M2>
  func.return
}
"""


def test_storage_is_i8_and_casts_use_the_nvvm_conversions():
    ir = emit_llvm_ir(parse(CASTS))
    assert "ptr addrspace(1) noalias align 16" in ir
    assert "store i8" in ir
    assert ir.count('call i16 @"llvm.nvvm.ff.to.e4m3x2.rn"') == 2  # f32 and f16 (extended to f32)
    assert ir.count('call i16 @"llvm.nvvm.ff.to.e5m2x2.rn"') == 2
    assert "@\"llvm.nvvm.e4m3x2.to.f16x2.rn\"" in ir and "@\"llvm.nvvm.e5m2x2.to.f16x2.rn\"" in ir
    assert "fpext half" in ir and "fpext bfloat" in ir  # the 16-bit sources widen exactly
    # torch's rule: NaN keeps its sign (0x7F | sign), e5m2 overflow at 61440 is inf (0x7C | sign)
    assert "fcmp uno float" in ir and "or i8" in ir
    assert "0x40ee000000000000" in ir  # 61440.0


@requires_ptxas
def test_casts_assemble_for_sm_90a():
    ptx = emit_ptx(parse(CASTS), "sm_90a")
    assert "cvt.rn.satfinite.e4m3x2.f32" in ptx and "cvt.rn.satfinite.e5m2x2.f32" in ptx
    assert "cvt.rn.f16x2.e4m3x2" in ptx and "cvt.rn.f16x2.e5m2x2" in ptx
    assert "st.global.b8" in ptx or "st.global.u8" in ptx
    assemble(ptx, "sm_90a")


@requires_ptxas
def test_a_vector_pair_is_one_cvt_each_way():
    ptx = emit_ptx(parse(PAIRS), "sm_90a")
    assert ptx.count("cvt.rn.satfinite.e4m3x2.f32") == 1
    assert ptx.count("cvt.rn.f16x2.e4m3x2") == 1
    assemble(ptx, "sm_90a")


@requires_ptxas
def test_two_scalar_conversions_share_a_cvt():
    ptx = emit_ptx(parse(SCALAR_PAIRS), "sm_90a")
    assert ptx.count("cvt.rn.satfinite.e4m3x2.f32") == 1
    assert ptx.count("cvt.rn.f16x2.e4m3x2") == 1
    assemble(ptx, "sm_90a")


@requires_ptxas
def test_arithmetic_on_fp8_is_computed_in_f32():
    ir = emit_llvm_ir(parse(ARITH))
    assert re.search(r"fmul (contract )?float", ir) and "fcmp ogt float" in ir
    assert "store i8 " in ir
    assert "i8 64" in ir  # 2.0 in e5m2 is code 0x40
    assemble(emit_ptx(parse(ARITH), "sm_90a"), "sm_90a")


def test_sm_80_is_refused_naming_the_feature():
    with pytest.raises(TranslationError, match=r"fp8 .*need sm_89 or newer.*sm_80"):
        emit_ptx(parse(CASTS), "sm_80")


@requires_ptxas
def test_sm_89_has_them_from_ptx_8_1():
    ptx = emit_ptx(parse(PAIRS), "sm_89")
    assert ".version 8.1" in ptx
    assemble(ptx, "sm_89")
