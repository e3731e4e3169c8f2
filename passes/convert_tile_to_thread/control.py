"""Structured control flow and synchronization: `tile.for`, `scf.if` (one branch per vector
group when its condition is uniform over the group), barriers, the cp.async group ops, thread
ids, device assertions; annotations with nothing to emit; ops the target cannot express yet.
"""

from __future__ import annotations


from xdsl.dialects import arith, llvm, scf
from xdsl.dialects.builtin import (
    IntegerAttr,
    i32,
)
from xdsl.ir import Block, Region

from tilec.dialects import nvvm, tile

from .context import Lowerer
from .copy import barrier
from .lanes import Lanes, group_uniform, lane_maps
from .memory import INDEX
from .registry import element, lower_block, uniform


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


@element(scf.IfOp)
def _if(L: Lowerer, op: scf.IfOp, lanes: Lanes | None) -> None:
    if op.results:
        raise L.error(op, "scf.if with results is not supported by the CUDA target yet")
    groups = [lanes] if lanes is None or group_uniform(L, op.cond, lanes) else \
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


@uniform(tile.BarrierOp)
def _barrier(L: Lowerer, op: tile.BarrierOp) -> None:
    if op.barrier_id is None:
        barrier(L)
        return
    from .sync import NAMED_CONSUMER_BARRIER, named_barrier

    bar = op.barrier_id.value.data
    if L.barrier_threads is not None and bar == NAMED_CONSUMER_BARRIER:
        raise L.error(op, f"named barrier {bar} is the consumer threads' barrier of a warp-specialized kernel",
                      hint="use another barrier id (2 to 15)")
    count = L.kernel.num_threads if op.thread_count is None else op.thread_count.value.data
    named_barrier(L, count, bar)


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
