"""Thread-level IR → LLVM IR → PTX: each case checks the instructions the backend is
responsible for, and assembles the PTX with ptxas where one is installed."""

from __future__ import annotations

import pytest
from nvptx_testing import parse, requires_ptxas
from tilec.targets.nvptx import (
    PtxasError,
    TranslationError,
    assemble,
    emit_llvm_ir,
    emit_ptx,
    kernel_names,
)

# A 16-byte vectorized elementwise add with a bounds check: the hot path of every
# memory-bound kernel. Kernel memrefs must become noalias, 16-byte aligned global pointers.
VECTOR_ADD = """
func.func @vector_add(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32, 1>, %n: index)
    attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>, nvvm.minctasm = 2 : i32} {
  %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %bid = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
  %bdim = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
  %c4 = arith.constant 4 : index
  %base = arith.muli %bid, %bdim overflow<nsw> : index
  %t = arith.addi %base, %tid overflow<nsw> : index
  %i = arith.muli %t, %c4 overflow<nsw> : index
  %in = arith.cmpi slt, %i, %n : index
  scf.if %in {
    %x = vector.load %a[%i] : memref<?xf32>, vector<4xf32>
    %y = vector.load %b[%i] : memref<?xf32>, vector<4xf32>
    %s = arith.addf %x, %y : vector<4xf32>
    vector.store %s, %c[%i] : memref<?xf32, 1>, vector<4xf32>
  }
  func.return
}
"""


def test_vector_add_llvm_ir():
    ir = emit_llvm_ir(parse(VECTOR_ADD))
    assert "define ptx_kernel void" in ir
    assert "ptr addrspace(1) noalias align 16" in ir
    assert "load <4 x float>, ptr addrspace(1)" in ir and "align 16" in ir
    assert '!"maxntidx", i32 128' in ir and '!"minctasm", i32 2' in ir
    assert "getelementptr inbounds float" in ir


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_vector_add_ptx(arch):
    ptx = emit_ptx(parse(VECTOR_ADD), arch)
    assert f".target {arch}" in ptx
    assert kernel_names(ptx) == ["vector_add"]
    assert ".maxntid 128, 1, 1" in ptx and ".minnctapersm 2" in ptx
    # noalias + read-only: the loads go through the non-coherent (texture) path
    assert ptx.count("ld.global.nc.v4.b32") == 2 and "st.global.v4.b32" in ptx


@requires_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_vector_add_assembles(arch):
    cubin, report = assemble(emit_ptx(parse(VECTOR_ADD), arch), arch)
    assert cubin[:4] == b"\x7fELF"
    assert report["vector_add"].registers > 0 and not report["vector_add"].spills


def test_index_bitwidth_32():
    ir = emit_llvm_ir(parse(VECTOR_ADD), index_bitwidth=32)
    assert "i32 %" in ir and "i64" not in ir.split("!nvvm")[0]


# Block sum: warp butterfly with nvvm.shfl.sync in an scf.for with iter_args, warp partials
# through a static shared-memory global and a barrier, then an atomic add of the total.
BLOCK_REDUCE = """
"memref.global"() <{sym_name = "partials", sym_visibility = "private", type = memref<32xf32, 3>,
                    initial_value, alignment = 16 : i64}> : () -> ()
func.func @block_reduce(%x: memref<?xf32>, %out: memref<?xf32>) attributes {nvvm.kernel} {
  %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %lane = "gpu.lane_id"() : () -> index
  %v = memref.load %x[%tid] : memref<?xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c32 = arith.constant 32 : index
  %full = arith.constant -1 : i32
  %clamp = arith.constant 31 : i32
  %one = arith.constant 1 : i32
  %sum = scf.for %k = %c0 to %c5 step %c1 iter_args(%acc = %v) -> (f32) {
    %k32 = arith.index_cast %k : index to i32
    %off = arith.shli %one, %k32 : i32
    %o = "nvvm.shfl.sync"(%full, %acc, %off, %clamp) <{kind = #nvvm<shfl_kind bfly>}>
        : (i32, f32, i32, i32) -> f32
    %r = arith.addf %acc, %o : f32
    scf.yield %r : f32
  }
  %smem = memref.get_global @partials : memref<32xf32, 3>
  %warp = arith.divui %tid, %c32 : index
  %first = arith.cmpi eq, %lane, %c0 : index
  scf.if %first {
    memref.store %sum, %smem[%warp] : memref<32xf32, 3>
  }
  nvvm.barrier0
  %lead = arith.cmpi eq, %tid, %c0 : index
  scf.if %lead {
    %p = memref.load %smem[%c1] : memref<32xf32, 3>
    %t = arith.addf %sum, %p : f32
    %old = "memref.atomic_rmw"(%t, %out, %c0) <{kind = 0 : i64}> : (f32, memref<?xf32>, index) -> f32
  }
  func.return
}
"""


