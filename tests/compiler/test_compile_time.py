"""Guards for the cold-compile time of a kernel (issue 9: the reference gemm to cubin in ≤ 1.0 s;
tools/compile_time.py measures it). No wall-clock assertions: each test checks the structural
fact that a saving rests on, so that a change undoing it fails here on any machine."""

from __future__ import annotations

import re

from tilec.dialects import context
from tilec.targets.nvptx import compile_llvm_ir, emit_llvm_ir
from xdsl.parser import Parser

STRUCT = "!llvm.struct<(" + ", ".join(["f32"] * 32) + ")>"
WGMMA = f"""
func.func @acc(%desc: i64, %out: memref<?xf32>) attributes {{nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>}} {{
  nvvm.wgmma.fence.aligned
  %d0 = "nvvm.wgmma.mma_async"(%desc, %desc) <{{shape = #nvvm.shape<m = 64, n = 64, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}}> : (i64, i64) -> {STRUCT}
  %d1 = "nvvm.wgmma.mma_async"(%desc, %desc, %d0) <{{shape = #nvvm.shape<m = 64, n = 64, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, operandSegmentSizes = array<i32: 1, 1, 1, 0>}}> : (i64, i64, {STRUCT}) -> {STRUCT}
  nvvm.wgmma.commit.group.sync.aligned
  %d = "nvvm.wgmma.wait.group.sync.aligned"(%d1) <{{group = 0 : i64}}> : ({STRUCT}) -> {STRUCT}
  %v = "llvm.extractvalue"(%d) <{{position = array<i64: 5>}}> : ({STRUCT}) -> f32
  %c0 = arith.constant 0 : index
  memref.store %v, %out[%c0] : memref<?xf32>
  func.return
}}
"""  # fmt: skip


def test_wgmma_accumulators_get_one_named_struct_type():
    """A wgmma accumulator struct is spelled once, as a named type, not in every extractvalue of it
    (the 4096³ gemm's LLVM IR: 1.4 MB → 0.26 MB), and naming it leaves the PTX as it was."""
    module = Parser(context(), WGMMA).parse_module()
    llvm_ir = emit_llvm_ir(module)
    literal = "{" + ", ".join(["float"] * 32) + "}"
    assert llvm_ir.count(literal) == 1, "the 32-float struct is spelled out more than once"
    assert re.search(r'^%"floatx32" = type \{float(, float){31}\}$', llvm_ir, re.M)
    assert llvm_ir.count('%"floatx32"') > 32  # every use names it
    assert compile_llvm_ir(llvm_ir) == compile_llvm_ir(llvm_ir.replace('%"floatx32" = type', "; ").replace(
        '%"floatx32"', literal))
