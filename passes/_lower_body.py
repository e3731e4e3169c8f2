"""Lowering of kernel bodies: structured control flow, element access, `tile.parallel`.

Code is lowered for a list of *lanes*: `None` means uniform code (run once by
every thread); otherwise each lane is one slot of a parallel loop's layout,
with its own value map.  Lanes of one vector group run in lockstep: their
memory accesses merge into vector accesses and a condition that is the same
for the whole group stays one branch.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import IntegerAttr, i32
from xdsl.ir import Block, Operation, Region, SSAValue

from tilec.dialects import nvvm, tile

from . import _lower_ops as ops
from ._analysis import constant_value, shared_swizzle
from ._layout import Layout
from ._lower import INDEX, Lowerer, SlotMap, View, memref_type
from .tile_infer_layout import layout_of


@dataclass
class Lanes:
    """The lanes a parallel loop body is being lowered for."""

    maps: list[SlotMap]
    slots: list[int]
    layout: Layout
    ivs: dict  # tile-level induction var → loop dim
    leader: SSAValue | None  # replica leader predicate for stores to memory


# --------------------------------------------------------------------------- #
# Per-lane analysis of tile-level index expressions
# --------------------------------------------------------------------------- #


def lane_coef(value: SSAValue, iv: SSAValue) -> int | None:
    """d(value)/d(iv) when value is affine in iv with an integer slope, else None (0: independent)."""
    if value is iv:
        return 1
    op = value.owner
    if isinstance(op, arith.AddiOp | arith.SubiOp):
        a, b = lane_coef(op.lhs, iv), lane_coef(op.rhs, iv)
        if a is None or b is None:
            return None
        return a + b if isinstance(op, arith.AddiOp) else a - b
    if isinstance(op, arith.MuliOp):
        a, b = lane_coef(op.lhs, iv), lane_coef(op.rhs, iv)
        if a == 0 and b == 0:
            return 0
        const = constant_value(op.rhs if a else op.lhs)
        return None if const is None or (a and b) else (a or b) * const
    if isinstance(op, arith.IndexCastOp):
        return lane_coef(op.input, iv)
    if _depends_on(value, iv):
        return None
    return 0


def _depends_on(value: SSAValue, iv: SSAValue, depth: int = 0) -> bool:
    if value is iv:
        return True
    op = value.owner
    if not isinstance(op, Operation) or depth > 64:
        return False
    return any(_depends_on(o, iv, depth + 1) for o in op.operands)


def tile_mult(L: Lowerer, value: SSAValue, lane: SlotMap) -> int:
    """A number the lane's value of tile-level `value` is known to be a multiple of."""
    c = constant_value(value)
    if c is not None:
        return abs(c)
    op = value.owner
    if isinstance(op, arith.AddiOp | arith.SubiOp):
        return math.gcd(tile_mult(L, op.lhs, lane), tile_mult(L, op.rhs, lane))
    if isinstance(op, arith.MuliOp):
        return tile_mult(L, op.lhs, lane) * tile_mult(L, op.rhs, lane)
    mapped = lane.get(value)
    return L.mult(mapped) if mapped is not None else 1


# --------------------------------------------------------------------------- #
# The walk
# --------------------------------------------------------------------------- #


def lower_block(L: Lowerer, block: Block, lanes: Lanes | None = None) -> None:
    for op in block.ops:
        if isinstance(op, tile.YieldOp | scf.YieldOp):
            continue
        L.location = op.location
        handler = _UNIFORM.get(type(op))
        if handler is not None:
            if lanes is not None:
                raise L.error(op, f"{op.name} cannot be used inside T.Parallel",
                              hint="move the tile operation out of the element-wise loop")
            handler(L, op)
            continue
        handler = _ELEMENT.get(type(op))
        if handler is not None:
            handler(L, op, lanes)
            continue
        if op.regions:
            raise L.error(op, f"{op.name} is not supported by the CUDA target yet")
        for lane in _maps(L, lanes):
            L.emit(op.clone(value_mapper=lane))


def _maps(L: Lowerer, lanes: Lanes | None):
    return [L.vmap] if lanes is None else lanes.maps


# -- uniform-only ops ---------------------------------------------------------------


