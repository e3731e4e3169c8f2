"""The warpgroup gemm (wgmma.mma_async m64nNk16, sm_90a): B (and A) read by the tensor cores
from swizzled shared tiles through 64-bit matrix descriptors, or A from registers (RS).
fp8 operands (e4m3 / e5m2) take m64nNk32, both K-major in shared memory (tile-select-mma).
"""

from __future__ import annotations

import dataclasses

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import SSAValue

from tilec.dialects import nvvm, tile

from tilec.dialects.tile.layout import Mode
from tilec.dialects.tile.shared_layout import START_MASK

from tilec.passes.analysis import root_alloc
from tilec.passes.layouts import wgmma_register_a_layout
from tilec.passes.loop_stages import READERS

from .context import Lowerer
from .copy import barrier, scratch_view, transfer
from .memory import View, shared_ptr


def _descriptor(L: Lowerer, view: View, index: list, lbo: int, sbo: int) -> SSAValue:
    """The 64-bit shared-memory matrix descriptor of `view` from element `index` on
    (`tilec.dialects.tile.WgmmaDescriptor`): the unswizzled shared-window address of that
    element, LBO, SBO and the swizzle mode."""
    plain = dataclasses.replace(view, swizzle=0)
    addr = L.emit(llvm.PtrToIntOp(shared_ptr(L, plain, index), i64)).results[0]
    start = L.emit(arith.AndIOp(L.emit(arith.ShRUIOp(addr, L.const(4, i64))).results[0],
                                L.const(START_MASK, i64))).results[0]
    fields = tile.WgmmaDescriptor(0, lbo, sbo, view.swizzle).fields()  # a signed i64 constant
    return L.emit(arith.OrIOp(start, L.const(fields, i64))).results[0]


def _element_delta(view: View, delta: list[int]) -> int | None:
    """How many elements element `base + delta` of `view` lies after element `base` (its
    unswizzled address), when that is one number whatever the run-time offsets: the row strides
    are constants and the chunked last dim starts at a constant column."""
    positions, addr = list(delta), 0
    if view.chunk:
        first = view.offsets[-1]
        if not isinstance(first, int):
            return None
        per_chunk = view.dims[-2] * view.chunk

        def at(col):
            return col // view.chunk * per_chunk + col % view.chunk

        addr = at(first + positions[-1]) - at(first)
        positions = positions[:-1]
    for pos, stride in zip(positions, view.strides):
        if not isinstance(stride, int):
            return None
        addr += pos * stride
    return addr


class _Descriptors:
    """The matrix descriptors of one operand at constant element steps from a base element: the
    base's descriptor once, the others by adding the step's 16-byte count to its start address
    field (an address in the shared window fits the field's 14 bits, so the add never carries
    out of it), instead of a pointer, a shift and a mask per wgmma."""

    def __init__(self, L: Lowerer, view: View, base: list, lbo: int, sbo: int):
        self.L, self.view, self.base, self.lbo, self.sbo = L, view, base, lbo, sbo
        self.first = None

    def at(self, delta: list[int]) -> SSAValue:
        L, view = self.L, self.view
        elements = _element_delta(view, delta)
        nbytes = None if elements is None else elements * tile.element_bytes(view.element_type)
        if nbytes is None or nbytes % 16:
            return _descriptor(L, view, [L.add(b, d) for b, d in zip(self.base, delta)], self.lbo, self.sbo)
        if self.first is None:
            self.first = _descriptor(L, view, self.base, self.lbo, self.sbo)
        if nbytes == 0:
            return self.first
        return L.emit(arith.AddiOp(self.first, L.const(nbytes >> 4, i64))).results[0]


def _zero_filled_before(op: tile.GemmOp) -> bool:
    """Whether the last op before the gemm (in its block) that touches C is `tile.fill C, 0.0`:
    the gemm may then start from D = A·B (scale-d 0) instead of passing zero accumulators, which
    ptxas would copy between the wgmmas of different row blocks and serialize (C7517/C7519)."""
    c = op.c
    prev = op.prev_op
    while prev is not None:
        if any(v is c for inner in prev.walk() for v in inner.operands):
            if not isinstance(prev, tile.FillOp) or prev.dst is not c:
                return False
            value = prev.value.owner
            return isinstance(value, arith.ConstantOp) and isinstance(value.value, FloatAttr) and \
                value.value.value.data == 0.0
        prev = prev.prev_op
    return False


def _after_first_iteration(L: Lowerer, op: tile.GemmOp) -> SSAValue:
    """`i1`: the enclosing loop is past its first iteration (the accumulator holds partial sums)."""
    loop = op.parent_op()
    while not isinstance(loop, tile.ForOp):
        loop = loop.parent_op()
    return L.emit(arith.CmpiOp(L.ssa(L.val(loop.induction_var)), L.ssa(L.val(loop.lb)), "ne")).results[0]


