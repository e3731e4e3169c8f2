"""Element access inside and outside `T.Parallel`: loads, stores and atomics of single
elements (merged into vector accesses across a lane group when the addresses allow), fragment
slots, per-lane local buffers (`T.alloc_var` inside a loop), `tile.dim`, and `tile.parallel`
itself: its layout's slots become lanes.
"""

from __future__ import annotations

import dataclasses
import math

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import SSAValue

from tilec.dialects import tile
from tilec.dialects.arith_utils import is_float

from tilec.passes.analysis import constant_value
from tilec.passes.tile_infer_layout import layout_of, root_alloc

from .buffers import lower_alloc
from .context import Lowerer, SlotMap
from .copy import slot_groups
from .lanes import Lanes, lane_coef, lane_maps, tile_mult, vector_iv
from .memory import View
from .registry import element, lower_block, uniform
from .stmatrix import MatrixStores, index_delta


def _fragment_slot(L: Lowerer, view: View, op, indices, lanes: Lanes | None, k: int) -> int:
    """The slot of the calling thread that holds the element: tile-infer-layout leaves only such
    accesses (the others go through a converted or shared copy, fragment_conversions.py)."""
    consts = [constant_value(i) for i in indices]
    if lanes is None or all(c is not None for c in consts):
        assert None not in consts and not any(m.kind == "t" for modes in view.layout.dims for m in modes), \
            f"{op.name} of a fragment at a run-time index, or of one that is not replicated, outside T.Parallel"
        return view.layout.slot_of(tuple(consts))
    dims = [lanes.ivs.get(i) for i in indices]
    assert None not in dims and dims == sorted(set(dims)), f"{op.name} of a fragment not by the loop variables"
    coords = lanes.layout.slot_coords(lanes.slots[k])
    return sum(c * m.stride for d, modes in zip(dims, view.layout.dims)
               for c, m in zip(coords[d], modes) if c is not None)


def _access_plan(L: Lowerer, view: View, indices, lanes: Lanes | None):
    """(lane-0 index, vector width) for a memory access of a whole lane group."""
    if lanes is None or len(lanes.maps) == 1:
        return None
    iv = vector_iv(lanes)
    coefs = [lane_coef(i, iv) for i in indices]
    if iv is None or coefs[-1] != 1 or any(c != 0 for c in coefs[:-1]):
        return None
    lane0 = lanes.maps[0]
    index = [lane0.get(i) for i in indices]
    for t, v in zip(indices, index):
        L.mults[v] = math.gcd(L.mults.get(v, 0), tile_mult(L, t, lane0)) or tile_mult(L, t, lane0)
    width = len(lanes.maps)
    return (index, width) if L.vectorizable(view, index, width) else None


@element(tile.AllocOp)
def _lane_alloc(L: Lowerer, op: tile.AllocOp, lanes: Lanes | None) -> None:
    """A buffer allocated inside T.Parallel: per-thread storage for each lane (T.alloc_var)."""
    if lanes is None:
        lower_alloc(L, op)
        return
    typ = op.result.type
    if typ.scope != "local":
        raise L.error(op, f"{typ.scope} buffers cannot be allocated inside T.Parallel",
                      hint="allocate it before the loop")
    for lane in lanes.maps:
        lower_alloc(L, op)
        lane[("view", op.result)] = L.views.pop(op.result)


def _view(L: Lowerer, value: SSAValue, lane) -> View:
    found = lane.get(("view", value)) if lane is not None else None
    return found if found is not None else L.views[value]


@element(tile.LoadOp)
def _load(L: Lowerer, op: tile.LoadOp, lanes: Lanes | None) -> None:
    if lanes is not None and lanes.maps[0].get(("view", op.source)) is not None:
        for lane in lanes.maps:
            lane[op.result] = L.load(_view(L, op.source, lane), [lane.get(i) for i in op.indices])
        return
    view = L.views[op.source]
    if view.kind == "fragment":
        for k, lane in enumerate(lane_maps(L, lanes)):
            lane[op.result] = L.frag_load(view, _fragment_slot(L, view, op, op.indices, lanes, k))
        return
    view = _checked(view, op)
    plan = _access_plan(L, view, op.indices, lanes)
    if plan is not None:
        vec = L.load(view, *plan)
        for k, lane in enumerate(lanes.maps):
            lane[op.result] = L.extract(vec, k)
        return
    for lane in lane_maps(L, lanes):
        lane[op.result] = L.load(view, [lane.get(i) for i in op.indices])


@element(tile.StoreOp)
def _store(L: Lowerer, op: tile.StoreOp, lanes: Lanes | None) -> None:
    if lanes is not None and lanes.maps[0].get(("view", op.dest)) is not None:
        for lane in lanes.maps:
            view = _view(L, op.dest, lane)
            L.store(view, [lane.get(i) for i in op.indices], L.convert(lane.get(op.value), view.element_type))
        return
    view = L.views[op.dest]
    if view.kind == "fragment":
        for k, lane in enumerate(lane_maps(L, lanes)):
            L.frag_store(view, _fragment_slot(L, view, op, op.indices, lanes, k), lane.get(op.value))
        return
    view = _checked(view, op)
    if L.matrix_sink is not None and lanes is not None and L.matrix_sink.take(
            L, view, lanes.slots[0], [m.get(op.value) for m in lanes.maps], index_delta(op.indices, lanes.ivs)):
        return  # out by stmatrix when the loop ends
    leader = lanes.leader if lanes is not None and view.kind in ("global", "shared") else None
    plan = _access_plan(L, view, op.indices, lanes)
    if plan is not None:
        L.store(view, plan[0], L.pack([L.convert(m.get(op.value), view.element_type) for m in lanes.maps]),
                leader)
        return
    for lane in lane_maps(L, lanes):
        L.store(view, [lane.get(i) for i in op.indices], L.convert(lane.get(op.value), view.element_type), leader)