def _alloc(L: Lowerer, op: tile.AllocOp) -> None:
    typ = op.result.type
    count = typ.num_elements()
    strides, acc = [], 1
    for n in reversed(typ.shape):
        strides.insert(0, acc)
        acc *= n
    if typ.scope == "shared":
        offset = op.attributes.get("offset")
        if offset is None:
            offset_bytes = L.bump(count * ops.element_bytes(typ.element_type))
        else:
            offset_bytes = offset.value.data
        mem = L.emit(memref.ViewOp(L.smem, L.const(offset_bytes), [], memref_type(typ.element_type, count, 3)))
        chunk = _chunk_of(op)
        if chunk:  # columns in chunks of `chunk`: rows of one chunk are `chunk` apart (wgmma N-major operands)
            strides[-2] = chunk
        L.views[op.result] = View("shared", mem.results[0], typ.shape, typ.element_type, [0] * typ.rank,
                                  strides, list(typ.shape), swizzle=shared_swizzle(op), chunk=chunk)
    elif typ.scope == "fragment":
        layout = layout_of(op)
        if layout is None:
            raise L.error(op, "fragment without a layout: run tile-infer-layout first")
        L.views[op.result] = View("fragment", L.alloca(typ.element_type, layout.num_slots), typ.shape,
                                  typ.element_type, layout=layout)
    else:
        L.views[op.result] = View("local", L.alloca(typ.element_type, count), typ.shape, typ.element_type,
                                  [0] * typ.rank, strides, list(typ.shape))


def _chunk_of(alloc: tile.AllocOp) -> int:
    """Columns per chunk of a shared buffer tile-select-mma laid out for wgmma (0: plain row-major)."""
    typ = alloc.result.type
    chunk = alloc.attributes.get("chunk")
    if chunk is None or typ.rank < 2 or typ.shape[-1] <= chunk.value.data:
        return 0
    return chunk.value.data


def _region(L: Lowerer, op: tile.RegionOp) -> None:
    src = L.views[op.source]
    if src.kind == "fragment":
        raise L.error(op, "regions of fragments are not supported by the CUDA target yet",
                      hint="copy the whole fragment, or use a shared buffer")
    offsets = [L.val(o) for o in op.offsets]
    offsets = [constant_value(o) if constant_value(t) is not None else o for o, t in zip(offsets, op.offsets)]
    for t, o in zip(op.offsets, offsets):
        if isinstance(o, SSAValue) and o not in L.mults:
            L.mults[o] = tile_mult(L, t, SlotMap(L.vmap))
    L.views[op.result] = src.window(offsets, op.result.type.shape, L, "in_bounds" in op.attributes)


def _reshape(L: Lowerer, op: tile.ReshapeOp) -> None:
    src = L.views[op.source]
    if src.kind == "fragment" or src.chunk or any(o != 0 for o in src.offsets) or src.shape != op.source.type.shape:
        raise L.error(op, "T.reshape of fragments or regions is not supported by the CUDA target yet")
    shape = op.result.type.shape
    strides, acc = [], 1
    for n in reversed(shape):
        strides.insert(0, acc)
        acc *= n
    L.views[op.result] = View(src.kind, src.mem, shape, src.element_type, [0] * len(shape), strides,
                              list(shape), src.in_bounds, swizzle=src.swizzle, base=src.base)


def _stage(L: Lowerer, op: tile.StageOp) -> None:
    """Stage i of a multi-buffered shared tile: the same memory from element i * (stage size)."""
    src = L.views[op.source]
    if any(o != 0 for o in src.offsets):
        raise L.error(op, "tile.stage of a region is not supported")
    stage = L.val(op.index)
    const = constant_value(op.index)
    stage = const if const is not None else stage
    size = math.prod(src.shape[1:])
    L.views[op.result] = View(src.kind, src.mem, tuple(src.shape[1:]), src.element_type, [0] * (len(src.shape) - 1),
                              src.strides[1:], list(src.shape[1:]), src.in_bounds, swizzle=src.swizzle,
                              base=L.add(src.base, L.mul(stage, size)), chunk=src.chunk)


