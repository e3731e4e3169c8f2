"""Verifiers of fp8 gemms: tile.gemm with mma = wgmma takes fp8 only K-major from shared memory
(K % 32), mma.sync not at all; nvvm.wgmma.mma_async takes e4m3 / e5m2 as k32, K-major."""

import pytest
from tilec.dialects import context
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException


def _gemm(attrs: str, a: str = "64x64xf8E4M3FN, shared", b: str = "64x64xf8E4M3FN, shared") -> str:
    return f"""func.func @g() {{
  %n = arith.constant 1 : index
  tile.kernel (%bx) in (%n) threads [128, 1, 1] {{
    %a = tile.alloc : !tile.buffer<{a}>
    %b = tile.alloc : !tile.buffer<{b}>
    %c = tile.alloc : !tile.buffer<64x64xf32, fragment>
    tile.gemm %a, %b, %c {{{attrs}}} : !tile.buffer<{a}>, !tile.buffer<{b}>, !tile.buffer<64x64xf32, fragment>
  }}
  func.return
}}"""


def _verify(text: str) -> None:
    Parser(context(), text).parse_module().verify()


def test_wgmma_fp8_k_major_verifies():
    _verify(_gemm('transpose_b = true, mma = "wgmma"'))


@pytest.mark.parametrize("attrs,message", [
    ('mma = "wgmma"', r"reads fp8 A \[M, K\] and B \[N, K\] \(transpose_b\)"),
    ('transpose_b = true, mma = "m16n8k16"', r"mma = m16n8k16 multiplies f16 or bf16 into"),
])  # fmt: skip
def test_fp8_gemm_rejects(attrs, message):
    with pytest.raises(VerifyException, match=message):
        _verify(_gemm(attrs))


def test_wgmma_fp8_needs_k_multiple_of_32():
    with pytest.raises(VerifyException, match="K % 32 zero"):
        _verify(_gemm('transpose_b = true, mma = "wgmma"', a="64x48xf8E4M3FN, shared", b="64x48xf8E4M3FN, shared"))


_WGMMA = ('%v = "nvvm.wgmma.mma_async"(%l, %l) <{{shape = #nvvm.shape<m = 64, n = 8, k = {k}>, '
          'typeA = #nvvm.mma_type<{ta}>, typeB = #nvvm.mma_type<{tb}>, layoutA = #nvvm.mma_layout<row>, '
          'layoutB = #nvvm.mma_layout<{lb}>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}}> : (i64, i64) -> '
          '!llvm.struct<(f32, f32, f32, f32)>')


def _nvvm(op: str) -> None:
    _verify(f"func.func @w(%l: i64) {{\n  {op}\n  func.return\n}}")


def test_nvvm_wgmma_fp8():
    _nvvm(_WGMMA.format(k=32, ta="e4m3", tb="e5m2", lb="col"))
    with pytest.raises(VerifyException, match="m64nNk32"):
        _nvvm(_WGMMA.format(k=16, ta="e4m3", tb="e4m3", lb="col"))
    with pytest.raises(VerifyException, match="fp8 operands must be K-major"):
        _nvvm(_WGMMA.format(k=32, ta="e5m2", tb="e5m2", lb="row"))
    with pytest.raises(VerifyException, match="an fp8 A needs an fp8 B"):
        _nvvm(_WGMMA.format(k=32, ta="e4m3", tb="f16", lb="col"))
