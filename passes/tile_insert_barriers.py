"""Insert `tile.barrier` between conflicting shared-memory accesses of a block.

Requires: nothing; after tile-plan-shared-memory it also orders buffers that
  share bytes (by their `offset` properties).
Establishes: in each straight-line sequence of a `tile.kernel` (its body,
  `tile.for` bodies, `scf.if` branches outside `tile.parallel`), a barrier sits
  between a write of a shared buffer and any later read or write of it, and
  between a read and a later write (RAW, WAW, WAR), also across loop
  iterations (a barrier before the loop's terminator) and into / out of loops;
  a thread's raw cp.async (`tile.cp_async`) writes when it lands, so it gets a
  barrier after earlier accesses and before later reads, none before another.
Fails: never.

A barrier is never put where only some threads run: inside an `scf.if` whose condition may
differ between the block's threads, or a `tile.for` whose bounds may (`Divergence` says which
values may).  The threads outside the branch never arrive there, so on a GPU the barrier
deadlocks or desynchronizes the block's later barriers (`bar.sync` is `barrier.sync.aligned`:
every thread of a warp must run the same one), although a lockstep simulator runs it.  Such a
branch is then one step, like a `tile.parallel`: the barriers it needs go before and after
it, and what its own per-thread accesses need among themselves is the program's to order
(as in CUDA: TileLang's `T.sync_threads(id, count)` inside it).  A branch holding whole-tile
work (T.copy, T.gemm, a T.sync_threads of the whole block, ...) is taken as uniform: that
work needs every thread of the block anyway.

Each op's accesses come from one table (`_ACCESSES`); a `tile.parallel` is a
single op reading / writing the union of its body.  A nested sequence is
summarized by what it accesses before its first barrier (`head`) and after
its last (`tail`).  Only "shared" scope matters: fragments and locals are
per-thread, and block barriers do not order global memory.

    tile.copy %a, %A_s                  tile.copy %a, %A_s
    tile.gemm %A_s, %B_s, %C    ->      tile.barrier
                                        tile.gemm %A_s, %B_s, %C
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tilec.dialects import tile
from tilec.passes.analysis import surely_runs
from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator


def _reduce_reads(op: tile.ReduceOp):
    # Without `clear`, the old contents of dst take part in the reduction.
    return (op.src,) if op.clear.value.data else (op.src, op.dst)


# op kind -> (reads, writes) operands; values that are not shared tiles are ignored.
_ACCESSES: dict[type[Operation], Callable[[Operation], tuple[Iterable, Iterable]]] = {
    # an async copy (tile-pipeline) is ordered by its loop's own async_wait + barrier
    tile.CopyOp: lambda op: ((op.src,), () if op.is_async else (op.dst,)),
    tile.FillOp: lambda op: ((), (op.dst,)),
    tile.GemmOp: lambda op: ((op.a, op.b), (op.c,)),
    tile.ReduceOp: lambda op: (_reduce_reads(op), (op.dst,)),
    tile.CumsumOp: lambda op: ((op.src,), (op.dst,)),
    tile.CummaxOp: lambda op: ((op.src,), (op.dst,)),
    tile.AtomicOp: lambda op: ((op.dst, op.value), (op.dst,)),
    tile.LoadOp: lambda op: ((op.source,), ()),
    tile.StoreOp: lambda op: ((), (op.dest,)),
    tile.PrintOp: lambda op: (op.values, ()),
    tile.TmaStoreOp: lambda op: ((op.src,), ()),  # read asynchronously: until its tile.tma_store_wait
    tile.GemmWaitOp: lambda op: (_completed_reads(op), ()),
}


def _completed_reads(op: tile.GemmWaitOp) -> tuple:
    """The tiles the program's asynchronous wgmmas into `op`'s accumulators read (TileLang's
    `T.wgmma_gemm`): their reads last until this wait, so a write after it by another warpgroup's
    threads needs a barrier after it, not just one after the gemm."""
    return tuple(v for c in op.cs for use in c.uses if isinstance(g := use.operation, tile.GemmOp)
                 and g.c is c and g.wg_wait is not None for v in (g.a, g.b) if v.type.scope == "shared")


def root_buffer(value: SSAValue) -> SSAValue:
    """The buffer `value` views, looking through `tile.region`, `tile.reshape` and `tile.stage`."""
    while isinstance(value.owner, tile.RegionOp | tile.ReshapeOp | tile.StageOp):
        value = value.owner.source
    return value


def _byte_range(buffer: SSAValue) -> tuple[int, int] | None:
    op = buffer.owner
    if not isinstance(op, tile.AllocOp) or op.offset is None:
        return None
    return op.offset.value.data, op.offset.value.data + op.nbytes


def _alias(a: SSAValue, b: SSAValue) -> bool:
    if a is b:
        return True
    ra, rb = _byte_range(a), _byte_range(b)
    return ra is not None and rb is not None and ra[0] < rb[1] and rb[0] < ra[1]


@dataclass
class Accesses:
    """The shared buffers (root values) read and written by some ops, and written by threads' raw
    cp.asyncs (`async_writes`): a barrier orders what came before such a write ahead of it, but not
    the write itself, which lands at its thread's wait; the barrier before a later read (after
    that wait) shows every thread's copies. Two such writes need no barrier between them."""

    reads: set[SSAValue] = field(default_factory=set)
    writes: set[SSAValue] = field(default_factory=set)
    async_writes: set[SSAValue] = field(default_factory=set)

    def __or__(self, other: Accesses) -> Accesses:
        return Accesses(self.reads | other.reads, self.writes | other.writes, self.async_writes | other.async_writes)

    def conflicts(self, later: Accesses) -> bool:
        """Whether `later` after `self` needs a barrier between (RAW, WAW, WAR)."""
        later_writes = later.writes | later.async_writes
        return _meets(self.writes, later.reads | later_writes) or _meets(self.reads, later_writes) or \
            _meets(self.async_writes, later.reads)


