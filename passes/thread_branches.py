"""Whole-tile work under a branch on the thread index (a helper of tile-infer-layout).

tilec spreads every whole-tile op (T.copy, T.Parallel, T.gemm, T.fill, T.reduce_*, T.cumsum,
T.sync_threads) over all the threads of the block, each thread doing its part, so under
`if T.get_thread_binding() < 32:` the threads outside the branch would not do theirs. TileLang
runs such a branch on the threads it selects (it infers their range), the `else` on the others,
the two at once; they meet only where the kernel synchronizes them. A branch whose two sides
cannot meet inside it computes the same when each side runs on the whole block, one after the
other, so tilec does that (`sequentialize`): the sides' results are TileLang's; what is lost is
their running at the same time. Such a branch:

- tests the thread index alone (integer arithmetic on `T.get_thread_binding` and constants), so
  which sides some thread takes is known: a side no thread takes is dropped;
- holds no code that uses the thread index (each thread of a side would compute something else)
  and no synchronization between roles (mbarriers, TMA loads on them, named barriers: a producer
  and a consumer written by hand wait for each other, and run one after the other they would wait
  forever), no element atomics outside T.Parallel and no raw cp.async (one per thread of the
  side), no per-thread state the side leaves behind (a T.alloc_var or local buffer from outside
  the branch written, a fragment element written outside T.Parallel), no thread branch it could
  not run itself (inner branches go first), and stands in no warp-specialized role (T.ws: its
  threads are not the kernel's).

Other whole-tile work under a thread branch is a located error (warp-specialized roles are
written with `T.ws`, which tilec lowers as such).
"""

from __future__ import annotations

from tilec.dialects import tile
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.ir import Operation, SSAValue

from tilec.errors import error_at, loc_of

from .analysis import computed_from, root_alloc

__all__ = ["check_thread_branches", "sequentialize"]

_PROTOCOL = (tile.MBarrierArriveOp, tile.MBarrierWaitParityOp, tile.MBarrierExpectTxOp, tile.TmaLoadOp,
             tile.CpAsyncArriveOp, tile.WarpSpecializeOp, tile.ConsumerGroupOp, tile.WaitTurnOp, tile.PassTurnOp)


def _on_thread_index(value: SSAValue) -> bool:
    return computed_from(value, tile.ThreadIdOp)


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
                  tile.BarrierOp | tile.GemmWaitOp):
        return tile.block_level_name(op)
    return None


def _width(v: SSAValue) -> int:
    return v.type.width.data if isinstance(v.type, IntegerType) else 64  # (index: 64 bits)


def _signed(x: int, width: int) -> int:
    return x - (1 << width) if x >> (width - 1) & 1 else x


_BINARY = {arith.AddiOp: lambda a, b, w: a + b, arith.SubiOp: lambda a, b, w: a - b,
           arith.MuliOp: lambda a, b, w: a * b, arith.AndIOp: lambda a, b, w: a & b,
           arith.OrIOp: lambda a, b, w: a | b, arith.XOrIOp: lambda a, b, w: a ^ b,
           arith.ShLIOp: lambda a, b, w: a << b, arith.ShRUIOp: lambda a, b, w: a >> b,
           arith.ShRSIOp: lambda a, b, w: _signed(a, w) >> b,
           arith.DivUIOp: lambda a, b, w: a // b, arith.RemUIOp: lambda a, b, w: a % b,
           arith.DivSIOp: lambda a, b, w: int(_signed(a, w) / _signed(b, w)),
           arith.RemSIOp: lambda a, b, w: _signed(a, w) - _signed(b, w) * int(_signed(a, w) / _signed(b, w)),
           arith.MinSIOp: lambda a, b, w: min(_signed(a, w), _signed(b, w)),
           arith.MaxSIOp: lambda a, b, w: max(_signed(a, w), _signed(b, w)),
           arith.MinUIOp: lambda a, b, w: min(a, b), arith.MaxUIOp: lambda a, b, w: max(a, b)}
_COMPARE = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "slt": lambda a, b: a < b,
            "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
            "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b, "ugt": lambda a, b: a > b,
            "uge": lambda a, b: a >= b}


def _evaluate(v: SSAValue, tid: tuple[int, int, int], depth: int = 0) -> int:
    """`v` for the thread at `tid`, as the unsigned bits of its type (LookupError: not arithmetic on
    the thread index and constants)."""
    op, width = v.owner, _width(v)
    if not isinstance(op, Operation) or depth > 32:
        raise LookupError
    if isinstance(op, tile.ThreadIdOp):
        result = tid[op.dim.value.data]
    elif isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        result = op.value.value.data  # (i1 true is stored as -1)
    elif isinstance(op, arith.IndexCastOp | arith.ExtSIOp):
        inner = op.input
        result = _signed(_evaluate(inner, tid, depth + 1), _width(inner))
    elif isinstance(op, arith.ExtUIOp | arith.TruncIOp):
        result = _evaluate(op.input, tid, depth + 1)
    elif type(op) in _BINARY:
        a, b = (_evaluate(x, tid, depth + 1) for x in (op.lhs, op.rhs))
        result = _BINARY[type(op)](a, b, width)
    elif isinstance(op, arith.CmpiOp):
        name = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        w = _width(op.lhs)
        a, b = (_evaluate(x, tid, depth + 1) for x in (op.lhs, op.rhs))
        if name.startswith("s"):
            a, b = _signed(a, w), _signed(b, w)
        result = int(_COMPARE[name](a, b))
    elif isinstance(op, arith.SelectOp):
        result = _evaluate(op.lhs if _evaluate(op.cond, tid, depth + 1) else op.rhs, tid, depth + 1)
    else:
        raise LookupError
    return result % (1 << width)


