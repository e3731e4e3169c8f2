"""The program's own waits for its asynchronous wgmmas (TileLang's `T.wgmma_gemm`, `T.gemm(...,
wg_wait=N)` and `T.wait_wgmma(n)`): which accumulators a wait completes, for tile-select-mma to tie
through it (`wgmma.wait_group` with their registers passing through, so that no read of them moves
above it).

A wait `n` completes every group of the warpgroup but the newest `n`. The accumulators tied are
those of the role's asynchronous wgmmas that can be running there (`running_accumulators`) less
those the newest `n` groups write (`_newest`): tying an accumulator a wgmma still writes would make
its registers an input of the wait while the wgmma runs, which ptxas answers by serializing the
wgmmas (C7514). Where the newest groups cannot be told from the program's order (a branch or a
rolled loop among them), every accumulator is tied: always right, maybe slower.

    T.wgmma_gemm(Q, K, s)      # the newest group
    T.wait_wgmma(1)            # completes O's gemm of the iteration before: ties o, not s
"""

from __future__ import annotations

from tilec.dialects import tile
from xdsl.dialects import scf
from xdsl.ir import Block, Operation, Region

__all__ = ["running_accumulators"]


def running_accumulators(wait: tile.GemmWaitOp) -> list:
    """The accumulators `wait` completes: those of the program's asynchronous wgmmas (`wg_wait` -1
    or N > 0) that can be running there, in its warpgroup role (the branch of `tile.consumer_group`
    or the region of `tile.warp_specialize` holding the wait, else the kernel), issued before it or
    in a loop around it (the iteration before), whose tile is in scope there; less those of the
    newest `pending` groups, where the program's order tells them (`_newest`)."""
    region = wait.parent_region()
    while region is not None and not _role(region):
        parent = region.parent_op()
        region = parent.parent_region() if parent is not None else None
    if region is None:
        region = tile.enclosing_kernel(wait).body
    in_scope = {id(b) for b in _enclosing_blocks(wait)}
    loops = [op for op in _ancestors(wait) if isinstance(op, tile.ForOp | scf.ForOp | scf.WhileOp)]
    before = []
    for op in region.walk():
        if op is wait:
            break
        before.append(op)
    candidates = [*before, *(op for loop in loops for op in loop.walk())]
    still = _newest(wait, wait.pending.value.data, loops[0] if loops else None)
    accs = []
    for gemm in candidates:
        if _asynchronous(gemm) and gemm.c not in accs and gemm.c not in still:
            owner = gemm.c.owner
            block = owner if isinstance(owner, Block) else owner.parent_block()
            if id(block) in in_scope:
                accs.append(gemm.c)
    return accs


def _asynchronous(op: Operation) -> bool:
    """A wgmma of the program's that may be left running (`wg_wait` -1 or N > 0)."""
    return isinstance(op, tile.GemmOp) and op.mma_kind == tile.MmaKind.WGMMA and op.wg_wait is not None \
        and op.wg_wait.value.data != 0


def _newest(wait: tile.GemmWaitOp, pending: int, loop: Operation | None) -> list:
    """The accumulators of the newest `pending` wgmma groups issued before `wait`, walking back
    through the ops before it, out of the branches around it, and in the innermost rolled loop
    `loop` around it once round from the end of its body (the iteration before); unrolled loops
    counted copy by copy. [] where they cannot be told (a branch or a rolled loop among them),
    which ties every accumulator."""
    if pending == 0:
        return []
    newest: list = []
    for op in _back_from(wait, loop):
        for gemm in _groups_newest_first(op):
            if gemm is None:  # (not told by the program's order)
                return []
            newest.append(gemm.c)
            if len(newest) == pending:
                return newest
        if isinstance(op, tile.GemmWaitOp) or isinstance(op, tile.GemmOp) and not _asynchronous(op):
            return newest  # older groups are complete there
    return newest


def _back_from(op: Operation, loop: Operation | None):
    """The ops that ran before `op`, nearest first: those before it in its block, then before each op
    around it, up to `loop`'s body, whose ops after the wait's come next (the iteration before, last
    first); then nothing (the loop's earlier iterations and what came before it are not followed)."""
    at = op
    while True:
        prev = at.prev_op
        while prev is not None:
            yield prev
            prev = prev.prev_op
        parent = at.parent_op()
        if parent is None or isinstance(parent, tile.KernelOp | tile.WarpSpecializeOp):
            return
        if parent is loop:
            nxt, after = at.next_op, []
            while nxt is not None:
                after.append(nxt)
                nxt = nxt.next_op
            yield from reversed(after)
            return
        if isinstance(parent, tile.ForOp | scf.ForOp | scf.WhileOp):
            return  # an unrolled loop's earlier copies: not followed
        at = parent


def _groups_newest_first(op: Operation) -> list:
    """The asynchronous wgmmas `op` issues, newest first; None for those the order does not tell."""
    if _asynchronous(op):
        return [op]
    gemms = [g for g in op.walk() if _asynchronous(g)] if op.regions else []
    if not gemms:
        return []
    if isinstance(op, tile.ForOp) and op.kind.data == tile.LoopKind.UNROLL:
        trips = _trip_count(op)
        body = op.body.block
        if trips is not None and all(g.parent_block() is body for g in gemms):
            return [g for _ in range(trips) for g in reversed(gemms)]
    return [None]


def _trip_count(loop: tile.ForOp) -> int | None:
    from .analysis import constant_value

    lb, ub, step = (constant_value(v) for v in (loop.lb, loop.ub, loop.step))
    if None in (lb, ub, step) or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def _role(region: Region) -> bool:
    """Whether `region` is one warpgroup role's code: a region of `tile.warp_specialize`, or a branch
    of an `scf.if` on `tile.consumer_group` (another branch on the thread index may hold a wait of
    gemms issued before it, by all of its threads)."""
    parent = region.parent_op()
    if isinstance(parent, tile.WarpSpecializeOp):
        return True
    if not isinstance(parent, scf.IfOp):
        return False
    work = [parent.cond]
    while work:
        value = work.pop()
        owner = value.owner
        if isinstance(owner, tile.ConsumerGroupOp):
            return True
        if isinstance(owner, Operation) and owner.name.startswith("arith."):
            work.extend(owner.operands)
    return False


def _ancestors(op: Operation):
    parent = op.parent_op()
    while parent is not None:
        yield parent
        parent = parent.parent_op()


def _enclosing_blocks(op: Operation):
    block = op.parent_block()
    while block is not None:
        yield block
        parent = block.parent_op()
        block = parent.parent_block() if parent is not None else None
