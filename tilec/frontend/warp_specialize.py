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

TileLang kernels also write the two roles as a branch on the thread index, `tid =
T.get_thread_binding()` then `if tid >= 128: <producer> else: <consumer>`, its sides meeting at
mbarriers; `split_thread_roles` gives such a branch the same meaning as `with T.ws(1):` and
`with T.ws(0):` blocks (threads 128..255 and 0..127) before any of the above. Whatever the
kernel computes before the split (scalar loads into `T.alloc_var`s, T.Parallel fills of shared
index arrays both roles read) runs in the consumer warpgroup, which then arrives on a barrier of
its own; the producer runs the prologue's scalar assignments again and waits on that barrier
before anything else, so it reads what the consumers wrote to shared memory.

`v.ws` is the `WsState` of the role being built (None outside warp-specialized regions).
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue

from tilec.dialects import tile

from .values import BarrierRef, TileRef, VarRef

WARPGROUP = 128
PRODUCER_OPS = (tile.TmaLoadOp, tile.MBarrierExpectTxOp, tile.MBarrierArriveOp, tile.MBarrierWaitParityOp,
                tile.ForOp, tile.YieldOp, tile.RegionOp, tile.StageOp, tile.DimOp, tile.LoadOp, scf.IfOp,
                scf.YieldOp)


@dataclass
class WsState:
    """The role being built and the producer's barrier bookkeeping."""

    role: str  # "producer" or "consumer"; "threads": a role of thread_roles.py, its code run by each thread
    pending: list = field(default_factory=list)  # [barrier, index, arrivals made by T.tma_copy, their block] (producer)
    base: int = 0  # ("threads") the kernel's index of the role's first thread
    prologue: bool = False  # ("threads") building the kernel's statements before the roles
    regs: tuple | None = None  # ("threads") the role's T.set_max_nreg count and its location
    block: object = None  # ("threads") the role's block (T.set_max_nreg stands there)
    threads: int = 0  # ("threads") the block's threads, every role's


# ------------------------------------------------------------------ finding T.ws blocks


def _call_name(node: ast.AST) -> str | None:
    """`f` for a call `T.f(...)` or `f(...)`, else None."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)


def _ws_id(node: ast.stmt) -> int | None:
    """k for a `with T.ws(k):` statement (any spelling ending in `.ws` / `ws`), else None."""
    if not _is_ws(node):
        return None
    call = node.items[0].context_expr
    if len(call.args) != 1 or call.keywords:
        return -1
    try:
        value = ast.literal_eval(call.args[0])
    except ValueError:
        value = _evaluate(call.args[0])
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


_VISITOR: list = []  # the visitor whose names a `T.ws(k)` with a named k is evaluated in


def _evaluate(node: ast.expr, v=None):
    """`node`'s value in the kernel's names (`v`, or the visitor of `_visiting`), None where it has none."""
    from tilec.errors import TilecError

    v = v if v is not None else _VISITOR[-1] if _VISITOR else None
    if v is None:
        return None
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
    return isinstance(node, ast.With) and len(node.items) == 1 and _call_name(node.items[0].context_expr) == "ws"


def _blocks(stmts) -> list[ast.With]:
    return [n for s in stmts for n in ast.walk(s) if _is_ws(n)]


def _issues_tma(block: ast.With) -> bool:
    return any(_call_name(n) == "tma_copy" for n in ast.walk(block))


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


# ------------------------------------------------------------------ a branch on the thread index

_PROTOCOL_CALLS = frozenset({"tma_copy", "mbarrier_arrive", "mbarrier_wait_parity", "mbarrier_expect_tx",
                             "barrier_arrive", "barrier_wait"})
_COMPARE = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
            ast.GtE: lambda a, b: a >= b}


def _is_thread_index(node: ast.expr) -> bool:
    """`T.get_thread_binding()` (or `(0)`): the block's thread index along x."""
    return (_call_name(node) == "get_thread_binding" and not node.keywords and
            (not node.args or (isinstance(node.args[0], ast.Constant) and node.args[0].value == 0)))


