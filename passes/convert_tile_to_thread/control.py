"""Structured control flow and synchronization: `tile.for`, `scf.if` (one branch per vector
group when its condition is uniform over the group), barriers, the cp.async group ops, thread
ids, device assertions; annotations with nothing to emit; ops the target cannot express yet.
"""

from __future__ import annotations


from xdsl.dialects import arith, llvm, scf
from xdsl.dialects.builtin import (
    IntegerAttr,
    i1,
    i32,
)
from xdsl.ir import Block, Region

from tilec.dialects import nvvm, tile

from .context import Lowerer
from .copy import barrier
from .lanes import Lanes, group_uniform, lane_maps
from .memory import INDEX
from .registry import element, lower_block, uniform


def _all_decided(L: Lowerer, cond, lanes: Lanes) -> bool:
    """Whether every lane of the group folded `cond` to the same value."""
    values = {_decided(L, m.get(cond)) for m in lanes.maps}
    return len(values) == 1 and None not in values


@uniform(tile.AsyncCommitOp)
def _async_commit(L: Lowerer, op: tile.AsyncCommitOp) -> None:
    L.emit(nvvm.CpAsyncCommitGroupOp())


@uniform(tile.AsyncWaitOp)
def _async_wait(L: Lowerer, op: tile.AsyncWaitOp) -> None:
    L.emit(nvvm.CpAsyncWaitGroupOp.create(properties={"n": IntegerAttr(op.pending.value.data, i32)}))


@element(tile.ForOp)
def _for(L: Lowerer, op: tile.ForOp, lanes: Lanes | None = None) -> None:
    body = Block(arg_types=[INDEX])
    lb, ub, step = (L.val(v) if lanes is None else lanes.maps[0].get(v) for v in (op.lb, op.ub, op.step))
    L.emit(scf.ForOp(lb, ub, step, [], body))
    for lane in lane_maps(L, lanes):
        lane[op.induction_var] = body.args[0]
    with L.push(body):
        lower_block(L, op.body.block, lanes)
        L.emit(scf.YieldOp())


_PREDICATES = {2: lambda a, b: (a[1] < b[0], a[0] >= b[1]), 3: lambda a, b: (a[1] <= b[0], a[0] > b[1]),
               4: lambda a, b: (a[0] > b[1], a[1] <= b[0]), 5: lambda a, b: (a[0] >= b[1], a[1] < b[0])}
_PREDICATES.update({6: _PREDICATES[2], 7: _PREDICATES[3], 8: _PREDICATES[4], 9: _PREDICATES[5]})  # (lo >= 0 only)


def _decided(L: Lowerer, value) -> bool | None:
    """The value of an i1 the lowering folded (a range guard decided for every thread), else None."""
    bound = L.bound(value) if value is not None else None
    return None if bound is None or bound[0] != bound[1] else bool(bound[0])


@element(arith.CmpiOp)
def _cmpi(L: Lowerer, op: arith.CmpiOp, lanes: Lanes | None) -> None:
    """A comparison of index values whose bounds decide it (a T.Parallel slot against a region's
    ends: the column of a wgmma accumulator slot is a constant plus a lane's offset under 8) becomes
    a constant, so that the guard it feeds is not emitted; otherwise it is cloned as it is."""
    pred = op.predicate.value.data
    for lane in lane_maps(L, lanes):
        a, b = (L.bound(lane.get(v)) for v in (op.lhs, op.rhs))
        rule = _PREDICATES.get(pred)
        if rule is None or a is None or b is None or (pred >= 6 and min(a[0], b[0]) < 0):
            L.emit(op.clone(value_mapper=lane))
            continue
        true, false = rule(a, b)
        if not (true or false):
            L.emit(op.clone(value_mapper=lane))
            continue
        r = L.const(1 if true else 0, i1)
        L.bounds[r] = (1, 1) if true else (0, 0)
        lane[op.result] = r


@element(arith.AndIOp)
def _andi(L: Lowerer, op: arith.AndIOp, lanes: Lanes | None) -> None:
    """`a and b` of folded guards (see `_cmpi`): a constant, or the one operand that is not (i1
    only: on wider integers andi is a bitwise and)."""
    if op.result.type != i1:
        for lane in lane_maps(L, lanes):
            L.emit(op.clone(value_mapper=lane))
        return
    for lane in lane_maps(L, lanes):
        a, b = lane.get(op.lhs), lane.get(op.rhs)
        da, db = _decided(L, a), _decided(L, b)
        if da is False or db is False:
            r = L.const(0, i1)
            L.bounds[r] = (0, 0)
            lane[op.result] = r
        elif da is True or db is True:
            lane[op.result] = b if da is True else a
        else:
            L.emit(op.clone(value_mapper=lane))