def _meets(xs: set[SSAValue], ys: set[SSAValue]) -> bool:
    return any(_alias(x, y) for x in xs for y in ys)


def _shared(values: Iterable[SSAValue]) -> set[SSAValue]:
    return {
        root_buffer(v)
        for v in values
        if isinstance(v.type, tile.BufferType) and v.type.scope == "shared"
    }


def op_accesses(op: Operation) -> Accesses:
    """What `op` and everything nested in it read and write, ignoring barriers."""
    total = Accesses()
    for inner in op.walk():
        get = _ACCESSES.get(type(inner))
        if get is not None:
            reads, writes = get(inner)
            total = total | Accesses(_shared(reads), _shared(writes))
        elif isinstance(inner, tile.CpAsyncOp):
            total = total | Accesses(async_writes=_shared((inner.dst,)))
    return total


class Divergence:
    """The values of a kernel that may differ between the threads of its block.

    A value may differ (is divergent) when it depends on `tile.thread_id`, a `tile.atomic`'s
    previous value, an index of a `tile.parallel`, a load at a divergent index, or a load of
    a per-thread buffer (local scope, a fragment) that some thread wrote with a divergent
    value or index or under divergent control (a branch on, or a loop bounded by, a divergent
    value; a `tile.parallel` body).  Loads of shared or global memory at the same index are
    the same for every thread.  A fixpoint over the kernel: a per-thread buffer carries
    divergence around loops and across branches."""

    def __init__(self, kernel: tile.KernelOp):
        self.values: set[SSAValue] = set()
        self.buffers: set[SSAValue] = set()
        while self._visit_block(kernel.body.block, False):
            pass

    def _visit_block(self, block: Block, control: bool) -> bool:
        """One pass over `block`, `control` saying whether only some threads may run it."""
        changed = False
        for op in block.ops:
            changed |= self._visit(op, control)
            if op.regions:
                inner = control or isinstance(op, tile.ParallelOp) or self.branches(op)
                for region in op.regions:
                    for child in region.blocks:
                        changed |= self._visit_block(child, inner)
        return changed

    def branches(self, op: Operation) -> bool:
        """Whether `op` is an `scf.if` on a divergent condition or a loop with divergent bounds."""
        if isinstance(op, scf.IfOp):
            return op.cond in self.values
        if isinstance(op, tile.ForOp):
            return any(v in self.values for v in (op.lb, op.ub, op.step))
        return False

    def _visit(self, op: Operation, control: bool) -> bool:
        divergent = isinstance(op, tile.ThreadIdOp | tile.AtomicOp) or any(v in self.values for v in op.operands)
        if isinstance(op, tile.LoadOp):
            root = root_buffer(op.source)
            divergent = divergent or root in self.buffers or (
                isinstance(root.type, tile.BufferType) and root.type.scope == "fragment")
        changed = False
        if divergent or control:
            for value in _per_thread_writes(op):
                if value not in self.buffers:
                    self.buffers.add(value)
                    changed = True
        yielded = any(v in self.values for region in op.regions for block in region.blocks
                      if block.last_op is not None and block.last_op.has_trait(IsTerminator)
                      for v in block.last_op.operands)
        if divergent or yielded:  # an scf.if's results: its condition or what a branch yields
            for value in op.results:
                if value not in self.values:
                    self.values.add(value)
                    changed = True
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    # the index of a tile.parallel; a loop's index when its bounds differ
                    if (isinstance(op, tile.ParallelOp) or divergent) and arg not in self.values:
                        self.values.add(arg)
                        changed = True
        return changed