def _async_commit(L: Lowerer, op: tile.AsyncCommitOp) -> None:
    L.emit(nvvm.CpAsyncCommitGroupOp())


def _async_wait(L: Lowerer, op: tile.AsyncWaitOp) -> None:
    L.emit(nvvm.CpAsyncWaitGroupOp.create(properties={"n": IntegerAttr(op.pending.value.data, i32)}))


def _for(L: Lowerer, op: tile.ForOp, lanes: Lanes | None = None) -> None:
    body = Block(arg_types=[INDEX])
    lb, ub, step = (L.val(v) if lanes is None else lanes.maps[0].get(v) for v in (op.lb, op.ub, op.step))
    L.emit(scf.ForOp(lb, ub, step, [], body))
    for lane in _maps(L, lanes):
        lane[op.induction_var] = body.args[0]
    with L.push(body):
        lower_block(L, op.body.block, lanes)
        L.emit(scf.YieldOp())


def _if(L: Lowerer, op: scf.IfOp, lanes: Lanes | None) -> None:
    if op.results:
        raise L.error(op, "scf.if with results is not supported by the CUDA target yet")
    groups = [lanes] if lanes is None or _group_uniform(L, op.cond, lanes) else \
        [Lanes([m], [s], lanes.layout, lanes.ivs, lanes.leader) for m, s in zip(lanes.maps, lanes.slots)]
    for sub in groups:
        cond = (L.vmap if sub is None else sub.maps[0]).get(op.cond)
        then_block, else_block = Block(), Block()
        has_else = bool(op.false_region.blocks)
        L.emit(scf.IfOp(cond, [], Region(then_block), Region(else_block) if has_else else None))
        with L.push(then_block):
            lower_block(L, op.true_region.block, sub)
            L.emit(scf.YieldOp())
        if has_else:
            with L.push(else_block):
                lower_block(L, op.false_region.block, sub)
                L.emit(scf.YieldOp())


def _group_uniform(L: Lowerer, cond: SSAValue, lanes: Lanes) -> bool:
    """Whether `cond` has the same value on every lane of the group."""
    if len(lanes.maps) == 1:
        return True
    iv = _vector_iv(lanes)
    if iv is None or not _depends_on(cond, iv):
        return True
    op = cond.owner
    if not isinstance(op, arith.CmpiOp):
        return False
    pred = op.predicate.value.data  # eq ne slt sle sgt sge ult ule ugt uge
    a, b = lane_coef(op.lhs, iv), lane_coef(op.rhs, iv)
    width = len(lanes.maps)
    lead = {(1, 0): (2, 5, 6, 9), (0, 1): (3, 4, 7, 8)}  # x < n, x >= n / n > x, n <= x
    if (a, b) not in lead or pred not in lead[(a, b)]:
        return False
    m = math.gcd(tile_mult(L, op.lhs, lanes.maps[0]), tile_mult(L, op.rhs, lanes.maps[0]))
    return m % width == 0


def _vector_iv(lanes: Lanes) -> SSAValue | None:
    last = len(lanes.layout.dims) - 1
    return next((iv for iv, d in lanes.ivs.items() if d == last), None)


def _barrier(L: Lowerer, op: tile.BarrierOp) -> None:
    L.emit(gpu.BarrierOp())


def _skip(L: Lowerer, op) -> None:
    pass  # annotations that the SIMT path does not need (use_swizzle is applied at entry)


def _thread_id(L: Lowerer, op: tile.ThreadIdOp, lanes=None) -> None:
    x, y, _ = L.kernel.thread_extents
    t = L.thread_id()
    dim = op.dim.value.data
    if dim >= 1:
        t = L.emit(arith.DivUIOp(t, L.const(x if dim == 1 else x * y))).results[0]
    extent = L.kernel.thread_extents[dim]
    if extent < L.threads:
        t = L.emit(arith.RemUIOp(t, L.const(extent))).results[0]
    for lane in _maps(L, lanes):
        lane[op.result] = t