@element(scf.IfOp)
def _if(L: Lowerer, op: scf.IfOp, lanes: Lanes | None) -> None:
    """A branch, per group of lanes that agree on it; one with results (a lazy T.if_then_else)
    yields each lane's values and maps the lane's results to the new branch's."""
    groups = [lanes] if lanes is None or group_uniform(L, op.cond, lanes) or _all_decided(L, op.cond, lanes) else \
        [Lanes([m], [s], lanes.layout, lanes.ivs, lanes.leader) for m, s in zip(lanes.maps, lanes.slots)]
    for sub in groups:
        maps = lane_maps(L, sub)
        cond = maps[0].get(op.cond)
        decided = _decided(L, cond) if sub is None or len(sub.maps) == 1 or _all_decided(L, op.cond, sub) else None
        if decided is not None:  # a guard folded: its branch inline, or nothing
            region = op.true_region if decided else op.false_region
            if region.blocks:
                lower_block(L, region.block, sub)
                _bind_results(op, region, maps)
            continue
        then_block, else_block = Block(), Block()
        has_else = bool(op.false_region.blocks)
        yielded = []
        for region, block in ((op.true_region, then_block), (op.false_region, else_block)):
            if not region.blocks:
                continue
            with L.push(block):
                lower_block(L, region.block, sub)
                values = [m.get(v) for m in maps for v in region.block.last_op.operands] if op.results else []
                L.emit(scf.YieldOp(*values))
            yielded.append(values)
        branch = L.emit(scf.IfOp(cond, [v.type for v in yielded[0]], Region(then_block),
                                 Region(else_block) if has_else else None))
        n = len(op.results)
        for i, m in enumerate(maps):
            for r, new in zip(op.results, branch.results[i * n:(i + 1) * n]):
                m[r] = new


def _bind_results(op: scf.IfOp, region: Region, maps) -> None:
    """The results of a branch decided at compile time: the inlined side's yielded values."""
    for m in maps:
        for r, v in zip(op.results, region.block.last_op.operands):
            m[r] = m.get(v)


@uniform(tile.BarrierOp)
def _barrier(L: Lowerer, op: tile.BarrierOp) -> None:
    if op.barrier_id is None:
        barrier(L)
        return
    from .sync import named_barrier

    bar = op.barrier_id.value.data
    reserved = L.reserved_barriers  # (inside a tile.warp_specialize: its consumer groups' barriers)
    if bar in reserved:
        ids = f"{reserved.start}" if len(reserved) == 1 else f"{reserved.start} to {reserved.stop - 1}"
        raise L.error(op, f"named barrier {bar} is one of the consumer warpgroups' own barriers in this "
                          f"warp-specialized kernel ({ids}): the threads meeting there would count toward each "
                          "other's rounds", hint=f"use another barrier id ({reserved.stop} to 14)")
    count = L.kernel.num_threads if op.thread_count is None else op.thread_count.value.data
    named_barrier(L, count, bar, unaligned=op.unaligned is not None)


@uniform(tile.UseSwizzleOp, tile.AnnotateLayoutOp)
def _skip(L: Lowerer, op) -> None:
    pass  # annotations that the SIMT path does not need (use_swizzle is applied at entry)


@element(tile.ThreadIdOp)
def _thread_id(L: Lowerer, op: tile.ThreadIdOp, lanes=None) -> None:
    x, y, _ = L.kernel.thread_extents
    t = L.thread_id()
    dim = op.dim.value.data
    if dim >= 1:
        t = L.emit(arith.DivUIOp(t, L.const(x if dim == 1 else x * y))).results[0]
    extent = L.kernel.thread_extents[dim]
    if extent < L.threads:
        t = L.emit(arith.RemUIOp(t, L.const(extent))).results[0]
    for lane in lane_maps(L, lanes):
        lane[op.result] = t


@element(tile.DeviceAssertOp)
def _device_assert(L: Lowerer, op: tile.DeviceAssertOp, lanes=None) -> None:
    for lane in lane_maps(L, lanes):
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


uniform(tile.PrintOp)(_unsupported("T.print"))