def _per_thread_writes(op: Operation) -> set[SSAValue]:
    """The per-thread buffers (local scope, fragments) `op` itself writes."""
    get = _ACCESSES.get(type(op))
    if get is None:
        return set()
    return {
        root_buffer(v)
        for v in get(op)[1]
        if isinstance(v.type, tile.BufferType) and v.type.scope in ("local", "fragment")
    }


def _uniform_work(op: Operation) -> bool:
    """Whether `op` holds work every thread of the block must run (whole-tile ops, a barrier of
    the whole block): then its branch is uniform whatever its condition looks like."""
    for inner in op.walk():
        if inner is op or isinstance(inner, tile.RegionOp | tile.ReshapeOp | tile.StageOp):
            continue
        if isinstance(inner, tile.BarrierOp) and inner.barrier_id is not None:
            continue  # a named barrier counts the threads that meet there
        if isinstance(inner, tile.ForOp) and inner.kind.data == tile.LoopKind.SERIAL:
            continue
        if tile.block_level_name(inner) is not None:
            return True
    return False


@dataclass
class Summary:
    """A sequence's exposed accesses: before its first barrier and after its last one."""

    head: Accesses
    tail: Accesses
    has_barrier: bool = False
    """Whether a barrier surely runs (a loop may run no iteration, a branch may not run)."""


def _insert_barrier(before: Operation) -> None:
    barrier = tile.BarrierOp()
    barrier.location = before.location
    Rewriter.insert_op(barrier, InsertPoint.before(before))


def synchronize_block(block: Block, divergence: Divergence | None = None) -> Summary:
    """Inserts the barriers `block` needs on its own; summarizes what stays exposed."""
    seq = Summary(Accesses(), Accesses())
    for op in list(block.ops):
        if op.has_trait(IsTerminator):
            continue
        inner = _summarize(op, divergence)
        if seq.tail.conflicts(inner.head):
            _insert_barrier(op)
            seq.tail, seq.has_barrier = Accesses(), True
        if not seq.has_barrier:
            seq.head = seq.head | inner.head
        seq.tail = inner.tail if inner.has_barrier else seq.tail | inner.tail
        seq.has_barrier = seq.has_barrier or inner.has_barrier
    return seq


def _summarize(op: Operation, divergence: Divergence | None) -> Summary:
    if isinstance(op, tile.BarrierOp):
        return Summary(Accesses(), Accesses(), has_barrier=True)
    if isinstance(op, tile.TmaStoreOp):  # its lowering meets the threads at a barrier before the store
        return Summary(Accesses(), op_accesses(op), has_barrier=True)
    if isinstance(op, tile.TmaStoreWaitOp):  # the store has read its tile, then a barrier (but {final})
        return Summary(Accesses(), Accesses(), has_barrier=op.final is None)
    if divergence is not None and divergence.branches(op) and not _uniform_work(op):
        accesses = op_accesses(op)  # run by some threads only: one step, no barrier inside
        return Summary(accesses, accesses)
    if isinstance(op, tile.ForOp | tile.PersistentOp):
        return _synchronize_loop(op, divergence)
    if isinstance(op, tile.WarpSpecializeOp):
        # the producer's TMA loads are ordered by mbarriers, not barriers; the consumers' own
        # accesses get (named) barriers among themselves
        return synchronize_block(op.consumer.block, divergence)
    if isinstance(op, scf.IfOp):
        branches = [synchronize_block(r.block, divergence) for r in op.regions if r.blocks]
        return Summary(
            head=_union(b.head for b in branches),
            tail=_union(b.tail for b in branches),
            has_barrier=len(branches) == 2 and all(b.has_barrier for b in branches),
        )
    accesses = op_accesses(op)  # tile.parallel and plain ops: one step
    return Summary(accesses, accesses)


def _union(parts: Iterable[Accesses]) -> Accesses:
    total = Accesses()
    for part in parts:
        total = total | part
    return total


def _synchronize_loop(loop: tile.ForOp | tile.PersistentOp, divergence: Divergence | None = None) -> Summary:
    """A loop's body, and a barrier at its end where its next iteration (the next tile of a
    persistent kernel) would touch what this one's end touches."""
    body = synchronize_block(loop.body.block, divergence)
    tail = body.tail
    # The next iteration's head runs after this iteration's tail.
    if tail.conflicts(body.head):
        _insert_barrier(loop.body.block.last_op)
        tail = Accesses()
        body.has_barrier = True
    surely = isinstance(loop, tile.ForOp) and surely_runs(loop)  # a block may own no tile
    return Summary(body.head, tail, body.has_barrier and surely)


@dataclass(frozen=True)
class TileInsertBarriersPass(ModulePass):
    """Insert `tile.barrier` between conflicting shared-memory accesses of a block."""

    name = "tile-insert-barriers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.walk():
            if isinstance(kernel, tile.KernelOp):
                synchronize_block(kernel.body.block, Divergence(kernel))
