"""Pair the blocks of a warp-specialized kernel into clusters that share a TMA-loaded operand.

Requires: tile-warp-specialize (a `tile.warp_specialize` it made: a producer issuing
  `tile.tma_load`s and consumers releasing the stages on an `empty` mbarrier); runs before
  tile-plan-shared-memory.
Establishes: blocks whose grid indices differ only along one dimension `d` form a cluster of
  two (`tile.kernel {cluster}`: 2 along `d`, 1 elsewhere) when some of the producer's loads read
  a region that does not depend on the block index along `d` (a gemm's B tile for the blocks of
  one column of C, its A tile for one row). Those loads become `{multicast}`: each block of the
  pair issues half of the boxes, and the hardware writes them into the tile of both blocks and
  completes them on both blocks' `full` barriers, so the operand leaves L2 once per cluster
  instead of once per block. Since either block's producer then writes into the other's stage,
  a stage is free only when the consumers of both blocks released it: their `empty` arrivals
  become `{cluster}` (one on each block's barrier) and the `empty` barriers count both blocks'
  arrivals. The dimension whose shared loads bring the most bytes is chosen. In a persistent
  kernel (tile.persistent loops) the pairs are pairs of tiles: the tile loops' indices along `d`
  count as the block index, and the lowering runs each cluster's blocks over one pair of tiles at
  a time (tile 2q and 2q + 1 along `d`, by rank), so both blocks run the same number of tiles.
Fails: never; a warp-specialized kernel it leaves alone says why (`not_clustered`): a run-time
  grid extent, no grid extent
  that is a multiple of two, no load shared along a dimension, or a stage protocol (loop bounds, stage
  indices) that differs between the blocks of a pair.

    tile.kernel (%bx, %by) in (%c16, %c32) threads [256, 1, 1] {
      ... tile.tma_load %b, %B_stage, %full[%s] ...          // B's region: (k, bx) only
  becomes
    tile.kernel (%bx, %by) in (%c16, %c32) threads [256, 1, 1] {
      ... tile.tma_load %b, %B_stage, %full[%s] {multicast} ...
      ... tile.mbarrier_arrive %empty[%s2] {cluster} ...
    } {cluster = array<i64: 1, 2>}
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tilec.dialects import tile
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from .target_facts import target_facts

__all__ = ["CLUSTER_SIZE", "TileClusterPass"]

CLUSTER_SIZE = 2
_SYNC = (tile.MBarrierArriveOp, tile.MBarrierWaitParityOp, tile.MBarrierExpectTxOp, tile.TmaLoadOp)


class _DependsOn:
    """Whether a value depends on one of `args`, a block index and the tile loops' indices along the
    same grid dimension (through its defining ops, the bounds of the loops whose index it is, and
    the ops of regions that yield it)."""

    def __init__(self, args: Sequence[SSAValue]):
        self.args = set(args)
        self.memo: dict[SSAValue, bool] = {}

    def __call__(self, value: SSAValue) -> bool:
        if value in self.args:
            return True
        if value in self.memo:
            return self.memo[value]
        self.memo[value] = False  # (a cycle through a loop's carried value: decided by the rest)
        owner = value.owner
        if isinstance(owner, Block):
            parent = owner.parent_op()
            # a loop index: the loop's bounds (a region's other arguments: what enters it)
            found = parent is not None and not isinstance(parent, tile.KernelOp) and \
                any(self(o) for o in parent.operands)
        else:
            found = self.op(owner)
        self.memo[value] = found
        return found

    def op(self, op: Operation) -> bool:
        if isinstance(op, tile.LoadOp) and not isinstance(op.source.type, tile.TensorType):
            return True  # a value stored into a buffer and read back: its stores are not followed
        if any(self(o) for o in op.operands):
            return True
        return any(self(o) for inner in op.walk() if inner is not op for o in inner.operands)


def _region_index_operands(op: Operation) -> list[SSAValue]:
    """The operands of a sync op that pick the barrier or phase (not a load's source region)."""
    if isinstance(op, tile.TmaLoadOp):
        return [op.index] if op.index is not None else []
    return list(op.operands[1:])  # the barrier's index, the parity


def _protocol_differs(ws: tile.WarpSpecializeOp, depends: _DependsOn) -> bool:
    """Whether the blocks of a pair could run different sequences of stage operations: a sync
    op whose barrier index or parity, or an enclosing loop bound or branch, depends on the index."""
    for region in (ws.producer, ws.consumer):
        for op in region.walk():
            if not isinstance(op, _SYNC):
                continue
            if any(depends(v) for v in _region_index_operands(op)):
                return True
            parent = op.parent_op()
            while parent is not None and parent is not ws:
                if any(depends(v) for v in parent.operands):
                    return True
                parent = parent.parent_op()
    return False


def _splits(load: tile.TmaLoadOp) -> bool:
    """Whether the blocks of a pair can each issue half of the load's boxes (tile.multicast_bands)."""
    rows = load.dst.type.shape[-2] if load.dst.type.rank >= 2 else 1
    return tile.multicast_bands(rows, tile.tma_chunks(load.dst), CLUSTER_SIZE) is not None


def _box_bytes(load: tile.TmaLoadOp) -> int:
    typ = load.dst.type
    return math.prod(typ.shape) * tile.element_bytes(typ.element_type)


def _cluster(kernel: tile.KernelOp, ws: tile.WarpSpecializeOp) -> str | None:
    """Clusters `kernel` (returns None), or says why not."""
    loops = [op for op in kernel.walk() if isinstance(op, tile.PersistentOp)]
    if not any(isinstance(op, tile.ForOp) and op.warp_specialized_stages is not None for op in ws.consumer.walk()):
        return "a hand-written T.ws region: tilec does not know its stage protocol"
    if ws.all_producer_threads is not None:
        return "the producer's threads copy some of its tiles (cp.async, see tilec.not_tma), which do not multicast"
    loads = [op for op in ws.producer.walk() if isinstance(op, tile.TmaLoadOp)]
    extents = [tile.constant_index(g) for g in kernel.grid]
    if None in extents:  # (the lowering pairs block indices over the whole grid)
        return "a run-time grid extent"
    best, best_bytes, reason = None, 0, "no TMA load whose region is shared by two blocks of the grid"
    for d, (arg, extent) in enumerate(zip(kernel.body.block.args, extents)):
        if extent is None or extent % CLUSTER_SIZE:
            continue
        depends = _DependsOn([arg, *(loop.tile_indices[d] for loop in loops)])
        shared = [ld for ld in loads if not depends(ld.src) and _splits(ld)]
        if not shared:
            continue
        if _protocol_differs(ws, depends):
            reason = "the stage protocol (loop bounds, stage indices) differs between the blocks of a pair"
            continue
        nbytes = sum(_box_bytes(ld) for ld in shared)
        if nbytes > best_bytes:
            best, best_bytes = (d, shared), nbytes
    if best is None:
        return reason
    d, shared = best
    shape = [1] * len(kernel.grid)
    shape[d] = CLUSTER_SIZE
    kernel.cluster = DenseArrayBase.from_list(i64, shape)
    for load in shared:
        load.attributes["multicast"] = UnitAttr()
    releases = [op for op in ws.consumer.walk() if isinstance(op, tile.MBarrierArriveOp)]
    for barrier in {op.barrier for op in releases}:
        alloc = barrier.owner
        alloc.arrive_count = IntegerAttr(alloc.arrive_count.value.data * CLUSTER_SIZE, i64)
    for op in releases:
        op.attributes["cluster"] = UnitAttr()
    return None


@dataclass(frozen=True)
class TileClusterPass(ModulePass):
    """Pair the blocks of a warp-specialized kernel into clusters that share a TMA-loaded operand."""

    name = "tile-cluster"

    target: str = "sm_90a"
    """The target whose facts the pass reads (target_facts.py): clusters need sm_90."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not target_facts(self.target).has_clusters:
            return
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            splits = [w for w in kernel.walk() if isinstance(w, tile.WarpSpecializeOp)]
            if len(splits) != 1 or kernel.cluster is not None:
                continue
            reason = _cluster(kernel, splits[0])
            if reason is not None:
                kernel.attributes["not_clustered"] = StringAttr(reason)
