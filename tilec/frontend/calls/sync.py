"""Synchronization of the block: `T.sync_threads`, mbarrier arrive and wait."""

from __future__ import annotations

from tilec.dialects import tile

from .operands import require_kernel
from .registry import handles


@handles("sync_threads")
def sync_threads(v):
    require_kernel(v, "T.sync_threads", whole_tiles=True)
    v.b.emit(tile.BarrierOp())


@handles("mbarrier_arrive")
def mbarrier_arrive(v, barrier):
    require_kernel(v, "T.mbarrier_arrive", whole_tiles=True)
    v.b.emit(tile.MBarrierArriveOp(barrier.ssa))


@handles("mbarrier_wait_parity")
def mbarrier_wait_parity(v, barrier, parity):
    require_kernel(v, "T.mbarrier_wait_parity", whole_tiles=True)
    v.b.emit(tile.MBarrierWaitParityOp(barrier.ssa, v.index_ssa(parity)))
