"""The Hopper `nvvm` ops (dialects/nvvm/hopper.py) through the NVPTX translation and ptxas:
a warp-specialized TMA ring in miniature (mbarrier init + fence, a tensor map passed as a
grid-constant parameter, arrive.expect_tx, a 2-D TMA load completing on the mbarrier,
setmaxnreg per role, elect.sync, try_wait.parity, stmatrix, a named barrier, a TMA store and
its bulk group), and the RS form of wgmma."""

from __future__ import annotations

import pytest
from nvptx_testing import parse, requires_ptxas
from tilec.targets.nvptx import assemble, emit_ptx
from xdsl.utils.exceptions import VerifyException

HOPPER = """
"memref.global"() <{sym_name = "smem", sym_visibility = "public", type = memref<0xi8, 3>, initial_value,
                    alignment = 1024 : i64}> : () -> ()
func.func @k(%tmap: !llvm.ptr {llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %out: memref<?xf32>)
    attributes {nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c7 = arith.constant 7 : i32
  %c256 = arith.constant 256 : i32
  %tx = arith.constant 16384 : i32
  %smem = memref.get_global @smem : memref<0xi8, 3>
  %i0 = arith.constant 0 : index
  %i1024 = arith.constant 1024 : index
  %barm = memref.view %smem[%i0][] : memref<0xi8, 3> to memref<1xi64, 3>
  %tilem = memref.view %smem[%i1024][] : memref<0xi8, 3> to memref<8192xf16, 3>
  %bar = builtin.unrealized_conversion_cast %barm : memref<1xi64, 3> to !llvm.ptr<3>
  %tile = builtin.unrealized_conversion_cast %tilem : memref<8192xf16, 3> to !llvm.ptr<3>
  %tid = nvvm.read.ptx.sreg.tid.x : i32
  %first = arith.cmpi eq, %tid, %c0 : i32
  scf.if %first {
    "nvvm.mbarrier.init.shared"(%bar, %c1) : (!llvm.ptr<3>, i32) -> ()
    nvvm.fence.mbarrier.init
    scf.yield
  }
  "nvvm.barrier"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> ()
  %wg = arith.shrui %tid, %c7 : i32
  %producer = arith.cmpi eq, %wg, %c2 : i32
  scf.if %producer {
    "nvvm.setmaxregister"() <{regCount = 40 : i32, action = #nvvm.action<decrease>}> : () -> ()
    %lead = nvvm.elect.sync -> i1
    scf.if %lead {
      "nvvm.prefetch.tensormap"(%tmap) : (!llvm.ptr) -> ()
      "nvvm.mbarrier.arrive.expect_tx.shared"(%bar, %tx) : (!llvm.ptr<3>, i32) -> ()
      "nvvm.cp.async.bulk.tensor.shared.cluster.global"(%tile, %tmap, %c0, %tid, %bar) <{operandSegmentSizes = array<i32: 1, 1, 2, 1, 0, 0>}> : (!llvm.ptr<3>, !llvm.ptr, i32, i32, !llvm.ptr<3>) -> ()
      scf.yield
    }
    scf.yield
  } else {
    "nvvm.setmaxregister"() <{regCount = 232 : i32, action = #nvvm.action<increase>}> : () -> ()
    "nvvm.mbarrier.try_wait.parity.shared"(%bar, %c0, %c0) : (!llvm.ptr<3>, i32, i32) -> ()
    "nvvm.stmatrix"(%tile, %tid, %tid, %tid, %tid) <{layout = #nvvm.mma_layout<row>}> : (!llvm.ptr<3>, i32, i32, i32, i32) -> ()
    "nvvm.fence.proxy"() <{kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}> : () -> ()
    "nvvm.barrier"(%c1, %c256) <{operandSegmentSizes = array<i32: 1, 1>}> : (i32, i32) -> ()
    "nvvm.cp.async.bulk.tensor.global.shared.cta"(%tmap, %tile, %c0, %c0) : (!llvm.ptr, !llvm.ptr<3>, i32, i32) -> ()
    nvvm.cp.async.bulk.commit.group
    "nvvm.cp.async.bulk.wait_group"() <{group = 0 : i32, read}> : () -> ()
    scf.yield
  }
  func.return
}
"""


def test_hopper_ops_round_trip():
    text = str(parse(HOPPER))
    assert "#nvvm.action<decrease>" in text and "nvvm.grid_constant" in text
    assert str(parse(text)) == text


