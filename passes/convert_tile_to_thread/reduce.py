"""`tile.reduce`: each thread combines the slots it holds, threads that share a line combine
with xor butterflies inside a warp and through shared memory beyond; reductions of shared or
local tiles read the lines each thread's results need.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    f32,
    i32,
)
from xdsl.ir import Block, SSAValue

from tilec.dialects import nvvm, tile
from tilec.dialects.arith_utils import is_float

from tilec.dialects.tile.layout import Layout, Mode

from .context import Lowerer
from .copy import barrier, local_layout, memory_layout, scratch_view, squeeze_map
from .memory import INDEX, View
from .registry import uniform


def combine(L: Lowerer, kind: tile.ReduceKind, a: SSAValue, b: SSAValue) -> SSAValue:
    if kind in (tile.ReduceKind.SUM, tile.ReduceKind.ABSSUM):
        op = arith.AddfOp if is_float(a.type) else arith.AddiOp
    elif kind in (tile.ReduceKind.MAX, tile.ReduceKind.ABSMAX):
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


def _abs(L: Lowerer, kind: tile.ReduceKind, x: SSAValue) -> SSAValue:
    if kind in (tile.ReduceKind.ABSSUM, tile.ReduceKind.ABSMAX) and is_float(x.type):
        from xdsl.dialects import math as mathd

        return L.emit(mathd.AbsFOp(x)).results[0]
    return x


def _reduce_from_memory(L: Lowerer, op: tile.ReduceOp, src: View, dst: View, acc_type) -> None:
    """Each thread reduces the lines of a shared or local tile that its destination elements need."""
    kind, dim, n = op.kind.data, op.axis, src.shape[op.axis]
    if dst.kind == "fragment":
        layout, leader = dst.layout, None
    elif dst.kind == "local":  # each thread computes its own copy of every result
        layout, leader = local_layout(dst.shape), None
    else:
        layout = memory_layout(L, dst.shape, dst)
        leader = L.replica_leader(layout)
    for slot in range(layout.num_slots):
        index = L.layout_index(layout, slot) if len(src.shape) > 1 else []

        def element(r):
            return _abs(L, kind, L.convert(L.load(src, index[:dim] + [r] + index[dim:]), acc_type))

        if n <= 32:
            total = element(0)
            for r in range(1, n):
                total = combine(L, kind, total, element(r))
        else:  # a loop carrying the running value
            body = Block(arg_types=[INDEX, acc_type])
            loop = L.emit(scf.ForOp(L.const(1), L.const(n), L.const(1), [element(0)], body))
            with L.push(body):
                L.emit(scf.YieldOp(combine(L, kind, body.args[1], element(body.args[0]))))
            total = loop.results[0]
        if not op.clear.value.data:
            old = L.frag_load(dst, slot) if dst.kind == "fragment" else L.load(dst, index if dst.shape != (1,) else [0])
            total = combine(L, kind, L.convert(old, acc_type), total)
        if dst.kind == "fragment":
            L.frag_store(dst, slot, total)
        else:
            L.store(dst, L.layout_index(layout, slot), L.convert(total, dst.element_type), leader)


@uniform(tile.ReduceOp)
def lower_reduce(L: Lowerer, op: tile.ReduceOp) -> None:
    src, dst = L.views[op.src], L.views[op.dst]
    kind, dim = op.kind.data, op.axis
    acc_type = f32 if is_float(src.element_type) else i32
    if src.kind != "fragment":
        _reduce_from_memory(L, op, src, dst, acc_type)
        return
    ls = src.layout
    ld = dst.layout if dst.kind == "fragment" else ls.reduce(dim)  # the results' distribution
    # 1. each thread combines the slots it holds
    partial: dict[int, SSAValue] = {}
    for s in range(ls.num_slots):
        coords = ls.slot_coords(s)
        del coords[dim]
        dslot = sum(c * m.stride for cs, modes in zip(coords, ld.dims) for c, m in zip(cs, modes)
                    if c is not None)
        x = _abs(L, kind, L.convert(L.frag_load(src, s), acc_type))
        partial[dslot] = x if dslot not in partial else combine(L, kind, partial[dslot], x)
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
                partial[d] = combine(L, kind, v, _shuffle_xor(L, v, offset, mask))
            offset *= 2
    if across:
        groups = math.prod(m.size for m in across)
        tmp = scratch_view(L, (groups, math.prod(ld.shape)), acc_type)
        group = 0
        for m in across:
            group = L.add(L.mul(group, m.size), L.coord(m))
        leader = None
        for m in (*in_warp, *ls.rep):  # one writer per value: replicas hold the same partials
            c = L.coord(m)
            if not isinstance(c, int):
                eq = L.emit(arith.CmpiOp(c, L.const(0), "eq")).results[0]
                leader = eq if leader is None else L.emit(arith.AndIOp(leader, eq)).results[0]
        flat_index = {d: _flat_dst(L, ld, d, ld.shape) for d in partial}
        for d, v in partial.items():
            L.store(tmp, [group, flat_index[d]], v, leader)
        barrier(L)
        for d in partial:
            total = None
            for g in range(groups):
                x = L.load(tmp, [g, flat_index[d]])
                total = x if total is None else combine(L, kind, total, x)
            partial[d] = total
        barrier(L)
    # 3. combine with the old value unless clear, and store
    if dst.kind != "fragment":
        _store_results(L, op, partial, ld, dst, acc_type)
        return
    for d, v in partial.items():
        if not op.clear.value.data:
            v = combine(L, kind, L.convert(L.frag_load(dst, d), acc_type), v)
        L.frag_store(dst, d, v)


def _store_results(L: Lowerer, op: tile.ReduceOp, partial: dict, ld: Layout, dst: View, acc_type) -> None:
    """The results of a fragment's reduction (slot d of layout `ld` on each thread) into a shared,
    global or local tile: one writer per element; a local tile is filled, in every thread, from
    a shared copy."""
    kind, clear = op.kind.data, op.clear.value.data
    target = scratch_view(L, ld.shape, acc_type) if dst.kind == "local" else dst
    leader = L.replica_leader(ld)
    for d, v in partial.items():
        index = squeeze_map(ld.shape, target.shape, L.layout_index(ld, d))
        if not clear and target is dst:
            v = combine(L, kind, L.convert(L.load(dst, index), acc_type), v)
        L.store(target, index, L.convert(v, target.element_type), leader)
    if target is dst:
        return
    barrier(L)
    layout = local_layout(dst.shape)
    for slot in range(layout.num_slots):
        index = L.layout_index(layout, slot)
        v = L.load(target, squeeze_map(dst.shape, target.shape, index))
        if not clear:
            v = combine(L, kind, L.convert(L.load(dst, index), acc_type), v)
        L.store(dst, index, L.convert(v, dst.element_type))
    barrier(L)


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
