"""Warp specialization written by hand, TileLang's way: `with T.ws(k):` blocks → `tile.warp_specialize`.

    with T.Kernel(..., threads=256) as (bx, by):
        A_s = T.alloc_shared(...); ready = T.alloc_barrier(arrive_count=128); done = ...
        with T.ws(1):
            T.clear(C_local)
        for ko in T.Pipelined(K // bk, num_stages=2):
            with T.ws(0):                                   # the producer warpgroup
                T.barrier_wait(done, (ko + 1) % 2)
                T.tma_copy(A[by * bm, ko * bk], A_s, barrier=ready)
                T.barrier_arrive(ready)
            with T.ws(1):                                   # the consumer warpgroup
                T.barrier_wait(ready, ko % 2)
                T.gemm(A_s, B_s, C_local)
                T.barrier_arrive(done)
        with T.ws(1):
            T.copy(C_local, C[by * bm, bx * bn])

In TileLang each `T.ws(k)` block runs on warpgroup k (threads 128k .. 128k + 127) and the two
groups meet only at the mbarriers. tilec's `tile.warp_specialize` has the same two roles: the
consumer region runs on the kernel's threads, the producer region on one thread of an extra
warpgroup. This module owns the translation:

- the kernel's statements up to the first one with a `T.ws` block are its prologue
  (allocations, barriers, Python values); the rest is projected onto each role: a `T.ws(k)`
  block is kept (its body inlined) in role k's copy and dropped from the other, and a loop or
  `if` around `T.ws` blocks is kept in both, so each role runs its own copy of the loop;
- the warpgroup whose blocks issue `T.tma_copy` is the producer; there must be one producer and
  one consumer warpgroup (`threads=256`); the tile kernel gets the 128 consumer threads;
- a loop around `T.ws` blocks runs serially (its barriers order the stages; a `num_stages` is
  reported as not applied);
- in the producer, `T.tma_copy(src, dst, barrier=b)` announces its bytes on b (an arrival) and
  issues the TMA load; `T.barrier_arrive(b)`, which TileLang's 128 producer threads each execute,
  makes the warpgroup's 128 arrivals from tilec's one producer thread, less those the copies made;
  so a barrier the producer arrives on must expect 128 arrivals. The producer may hold only TMA
  copies, barrier operations and scalar code (`check_producer`).

`v.ws` is the `WsState` of the role being built (None outside warp-specialized regions).
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue

from tilec.dialects import tile

WARPGROUP = 128
PRODUCER_OPS = (tile.TmaLoadOp, tile.MBarrierExpectTxOp, tile.MBarrierArriveOp, tile.MBarrierWaitParityOp,
                tile.ForOp, tile.YieldOp, tile.RegionOp, tile.StageOp, tile.DimOp, tile.LoadOp, scf.IfOp,
                scf.YieldOp)


@dataclass
class WsState:
    """The role being built and the producer's barrier bookkeeping."""

    role: str  # "producer" or "consumer"
    pending: list = field(default_factory=list)  # [barrier, index, arrivals made by T.tma_copy] in the producer


# ------------------------------------------------------------------ finding T.ws blocks


def _ws_id(node: ast.stmt) -> int | None:
    """k for a `with T.ws(k):` statement (any spelling ending in `.ws` / `ws`), else None."""
    if not isinstance(node, ast.With) or len(node.items) != 1:
        return None
    call = node.items[0].context_expr
    if not isinstance(call, ast.Call):
        return None
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
    if name != "ws":
        return None
    if len(call.args) != 1 or call.keywords:
        return -1
    try:
        value = ast.literal_eval(call.args[0])
    except ValueError:
        value = _evaluate(call.args[0])
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


_VISITOR: list = []  # the visitor whose names a `T.ws(k)` with a named k is evaluated in


def _evaluate(node: ast.expr):
    from tilec.errors import TilecError

    if not _VISITOR:
        return None
    v = _VISITOR[-1]
    saved = v.b.loc
    try:
        return v.visit(node)
    except TilecError:
        return None
    finally:
        v.b.loc = saved


def uses_ws(stmts: list[ast.stmt]) -> bool:
    return any(_is_ws(n) for s in stmts for n in ast.walk(s))


def _is_ws(node) -> bool:
    if not isinstance(node, ast.With) or len(node.items) != 1 or not isinstance(node.items[0].context_expr, ast.Call):
        return False
    f = node.items[0].context_expr.func
    return (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)) == "ws"


