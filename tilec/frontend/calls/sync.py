"""Synchronization of the block: `T.sync_threads`, mbarrier arrive and wait."""

from __future__ import annotations

from tilec.dialects import tile

from ..values import BarrierRef
from .. import thread_roles
from ..warp_specialize import producer_arrive
from .operands import describe_, require_kernel, static_int
from .registry import handles


@handles("fence_proxy_async")
def fence_proxy_async(v):
    require_kernel(v, "T.fence_proxy_async")
    v.b.emit(tile.FenceProxyAsyncOp())


@handles("sync_threads")
def sync_threads(v, barrier_id, arrive_count):
    require_kernel(v, "T.sync_threads", whole_tiles=True)
    if barrier_id is None:
        if arrive_count is not None:
            raise v.b.error("T.sync_threads(arrive_count=...) needs the barrier_id of the named barrier")
        if v.ws is not None and v.ws.role == "threads":
            thread_roles.sync_threads(v)
            return
        v.b.emit(tile.BarrierOp())
        return
    bar = static_int(v, barrier_id, "T.sync_threads' barrier_id")
    if not 0 <= bar < 16:
        raise v.b.error(f"T.sync_threads: barrier_id must be in [0, 16) (the hardware's named barriers), got {bar}")
    if v.ws is not None and v.ws.role == "threads" and bar == thread_roles.MEETING_BARRIER:
        raise v.b.error(f"T.sync_threads({bar}, ..) in a kernel split into warpgroup roles: tilec's roles meet at "
                        f"named barrier {bar} before the split", hint="take another barrier_id (1 to 14)")
    count = None if arrive_count is None else static_int(v, arrive_count, "T.sync_threads' arrive_count")
    threads = v.ws.threads if v.ws is not None and v.ws.threads else v.kernel.num_threads  # (roles: the block's)
    if count is not None and not (0 < count <= threads and count % 32 == 0):
        raise v.b.error(f"T.sync_threads: arrive_count must be a multiple of 32 (whole warps) up to the block's "
                        f"{threads} threads, got {count}")
    v.b.emit(tile.BarrierOp(bar, count, unaligned=v.ws is not None))  # (roles may meet there from their own code)


def barrier_ref(v, barrier, what: str) -> BarrierRef:
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
    b = barrier_ref(v, barrier, "T.barrier_arrive")
    if v.ws is not None and v.ws.role == "producer":
        producer_arrive(v, b.ssa, b.index)
        return
    if v.ws is not None and v.ws.role == "threads":
        thread_roles.barrier_arrive(v, b)
        return
    v.b.emit(tile.MBarrierArriveOp(b.ssa, b.index))


@handles("mbarrier_wait_parity")
def mbarrier_wait_parity(v, mbarrier, parity):
    barrier = mbarrier
    require_kernel(v, "T.mbarrier_wait_parity", whole_tiles=True)
    b = barrier_ref(v, barrier, "T.barrier_wait")
    if parity is None:
        raise v.b.error("T.barrier_wait needs the parity of the phase to wait for: T.barrier_wait(b, k % 2)")
    v.b.emit(tile.MBarrierWaitParityOp(b.ssa, v.index_ssa(parity), b.index))


@handles("ws")
def ws(v, *_):
    raise v.b.error("T.ws opens a warpgroup's block: `with T.ws(k):` in a kernel's body, its loops or `if`s")