def _device_assert(L: Lowerer, op: tile.DeviceAssertOp, lanes=None) -> None:
    from xdsl.dialects import llvm

    for lane in _maps(L, lanes):
        cond = lane.get(op.cond)
        failed = L.emit(arith.XOrIOp(cond, L.const(1, cond.type))).results[0]
        then = Block()
        L.emit(scf.IfOp(failed, [], Region(then)))
        with L.push(then):
            L.emit(llvm.InlineAsmOp("trap;", "", [], has_side_effects=True))
            L.emit(scf.YieldOp())


def _unsupported(what: str):
    def handler(L: Lowerer, op, lanes=None) -> None:
        raise L.error(op, f"{what} is not supported by the CUDA target yet", hint="run it with target='interp'")

    return handler


# -- element access -------------------------------------------------------------------


def _fragment_slot(L: Lowerer, view: View, op, indices, lanes: Lanes | None, k: int) -> int:
    consts = [constant_value(i) for i in indices]
    if lanes is None or all(c is not None for c in consts):
        if any(c is None for c in consts) or any(m.kind == "t" for modes in view.layout.dims for m in modes):
            raise L.error(op, "a fragment element read outside T.Parallel must be a constant index of a "
                              "replicated fragment on the CUDA target",
                          hint="read fragments inside `for ... in T.Parallel(...)`")
        return view.layout.slot_of(tuple(consts))
    dims = [lanes.ivs.get(i) for i in indices]
    if None in dims or dims != sorted(set(dims)):
        raise L.error(op, "fragments must be indexed by the T.Parallel loop variables, in order, on the CUDA "
                          "target", hint="copy the fragment to shared memory to index it freely")
    coords = lanes.layout.slot_coords(lanes.slots[k])
    return sum(c * m.stride for d, modes in zip(dims, view.layout.dims)
               for c, m in zip(coords[d], modes) if c is not None)


def _access_plan(L: Lowerer, view: View, indices, lanes: Lanes | None):
    """(lane-0 index, vector width) for a memory access of a whole lane group."""
    if lanes is None or len(lanes.maps) == 1:
        return None
    iv = _vector_iv(lanes)
    coefs = [lane_coef(i, iv) for i in indices]
    if iv is None or coefs[-1] != 1 or any(c != 0 for c in coefs[:-1]):
        return None
    lane0 = lanes.maps[0]
    index = [lane0.get(i) for i in indices]
    for t, v in zip(indices, index):
        L.mults[v] = math.gcd(L.mults.get(v, 0), tile_mult(L, t, lane0)) or tile_mult(L, t, lane0)
    width = len(lanes.maps)
    return (index, width) if L.vectorizable(view, index, width) else None


def _lane_alloc(L: Lowerer, op: tile.AllocOp, lanes: Lanes | None) -> None:
    """A buffer allocated inside T.Parallel: per-thread storage for each lane (T.alloc_var)."""
    if lanes is None:
        _alloc(L, op)
        return
    typ = op.result.type
    if typ.scope != "local":
        raise L.error(op, f"{typ.scope} buffers cannot be allocated inside T.Parallel",
                      hint="allocate it before the loop")
    for lane in lanes.maps:
        _alloc(L, op)
        lane[("view", op.result)] = L.views.pop(op.result)


def _view(L: Lowerer, value: SSAValue, lane) -> View:
    found = lane.get(("view", value)) if lane is not None else None
    return found if found is not None else L.views[value]


def _load(L: Lowerer, op: tile.LoadOp, lanes: Lanes | None) -> None:
    if lanes is not None and lanes.maps[0].get(("view", op.source)) is not None:
        for lane in lanes.maps:
            lane[op.result] = L.load(_view(L, op.source, lane), [lane.get(i) for i in op.indices])
        return
    view = L.views[op.source]
    if view.kind == "fragment":
        for k, lane in enumerate(_maps(L, lanes)):
            lane[op.result] = L.frag_load(view, _fragment_slot(L, view, op, op.indices, lanes, k))
        return
    view = _checked(view, op)
    plan = _access_plan(L, view, op.indices, lanes)
    if plan is not None:
        vec = L.load(view, *plan)
        for k, lane in enumerate(lanes.maps):
            lane[op.result] = L.extract(vec, k)
        return
    for lane in _maps(L, lanes):
        lane[op.result] = L.load(view, [lane.get(i) for i in op.indices])