def _blocks(stmts) -> list[ast.With]:
    return [n for s in stmts for n in ast.walk(s) if _is_ws(n)]


def _issues_tma(block: ast.With) -> bool:
    return any(isinstance(n, ast.Call) and (getattr(n.func, "attr", None) == "tma_copy" or
                                             getattr(n.func, "id", None) == "tma_copy") for n in ast.walk(block))


def plan_roles(v, stmts: list[ast.stmt], threads: list[int]) -> tuple[int, int]:
    """(producer id, consumer id) of a kernel body with T.ws blocks, checked against its threads."""
    _VISITOR.append(v)
    try:
        return _plan_roles(v, stmts, threads)
    finally:
        _VISITOR.pop()


def _plan_roles(v, stmts: list[ast.stmt], threads: list[int]) -> tuple[int, int]:
    blocks = _blocks(stmts)
    for b in blocks:
        if _ws_id(b) == -1:
            v.b.loc = v.loc_of(b)
            raise v.b.error("T.ws takes one warpgroup number, a constant: `with T.ws(0):`")
    ids = sorted({_ws_id(b) for b in blocks})
    producers = sorted({_ws_id(b) for b in blocks if _issues_tma(b)})
    total = threads[0] * threads[1] * threads[2]
    v.b.loc = v.loc_of(blocks[0])
    if threads[1:] != [1, 1] or total != 2 * WARPGROUP or len(ids) != 2 or any(i not in (0, 1) for i in ids):
        raise v.b.error(f"tilec supports T.ws kernels of two warpgroups, a producer and a consumer (threads=256, "
                        f"T.ws(0) and T.ws(1)); this one has {total} threads and warpgroups {ids}")
    if len(producers) != 1:
        raise v.b.error("a T.ws kernel needs one producer warpgroup, the one whose T.ws blocks issue T.tma_copy; "
                        f"here {'none does' if not producers else 'both do'}",
                        hint="issue every TMA copy from one warpgroup and compute in the other")
    producer = producers[0]
    return producer, 1 - producer


# ------------------------------------------------------------------ projection


def _project(v, stmts: list[ast.stmt], role: int) -> list[ast.stmt]:
    _VISITOR.append(v)
    try:
        return _project_in(v, stmts, role)
    finally:
        _VISITOR.pop()


def _project_in(v, stmts: list[ast.stmt], role: int) -> list[ast.stmt]:
    out = []
    for s in stmts:
        k = _ws_id(s) if _is_ws(s) else None
        if k is not None:
            if k == role:
                out.extend(s.body)
            continue
        if not uses_ws([s]):
            out.append(s)
            continue
        if isinstance(s, ast.For):
            new = copy.copy(s)
            new.iter = _serial(v, s.iter)
            new.body = _project_in(v, s.body, role)
            out.append(new)
        elif isinstance(s, ast.If):
            new = copy.copy(s)
            new.body, new.orelse = _project_in(v, s.body, role), _project_in(v, s.orelse, role)
            out.append(new)
        else:
            v.b.loc = v.loc_of(s)
            raise v.b.error("T.ws blocks may be nested only in loops and `if`s of the kernel body")
    return out


def _serial(v, it: ast.expr) -> ast.expr:
    """A `T.Pipelined(...)` around T.ws blocks as a serial loop (num_stages reported as not applied)."""
    if not isinstance(it, ast.Call) or getattr(it.func, "attr", getattr(it.func, "id", None)) != "Pipelined":
        return it
    from tilec.compiler.pass_configs import report

    stages = next((k.value for k in it.keywords if k.arg == "num_stages"), None)
    _VISITOR.append(v)
    try:
        stages = None if stages is None else _evaluate(stages)
    finally:
        _VISITOR.pop()
    if stages not in (None, 0, 1):
        report("T.Pipelined(num_stages=...) around T.ws blocks is not applied: the loop runs serially, its stages "
               "ordered by the barriers the kernel writes", v.loc_of(it))
    bounds = list(it.args[:2]) + [k.value for k in it.keywords if k.arg in ("start", "stop")]
    call = ast.Call(func=ast.Name("_tl_serial", ast.Load()), args=bounds, keywords=[])
    return ast.copy_location(call, it)