def test_hopper_ops_ptx():
    ptx = emit_ptx(parse(HOPPER), "sm_90a")
    assert ".param .align 64 .b8 k_param_0[128]" in ptx  # the tensor map, in place
    for line in ("mbarrier.init.shared.b64", "fence.mbarrier_init.release.cluster;", "bar.sync \t0;",
                 "setmaxnreg.dec.sync.aligned.u32 \t40;", "setmaxnreg.inc.sync.aligned.u32 \t232;",
                 "elect.sync", "prefetch", "mbarrier.arrive.expect_tx.shared.b64",
                 "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                 "mbarrier.try_wait.parity.shared.b64", "stmatrix.sync.aligned.m8n8.x4.shared.b16",
                 "fence.proxy.async.shared::cta;", "bar.sync \t1, 256;",
                 "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group", "cp.async.bulk.commit_group;",
                 "cp.async.bulk.wait_group.read \t0;"):
        assert line in ptx, line
    assert "cvta.param" in ptx and ".local" not in ptx  # the map is read where it was passed


@requires_ptxas
def test_hopper_ops_assemble_without_warnings():
    _, report = assemble(emit_ptx(parse(HOPPER), "sm_90a"), "sm_90a")
    assert "C75" not in report.log, report.log  # setmaxnreg honoured (no C7508)


STRUCT = "!llvm.struct<(" + ", ".join(["f32"] * 32) + ")>"
REGS = "!llvm.struct<(i32, i32, i32, i32)>"
RS = f"""
"memref.global"() <{{sym_name = "tiles", sym_visibility = "private", type = memref<8192xf16, 3>,
                    initial_value, alignment = 1024 : i64}}> : () -> ()
func.func @rs(%a: {REGS}, %desc: i64, %out: memref<?xf32>) attributes {{nvvm.maxntid = array<i32: 128, 1, 1>}} {{
  nvvm.wgmma.fence.aligned
  %d0 = "nvvm.wgmma.mma_async"(%a, %desc) <{{shape = #nvvm.shape<m = 64, n = 64, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}}> : ({REGS}, i64) -> {STRUCT}
  %d1 = "nvvm.wgmma.mma_async"(%a, %desc, %d0) <{{shape = #nvvm.shape<m = 64, n = 64, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<row>, operandSegmentSizes = array<i32: 1, 1, 1, 0>}}> : ({REGS}, i64, {STRUCT}) -> {STRUCT}
  nvvm.wgmma.commit.group.sync.aligned
  %d = "nvvm.wgmma.wait.group.sync.aligned"(%d1) <{{group = 0 : i64}}> : ({STRUCT}) -> {STRUCT}
  %v = "llvm.extractvalue"(%d) <{{position = array<i64: 5>}}> : ({STRUCT}) -> f32
  %c0 = arith.constant 0 : index
  memref.store %v, %out[%c0] : memref<?xf32>
  func.return
}}
"""


def test_wgmma_register_a_ptx():
    lines = [line.strip() for line in emit_ptx(parse(RS), "sm_90a").splitlines()]
    first, second = (line for line in lines if line.startswith("wgmma.mma_async"))
    # RS: A is {4 b32 registers}; no imm-trans-a, so 4 trailing immediates
    assert "}, {%r" in first and first.endswith(", 0, 1, 1, 0;")
    assert second.endswith(", 1, 1, 1, 1;")


def test_register_a_must_be_k_major():
    bad = RS.replace("layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>",
                     "layoutA = #nvvm.mma_layout<col>, layoutB = #nvvm.mma_layout<col>")
    with pytest.raises(VerifyException, match="register A operands are K-major"):
        parse(bad)


@pytest.mark.parametrize("op, message", [
    ('"nvvm.setmaxregister"() <{regCount = 30 : i32, action = #nvvm.action<increase>}> : () -> ()', "multiple of 8"),
    ('"nvvm.stmatrix"(%s, %m, %m, %m) <{layout = #nvvm.mma_layout<row>}> : (!llvm.ptr<3>, i32, i32, i32) -> ()', "1, 2 or 4 sources"),
    ('"nvvm.cp.async.bulk.tensor.shared.cluster.global"(%s, %s, %m, %s) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>}> : (!llvm.ptr<3>, !llvm.ptr<3>, i32, !llvm.ptr<3>) -> ()', "tmaDescriptor must be"),
])  # fmt: skip
def test_hopper_verifiers(op, message):
    text = f"""func.func @bad(%m: i32, %s: !llvm.ptr<3>, %p: !llvm.ptr) {{
      {op}
      func.return
    }}"""
    with pytest.raises(VerifyException, match=message):
        parse(text)
