"""Whole-tile work under a branch on the thread index, refused for the CUDA target (a helper of
tile-infer-layout).

tilec spreads every whole-tile op (T.copy, T.Parallel, T.gemm, T.fill, T.reduce_*, T.cumsum,
T.sync_threads) over all the threads of the block, each thread doing its part, so under
`if T.get_thread_binding() < 32:` the threads outside the branch would not do theirs: the tile
would be partly computed, and a barrier inside would wait for threads that never arrive.
TileLang infers a thread range for such regions; tilec does not yet (warp-specialized regions
are written with `T.ws`, which tilec lowers as such).
"""

from __future__ import annotations

from tilec.dialects import tile
from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue

from tilec.errors import error_at

__all__ = ["check_thread_branches"]


def _on_thread_index(value: SSAValue, depth: int = 0) -> bool:
    op = value.owner
    if not isinstance(op, Operation) or depth > 32:
        return False
    if isinstance(op, tile.ThreadIdOp):
        return True
    return any(_on_thread_index(v, depth + 1) for v in op.operands)


def _whole_tile(op: Operation) -> str | None:
    """How the surface spells `op` when it is work spread over the block's threads."""
    if isinstance(op, tile.ForOp) and op.kind.data == tile.LoopKind.SERIAL:
        return None  # control flow: what it runs is checked op by op
    if isinstance(op, tile.BarrierOp) and op.barrier_id is not None:
        return None  # a named barrier counts the threads that meet there (T.sync_threads(id, count))
    if isinstance(op, tile.AtomicOp | tile.ForOp | tile.ParallelOp):
        name = tile.block_level_name(op)
        return "T.Parallel" if isinstance(op, tile.ParallelOp) else name
    if isinstance(op, tile.CopyOp | tile.GemmOp | tile.FillOp | tile.ReduceOp | tile.CumsumOp | tile.CummaxOp |
                  tile.BarrierOp):
        return tile.block_level_name(op)
    return None


def check_thread_branches(kernel: tile.KernelOp) -> None:
    """Raises at the first whole-tile op inside an `if` on the thread index."""
    for op in kernel.walk():
        if not isinstance(op, scf.IfOp) or not _on_thread_index(op.cond):
            continue
        for inner in op.walk():
            what = _whole_tile(inner) if inner is not op else None
            if what is not None:
                raise error_at(inner, f"{what} inside a branch on the thread index (T.get_thread_binding) is not "
                                      "supported by the CUDA target: tilec spreads whole-tile work over all the "
                                      "block's threads, and those outside the branch would not do their part",
                               hint="move it out of the branch (every thread runs it), or split the threads "
                                    "into roles with T.ws")