def _sides_taken(cond: SSAValue, threads: tuple[int, int, int]) -> tuple[bool, bool] | None:
    """(whether some thread takes the `then` side, whether some takes the `else`), or None where the
    condition is not integer arithmetic on the thread index and constants."""
    taken = set()
    try:
        for z in range(threads[2]):
            for y in range(threads[1]):
                for x in range(threads[0]):
                    taken.add(bool(_evaluate(cond, (x, y, z))))
    except (LookupError, ZeroDivisionError):
        return None
    return True in taken, False in taken


def _inside_parallel(op: Operation, branch: scf.IfOp) -> bool:
    loop = tile.enclosing(op, tile.ParallelOp)
    return loop is not None and branch.is_ancestor(loop)


def _sequential_blocker(branch: scf.IfOp) -> Operation | None:
    """The first op that keeps `branch`'s sides from running one after the other (None: nothing does)."""
    if tile.enclosing(branch, tile.WarpSpecializeOp) is not None or \
            tile.enclosing(branch, tile.ConsumerGroupOp) is not None:
        return branch  # a role's threads are not the kernel's (T.ws): a side may be the role's every thread
    for inner in branch.walk():
        if inner is branch:
            continue
        if isinstance(inner, _PROTOCOL) or (isinstance(inner, tile.BarrierOp) and inner.barrier_id is not None):
            return inner
        if isinstance(inner, tile.AtomicOp | tile.CpAsyncOp) and not _inside_parallel(inner, branch):
            return inner
        if isinstance(inner, scf.IfOp) and _on_thread_index(inner.cond):
            return inner
        if any(_on_thread_index(v) for v in inner.operands):
            return inner
        if isinstance(inner, tile.StoreOp):  # per-thread state set by one side's threads only
            alloc = root_alloc(inner.dest)
            scope = inner.dest.type.scope
            outside = alloc is not None and not branch.is_ancestor(alloc)
            if outside and (scope == "local" or (scope == "fragment" and not _inside_parallel(inner, branch))):
                return inner
    return None


def sequentialize(kernel: tile.KernelOp) -> None:
    """Branches on the thread index holding whole-tile work, their sides run one after the other on the
    whole block where they can be (see the module's docstring)."""
    for branch in reversed([op for op in kernel.walk() if isinstance(op, scf.IfOp)]):  # (inner ones first)
        if branch.parent is None or not _on_thread_index(branch.cond) or branch.results:
            continue
        if not any(_whole_tile(inner) for inner in branch.walk() if inner is not branch):
            continue  # per-thread code: the branch stays a branch
        if _sequential_blocker(branch) is not None:
            continue  # check_thread_branches says where
        sides = _sides_taken(branch.cond, kernel.thread_extents)
        if sides is None:
            continue
        block = branch.parent_block()
        for region, taken in zip((branch.true_region, branch.false_region), sides):
            if not taken or not region.blocks:
                continue
            for op in list(region.block.ops):
                if isinstance(op, scf.YieldOp):
                    continue
                op.detach()
                block.insert_op_before(op, branch)
        branch.detach()
        branch.erase()


def _describe(op) -> str:
    """What the kernel's author wrote for `op`, a branch's blocker, in the kernel language's terms."""
    if isinstance(op, tile.BarrierOp):
        return "a named barrier (T.sync_threads)"
    if isinstance(op, tile.MBarrierArriveOp | tile.MBarrierWaitParityOp | tile.MBarrierExpectTxOp):
        return "an mbarrier operation"
    if isinstance(op, tile.StoreOp):
        if any(_on_thread_index(v) for v in op.operands):
            return "a store indexed by (or of) the thread index"
        return "a store to per-thread state (a local buffer, or a fragment element outside T.Parallel)"
    if isinstance(op, scf.IfOp) or any(_on_thread_index(v) for v in op.operands):
        return "another use of the thread index (a nested test, or a value computed from it)"
    return op.name


def check_thread_branches(kernel: tile.KernelOp) -> None:
    """Runs the branches `sequentialize` can; raises at the first whole-tile op inside any other `if` on
    the thread index."""
    sequentialize(kernel)
    for op in kernel.walk():
        if not isinstance(op, scf.IfOp) or not _on_thread_index(op.cond):
            continue
        for inner in op.walk():
            what = _whole_tile(inner) if inner is not op else None
            if what is not None:
                blocker = _sequential_blocker(op)
                if op.results:
                    why = "yields values"
                elif blocker is op:
                    why = "is inside a warp-specialized role (T.ws), whose threads are not the block's"
                    blocker = None
                elif blocker is not None:
                    why = f"holds {_describe(blocker)}, which needs its side's threads apart from the others"
                else:
                    why = None
                why = ("; tilec runs such a branch's sides one after the other on the whole block, but " +
                       (f"this one {why}" if why else "which threads take this one is not known from the thread "
                                                      "index alone"))
                raise error_at(inner, f"{what} inside a branch on the thread index (T.get_thread_binding) is not "
                                      "supported by the CUDA target: tilec spreads whole-tile work over all the "
                                      "block's threads, and those outside the branch would not do their part" + why,
                               notes=((loc_of(blocker), f"{_describe(blocker)} here"),)
                               if blocker is not None and loc_of(blocker) is not None else (),
                               hint="move it out of the branch (every thread runs it), or make its sides "
                                    "warpgroup roles: a split of the threads at multiples of 128 whose sides meet "
                                    "at mbarriers (T.alloc_barrier, T.barrier_arrive / T.barrier_wait), or T.ws "
                                    "blocks")