def _checked(view: View, op) -> View:
    if op.in_bounds is not None and not view.in_bounds:
        return dataclasses.replace(view, in_bounds=True)
    return view


@element(tile.AtomicOp)
def _atomic(L: Lowerer, op: tile.AtomicOp, lanes: Lanes | None) -> None:
    from .scan import atomic, lower_atomic  # scan.py (with reductions) loads at the first atomic: registry.LAZY

    if not op.indices:
        if lanes is not None:
            raise L.error(op, "tile-wide T.atomic_* cannot be used inside T.Parallel")
        lower_atomic(L, op)
        return
    view = L.views[op.dst]
    leader = lanes.leader if lanes is not None else None  # each iteration once, not once per replica
    if op.prev is not None:
        if leader is not None and not _leader_only(L, op.prev):
            raise L.error(op, "T.atomic_*(return_prev=True) inside a T.Parallel whose iterations are replicated over "
                              "threads is not supported by the CUDA target where its old value reaches more than "
                              "stores to global or shared memory (one replica updates; the others do not see the value)",
                          hint="store the old value to a global or shared buffer, or use return_prev outside T.Parallel")
        for lane in lane_maps(L, lanes):
            index = [lane.get(i) for i in op.indices]
            lane[op.prev] = _atomic_prev(L, op.kind.data, view, index, lane.get(op.value), leader)
        return
    for lane in lane_maps(L, lanes):
        atomic(L, op.kind.data, view, [lane.get(i) for i in op.indices], lane.get(op.value), leader)


def _leader_only(L: Lowerer, value: SSAValue) -> bool:
    """Whether `value` only reaches (through arithmetic and loads) stores and atomics into global or
    shared memory, which a replicated T.Parallel leaves to its replica leader: the other replicas'
    copies of the value are then never observed."""
    seen, todo = set(), [value]
    while todo:
        v = todo.pop()
        for use in v.uses:
            user = use.operation
            if id(user) in seen:
                continue
            seen.add(id(user))
            if isinstance(user, tile.StoreOp | tile.AtomicOp):
                target = user.dest if isinstance(user, tile.StoreOp) else user.dst
                if L.views[target].kind not in ("global", "shared"):
                    return False
                todo.extend(user.results)
            elif isinstance(user, tile.LoadOp) or user.dialect_name() in ("arith", "math"):
                todo.extend(user.results)
            else:
                return False
    return True


def _atomic_prev(L: Lowerer, kind: tile.AtomicKind, view: View, index: list, value: SSAValue,
                 leader: SSAValue | None) -> SSAValue:
    """One `memref.atomic_rmw` whose result (the element's old value) is kept; 0 where the element
    lies outside its global tensor or the thread is not its replica's leader (no update happens there)."""
    value = L.convert(value, view.element_type)
    addr = L.ssa(L.flat(view, index))
    code = tile.atomic_rmw_kind(kind, is_float(view.element_type))
    guard = L.in_bounds(view, index)
    if leader is not None:
        guard = leader if guard is None else L.emit(arith.AndIOp(guard, leader)).results[0]

    def emit_rmw():
        return L.emit(memref.AtomicRMWOp.create(operands=[value, view.mem, addr], result_types=[value.type],
                                                properties={"kind": IntegerAttr(int(code), i64)})).results[0]

    return L._guarded(guard, value.type, emit_rmw, lambda: L.const(0, view.element_type))


@element(tile.DimOp)
def _dim(L: Lowerer, op: tile.DimOp, lanes=None) -> None:
    for lane in lane_maps(L, lanes):
        lane[op.result] = L.sizes[(op.source, op.dim.value.data)]


@uniform(tile.ParallelOp)
def lower_parallel(L: Lowerer, op: tile.ParallelOp) -> None:
    layout = layout_of(op)
    if layout is None:
        raise L.error(op, "T.Parallel without a layout: run tile-infer-layout first")
    ivs = {arg: d for d, arg in enumerate(op.body.block.args)}
    leader = L.replica_leader(layout)
    sink = MatrixStores.open(L, layout)
    outer, L.matrix_sink = L.matrix_sink, sink if sink is not None and _stores_unread(op) else None
    try:
        _lower_lanes(L, op, layout, ivs, leader)
        if L.matrix_sink is not None:
            L.matrix_sink.flush(L)
    finally:
        L.matrix_sink = outer


def _stores_unread(op: tile.ParallelOp) -> bool:
    """Whether the loop reads no shared buffer it stores to (those stores may then wait for the loop's end)."""
    stored = {root_alloc(s.dest) for s in op.walk() if isinstance(s, tile.StoreOp)}
    stored = {a for a in stored if a is not None and a.result.type.scope == "shared"}
    return not any(root_alloc(x.source) in stored for x in op.walk() if isinstance(x, tile.LoadOp))


def _lower_lanes(L: Lowerer, op: tile.ParallelOp, layout, ivs: dict, leader) -> None:
    for group in slot_groups(layout):
        maps = []
        for s in group:
            lane = SlotMap(L.vmap)
            for arg, value in zip(op.body.block.args, L.layout_index(layout, s)):
                lane[arg] = L.ssa(value)
                if isinstance(value, int):
                    L.mults.setdefault(lane[arg], value)
            maps.append(lane)
        lower_block(L, op.body.block, Lanes(maps, group, layout, ivs, leader))