def _written_by_tma_only(op: tile.GemmOp) -> bool:
    """Whether every shared tile the gemm reads is written only by TMA loads (`T.tma_copy` of a
    hand-written producer, waited for on an mbarrier): then no thread's generic-proxy write needs a
    proxy fence and a barrier before the wgmma reads it (TileLang's barrierpipe, once per k step)."""
    roots = [root_alloc(v) for v in (op.a, op.b) if v.type.scope == "shared"]  # (not wgmma's register A)
    if not roots or None in roots:
        return False
    uses = [use for r in roots for use in _through_views(r.result)]
    tma = [use for use in uses if isinstance(use.operation, tile.TmaLoadOp) and use.index == 1]
    return bool(tma) and all(use in tma or isinstance(use.operation, tile.AnnotateLayoutOp)
                             or use.index in READERS.get(type(use.operation), ()) for use in uses)


def _through_views(value: SSAValue):
    """The uses of a tile, those of its regions and stages standing for theirs."""
    for use in value.uses:
        if isinstance(use.operation, tile.RegionOp | tile.StageOp):
            yield from _through_views(use.operation.result)
        else:
            yield use


def _register_a(L: Lowerer, a: View, m: int, k: int) -> list[list[SSAValue]]:
    """The RS form's A operands: per m64 block r and k16 step s, `!llvm.struct<(i32 x 4)>` whose
    register j packs the pair of slots r (k/2) + 8 s + 2 j, + 1 of the register-A layout (element
    2j in the low half, HOPPER_KERNELS.md §1.4). A fragment with that layout (an accumulator
    converted to 16 bits) is read in place; another is first converted through shared memory."""
    want = wgmma_register_a_layout(m, k, L.threads)
    if not a.layout.same_threads(want):
        tmp = scratch_view(L, a.shape, a.element_type)
        transfer(L, a.layout, a.shape, a, tmp)
        barrier(L)
        a_regs = View("fragment", L.alloca(a.element_type, want.num_slots), a.shape, a.element_type, layout=want)
        transfer(L, want, a.shape, tmp, a_regs)
        barrier(L)
        a = a_regs
    struct = llvm.LLVMStructType.from_type_list([i32] * 4)
    reps = want.num_slots // (k // 2)
    out = []
    for r in range(reps):
        steps = []
        for s in range(k // 16):
            agg = L.emit(llvm.UndefOp(struct)).results[0]
            for j in range(4):
                first = r * (k // 2) + 8 * s + 2 * j
                reg = L.pack_word([L.frag_load(a, want.translate_slot(a.layout, first + e)) for e in (0, 1)])
                agg = L.emit(llvm.InsertValueOp(DenseArrayBase.from_list(i64, [j]), agg, reg)).results[0]
            steps.append(agg)
        out.append(steps)
    return out


_MMA_TYPES = {"f16": nvvm.MMAType.F16, "bf16": nvvm.MMAType.BF16, "f8E4M3FN": nvvm.MMAType.E4M3,
              "f8E5M2": nvvm.MMAType.E5M2}


def _mma_type(element_type) -> nvvm.MMATypeAttr:
    return nvvm.MMATypeAttr(_MMA_TYPES[str(element_type)])


def lower_gemm_wgmma(L: Lowerer, op: tile.GemmOp, a: View, b: View, c: View) -> None:
    """C += A @ B with wgmma.mma_async m64nNk16, B (and A, the SS form) read by the tensor cores
    from shared memory; a fragment A (the RS form) from registers (`_register_a`).

    Every thread first orders its own writes of the tiles (cp.async or stores, generic proxy)
    before the async proxy's reads (`fence.proxy.async.shared::cta`), then a barrier; each
    warpgroup issues, per k16 step (k32 for fp8), one wgmma per 64-row block of its rows, commits them as one
    group and waits for it, the accumulators passing through the wait (tile-select-mma chose
    the operands' swizzles, `wgmma_operands`).
    """
    m, n, k = op.mnk()
    groups = L.threads // 128
    reps = m // 64 // groups
    per_thread = n // 2
    in_flight = op.in_flight
    if in_flight is None and not _written_by_tma_only(op):
        # operands written by the threads (generic proxy): fence, then all of them
        L.emit(nvvm.FenceProxyOp.create(properties={"kind": nvvm.ProxyKindAttr(nvvm.ProxyKind.ASYNC_SHARED),
                                                    "space": nvvm.SharedSpaceAttr(nvvm.SharedSpace.CTA)}))
        barrier(L)
    # else operands written by TMA (the async proxy) and waited for on an mbarrier: tile-warp-specialize's, or a
    # hand-written producer's T.tma_copy into tiles nothing else writes
    group_row = L.mul(L.coord(Mode(groups, "t", 128)), m // groups)
    eb = tile.element_bytes(b.element_type)  # 2 (f16 / bf16) or 1 (fp8)
    k_step = 32 // eb  # one wgmma reads 32 bytes of K: k16 of 16-bit types, k32 of fp8
    # The strides are the shared allocation's (an operand may be a region of it or of one of its
    # stages): its rows (one column chunk's, when chunked) and, chunked, its whole column of rows
    # (`dims[-2]`) between chunks.
    if op.trans_a:  # A stored [k, m]: M-major (16-bit types only) as an N-major B; an m64 block is one 128-byte chunk
        layout_a, a_lbo, a_sbo = nvvm.MMALayout.COL, (a.dims[-2] * a.chunk * 2 if a.chunk else 16), 8 * a.swizzle
    else:  # K-major rows wider than 128 bytes: 128-byte chunks
        layout_a, a_lbo, a_sbo = nvvm.MMALayout.ROW, 16, (8 * a.strides[-2] * eb if a.kind == "shared" else 0)
    if op.trans_b:  # B stored [n, k]: K-major like A
        layout_b = nvvm.MMALayout.COL
        b_lbo, b_sbo = 16, 8 * b.strides[-2] * eb
    else:  # B stored [k, n]: N-major (16-bit types only), rows of the swizzle width (in column chunks when wider)
        layout_b = nvvm.MMALayout.ROW
        b_lbo, b_sbo = b.dims[-2] * b.chunk * 2 if b.chunk else 16, 8 * b.swizzle
    props = {"shape": nvvm.MMAShapeAttr(64, n, k_step), "typeA": _mma_type(a.element_type),
             "typeB": _mma_type(b.element_type),
             "layoutA": nvvm.MMALayoutAttr(layout_a), "layoutB": nvvm.MMALayoutAttr(layout_b)}
    struct = llvm.LLVMStructType.from_type_list([f32] * per_thread)

    def pack(values: list[SSAValue]) -> SSAValue:
        agg = L.emit(llvm.UndefOp(struct)).results[0]
        for i, v in enumerate(values):
            agg = L.emit(llvm.InsertValueOp(DenseArrayBase.from_list(i64, [i]), agg, v)).results[0]
        return agg

    a_regs = _register_a(L, a, m, k) if a.kind == "fragment" else None
    accs: list[SSAValue | None] = [None] * reps
    if not (op.clear_accum.value.data or _zero_filled_before(op)):
        accs = [pack([L.frag_load(c, r * per_thread + i) for i in range(per_thread)]) for r in range(reps)]
    # tile-warp-specialize dropped the zero fill before the loop: its first iteration starts from D = A·B
    accumulate = _after_first_iteration(L, op) if op.zero_on_entry is not None else None
    L.emit(nvvm.WgmmaFenceAlignedOp())
    descs_b = _Descriptors(L, b, [0, 0], b_lbo, b_sbo)
    a_base = [0, group_row] if op.trans_a else [group_row, 0]
    descs_a = _Descriptors(L, a, a_base, a_lbo, a_sbo) if a_regs is None else None
    for ks in range(0, k, k_step):
        desc_b = descs_b.at([0, ks] if op.trans_b else [ks, 0])
        for r in range(reps):
            if a_regs is not None:
                desc_a = a_regs[r][ks // 16]
            else:
                desc_a = descs_a.at([ks, 64 * r] if op.trans_a else [64 * r, ks])
            scale = [accumulate] if accumulate is not None and ks == 0 else []
            accs[r] = L.emit(nvvm.WgmmaMmaAsyncOp.build(
                operands=[desc_a, desc_b, [accs[r]] if accs[r] is not None else [], scale], result_types=[struct],
                properties=dict(props))).results[0]
    L.emit(nvvm.WgmmaCommitGroupSyncAlignedOp())
    # groups left running (the newest): the pipeline's, else the program's (-1: none waited for here)
    pending = in_flight.value.data if in_flight is not None else \
        op.wg_wait.value.data if op.wg_wait is not None else 0
    if pending >= 0:
        accs = L.emit(nvvm.WgmmaWaitGroupSyncOp.create(operands=accs, result_types=[struct] * reps,
                                                       properties={"group": IntegerAttr(pending, i64)})).results
    for r, acc in enumerate(accs):
        for i in range(per_thread):
            value = L.emit(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [i]), acc, f32)).results[0]
            L.frag_store(c, r * per_thread + i, value)