def test_block_reduce_ptx():
    ptx = emit_ptx(parse(BLOCK_REDUCE), "sm_90a")
    assert ptx.count("shfl.sync.bfly.b32") == 5  # the constant-trip loop is unrolled
    assert "bar.sync \t0" in ptx
    assert ".shared .align 16 .b8 partials[128]" in ptx
    assert "st.shared" in ptx and "ld.shared" in ptx
    assert "atom.global.add.f32" in ptx


@requires_ptxas
def test_block_reduce_assembles():
    _, report = assemble(emit_ptx(parse(BLOCK_REDUCE), "sm_80"), "sm_80")
    assert report["block_reduce"].shared_bytes == 128


# Tensor-core path of sm_80: cp.async a 16-byte chunk into shared memory (memrefs are
# addressed through unrealized_conversion_cast + llvm.getelementptr), ldmatrix.x4 the A
# fragment and issue one mma.sync m16n8k16 f16 → f32.
MMA = """
"memref.global"() <{sym_name = "tile", sym_visibility = "private", type = memref<256xf16, 3>,
                    initial_value, alignment = 128 : i64}> : () -> ()
func.func @mma(%a: memref<?xf16>, %out: memref<?xf32>) attributes {nvvm.kernel} {
  %lane = "gpu.lane_id"() : () -> index
  %l32 = arith.index_cast %lane : index to i32
  %c8 = arith.constant 8 : i32
  %e = arith.muli %l32, %c8 : i32
  %smem = memref.get_global @tile : memref<256xf16, 3>
  %sbase = builtin.unrealized_conversion_cast %smem : memref<256xf16, 3> to !llvm.ptr<3>
  %gbase = builtin.unrealized_conversion_cast %a : memref<?xf16> to !llvm.ptr<1>
  %dst = "llvm.getelementptr"(%sbase, %e) <{elem_type = f16, rawConstantIndices = array<i32: -2147483648>, noWrapFlags = 0 : i32}> : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>
  %src = "llvm.getelementptr"(%gbase, %e) <{elem_type = f16, rawConstantIndices = array<i32: -2147483648>, noWrapFlags = 0 : i32}> : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>
  "nvvm.cp.async.shared.global"(%dst, %src) <{size = 16 : i32, modifier = #nvvm.load_cache_modifier<cg>}> : (!llvm.ptr<3>, !llvm.ptr<1>) -> ()
  nvvm.cp.async.commit.group
  "nvvm.cp.async.wait.group"() <{n = 0 : i32}> : () -> ()
  nvvm.barrier0
  %frag = "nvvm.ldmatrix"(%dst) <{num = 4 : i32, layout = #nvvm.mma_layout<row>}> : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
  %r0 = "llvm.extractvalue"(%frag) <{position = array<i64: 0>}> : (!llvm.struct<(i32, i32, i32, i32)>) -> i32
  %r1 = "llvm.extractvalue"(%frag) <{position = array<i64: 1>}> : (!llvm.struct<(i32, i32, i32, i32)>) -> i32
  %a0 = "llvm.bitcast"(%r0) : (i32) -> vector<2xf16>
  %a1 = "llvm.bitcast"(%r1) : (i32) -> vector<2xf16>
  %z = arith.constant 0.0 : f32
  %d = "nvvm.mma.sync"(%a0, %a1, %a0, %a1, %a0, %a1, %z, %z, %z, %z) <{shape = #nvvm.shape<m = 16, n = 8, k = 16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, operandSegmentSizes = array<i32: 4, 2, 4>}> : (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
  %d0 = "llvm.extractvalue"(%d) <{position = array<i64: 0>}> : (!llvm.struct<(f32, f32, f32, f32)>) -> f32
  memref.store %d0, %out[%lane] : memref<?xf32>
  func.return
}
"""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_mma_ptx(arch):
    ptx = emit_ptx(parse(MMA), arch)
    for line in ("cp.async.cg.shared.global", "cp.async.commit_group", "cp.async.wait_group",
                 "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                 "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"):  # fmt: skip
        assert line in ptx
    if pytest.importorskip("shutil").which("ptxas"):
        assemble(ptx, arch)


# Accurate math has no libdevice: exp/log/tanh/erf/pow are expansions over ex2/lg2.approx;
# `fastmath<afn>` or fast_math=True selects the .ftz and tanh.approx forms.
MATH = """
func.func @math(%p: memref<?xf32>, %h: memref<?xf16>) attributes {nvvm.kernel} {
  %i = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %x = memref.load %p[%i] : memref<?xf32>
  %e = math.exp %x : f32
  %l = math.log %e : f32
  %t = math.tanh %l : f32
  %r = math.rsqrt %t : f32
  %f = math.erf %r : f32
  %w = math.powf %f, %x : f32
  %s = math.sqrt %w : f32
  %a = math.absf %s : f32
  %c = math.copysign %a, %x : f32
  %m = arith.maximumf %c, %x : f32
  memref.store %m, %p[%i] : memref<?xf32>
  %y = vector.load %h[%i] : memref<?xf16>, vector<8xf16>
  %y2 = math.exp2 %y : vector<8xf16>
  %y3 = math.tanh %y2 fastmath<afn> : vector<8xf16>
  vector.store %y3, %h[%i] : memref<?xf16>, vector<8xf16>
  func.return
}
"""


def test_math_accurate_and_fast():
    accurate = emit_ptx(parse(MATH), "sm_90a")
    assert "ex2.approx.f32" in accurate and "lg2.approx.f32" in accurate
    assert "sqrt.rn.f32" in accurate and "max.NaN.f32" in accurate
    assert accurate.count("tanh.approx.f32") == 8  # only the f16 vector op has afn
    assert "ld.global.v4.b32" in accurate  # vector<8xf16> is one 16-byte load
    fast = emit_ptx(parse(MATH), "sm_90a", fast_math=True)
    assert "ex2.approx.ftz.f32" in fast and "rsqrt.approx.ftz.f32" in fast
    assert fast.count("tanh.approx.f32") == 9
    if pytest.importorskip("shutil").which("ptxas"):
        assemble(accurate, "sm_90a")
        assemble(fast, "sm_90a")


# Control flow and integer semantics: scf.while, scf.if with results, floor/ceil division,
# unordered float compares and casts; a per-thread array that must stay in registers;
# dynamic shared memory carved with memref.view; a device function call and inline asm.
CONTROL = """
"memref.global"() <{sym_name = "dyn", sym_visibility = "public", type = memref<0xi8, 3>,
                    initial_value}> : () -> ()
func.func private @twice(%v: i32) -> i32 {
  %r = arith.addi %v, %v : i32
  func.return %r : i32
}
func.func @control(%p: memref<?xi32>, %n: i32) attributes {nvvm.kernel} {
  %i = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %three = arith.constant 3 : i32
  %w = scf.while (%k = %n) : (i32) -> i32 {
    %go = arith.cmpi sgt, %k, %three : i32
    scf.condition(%go) %k : i32
  } do {
  ^bb0(%k2: i32):
    %next = arith.floordivsi %k2, %three : i32
    scf.yield %next : i32
  }
  %q = arith.ceildivsi %w, %three : i32
  %f = arith.sitofp %q : i32 to f32
  %lt = arith.cmpf ult, %f, %f : f32
  %sel = scf.if %lt -> (i32) {
    scf.yield %q : i32
  } else {
    %d = func.call @twice(%q) : (i32) -> i32
    scf.yield %d : i32
  }
  %arr = memref.alloca() : memref<4xi32>
  memref.store %sel, %arr[%c0] : memref<4xi32>
  memref.store %n, %arr[%c1] : memref<4xi32>
  %a0 = memref.load %arr[%c0] : memref<4xi32>
  %a1 = memref.load %arr[%c1] : memref<4xi32>
  %sum = arith.addi %a0, %a1 : i32
  %dyn = memref.get_global @dyn : memref<0xi8, 3>
  %c64 = arith.constant 64 : index
  %view = memref.view %dyn[%c64][%c64] : memref<0xi8, 3> to memref<?xi32, 3>
  memref.store %sum, %view[%i] : memref<?xi32, 3>
  %back = memref.load %view[%c1] : memref<?xi32, 3>
  %asm = llvm.inline_asm has_side_effects "add.s32 $0, $1, 1;", "=r,r" %back : (i32) -> i32
  memref.store %asm, %p[%i] : memref<?xi32>
  func.return
}
"""


def test_control_flow_ptx():
    ptx = emit_ptx(parse(CONTROL), "sm_90a")
    assert ".extern .shared .align 128 .b8 dyn[]" in ptx
    assert ".local" not in ptx  # the per-thread array was promoted to registers
    assert "add.s32" in ptx and "st.shared.b32" in ptx
    assert "mul.hi.s32" in ptx  # floordivsi / ceildivsi by 3, strength-reduced
    if pytest.importorskip("shutil").which("ptxas"):
        assemble(ptx, "sm_90a")


# Hopper-only synchronization: mbarrier init/arrive/wait loop and the async-proxy fence.
HOPPER = """
"memref.global"() <{sym_name = "bar", sym_visibility = "private", type = memref<1xi64, 3>,
                    initial_value, alignment = 8 : i64}> : () -> ()
func.func @hopper() attributes {nvvm.kernel} {
  %m = memref.get_global @bar : memref<1xi64, 3>
  %p = builtin.unrealized_conversion_cast %m : memref<1xi64, 3> to !llvm.ptr<3>
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  "nvvm.mbarrier.init.shared"(%p, %one) : (!llvm.ptr<3>, i32) -> ()
  "nvvm.fence.proxy"() <{kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}> : () -> ()
  %tok = "nvvm.mbarrier.arrive.shared"(%p) : (!llvm.ptr<3>) -> i64
  "nvvm.mbarrier.try_wait.parity.shared"(%p, %zero, %zero) : (!llvm.ptr<3>, i32, i32) -> ()
  func.return
}
"""


def test_hopper_sync_ptx():
    ptx = emit_ptx(parse(HOPPER), "sm_90a")
    assert "mbarrier.init.shared.b64" in ptx and "mbarrier.arrive.shared.b64" in ptx
    assert "mbarrier.try_wait.parity.shared.b64" in ptx
    assert "fence.proxy.async.shared::cta" in ptx
    if pytest.importorskip("shutil").which("ptxas"):
        assemble(ptx, "sm_90a")


def test_unsupported_op_is_named():
    module = parse("""
    func.func @k(%x: f32) attributes {nvvm.kernel} {
      %s = math.sin %x : f32
      func.return
    }""")
    with pytest.raises(TranslationError, match="math.sin"):
        emit_llvm_ir(module)


def test_unknown_arch_rejected():
    with pytest.raises(ValueError, match="sm_91"):
        emit_ptx(parse(VECTOR_ADD), "sm_91")


@requires_ptxas
def test_ptxas_error_carries_message():
    ptx = emit_ptx(parse(VECTOR_ADD), "sm_90a").replace(
        "st.global.v4.b32", "st.global.v9.b32"
    )
    with pytest.raises(PtxasError, match="error"):
        assemble(ptx, "sm_90a")


# Warpgroup mma (sm_90a): a descriptor from a shared tile's address (addr >> 4 in bits 0-13,
# LBO 16 B, SBO 1024 B, 128-byte swizzle in bits 62-63, HOPPER_KERNELS.md §1.2), two chained
# m64n64k16 wgmmas (the first without accumulator inputs: scale-d 0), commit, and a wait that
# carries the accumulators so that the stores stay after it.
WGMMA = """
"memref.global"() <{sym_name = "tiles", sym_visibility = "private", type = memref<8192xf16, 3>,
                    initial_value, alignment = 1024 : i64}> : () -> ()
func.func @wgmma(%out: memref<?xf32>) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
  %smem = memref.get_global @tiles : memref<8192xf16, 3>
  %p = builtin.unrealized_conversion_cast %smem : memref<8192xf16, 3> to !llvm.ptr<3>
  %addr = llvm.ptrtoint %p : !llvm.ptr<3> to i64
  %c4 = arith.constant 4 : i64
  %mask = arith.constant 16383 : i64
  %a14 = arith.shrui %addr, %c4 : i64
  %start = arith.andi %a14, %mask : i64
  %fields = arith.constant 4611686293305360384 : i64
  %desc = arith.ori %start, %fields : i64
  nvvm.wgmma.fence.aligned
  %d0 = "nvvm.wgmma.mma_async"(%desc, %desc) <{shape = #nvvm.shape<m = 64, n = 64, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (i64, i64) -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
  %d1 = "nvvm.wgmma.mma_async"(%desc, %desc, %d0) <{shape = #nvvm.shape<m = 64, n = 64, k = 16>, typeA = #nvvm.mma_type<f16>, typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<row>, operandSegmentSizes = array<i32: 1, 1, 1, 0>}> : (i64, i64, !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
  nvvm.wgmma.commit.group.sync.aligned
  %d = "nvvm.wgmma.wait.group.sync.aligned"(%d1) <{group = 0 : i64}> : (!llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
  %v0 = "llvm.extractvalue"(%d) <{position = array<i64: 0>}> : (!llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>) -> f32
  %v31 = "llvm.extractvalue"(%d) <{position = array<i64: 31>}> : (!llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>) -> f32
  %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %s = arith.addf %v0, %v31 : f32
  memref.store %s, %out[%t] : memref<?xf32>
  func.return
}
"""


def test_wgmma_ptx():
    ptx = emit_ptx(parse(WGMMA), "sm_90a")
    lines = [line.strip() for line in ptx.splitlines()]
    assert "wgmma.fence.sync.aligned;" in lines and "wgmma.commit_group.sync.aligned;" in lines
    first, second = (line for line in lines if line.startswith("wgmma.mma_async"))
    assert first.startswith("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {") and first.endswith(", 0, 1, 1, 0, 0;")
    assert second.endswith(", 1, 1, 1, 0, 1;")  # accumulate; B N-major (imm-trans-b 1)
    wait = lines.index("wgmma.wait_group.sync.aligned 0;")
    store = next(i for i, line in enumerate(lines) if line.startswith("st.global"))
    assert wait < store
    if pytest.importorskip("shutil").which("ptxas"):
        _, report = assemble(ptx, "sm_90a")
        assert "C75" not in report.log, report.log  # no serialization warnings (C7510/C7511/C7519)


def _masked_init_wgmma() -> str:
    """One accumulating m64n64k16 wgmma whose 32 accumulator inputs are two values (a mask's 0
    and -inf, as a masked attention score starts), each standing in sixteen places."""
    acc = "!llvm.struct<(" + ", ".join(["f32"] * 32) + ")>"
    inserts = [f"%acc{i + 1} = llvm.insertvalue %{'z' if i % 2 else 'm'}, %acc{i}[{i}] : {acc}" for i in range(32)]
    return WGMMA.replace("  nvvm.wgmma.fence.aligned\n", "\n".join([
        "  %t0 = \"gpu.thread_id\"() <{dimension = #gpu<dim x>}> : () -> index",
        "  %ti = arith.index_cast %t0 : index to i32",
        "  %one = arith.constant 1 : i32",
        "  %bit = arith.andi %ti, %one : i32",
        "  %keep = arith.cmpi eq, %bit, %one : i32",
        "  %zero = arith.constant 0.0 : f32",
        "  %ninf = arith.constant 0xFF800000 : f32",
        "  %m = arith.select %keep, %zero, %ninf : f32",
        "  %z = arith.select %keep, %ninf, %zero : f32",
        f"  %acc0 = llvm.mlir.undef : {acc}",
        *("  " + line for line in inserts),
        "  nvvm.wgmma.fence.aligned", ""])).replace(
        '%d0 = "nvvm.wgmma.mma_async"(%desc, %desc) <{shape = #nvvm.shape<m = 64, n = 64, k = 16>, typeA = #nvvm.mma_type<f16>, '
        'typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, '
        'operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (i64, i64)',
        '%d0 = "nvvm.wgmma.mma_async"(%desc, %desc, %acc32) <{shape = #nvvm.shape<m = 64, n = 64, k = 16>, typeA = #nvvm.mma_type<f16>, '
        'typeB = #nvvm.mma_type<f16>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, '
        f'operandSegmentSizes = array<i32: 1, 1, 1, 0>}}> : (i64, i64, {acc})')


def test_wgmma_accumulator_inputs_get_registers_before_the_fence():
    """An input standing in several accumulator places is copied into a register of its own
    for each; the copies must come before wgmma.fence, not between it and the wgmma, where
    ptxas injects a warpgroup.arrive of its own (C7519: the wgmmas serialize)."""
    ptx = emit_ptx(parse(_masked_init_wgmma()), "sm_90a")
    lines = [line.strip() for line in ptx.splitlines()]
    fence = lines.index("wgmma.fence.sync.aligned;")
    first = next(i for i, line in enumerate(lines) if line.startswith("wgmma.mma_async"))
    assert lines[first].endswith(", 1, 1, 1, 0, 0;")  # accumulating: scale-d 1
    between = [line for line in lines[fence + 1:first] if not line.startswith("//")]
    assert not any(line.startswith("mov") for line in between), between
    if pytest.importorskip("shutil").which("ptxas"):
        _, report = assemble(ptx, "sm_90a")
        assert "C75" not in report.log, report.log