def _store(L: Lowerer, op: tile.StoreOp, lanes: Lanes | None) -> None:
    if lanes is not None and lanes.maps[0].get(("view", op.dest)) is not None:
        for lane in lanes.maps:
            view = _view(L, op.dest, lane)
            L.store(view, [lane.get(i) for i in op.indices], L.convert(lane.get(op.value), view.element_type))
        return
    view = L.views[op.dest]
    if view.kind == "fragment":
        for k, lane in enumerate(_maps(L, lanes)):
            L.frag_store(view, _fragment_slot(L, view, op, op.indices, lanes, k), lane.get(op.value))
        return
    view = _checked(view, op)
    leader = lanes.leader if lanes is not None and view.kind in ("global", "shared") else None
    plan = _access_plan(L, view, op.indices, lanes)
    if plan is not None:
        L.store(view, plan[0], L.pack([L.convert(m.get(op.value), view.element_type) for m in lanes.maps]),
                leader)
        return
    for lane in _maps(L, lanes):
        L.store(view, [lane.get(i) for i in op.indices], L.convert(lane.get(op.value), view.element_type), leader)


def _checked(view: View, op) -> View:
    if "in_bounds" in op.attributes and not view.in_bounds:
        return dataclasses.replace(view, in_bounds=True)
    return view


def _atomic(L: Lowerer, op: tile.AtomicOp, lanes: Lanes | None) -> None:
    if not op.indices:
        if lanes is not None:
            raise L.error(op, "tile-wide T.atomic_* cannot be used inside T.Parallel")
        ops.lower_atomic(L, op)
        return
    view = L.views[op.dst]
    for lane in _maps(L, lanes):
        ops.atomic(L, op.kind.data, view, [lane.get(i) for i in op.indices], lane.get(op.value))


def _dim(L: Lowerer, op: tile.DimOp, lanes=None) -> None:
    for lane in _maps(L, lanes):
        lane[op.result] = L.sizes[(op.source, op.dim.value.data)]


# -- parallel loops -----------------------------------------------------------------------


def lower_parallel(L: Lowerer, op: tile.ParallelOp) -> None:
    layout = layout_of(op)
    if layout is None:
        raise L.error(op, "T.Parallel without a layout: run tile-infer-layout first")
    ivs = {arg: d for d, arg in enumerate(op.body.block.args)}
    leader = L.replica_leader(layout)
    for group in ops.slot_groups(layout):
        maps = []
        for s in group:
            lane = SlotMap(L.vmap)
            for arg, value in zip(op.body.block.args, L.layout_index(layout, s)):
                lane[arg] = L.ssa(value)
                if isinstance(value, int):
                    L.mults.setdefault(lane[arg], value)
            maps.append(lane)
        lower_block(L, op.body.block, Lanes(maps, group, layout, ivs, leader))


_UNIFORM = {
    tile.RegionOp: _region, tile.ReshapeOp: _reshape, tile.StageOp: _stage, tile.CopyOp: ops.lower_copy,
    tile.AsyncCommitOp: _async_commit, tile.AsyncWaitOp: _async_wait,
    tile.FillOp: ops.lower_fill, tile.GemmOp: ops.lower_gemm, tile.ReduceOp: ops.lower_reduce,
    tile.CumsumOp: ops.lower_scan, tile.CummaxOp: ops.lower_scan, tile.ParallelOp: lower_parallel,
    tile.BarrierOp: _barrier, tile.UseSwizzleOp: _skip, tile.AnnotateLayoutOp: _skip,
    tile.PrintOp: _unsupported("T.print"), tile.AllocBarrierOp: _unsupported("T.alloc_barrier"),
    tile.MBarrierArriveOp: _unsupported("T.mbarrier_arrive"),
    tile.MBarrierWaitParityOp: _unsupported("T.mbarrier_wait_parity"),
}
_ELEMENT = {
    tile.AllocOp: _lane_alloc, tile.LoadOp: _load, tile.StoreOp: _store, tile.AtomicOp: _atomic, tile.ForOp: _for, scf.IfOp: _if,
    tile.ThreadIdOp: _thread_id, tile.DeviceAssertOp: _device_assert, tile.DimOp: _dim,
}

__all__ = ["lower_block", "lower_parallel"]
