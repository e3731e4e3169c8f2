"""Lowering of tile ops to thread-level IR, op by op (used by `convert-tile-to-thread`).

Each `lower_<op>(L, op)` reads the views of its operands from `L.views` and
emits thread-level code at `L`'s insertion point.  Element-wise work follows
a layout: every thread walks the slots it owns; slots that differ only in the
innermost (vector) mode form a group whose memory accesses become one vector
access when the addresses are consecutive and aligned.
"""

from __future__ import annotations

import dataclasses
import math

from xdsl.dialects import arith, gpu, llvm, memref, scf
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
    UnrealizedConversionCastOp,
    VectorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Block, Region, SSAValue

from tilec.dialects import nvvm, tile

from ._layout import Layout, Mode, default_layout, mma_warp_grid
from ._lower import INDEX, Lowerer, View, is_float, memref_type

# --------------------------------------------------------------------------- #
# Layout iteration
# --------------------------------------------------------------------------- #


def vector_mode(layout: Layout):
    """The innermost mode of the last dim when it is a slot mode: its slots form vector groups."""
    last = layout.dims[-1][-1]
    return last if last.kind == "s" and last.size > 1 else None


def slot_groups(layout: Layout, max_width: int = 16) -> list[list[int]]:
    """The slots of `layout`, grouped so that a group's slots are consecutive in the last dim."""
    mode = vector_mode(layout)
    if mode is None:
        return [[s] for s in range(layout.num_slots)]
    width = mode.size
    while width > max_width:
        width //= 2
    groups: dict[int, list[int]] = {}
    for s in range(layout.num_slots):
        coord = (s // mode.stride) % mode.size
        key = s - coord * mode.stride + (coord // width) * (10**9)
        groups.setdefault(key, []).append(s)
    return [sorted(g, key=lambda s: (s // mode.stride) % mode.size) for g in groups.values()]


def squeeze_map(src_shape, dst_shape, index: list) -> list:
    """`index` into `src_shape` mapped to `dst_shape` (the shapes agree without unit dims)."""
    vals = [i for i, n in zip(index, src_shape) if n != 1]
    out = []
    for n in dst_shape:
        out.append(vals.pop(0) if n != 1 else 0)
    return out


def element_bytes(typ) -> int:
    from tilec.dtypes import from_ir

    return max(1, from_ir(typ).bits // 8)


# --------------------------------------------------------------------------- #
# Element transfer: copy, fill, atomics over a layout
# --------------------------------------------------------------------------- #


def _read(L: Lowerer, view: View, index: list, slots: list[int], iter_layout: Layout) -> list[SSAValue]:
    """The elements at `index` (lane 0) and the following lanes of a group."""
    if view.kind == "fragment":
        if view.layout is None or not view.layout.same_threads(iter_layout):
            raise AssertionError("fragment read with a foreign layout")
        return [L.frag_load(view, iter_layout.translate_slot(view.layout, s)) for s in slots]
    width = len(slots)
    if L.vectorizable(view, index, width):
        vec = L.load(view, index, width)
        return [L.extract(vec, k) for k in range(width)]
    values = []
    for k in range(width):
        lane = index[:-1] + [L.add(index[-1], k)]
        values.append(L.load(view, lane))
    return values


def _write(L: Lowerer, view: View, index: list, slots: list[int], values: list[SSAValue],
           leader: SSAValue | None, iter_layout: Layout) -> None:
    if view.kind == "fragment":
        for s, v in zip(slots, values):
            L.frag_store(view, iter_layout.translate_slot(view.layout, s), v)
        return
    values = [L.convert(v, view.element_type) for v in values]
    width = len(values)
    if L.vectorizable(view, index, width):
        L.store(view, index, L.pack(values), leader)
        return
    for k, v in enumerate(values):
        L.store(view, index[:-1] + [L.add(index[-1], k)], v, leader)


def transfer(L: Lowerer, layout: Layout, shape, src: View | None, dst: View, value: SSAValue | None = None):
    """dst[i] = src[i] (or `value`) for every element, the threads following `layout` over `shape`."""
    leader = L.replica_leader(layout) if dst.kind != "fragment" else None
    for group in slot_groups(layout):
        index = L.layout_index(layout, group[0])
        if value is not None:
            values = [value] * len(group)
        else:
            values = _read(L, src, squeeze_map(shape, src.shape, index), group, layout)
        _write(L, dst, squeeze_map(shape, dst.shape, index), group, values, leader, layout)


def transfer_staged(L: Lowerer, layout: Layout, shape, src: View, dst: View) -> None:
    """dst[i] = src[i] when the two may overlap (regions of one buffer): every thread reads all
    its elements, a barrier, then every thread writes them, so no element is overwritten before
    it is read (T.copy is synchronous in meaning)."""
    leader = L.replica_leader(layout) if dst.kind != "fragment" else None
    loaded = []
    for group in slot_groups(layout):
        index = L.layout_index(layout, group[0])
        loaded.append((group, index, _read(L, src, squeeze_map(shape, src.shape, index), group, layout)))
    barrier(L)
    for group, index, values in loaded:
        _write(L, dst, squeeze_map(shape, dst.shape, index), group, values, leader, layout)


def may_overlap(src: View, dst: View) -> bool:
    """Whether two views of memory may share an element: the same buffer, and windows that are
    not disjoint along some dim by their constant offsets."""
    if src.kind not in ("shared", "global") or src.mem is not dst.mem:
        return False
    if src.base != dst.base and isinstance(src.base, int) and isinstance(dst.base, int):
        size = math.prod(src.shape)
        if src.base + size <= dst.base or dst.base + math.prod(dst.shape) <= src.base:
            return False
    if not len(src.offsets) == len(dst.offsets) == len(src.shape) == len(dst.shape):
        return True  # a region that dropped unit dims: its extent per root dim is not at hand
    for a, b, na, nb in zip(src.offsets, dst.offsets, src.shape, dst.shape):
        if isinstance(a, int) and isinstance(b, int) and (a + na <= b or b + nb <= a):
            return False
    return True


def transfer_async(L: Lowerer, layout: Layout, shape, src: View, dst: View) -> None:
    """dst[i] = src[i] with `cp.async` (global to shared, 4/8/16 bytes a thread, zero-filled past
    the tensor's end); groups that are not such vectors are copied by plain loads and stores,
    which the async copies' wait and barrier order just as well."""
    leader = L.replica_leader(layout)
    esize = element_bytes(dst.element_type)
    for group in slot_groups(layout):
        index = L.layout_index(layout, group[0])
        si, di = squeeze_map(shape, src.shape, index), squeeze_map(shape, dst.shape, index)
        width = len(group)
        nbytes = width * esize
        if nbytes not in (4, 8, 16) or not (L.vectorizable(src, si, width) and L.vectorizable(dst, di, width)):
            _write(L, dst, di, group, _read(L, src, si, group, layout), leader, layout)
            continue
        cond = L.in_bounds(src, si)
        size = None
        addr = L.flat(src, si)
        if cond is not None:
            size = L.emit(arith.SelectOp(cond, L.const(nbytes, i32), L.const(0, i32))).results[0]
            addr = L.emit(arith.SelectOp(cond, L.ssa(addr), L.const(0))).results[0]  # nothing is read at size 0
        copy = nvvm.CpAsyncOp.create(
            operands=[_shared_ptr(L, dst, di), _global_ptr(L, src, addr), *([size] if size is not None else [])],
            properties={"size": IntegerAttr(nbytes, i32),
                        "modifier": nvvm.LoadCacheModifierAttr(nvvm.LoadCacheModifier.CG if nbytes == 16 else
                                                               nvvm.LoadCacheModifier.CA)})
        if leader is not None:
            then = Block()
            L.emit(scf.IfOp(leader, [], Region(then)))
            with L.push(then):
                L.emit(copy)
                L.emit(scf.YieldOp())
        else:
            L.emit(copy)


def memory_layout(L: Lowerer, shape, *views: View) -> Layout:
    """A coalesced layout for moving a tile between memories."""
    widest = max(element_bytes(v.element_type) for v in views)
    return default_layout(tuple(shape), L.threads, max(1, 16 // widest))


def scratch_view(L: Lowerer, shape, element_type) -> View:
    """A shared-memory buffer for data exchange between threads (reused by every op)."""
    count = math.prod(shape)
    nbytes = count * element_bytes(element_type)
    L.scratch_bytes = max(L.scratch_bytes, nbytes)
    offset = L.const(L.scratch_base)
    mem = L.emit(memref.ViewOp(L.smem, offset, [], memref_type(element_type, count, 3))).results[0]
    strides, acc = [], 1
    for n in reversed(shape):
        strides.insert(0, acc)
        acc *= n
    return View("shared", mem, tuple(shape), element_type, [0] * len(shape), strides, list(shape))


def barrier(L: Lowerer) -> None:
    L.emit(gpu.BarrierOp())


def lower_copy(L: Lowerer, op: tile.CopyOp) -> None:
    src, dst = L.views[op.src], L.views[op.dst]
    if "async" in op.attributes and src.kind == "global" and dst.kind == "shared":
        transfer_async(L, memory_layout(L, dst.shape, src, dst), dst.shape, src, dst)
    elif dst.kind == "fragment" and src.kind == "fragment" and not src.layout.same_threads(dst.layout):
        tmp = scratch_view(L, src.shape, src.element_type)
        transfer(L, src.layout, src.shape, src, tmp)
        barrier(L)
        transfer(L, dst.layout, dst.shape, tmp, dst)
        barrier(L)
    elif dst.kind == "fragment":
        transfer(L, dst.layout, dst.shape, src, dst)
    elif src.kind == "fragment":
        transfer(L, src.layout, src.shape, src, dst)
    elif may_overlap(src, dst):
        transfer_staged(L, memory_layout(L, dst.shape, src, dst), dst.shape, src, dst)
    elif src.kind == "local" or dst.kind == "local":
        transfer(L, Layout(tuple((tile_mode(n),) for n in dst.shape), ()), dst.shape, src, dst)
    else:
        transfer(L, memory_layout(L, dst.shape, src, dst), dst.shape, src, dst)


def tile_mode(n: int):
    from ._layout import Mode

    return Mode(n, "s", 1)


def lower_fill(L: Lowerer, op: tile.FillOp) -> None:
    dst = L.views[op.dst]
    value = L.convert(L.val(op.value), dst.element_type)
    if dst.kind == "fragment":
        for s in range(dst.layout.num_slots):
            L.frag_store(dst, s, value)
        return
    layout = memory_layout(L, dst.shape, dst) if dst.kind != "local" else \
        Layout(tuple((tile_mode(n),) for n in dst.shape), ())
    transfer(L, layout, dst.shape, None, dst, value)


# --------------------------------------------------------------------------- #
# Reductions
# --------------------------------------------------------------------------- #

_IDENTITY = {"sum": 0.0, "abssum": 0.0, "max": -math.inf, "absmax": 0.0, "min": math.inf}


def _combine(L: Lowerer, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
    if kind in ("sum", "abssum"):
        op = arith.AddfOp if is_float(a.type) else arith.AddiOp
    elif kind in ("max", "absmax"):
        op = arith.MaxnumfOp if is_float(a.type) else arith.MaxSIOp
    else:
        op = arith.MinnumfOp if is_float(a.type) else arith.MinSIOp
    return L.emit(op(a, b)).results[0]


def _warp_mask(L: Lowerer) -> SSAValue:
    """The member mask of the calling thread's warp: every lane, except in a last warp that the
    block's thread count leaves partial (e.g. 100 threads: lanes 0-3 of warp 3)."""
    full = L.const(-1, i32)
    tail = L.threads % 32
    if tail == 0:
        return full
    warp = L.div(L.thread_id(), 32)
    is_last = L.emit(arith.CmpiOp(L.ssa(warp), L.const(L.threads // 32), "eq")).results[0]
    return L.emit(arith.SelectOp(is_last, L.const((1 << tail) - 1, i32), full)).results[0]


def _shuffle_xor(L: Lowerer, value: SSAValue, offset: int, mask: SSAValue) -> SSAValue:
    op = nvvm.ShflSyncOp.create(
        operands=[mask, value, L.const(offset, i32), L.const(31, i32)],
        result_types=[value.type], properties={"kind": nvvm.ShflKindAttr(nvvm.ShflKind.BFLY)})
    return L.emit(op).results[0]


def _abs(L: Lowerer, kind: str, x: SSAValue) -> SSAValue:
    if kind in ("abssum", "absmax") and is_float(x.type):
        from xdsl.dialects import math as mathd

        return L.emit(mathd.AbsFOp(x)).results[0]
    return x


def _reduce_from_memory(L: Lowerer, op: tile.ReduceOp, src: View, dst: View, acc_type) -> None:
    """Each thread reduces the lines of a shared or local tile that its destination elements need."""
    kind, dim, n = op.kind.data, op.axis, src.shape[op.axis]
    layout = dst.layout if dst.kind == "fragment" else memory_layout(L, dst.shape, dst)
    leader = L.replica_leader(layout) if dst.kind != "fragment" else None
    for slot in range(layout.num_slots):
        index = L.layout_index(layout, slot) if len(src.shape) > 1 else []

        def element(r):
            return _abs(L, kind, L.convert(L.load(src, index[:dim] + [r] + index[dim:]), acc_type))

        if n <= 32:
            total = element(0)
            for r in range(1, n):
                total = _combine(L, kind, total, element(r))
        else:  # a loop carrying the running value
            body = Block(arg_types=[INDEX, acc_type])
            loop = L.emit(scf.ForOp(L.const(1), L.const(n), L.const(1), [element(0)], body))
            with L.push(body):
                L.emit(scf.YieldOp(_combine(L, kind, body.args[1], element(body.args[0]))))
            total = loop.results[0]
        if not op.clear.value.data:
            old = L.frag_load(dst, slot) if dst.kind == "fragment" else L.load(dst, index if dst.shape != (1,) else [0])
            total = _combine(L, kind, L.convert(old, acc_type), total)
        if dst.kind == "fragment":
            L.frag_store(dst, slot, total)
        else:
            L.store(dst, L.layout_index(layout, slot), L.convert(total, dst.element_type), leader)


def lower_reduce(L: Lowerer, op: tile.ReduceOp) -> None:
    src, dst = L.views[op.src], L.views[op.dst]
    kind, dim = op.kind.data, op.axis
    acc_type = f32 if is_float(src.element_type) else i32
    if src.kind != "fragment":
        _reduce_from_memory(L, op, src, dst, acc_type)
        return
    if dst.kind != "fragment":
        raise L.error(op, "T.reduce_* of a fragment on the CUDA target needs a fragment destination",
                      hint="reduce into a T.alloc_fragment, then T.copy it")
    ls, ld = src.layout, dst.layout
    # 1. each thread combines the slots it holds
    partial: dict[int, SSAValue] = {}
    for s in range(ls.num_slots):
        coords = ls.slot_coords(s)
        del coords[dim]
        dslot = sum(c * m.stride for cs, modes in zip(coords, ld.dims) for c, m in zip(cs, modes)
                    if c is not None)
        x = _abs(L, kind, L.convert(L.frag_load(src, s), acc_type))
        partial[dslot] = x if dslot not in partial else _combine(L, kind, partial[dslot], x)
    # 2. threads that shared a row combine: butterflies inside a warp, shared memory for the rest
    in_warp, across = [], []
    for m in (m for m in ls.dims[dim] if m.kind == "t"):
        inside = _butterfly_size(m)
        if inside > 1:
            in_warp.append(Mode(inside, "t", m.stride))
        if m.size // inside > 1:
            across.append(Mode(m.size // inside, "t", m.stride * inside))
    mask = _warp_mask(L) if in_warp else None
    for m in in_warp:
        offset = m.stride
        while offset < m.stride * m.size:
            for d, v in partial.items():
                partial[d] = _combine(L, kind, v, _shuffle_xor(L, v, offset, mask))
            offset *= 2
    if across:
        groups = math.prod(m.size for m in across)
        tmp = scratch_view(L, (groups, math.prod(dst.shape)), acc_type)
        group = 0
        for m in across:
            group = L.add(L.mul(group, m.size), L.coord(m))
        leader = None
        for m in (*in_warp, *ls.rep):  # one writer per value: replicas hold the same partials
            c = L.coord(m)
            if not isinstance(c, int):
                eq = L.emit(arith.CmpiOp(c, L.const(0), "eq")).results[0]
                leader = eq if leader is None else L.emit(arith.AndIOp(leader, eq)).results[0]
        flat_index = {d: _flat_dst(L, ld, d, dst.shape) for d in partial}
        for d, v in partial.items():
            L.store(tmp, [group, flat_index[d]], v, leader)
        barrier(L)
        for d in partial:
            total = None
            for g in range(groups):
                x = L.load(tmp, [g, flat_index[d]])
                total = x if total is None else _combine(L, kind, total, x)
            partial[d] = total
        barrier(L)
    # 3. combine with the old value unless clear, and store
    for d, v in partial.items():
        if not op.clear.value.data:
            v = _combine(L, kind, L.convert(L.frag_load(dst, d), acc_type), v)
        L.frag_store(dst, d, v)


def _butterfly_size(m: Mode) -> int:
    """How much of thread mode `m` an xor butterfly inside one warp can combine: the largest power
    of two p dividing its size with stride * p <= 32. `lane ^ (stride * 2^k)` changes only the
    mode's coordinate when the stride and p are powers of two (the thread id is mixed-radix);
    the rest of the mode (m.size / p threads, e.g. all of a mode of 3) goes through shared memory."""
    if m.stride & (m.stride - 1):
        return 1
    p = 1
    while m.size % (2 * p) == 0 and m.stride * 2 * p <= 32:
        p *= 2
    return p


def _flat_dst(L: Lowerer, layout: Layout, slot: int, shape) -> object:
    index = L.layout_index(layout, slot)
    flat = 0
    for i, n in zip(index, shape):
        flat = L.add(L.mul(flat, n), i)
    return flat


# --------------------------------------------------------------------------- #
# Matrix multiply (SIMT: each thread owns a micro-tile of C)
# --------------------------------------------------------------------------- #


def _pair(L: Lowerer, view: View, index: list, second: list) -> SSAValue:
    """Two elements as one mma register: vector<2xf16>, or i32 for bfloat16 (as upstream NVVM)."""
    if L.vectorizable(view, index, 2) and second == index[:-1] + [L.add(index[-1], 1)]:
        pair = L.load(view, index, 2)
    else:
        pair = L.pack([L.load(view, index), L.load(view, second)])
    if str(view.element_type) == "bf16":
        return L.emit(llvm.BitcastOp(pair, i32)).results[0]
    return pair


def _shared_ptr(L: Lowerer, view: View, index: list) -> SSAValue:
    """`!llvm.ptr<3>` to element `index` of a shared view (what nvvm ops address memory by)."""
    ptr3 = llvm.LLVMPointerType(IntAttr(3))
    base = L.emit(UnrealizedConversionCastOp.get([view.mem], [ptr3])).results[0]
    offset = L.emit(arith.IndexCastOp(L.ssa(L.flat(view, index)), i32)).results[0]
    return L.emit(llvm.GEPOp.from_mixed_indices(base, [offset], view.element_type, result_type=ptr3)).results[0]


def _global_ptr(L: Lowerer, view: View, addr) -> SSAValue:
    """`!llvm.ptr<1>` to flat element `addr` of a global view."""
    ptr1 = llvm.LLVMPointerType(IntAttr(1))
    base = L.emit(UnrealizedConversionCastOp.get([view.mem], [ptr1])).results[0]
    offset = L.emit(arith.IndexCastOp(L.ssa(addr), i64)).results[0]
    return L.emit(llvm.GEPOp.from_mixed_indices(base, [offset], view.element_type, result_type=ptr1)).results[0]


def _ldmatrix(L: Lowerer, view: View, index: list, num: int, trans: bool) -> list[SSAValue]:
    """`num` 8x8 b16 matrices: each lane gives one row's address, gets its fragment registers."""
    layout = nvvm.MMALayoutAttr(nvvm.MMALayout.COL if trans else nvvm.MMALayout.ROW)
    result = i32 if num == 1 else llvm.LLVMStructType.from_type_list([i32] * num)
    load = L.emit(nvvm.LdMatrixOp.create(operands=[_shared_ptr(L, view, index)], result_types=[result],
                                         properties={"num": IntegerAttr(num, 32), "layout": layout}))
    if num == 1:
        return [load.results[0]]
    return [L.emit(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [j]), load.results[0], i32)).results[0]
            for j in range(num)]


def _ldmatrix_ok(view: View, inner: int) -> bool:
    """ldmatrix reads 16-byte rows of shared memory: rows of a multiple of 8 elements, 16-bit data."""
    return view.kind == "shared" and element_bytes(view.element_type) == 2 and inner % 8 == 0 and \
        all(isinstance(o, int) and o % 8 == 0 for o in view.offsets) and \
        all(isinstance(s, int) and s % 8 == 0 for s in view.strides[:-1])


def _as_operand(L: Lowerer, reg: SSAValue, element_type) -> SSAValue:
    """An ldmatrix register as an mma operand: vector<2xf16> for f16, the i32 itself for bf16."""
    if str(element_type) == "bf16":
        return reg
    return L.emit(llvm.BitcastOp(reg, VectorType(element_type, [2]))).results[0]


_SWIZZLE_CODE = {128: 1, 64: 2, 32: 3}  # descriptor bits 62-63 (HOPPER_KERNELS.md §1.2)


def _descriptor(L: Lowerer, view: View, index: list, lbo: int, sbo: int) -> SSAValue:
    """The 64-bit shared-memory matrix descriptor of `view` from element `index` on: the unswizzled
    shared-window address of that element / 16, LBO and SBO / 16, the swizzle mode."""
    plain = dataclasses.replace(view, swizzle=0)
    addr = L.emit(llvm.PtrToIntOp(_shared_ptr(L, plain, index), i64)).results[0]
    start = L.emit(arith.AndIOp(L.emit(arith.ShRUIOp(addr, L.const(4, i64))).results[0],
                                L.const(0x3FFF, i64))).results[0]
    fields = (lbo >> 4) << 16 | (sbo >> 4) << 32 | _SWIZZLE_CODE[view.swizzle] << 62
    signed = fields - (1 << 64) if fields >= 1 << 63 else fields  # i64 constants are signed
    return L.emit(arith.OrIOp(start, L.const(signed, i64))).results[0]


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


def _lower_gemm_wgmma(L: Lowerer, op: tile.GemmOp, a: View, b: View, c: View) -> None:
    """C += A @ B with wgmma.mma_async m64nNk16, A and B read by the tensor cores from shared memory.

    Every thread first orders its own writes of the tiles (cp.async or stores, generic proxy)
    before the async proxy's reads (`fence.proxy.async.shared::cta`), then a barrier; each
    warpgroup issues, per k16 step, one wgmma per 64-row block of its rows, commits them as one
    group and waits for it, the accumulators passing through the wait (tile-select-mma chose
    the operands' swizzles, `wgmma_operands`).
    """
    m, n, k = op.mnk()
    groups = L.threads // 128
    reps = m // 64 // groups
    per_thread = n // 2
    L.emit(nvvm.FenceProxyOp.create(properties={"kind": nvvm.ProxyKindAttr(nvvm.ProxyKind.ASYNC_SHARED),
                                                "space": nvvm.SharedSpaceAttr(nvvm.SharedSpace.CTA)}))
    barrier(L)
    group_row = L.mul(L.coord(Mode(groups, "t", 128)), m // groups)
    a_row_bytes = a.shape[1] * 2
    if op.trans_b:  # B stored [n, k]: K-major like A
        layout_b = nvvm.MMALayout.COL
        b_lbo, b_sbo = 16, 8 * b.shape[1] * 2
    else:  # B stored [k, n]: N-major, rows of the swizzle width (in column chunks when wider)
        layout_b = nvvm.MMALayout.ROW
        width = b.chunk or b.shape[1]
        b_lbo, b_sbo = b.shape[0] * width * 2 if b.chunk else 16, 8 * b.swizzle
    dtype = nvvm.MMATypeAttr(nvvm.MMAType.BF16 if str(a.element_type) == "bf16" else nvvm.MMAType.F16)
    props = {"shape": nvvm.MMAShapeAttr(64, n, 16), "typeA": dtype, "typeB": dtype,
             "layoutA": nvvm.MMALayoutAttr(nvvm.MMALayout.ROW), "layoutB": nvvm.MMALayoutAttr(layout_b)}
    struct = llvm.LLVMStructType.from_type_list([f32] * per_thread)

    def pack(values: list[SSAValue]) -> SSAValue:
        agg = L.emit(llvm.UndefOp(struct)).results[0]
        for i, v in enumerate(values):
            agg = L.emit(llvm.InsertValueOp(DenseArrayBase.from_list(i64, [i]), agg, v)).results[0]
        return agg

    accs: list[SSAValue | None] = [None] * reps
    if not (op.clear_accum.value.data or _zero_filled_before(op)):
        accs = [pack([L.frag_load(c, r * per_thread + i) for i in range(per_thread)]) for r in range(reps)]
    L.emit(nvvm.WgmmaFenceAlignedOp())
    for ks in range(0, k, 16):
        desc_b = _descriptor(L, b, [0, ks] if op.trans_b else [ks, 0], b_lbo, b_sbo)
        for r in range(reps):
            desc_a = _descriptor(L, a, [L.add(group_row, 64 * r), ks], 16, 8 * a_row_bytes)
            operands = [desc_a, desc_b] + ([accs[r]] if accs[r] is not None else [])
            accs[r] = L.emit(nvvm.WgmmaMmaAsyncOp.create(operands=operands, result_types=[struct],
                                                         properties=dict(props))).results[0]
    L.emit(nvvm.WgmmaCommitGroupSyncAlignedOp())
    wait = L.emit(nvvm.WgmmaWaitGroupSyncOp.create(operands=accs, result_types=[struct] * reps,
                                                   properties={"group": IntegerAttr(0, i64)}))
    for r, acc in enumerate(wait.results):
        for i in range(per_thread):
            value = L.emit(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [i]), acc, f32)).results[0]
            L.frag_store(c, r * per_thread + i, value)


def _lower_gemm_mma(L: Lowerer, op: tile.GemmOp, a: View, b: View, c: View) -> None:
    """C += A @ B with mma.sync m16n8k16 (row-major A, column-major B fragments, f32 accumulator).

    Fragment registers follow the PTX ISA: lane = 4 * group + tig; A register i holds row
    group + 8 * (i % 2), columns 2 * tig + {0, 1} + 8 * (i // 2); B register j holds rows
    2 * tig + {0, 1} + 8 * j of column group; C value i holds row group + 8 * (i // 2),
    column 2 * tig + i % 2 — the accumulator layout of `_layout.mma_accumulator_layout`.
    """
    m, n, k = op.mnk()
    wm, wn = mma_warp_grid(m, n, L.threads // 32, op.policy.data)
    rm, rn = m // 16 // wm, n // 8 // wn
    group, tig = L.coord(Mode(8, "t", 4)), L.coord(Mode(4, "t", 1))
    row0 = L.add(L.mul(L.coord(Mode(wm, "t", 32 * wn)), m // wm), group)
    col0 = L.add(L.mul(L.coord(Mode(wn, "t", 32)), n // wn), group)
    k0 = L.mul(tig, 2)
    bf16 = str(a.element_type) == "bf16"
    props = {"shape": nvvm.MMAShapeAttr(16, 8, 16), "layoutA": nvvm.MMALayoutAttr(nvvm.MMALayout.ROW),
             "layoutB": nvvm.MMALayoutAttr(nvvm.MMALayout.COL)}
    if bf16:
        props["multiplicandAPtxType"] = props["multiplicandBPtxType"] = nvvm.MMATypeAttr(nvvm.MMAType.BF16)
    result = llvm.LLVMStructType.from_type_list([f32] * 4)

    def a_index(row, kk):
        return [kk, row] if op.trans_a else [row, kk]

    def b_index(kk, col):
        return [col, kk] if op.trans_b else [kk, col]

    # ldmatrix: lane l addresses row l % 8 of matrix l // 8 (x4: A's four 8x8 blocks; x2: B's two)
    a_ldm = _ldmatrix_ok(a, a.shape[1]) and _ldmatrix_ok(a, a.shape[0] if op.trans_a else 16)
    b_ldm = _ldmatrix_ok(b, b.shape[1]) and _ldmatrix_ok(b, b.shape[0] if op.trans_b else 8)
    r8, m_hi, k_hi = L.coord(Mode(8, "t", 1)), L.coord(Mode(2, "t", 8)), L.coord(Mode(2, "t", 16))
    warp_row = L.mul(L.coord(Mode(wm, "t", 32 * wn)), m // wm)
    warp_col = L.mul(L.coord(Mode(wn, "t", 32)), n // wn)

    def a_fragment(im, kk) -> list[SSAValue]:
        if a_ldm:
            row0_block = L.add(warp_row, im * 16)
            if op.trans_a:  # A is stored [k, m]: transposed 8x8 blocks
                index = [L.add(L.add(kk, L.mul(k_hi, 8)), r8), L.add(row0_block, L.mul(m_hi, 8))]
            else:
                index = [L.add(L.add(row0_block, L.mul(m_hi, 8)), r8), L.add(kk, L.mul(k_hi, 8))]
            return [_as_operand(L, r, a.element_type) for r in _ldmatrix(L, a, index, 4, op.trans_a)]
        regs = []
        for i in range(4):
            row, kcol = L.add(row0, im * 16 + 8 * (i % 2)), L.add(L.add(kk, k0), 8 * (i // 2))
            regs.append(_pair(L, a, a_index(row, kcol), a_index(row, L.add(kcol, 1))))
        return regs

    def b_fragment(jn, kk) -> list[SSAValue]:
        if b_ldm:
            n0 = L.add(warp_col, jn * 8)
            if op.trans_b:  # B is stored [n, k]: its rows are the fragment's columns
                index = [L.add(n0, r8), L.add(kk, L.mul(m_hi, 8))]
            else:
                index = [L.add(L.add(kk, L.mul(m_hi, 8)), r8), n0]
            return [_as_operand(L, r, b.element_type) for r in _ldmatrix(L, b, index, 2, not op.trans_b)]

    def b_fragment_pair(jn, kk) -> list[list[SSAValue]]:
        """The fragments of n-tiles jn and jn + 1 with one ldmatrix.x4 (lanes 16-31 address jn + 1)."""
        n0 = L.add(warp_col, jn * 8)
        if op.trans_b:
            index = [L.add(L.add(n0, L.mul(k_hi, 8)), r8), L.add(kk, L.mul(m_hi, 8))]
        else:
            index = [L.add(L.add(kk, L.mul(m_hi, 8)), r8), L.add(n0, L.mul(k_hi, 8))]
        regs = [_as_operand(L, r, b.element_type) for r in _ldmatrix(L, b, index, 4, not op.trans_b)]
        return [regs[:2], regs[2:]]
        col = L.add(col0, jn * 8)
        regs = []
        for j in range(2):
            krow = L.add(L.add(kk, k0), 8 * j)
            regs.append(_pair(L, b, b_index(krow, col), b_index(L.add(krow, 1), col)))
        return regs

    pairs = b_ldm and rn % 2 == 0  # n-tiles jn, jn + 1 by one ldmatrix.x4

    def step(kk, acc: dict) -> dict:
        a_regs = [a_fragment(im, kk) for im in range(rm)]
        out = dict(acc)
        b_frags: dict[int, list[SSAValue]] = {}
        for jn in range(rn):
            if jn not in b_frags:
                if pairs:
                    b_frags[jn], b_frags[jn + 1] = b_fragment_pair(jn, kk)
                else:
                    b_frags[jn] = b_fragment(jn, kk)
            b_regs = b_frags.pop(jn)
            for im in range(rm):
                slots = [(im * rn + jn) * 4 + i for i in range(4)]
                mma = L.emit(nvvm.MmaSyncOp.build(operands=[a_regs[im], b_regs, [acc[s] for s in slots]],
                                                  result_types=[result], properties=dict(props)))
                for i, s in enumerate(slots):
                    position = DenseArrayBase.from_list(i64, [i])
                    out[s] = L.emit(llvm.ExtractValueOp(position, mma.results[0], f32)).results[0]
        return out

    slots = list(range(c.layout.num_slots))
    acc = {s: L.const(0.0, f32) if op.clear_accum.value.data else L.frag_load(c, s) for s in slots}
    if k // 16 <= 2:
        for kk in range(0, k, 16):
            acc = step(kk, acc)
    else:  # a loop over K carrying the accumulators
        body = Block(arg_types=[INDEX] + [f32] * len(slots))
        loop = L.emit(scf.ForOp(L.const(0), L.const(k), L.const(16), [acc[s] for s in slots], body))
        with L.push(body):
            L.mults[body.args[0]] = 16
            new = step(body.args[0], dict(zip(slots, body.args[1:])))
            L.emit(scf.YieldOp(*[new[s] for s in slots]))
        acc = dict(zip(slots, loop.results))
    for s, v in acc.items():
        L.frag_store(c, s, v)


def lower_gemm(L: Lowerer, op: tile.GemmOp) -> None:
    a, b, c = L.views[op.a], L.views[op.b], L.views[op.c]
    m, n, k = op.mnk()
    for name, v in (("A", a), ("B", b)):
        if v.kind == "fragment":  # stage register operands through shared memory
            tmp = scratch_view(L, v.shape, v.element_type)
            transfer(L, v.layout, v.shape, v, tmp)
            barrier(L)
            if name == "A":
                a = tmp
            else:
                b = tmp
    if c.kind != "fragment":
        raise L.error(op, "T.gemm on the CUDA target needs a fragment accumulator")
    if op.attributes.get("mma") == StringAttr("wgmma"):
        _lower_gemm_wgmma(L, op, a, b, c)
        return
    if "mma" in op.attributes:
        _lower_gemm_mma(L, op, a, b, c)
        return
    lc = c.layout
    acc_type = c.element_type
    rows: dict[int, object] = {}
    cols: dict[int, object] = {}
    cells = []
    for s in range(lc.num_slots):
        i, j = L.layout_index(lc, s)
        rows.setdefault(_key(i), i)
        cols.setdefault(_key(j), j)
        cells.append((s, _key(i), _key(j)))
    acc = {s: L.frag_load(c, s) for s, _, _ in cells}
    if op.clear_accum.value.data:
        zero = L.const(0, acc_type)
        acc = {s: zero for s in acc}

    def step(kk) -> None:
        av = {r: L.convert(L.load(a, [kk, i] if op.trans_a else [i, kk]), acc_type) for r, i in rows.items()}
        bv = {q: L.convert(L.load(b, [j, kk] if op.trans_b else [kk, j]), acc_type) for q, j in cols.items()}
        for s, r, q in cells:
            if is_float(acc_type):
                acc[s] = L.emit(mathd.FmaOp(av[r], bv[q], acc[s])).results[0]
            else:
                prod = L.emit(arith.MuliOp(av[r], bv[q])).results[0]
                acc[s] = L.emit(arith.AddiOp(acc[s], prod)).results[0]

    if k <= 16:
        for kk in range(k):
            step(kk)
    else:  # a loop over K carrying the accumulators, unrolled by the backend
        slots = list(acc)
        body = Block(arg_types=[INDEX] + [acc_type] * len(slots))
        loop = L.emit(scf.ForOp(L.const(0), L.const(k), L.const(1), [acc[s] for s in slots], body))
        with L.push(body):
            acc = dict(zip(slots, body.args[1:]))
            step(body.args[0])
            L.emit(scf.YieldOp(*[acc[s] for s in slots]))
        acc = dict(zip(slots, loop.results))
    for s, v in acc.items():
        L.frag_store(c, s, v)


def _key(x) -> object:
    return ("c", x) if isinstance(x, int) else ("v", id(x))


# --------------------------------------------------------------------------- #
# Scans, atomics
# --------------------------------------------------------------------------- #


def lower_scan(L: Lowerer, op: tile.CumsumOp | tile.CummaxOp) -> None:
    src, dst = L.views[op.src], L.views[op.dst]
    shape, dim = src.shape, op.axis
    acc_type = f32 if is_float(src.element_type) else i32
    tmp = scratch_view(L, shape, acc_type)
    _to_memory(L, src, tmp, shape)
    barrier(L)
    # one thread per line along `dim` scans it serially
    lines = [n for d, n in enumerate(shape) if d != dim] or [1]
    count = math.prod(lines)
    tid = L.thread_id()
    for base in range(0, count, L.threads):
        line = L.add(tid, base)
        cond = L.emit(arith.CmpiOp(L.ssa(line), L.const(count), "slt")).results[0]
        then = Block()
        L.emit(scf.IfOp(cond, [], Region(then)))
        with L.push(then):
            index = _unflatten(L, line, [n for d, n in enumerate(shape) if d != dim])
            total = None
            order = range(shape[dim] - 1, -1, -1) if op.reverse.value.data else range(shape[dim])
            for p in order:
                full = index[:dim] + [p] + index[dim:]
                x = L.load(tmp, full)
                total = x if total is None else _combine(L, "sum" if isinstance(op, tile.CumsumOp) else "max",
                                                         total, x)
                L.store(tmp, full, total)
            L.emit(scf.YieldOp())
    barrier(L)
    _from_memory(L, tmp, dst, shape)
    barrier(L)


def _unflatten(L: Lowerer, flat, shape) -> list:
    index = []
    for n in reversed(shape):
        index.insert(0, L.emit(arith.RemUIOp(L.ssa(flat), L.const(n))).results[0] if n > 1 else 0)
        flat = L.emit(arith.DivUIOp(L.ssa(flat), L.const(n))).results[0] if n > 1 else flat
    return index


def _to_memory(L: Lowerer, src: View, mem: View, shape) -> None:
    layout = src.layout if src.kind == "fragment" else memory_layout(L, shape, src, mem)
    transfer(L, layout, shape, src, mem)


def _from_memory(L: Lowerer, mem: View, dst: View, shape) -> None:
    layout = dst.layout if dst.kind == "fragment" else memory_layout(L, shape, dst, mem)
    transfer(L, layout, shape, mem, dst)


_ATOMIC = {("add", True): 0, ("add", False): 1, ("max", True): 13, ("max", False): 4, ("min", True): 14,
           ("min", False): 7}


def atomic(L: Lowerer, kind: str, view: View, index: list, value: SSAValue, cond=None) -> None:
    value = L.convert(value, view.element_type)
    addr = L.ssa(L.flat(view, index))
    guard = L.in_bounds(view, index)
    if cond is not None:
        guard = cond if guard is None else L.emit(arith.AndIOp(guard, cond)).results[0]
    code = _ATOMIC[(kind, is_float(view.element_type))]

    def emit_rmw():
        L.emit(memref.AtomicRMWOp.create(operands=[value, view.mem, addr], result_types=[value.type],
                                         properties={"kind": IntegerAttr(code, i64)}))

    L._guarded(guard, None, emit_rmw, None)


def lower_atomic(L: Lowerer, op: tile.AtomicOp) -> None:
    dst = L.views[op.dst]
    kind = op.kind.data
    if op.indices:
        atomic(L, kind, dst, [L.val(i) for i in op.indices], L.val(op.value))
        return
    src = L.views[op.value]
    layout = src.layout if src.kind == "fragment" else memory_layout(L, src.shape, src)
    leader = L.replica_leader(layout)
    for s in range(layout.num_slots):
        index = L.layout_index(layout, s)
        (value,) = _read(L, src, squeeze_map(src.shape, src.shape, index), [s], layout)
        atomic(L, kind, dst, squeeze_map(src.shape, dst.shape, index), value, leader)


__all__ = ["lower_atomic", "lower_copy", "lower_fill", "lower_gemm",
           "lower_reduce", "lower_scan", "transfer", "slot_groups", "squeeze_map"]
