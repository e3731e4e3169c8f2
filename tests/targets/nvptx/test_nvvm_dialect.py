"""The nvvm dialect: upstream spellings parse and print back, and verifiers reject bad
operand types."""

from __future__ import annotations

import pytest
from nvptx_testing import parse
from tilec.dialects import nvvm
from tilec.targets.nvptx.ptxas import parse_report
from xdsl.utils.exceptions import VerifyException

ROUND_TRIP = """
func.func @ops(%m: i32, %x: f32, %s: !llvm.ptr<3>, %g: !llvm.ptr<1>) {
  %t = nvvm.read.ptx.sreg.tid.x : i32
  %v = "nvvm.shfl.sync"(%m, %x, %t, %m) <{kind = #nvvm<shfl_kind down>}> : (i32, f32, i32, i32) -> f32
  %r = "nvvm.redux.sync"(%t, %m) <{kind = #nvvm<redux_kind umax>}> : (i32, i32) -> i32
  %y = nvvm.rcp.approx.ftz.f %x : f32
  "nvvm.fence.proxy"() <{kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}> : () -> ()
  "nvvm.cp.async.shared.global"(%s, %g) <{size = 16 : i32, modifier = #nvvm.load_cache_modifier<cg>}> : (!llvm.ptr<3>, !llvm.ptr<1>) -> ()
  func.return
}
"""


def test_round_trip():
    text = str(parse(ROUND_TRIP))
    assert "#nvvm<shfl_kind down>" in text and "#nvvm.proxy_kind<async.shared>" in text
    assert str(parse(text)) == text


@pytest.mark.parametrize(
    "op, message",
    [
        ('"nvvm.cp.async.shared.global"(%s, %g) <{size = 8 : i32, modifier = #nvvm.load_cache_modifier<cg>}> : (!llvm.ptr<3>, !llvm.ptr<1>) -> ()', "cg modifier needs size 16"),
        ('"nvvm.cp.async.shared.global"(%g, %s) <{size = 16 : i32, modifier = #nvvm.load_cache_modifier<cg>}> : (!llvm.ptr<1>, !llvm.ptr<3>) -> ()', "dst must be"),
        ('%v = "nvvm.shfl.sync"(%m, %l, %m, %m) <{kind = #nvvm<shfl_kind idx>}> : (i32, i64, i32, i32) -> i64', "val must be i32 or f32"),
        ('%v = "nvvm.rcp.approx.ftz.f"(%m) : (i32) -> f32', "f32"),
        ('%v = "nvvm.wgmma.mma_async"(%l, %l) <{shape = #nvvm.shape<m = 64, n = 12, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (i64, i64) -> !llvm.struct<(f32, f32, f32, f32, f32, f32)>', "m64nNk16 with N a multiple of 8"),
        ('%v = "nvvm.wgmma.mma_async"(%l, %l) <{shape = #nvvm.shape<m = 64, n = 8, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<bf16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (i64, i64) -> !llvm.struct<(f32, f32, f32, f32)>', "A and B must both be f16 or both bf16"),
        ('%v = "nvvm.wgmma.mma_async"(%l, %l) <{shape = #nvvm.shape<m = 64, n = 8, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (i64, i64) -> !llvm.struct<(f32, f32)>', "result must be"),
        ('%v = "nvvm.wgmma.wait.group.sync.aligned"(%m) <{group = 0 : i64}> : (i32) -> i64', "the results are the values"),
        ('%v = "nvvm.ldmatrix"(%s) <{num = 4 : i32, layout = #nvvm.mma_layout<row>}> : (!llvm.ptr<3>) -> i32', "result must be"),
    ],
)  # fmt: skip
def test_verifier_rejects(op, message):
    text = f"""func.func @bad(%m: i32, %l: i64, %s: !llvm.ptr<3>, %g: !llvm.ptr<1>) {{
      {op}
      func.return
    }}"""
    with pytest.raises(VerifyException, match=message):
        parse(text)


def test_sreg_ops_cover_ids():
    assert {"tid.x", "ctaid.z", "nctaid.y", "laneid"} <= set(nvvm.SREG_OPS)


def test_ptxas_report_parsing():
    log = """ptxas info    : Compiling entry function 'k' for 'sm_90a'
ptxas info    : Function properties for k
    24 bytes stack frame, 16 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 384 bytes cmem[0]
"""
    k = parse_report(log, "sm_90a")["k"]
    assert (
        k.registers,
        k.stack_frame_bytes,
        k.spill_store_bytes,
        k.spill_load_bytes,
    ) == (255, 24, 16, 8)
    assert k.shared_bytes == 4096 and k.barriers == 1 and k.spills
