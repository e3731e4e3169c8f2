"""Synchronization of the block: `T.sync_threads`, mbarrier arrive and wait."""

from __future__ import annotations

from tilec.dialects import tile

from ..values import BarrierRef
from ..warp_specialize import producer_arrive
from .operands import describe_, require_kernel
from .registry import handles


@handles("sync_threads")
def sync_threads(v):
    require_kernel(v, "T.sync_threads", whole_tiles=True)
    v.b.emit(tile.BarrierOp())


def _barrier(v, barrier, what: str) -> BarrierRef:
    if not isinstance(barrier, BarrierRef):
        raise v.b.error(f"{what} takes a barrier of T.alloc_barrier, got {describe_(barrier)}")
    if barrier.index is None and barrier.count != 1:
        raise v.b.error(f"{what}: an array of {barrier.count} barriers needs an index (`bars[i]`)")
    return barrier


@handles("barrier_arrive")
def barrier_arrive(v, barrier_id):
    mbarrier_arrive(v, barrier_id)


@handles("barrier_wait")
def barrier_wait(v, barrier_id, parity):
    mbarrier_wait_parity(v, barrier_id, parity)


@handles("mbarrier_arrive")
def mbarrier_arrive(v, mbarrier):
    barrier = mbarrier
    require_kernel(v, "T.mbarrier_arrive", whole_tiles=True)
    b = _barrier(v, barrier, "T.barrier_arrive")
    if v.ws is not None and v.ws.role == "producer":
        producer_arrive(v, b.ssa, b.index)
        return
    v.b.emit(tile.MBarrierArriveOp(b.ssa, b.index))


@handles("mbarrier_wait_parity")
def mbarrier_wait_parity(v, mbarrier, parity):
    barrier = mbarrier
    require_kernel(v, "T.mbarrier_wait_parity", whole_tiles=True)
    b = _barrier(v, barrier, "T.barrier_wait")
    if parity is None:
        raise v.b.error("T.barrier_wait needs the parity of the phase to wait for: T.barrier_wait(b, k % 2)")
    v.b.emit(tile.MBarrierWaitParityOp(b.ssa, v.index_ssa(parity), b.index))


@handles("ws")
def ws(v, *_):
    raise v.b.error("T.ws opens a warpgroup's block: `with T.ws(k):` in a kernel's body, its loops or `if`s")
