"""`tile.cumsum` / `tile.cummax` (one thread per line scans it in shared memory) and atomics
(`tile.atomic` of an element or of a whole tile).
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    IntegerAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Block, Region, SSAValue

from tilec.dialects import tile
from tilec.dialects.arith_utils import is_float

from .context import Lowerer
from .copy import barrier, local_layout, memory_layout, read_group, scratch_view, squeeze_map, transfer
from .memory import View
from .reduce import combine
from .registry import uniform


@uniform(tile.CumsumOp, tile.CummaxOp)
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
                total = x if total is None else combine(L, tile.ReduceKind.SUM if isinstance(op, tile.CumsumOp) else tile.ReduceKind.MAX,
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
    if dst.kind == "local":  # every thread's copy gets every element
        layout = local_layout(shape)
    else:
        layout = dst.layout if dst.kind == "fragment" else memory_layout(L, shape, dst, mem)
    transfer(L, layout, shape, mem, dst)


def atomic(L: Lowerer, kind: tile.AtomicKind, view: View, index: list, value: SSAValue, cond=None) -> None:
    value = L.convert(value, view.element_type)
    addr = L.ssa(L.flat(view, index))
    guard = L.in_bounds(view, index)
    if cond is not None:
        guard = cond if guard is None else L.emit(arith.AndIOp(guard, cond)).results[0]
    code = tile.atomic_rmw_kind(kind, is_float(view.element_type))  # as the simulator decodes it

    def emit_rmw():
        L.emit(memref.AtomicRMWOp.create(operands=[value, view.mem, addr], result_types=[value.type],
                                         properties={"kind": IntegerAttr(int(code), i64)}))

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
        (value,) = read_group(L, src, squeeze_map(src.shape, src.shape, index), [s], layout)
        atomic(L, kind, dst, squeeze_map(src.shape, dst.shape, index), value, leader)