def emit(v, stmts: list[ast.stmt], producer: int, consumer: int) -> None:
    """The kernel body: the prologue as it is, then one `tile.warp_specialize` of the projected roles."""
    import tilec.language as T

    first = next(i for i, s in enumerate(stmts) if uses_ws([s]))
    v.visit_body(stmts[:first])
    for op in v.kernel.body.block.ops:
        if isinstance(op, tile.AllocOp | tile.AllocBarrierOp | tile.AnnotateLayoutOp | tile.UseSwizzleOp | tile.YieldOp) or \
                op.name.startswith("arith."):
            continue
        raise v.b.error(f"in a kernel with T.ws blocks, {op.name} outside them is not supported: each statement "
                        "that computes belongs to a warpgroup", hint="put it in a `with T.ws(k):` block")
    rest = stmts[first:]
    # the roles are built in place, inside the kernel (ops that verify where they stand, such as
    # T.Parallel's, see their kernel)
    split = v.b.emit(tile.WarpSpecializeOp(Block(), Block(), WARPGROUP))
    v.frame.names["_tl_serial"] = T.serial
    try:
        for (role, k), region in zip((("producer", producer), ("consumer", consumer)), (split.producer, split.consumer)):
            state = v.ws = WsState(role)
            with v.runtime_region(region.block, carried=False):
                v.visit_body(_project(v, rest, k))
            if state.pending:
                raise v.b.error("T.tma_copy(..., barrier=b) in the T.ws producer must be followed by "
                                "T.barrier_arrive(b) in the same block (the warpgroup's arrivals)")
    finally:
        v.ws = None
        v.frame.names.pop("_tl_serial", None)
    check_producer(v, split.producer.block)
    v.b.verify(split)


def check_producer(v, block: Block) -> None:
    for op in block.walk():
        if isinstance(op, PRODUCER_OPS) or op.name.startswith("arith."):
            continue
        from tilec.errors import error_at

        raise error_at(op, f"{op.name} in the T.ws producer: tilec runs the producer on one thread, so it may "
                           "hold only T.tma_copy, barrier operations and scalar code",
                       hint="compute in the consumer warpgroup's T.ws blocks")


# ------------------------------------------------------------------ barriers in the roles


def _same(a: SSAValue | None, b: SSAValue | None) -> bool:
    """Whether two index values compute the same thing (the same SSA, or the same ops of the same operands)."""
    if a is b:
        return True
    if a is None or b is None or not isinstance(a.owner, Operation) or not isinstance(b.owner, Operation):
        return False
    x, y = a.owner, b.owner
    return (x.name == y.name and x.properties == y.properties and x.attributes == y.attributes
            and len(x.operands) == len(y.operands) and all(_same(p, q) for p, q in zip(x.operands, y.operands)))


def tma_arrival(v, barrier: SSAValue, index: SSAValue | None) -> None:
    """A T.tma_copy in the producer arrived on (barrier, index) announcing its bytes: counted."""
    for entry in v.ws.pending:
        if entry[0] is barrier and _same(entry[1], index):
            entry[2] += 1
            return
    v.ws.pending.append([barrier, index, 1])


def producer_arrive(v, barrier: SSAValue, index: SSAValue | None) -> None:
    """`T.barrier_arrive(b)` of TileLang's 128 producer threads, from tilec's one producer thread."""
    owner = barrier.owner
    expected = owner.arrive_count.value.data if isinstance(owner, tile.AllocBarrierOp) else None
    if expected != WARPGROUP:
        raise v.b.error(f"the T.ws producer arrives on a barrier that expects {expected} arrivals: tilec counts "
                        f"the producer warpgroup's arrivals as its {WARPGROUP} threads' (arrive_count={WARPGROUP})")
    made = 0
    for entry in list(v.ws.pending):
        if entry[0] is barrier and _same(entry[1], index):
            made = entry[2]
            v.ws.pending.remove(entry)
    left = WARPGROUP - made
    if left < 0:
        raise v.b.error(f"{made} T.tma_copy calls on one barrier phase exceed its {WARPGROUP} arrivals")
    if left == 0:
        return
    loop = v.b.emit(tile.ForOp(*[v.index_ssa(x) for x in (0, left, 1)], "serial"))
    with v.b.at_end_of(loop.body.block):
        v.b.emit(tile.MBarrierArriveOp(barrier, index))


def nbytes(buffer_type) -> int:
    from tilec.dtypes import from_ir

    n = 1
    for d in buffer_type.shape:
        n *= d
    return n * from_ir(buffer_type.element_type).bits // 8


__all__ = ["WsState", "emit", "nbytes", "plan_roles", "producer_arrive", "tma_arrival", "uses_ws"]
