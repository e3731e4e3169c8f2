"""What a `tile.parallel` body may hold: the rules of `ParallelOp.verify_`, shared with the frontend.

A `tile.parallel` runs its iterations on the block's threads, element by element, so its body
holds no op that works on whole tiles or on the block, allocates only per-thread (local)
buffers, writes each fragment element from one iteration, runs inner loops over the same
range in every iteration, and writes no local buffer allocated outside it.  The frontend
checks the same rules as it builds each op (`block_level_name`, `missing_loop_dims`,
`varies_per_element`), so that the user's error points at the offending line.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from .compute import (
    AtomicOp,
    CopyOp,
    CummaxOp,
    CumsumOp,
    FillOp,
    GemmOp,
    ReduceOp,
)
from .memory import (
    AllocOp,
    AnnotateLayoutOp,
    AsyncCommitOp,
    AsyncWaitOp,
    LoadOp,
    RegionOp,
    ReshapeOp,
    StageOp,
    StoreOp,
)
from .structure import (
    ForOp,
    KernelOp,
    ParallelOp,
    UseSwizzleOp,
)
from .sync import AllocBarrierOp, BarrierOp, GemmWaitOp, MBarrierArriveOp, MBarrierWaitParityOp
from .types import BufferType

# Ops that work on whole tiles or on the block: a per-element loop body cannot hold them.
_BLOCK_LEVEL = {
    CopyOp: "T.copy", GemmOp: "T.gemm", FillOp: "T.fill / T.clear", ReduceOp: "T.reduce_*",
    CumsumOp: "T.cumsum", CummaxOp: "T.cummax", ParallelOp: "a nested T.Parallel", KernelOp: "T.Kernel",
    BarrierOp: "T.sync_threads", UseSwizzleOp: "T.use_swizzle", AnnotateLayoutOp: "T.annotate_layout",
    AllocBarrierOp: "T.alloc_barrier", MBarrierArriveOp: "T.mbarrier_arrive",
    MBarrierWaitParityOp: "T.mbarrier_wait_parity", RegionOp: "a tile region", ReshapeOp: "T.reshape / T.view",
    StageOp: "tile.stage", AsyncCommitOp: "tile.async_commit", AsyncWaitOp: "tile.async_wait",
    GemmWaitOp: "T.wait_wgmma",
}


def block_level_name(op: Operation) -> str | None:
    """How the surface spells `op` when it is an op a `tile.parallel` body cannot hold, else None."""
    if isinstance(op, AtomicOp) and not op.indices:
        return "a tile-wide T.atomic_*"
    if isinstance(op, ForOp) and op.kind.data == "pipelined":
        return "T.Pipelined"
    return _BLOCK_LEVEL.get(type(op))


def missing_loop_dims(indices: Sequence[SSAValue], loop: ParallelOp) -> list[int]:
    """The dims of `loop` (extent > 1) that none of `indices` depends on."""
    ivs = {arg: d for d, arg in enumerate(loop.body.block.args) if loop.shape[d] > 1}
    used: set[int] = set()
    seen: set[SSAValue] = set()
    stack = list(indices)
    while stack and len(used) < len(ivs):
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        if value in ivs:
            used.add(ivs[value])
        elif isinstance(value.owner, Operation) and loop.is_ancestor(value.owner):
            stack.extend(value.owner.operands)
    return sorted(set(ivs.values()) - used)


def varies_per_element(values: Sequence[SSAValue], loop: ParallelOp) -> bool:
    """Whether any of `values` may differ between the iterations of `loop`.

    A value varies when it is computed (inside the loop) from the loop's indices or from an
    element of a fragment or of a buffer allocated in the loop; values from outside, and
    loads of other tiles at such values, are the same for every iteration.
    """
    ivs = set(loop.body.block.args)
    seen: set[SSAValue] = set()
    stack = list(values)
    while stack:
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        if value in ivs:
            return True
        op = value.owner
        if not isinstance(op, Operation) or not loop.is_ancestor(op):
            continue
        if isinstance(op, LoadOp):
            src = op.source.type
            if isinstance(src, BufferType) and (src.scope == "fragment" or loop.is_ancestor(op.source.owner)):
                return True
        stack.extend(op.operands)
    return False


def _fragment_written(op: Operation) -> SSAValue | None:
    dest = op.dest if isinstance(op, StoreOp) else op.dst if isinstance(op, AtomicOp) and op.indices else None
    return dest if dest is not None and isinstance(dest.type, BufferType) and dest.type.scope == "fragment" else None


def parallel_body_error(loop: ParallelOp) -> str | None:
    """Why the body of `loop` is not a per-element loop body (None when it is).

    It holds no op that works on whole tiles, allocates only local (per-thread) buffers,
    writes each fragment element from one iteration (every loop variable of extent > 1
    takes part in the indices), and writes no local buffer allocated outside it: a
    per-element temporary is allocated in the body (the frontend moves it there).
    """
    for op in loop.body.walk():
        if op is loop:
            continue
        what = block_level_name(op)
        if what is not None:
            return f"{loop.name}: {what} ({op.name}) works on whole tiles and cannot be inside a tile.parallel"
        if isinstance(op, ForOp) and varies_per_element((op.lb, op.ub, op.step), loop):
            return (f"{loop.name}: the bounds of a tile.for inside it differ between its iterations; every "
                    "iteration's inner loop runs the same range")
        if isinstance(op, AllocOp) and op.result.type.scope != "local":
            return f"{loop.name}: {op.result.type.scope} buffers cannot be allocated inside a tile.parallel"
        if _fragment_written(op) is not None:
            missing = missing_loop_dims(op.indices, loop)
            if missing:
                return (f"{loop.name}: {op.name} writes a fragment element from several iterations: its indices do "
                        f"not use loop dim{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}")
        dest = op.dest if isinstance(op, StoreOp) else op.dst if isinstance(op, AtomicOp) and op.indices else None
        if dest is not None and isinstance(dest.type, BufferType) and dest.type.scope == "local" and \
                isinstance(dest.owner, AllocOp) and not loop.is_ancestor(dest.owner):
            return (f"{loop.name}: {op.name} writes a local buffer allocated outside the loop; a per-element "
                    "temporary is allocated inside the loop body")
    return None