def _split_test(v, test: ast.expr, names: set[str]) -> tuple[int, int] | None:
    """(warpgroup of the `if` side, of the `else` side) when `test` compares the thread index with a
    constant so that one side gets threads 0..127 and the other 128..255; None otherwise."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or type(test.ops[0]) not in _COMPARE:
        return None
    left, right, op = test.left, test.comparators[0], _COMPARE[type(test.ops[0])]

    def is_tid(e):
        return (isinstance(e, ast.Name) and e.id in names) or _is_thread_index(e)

    if is_tid(left) == is_tid(right):
        return None
    bound = _evaluate(right if is_tid(left) else left, v)
    if not isinstance(bound, int) or isinstance(bound, bool):
        return None
    taken = [op(t, bound) if is_tid(left) else op(bound, t) for t in range(2 * WARPGROUP)]
    if taken == [False] * WARPGROUP + [True] * WARPGROUP:
        return 1, 0
    if taken == [True] * WARPGROUP + [False] * WARPGROUP:
        return 0, 1
    return None


def split_thread_roles(v, stmts: list[ast.stmt], threads: list[int]) -> list[ast.stmt]:
    """The kernel body with TileLang's `if tid >= 128: <producer> else: <consumer>` (sides holding
    mbarrier operations or TMA copies, 256 threads) as `with T.ws(1):` and `with T.ws(0):` blocks,
    and the `tid = T.get_thread_binding()` it tests dropped where nothing else reads it; other
    bodies as they are."""
    if threads != [2 * WARPGROUP, 1, 1] or uses_ws(stmts):
        return stmts
    tids = {s.targets[0].id: i for i, s in enumerate(stmts)
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
            and _is_thread_index(s.value)}
    for i, s in enumerate(stmts):
        if not isinstance(s, ast.If) or not s.orelse:
            continue
        called = {_call_name(n) for n in ast.walk(s)}
        if not called & _PROTOCOL_CALLS:
            continue
        sides = _split_test(v, s.test, set(tids))
        if sides is None:
            continue
        blocks = []
        for k, body in sorted(zip(sides, (s.body, s.orelse)), key=lambda kb: -kb[0]):
            call = ast.Call(func=ast.Attribute(ast.Name("T", ast.Load()), "ws", ast.Load()),
                            args=[ast.Constant(k)], keywords=[])
            block = ast.With(items=[ast.withitem(context_expr=call)], body=body)
            blocks.append(ast.copy_location(block, body[0]))
            ast.copy_location(call, body[0])
        out = stmts[:i] + blocks + stmts[i + 1:]
        tested = {n.id for n in ast.walk(s.test) if isinstance(n, ast.Name)} & set(tids)
        for name in tested:
            reads = [n for t in out for n in ast.walk(t) if isinstance(n, ast.Name) and n.id == name
                     and isinstance(n.ctx, ast.Load)]
            if reads:
                v.b.loc = v.loc_of(reads[0])
                raise v.b.error(f"`{name}`, the thread index this branch splits the warpgroups by, is read here too: "
                                "tilec builds the branch's sides as warp-specialized roles (the producer on one "
                                "thread, the consumer's whole-tile work spread over its warpgroup), where "
                                "TileLang's thread index has no counterpart",
                                hint="use the thread index only in the branch's test; index with T.Parallel loops")
            out.remove(stmts[tids[name]])
        return out
    return stmts


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
    if _call_name(it) != "Pipelined":
        return it
    from tilec.compiler.pass_configs import report

    stages = next((k.value for k in it.keywords if k.arg == "num_stages"), None)
    stages = None if stages is None else _evaluate(stages, v)
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
    rest = stmts[first:]
    computed = _prologue(v, stmts[:first])
    replayed = [s for s in computed if _names_only(s)]
    consumers_only = [s for s in computed if s not in replayed]
    handoff = None
    if consumers_only:
        _check_handoff(v, computed, replayed, consumers_only, rest, producer)
        if any(_is_memory(v, name) for name in _touched(v, consumers_only)):
            # the consumers' prologue may write memory the producer reads: it waits for their arrival
            handoff = BarrierRef(v.b.emit(tile.AllocBarrierOp(WARPGROUP)).results[0])
    # the roles are built in place, inside the kernel (ops that verify where they stand, such as
    # T.Parallel's, see their kernel)
    split = v.b.emit(tile.WarpSpecializeOp(Block(), Block(), WARPGROUP, user_roles=True))
    v.frame.names["_tl_serial"] = T.serial
    try:
        for (role, k), region in zip((("producer", producer), ("consumer", consumer)), (split.producer, split.consumer)):
            state = v.ws = WsState(role)
            with v.runtime_region(region.block, carried=False):
                if role == "producer":
                    if handoff is not None:
                        v.b.emit(tile.MBarrierWaitParityOp(handoff.ssa, v.index_ssa(0)))
                    v.visit_body(replayed)
                else:
                    v.visit_body(computed)
                    if handoff is not None:
                        v.b.emit(tile.MBarrierArriveOp(handoff.ssa))
                v.visit_body(_project(v, rest, k))
            if state.pending:
                raise v.b.error("T.tma_copy(..., barrier=b) in the T.ws producer must be followed by "
                                "T.barrier_arrive(b) in the same block (the warpgroup's arrivals)")
    finally:
        v.ws = None
        v.frame.names.pop("_tl_serial", None)
    check_producer(v, split.producer.block)
    v.b.verify(split)


_SCALAR_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign)
_PURE_CALLS = frozenset({"ceildiv", "floordiv", "truncdiv", "max", "min", "abs", "int", "float", "bool", "len",
                         "next_power_of_2", "cdiv"})
_HINT_CALLS = frozenset({"annotate_layout", "use_swizzle", "annotate_l2_hit_ratio", "annotate_safe_value",
                         "disable_warp_group_reg_alloc", "no_set_max_nreg"})


def _targets(s: ast.stmt) -> list[ast.expr]:
    targets = s.targets if isinstance(s, ast.Assign) else [getattr(s, "target", None)]
    return [n for t in targets for n in (t.elts if isinstance(t, ast.Tuple | ast.List) else [t])]


def _names_only(s: ast.stmt) -> bool:
    """An assignment to names (Python values, T.alloc_vars), which the producer runs again."""
    return isinstance(s, _SCALAR_STATEMENTS) and all(isinstance(t, ast.Name) for t in _targets(s))


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _declares(s: ast.stmt) -> bool:
    """An allocation (`x = T.alloc_*(...)`), a layout or scheduling hint, or a docstring."""
    if isinstance(s, ast.Expr):
        return isinstance(s.value, ast.Constant) or _call_name(s.value) in _HINT_CALLS
    value = getattr(s, "value", None)
    name = _call_name(value) if value is not None else None
    return isinstance(s, ast.Assign | ast.AnnAssign) and _names_only(s) and name is not None and \
        name.startswith("alloc_")


def _pure(v, s: ast.stmt) -> bool:
    """An assignment to names of Python and index arithmetic (no memory, no thread index)."""
    if not _names_only(s) or isinstance(s, ast.AnnAssign) and s.value is None:
        return False
    for n in ast.walk(s.value):
        if isinstance(n, ast.Subscript) or isinstance(n, ast.Call) and _call_name(n) not in _PURE_CALLS:
            return False
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and \
                isinstance(v.frame.names.get(n.id), TileRef | VarRef | BarrierRef):
            return False
    return not any(isinstance(v.frame.names.get(t.id), VarRef) for t in _targets(s))


def _prologue(v, stmts: list[ast.stmt], per_thread: frozenset[str] = frozenset()) -> list[ast.stmt]:
    """Visits the statements before the roles that declare (allocations, hints) or compute Python
    and index values, and returns, in order, the others, which the roles run. A statement that
    reads a name such a one assigns (or one of `per_thread`, bound in the roles) is one of them, and
    so is one that assigns it again."""
    computed: list[ast.stmt] = []
    assigned: set[str] = set(per_thread)  # names the roles' statements assign
    for s in stmts:
        later = bool(_loads(s) & assigned) or any(isinstance(t, ast.Name) and t.id in assigned for t in _targets(s))
        if _declares(s):
            if later:
                v.b.loc = v.loc_of(s)
                raise v.b.error("in a kernel with warp-specialized roles, an allocation before them may not depend "
                                "on a value computed there (tilec runs that computation in the roles)",
                                hint="compute the allocation's sizes from compile-time values")
            v.visit(s)
        elif _pure(v, s) and not later:
            v.visit(s)
        else:
            computed.append(s)
            assigned |= {n.id for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return computed


def _touched(v, stmts: list[ast.stmt]) -> set[str]:
    """Names the statements may write through: assigned ones, elements assigned, and every buffer
    passed to a call (T.copy's destination, T.fill's buffer, ...), loop variables aside."""
    out = set()
    for s in stmts:
        loop_vars = {n.id for f in ast.walk(s) if isinstance(f, ast.For) for n in ast.walk(f.target)
                     if isinstance(n, ast.Name)}
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
            elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
                base = n.value
                while isinstance(base, ast.Subscript):
                    base = base.value
                if isinstance(base, ast.Name):
                    out.add(base.id)
            elif isinstance(n, ast.Call):
                args = list(n.args) + [k.value for k in n.keywords]
                out |= {a.id for arg in args for a in ast.walk(arg) if isinstance(a, ast.Name)
                        and isinstance(v.frame.names.get(a.id), TileRef | VarRef)}
        out -= loop_vars
    return out


def _is_memory(v, name: str) -> bool:
    value = v.frame.names.get(name)
    return isinstance(value, TileRef) and value.scope in ("shared", "global")


def _check_handoff(v, computed, replayed, consumers_only, rest, producer: int) -> None:
    """The producer sees the consumers' prologue through shared and global memory only, after all
    of it: a name the producer reads that only the consumers set (a T.alloc_var, a local buffer,
    a Python name), or memory a statement it runs again reads and a later consumers' statement
    writes, is an error."""
    producer_code = replayed + _project(v, rest, producer)
    read = {n.id: n for s in producer_code for n in ast.walk(s) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}
    for name in sorted(_touched(v, consumers_only) & set(read)):
        if _is_memory(v, name):
            continue
        stmt = next(s for s in consumers_only if name in _touched(v, [s]))
        v.b.loc = v.loc_of(read[name])
        raise v.b.error(f"the producer warpgroup reads `{name}`, which the kernel sets before its roles in a "
                        f"statement tilec runs in the consumer warpgroup only (line {v.loc_of(stmt).line}): the "
                        "producer sees the consumers' work through shared memory",
                        hint=f"set `{name}` with a plain assignment before the roles (the producer runs those "
                             "again), or keep it in a shared buffer")
    for i, s in enumerate(computed):
        if s not in replayed:
            continue
        memory = {name for name in _loads(s) if _is_memory(v, name)}
        for later in computed[i + 1:]:
            clash = sorted(memory & _touched(v, [later])) if later in consumers_only else []
            if clash:
                v.b.loc = v.loc_of(s)
                raise v.b.error(f"the producer warpgroup runs this again after the consumers' whole prologue, so it "
                                f"would read `{clash[0]}` as line {v.loc_of(later).line} leaves it, not as it is here",
                                hint="read it after the writes, or copy the value into a name first")


def check_producer(v, block: Block) -> None:
    for op in block.walk():
        if isinstance(op, PRODUCER_OPS) or op.name.startswith("arith."):
            continue
        if isinstance(op, tile.StoreOp) and getattr(op.dest.type, "scope", None) == "local":
            continue  # a T.alloc_var (or local buffer) of the producer thread's own
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


def nested_copy(v, what: str = "T.barrier_arrive(b)"):
    """The located error for `what` (on barrier b) after a T.tma_copy(..., barrier=b) in another block."""
    return v.b.error(f"{what} after a T.tma_copy(..., barrier=b) in a loop or branch of its own: the copy's thread "
                     "announces its bytes with its arrival, once per copy, so a loop would arrive too often and a "
                     "branch not taken too seldom",
                     hint="arrive in the same block as the copy (inside the loop or branch), once per copy's phase")


def tma_arrival(v, barrier: SSAValue, index: SSAValue | None) -> None:
    """A T.tma_copy in the producer arrived on (barrier, index) announcing its bytes: counted."""
    for entry in v.ws.pending:
        if entry[0] is barrier and _same(entry[1], index):
            if entry[3] is not v.b.blocks[-1]:
                raise nested_copy(v, "T.tma_copy(..., barrier=b)")
            entry[2] += 1
            return
    v.ws.pending.append([barrier, index, 1, v.b.blocks[-1]])


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
            if entry[3] is not v.b.blocks[-1]:
                raise nested_copy(v)
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
