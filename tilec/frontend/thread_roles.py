"""Warpgroup roles written as a chain of branches on the thread index, three or more warpgroups:

    with T.Kernel(..., threads=384) as (bx, by, bz):
        ...                                              # allocations, barriers, index values
        tx = T.get_thread_binding()
        T.tma_copy(Q[...], Q_shared, barrier=bar_q)      # every thread: issued by thread 0
        T.barrier_arrive(bar_q)                          # every thread arrives (arrive_count=384)
        if tx < 128:                                     # consumer: whole-tile work on its warpgroup
            T.set_max_nreg(240, 1)
            ...
        elif tx >= 128 and tx < 256:                     # another consumer, other work
            ...
        elif tx >= 256:                                  # producer: per-thread code
            T.set_max_nreg(80, 0)
            ... Indices[..., (tx - 256) // 8] ... T.ptx_cp_async(...) ... T.cp_async_barrier_noinc(bar)

(TileLang's sparse MLA forward, pipelined). Each side of the chain runs on one warpgroup, all at
once; they meet only at mbarriers. tilec builds the chain as one `tile.warp_specialize`:

- the sides with whole-tile work (T.gemm, T.Parallel, T.copy of tiles, reductions, fills) are its
  consumer groups, one warpgroup each, in the order of their threads; `tile.consumer_group`
  selects each group's side, whose whole-tile work spreads over its own 128 threads (the tile
  kernel has 128 threads);
- the side without is the producer, every thread of it running the side's code
  (`all_producer_threads`), after the consumers' threads;
- each thread runs the kernel's statements before the chain (TileLang's threads all do);
- T.get_thread_binding() is the thread's index as the kernel numbers it (`tx - 256` in the
  producer above is its thread within the warpgroup), whatever warpgroup tilec places the role on;
- T.barrier_arrive is each thread's arrival;
- T.tma_copy(src, dst, barrier=b) is issued by the first thread of those running it (thread 0 of
  the block before the chain, the role's first thread inside a side): it announces the bytes
  with `arrive.expect_tx`, which is that thread's arrival at the next T.barrier_arrive(b);
- T.set_max_nreg(n, inc) is the role's `setmaxnreg`; the counts asked for must fit the block's
  registers (else a consumer's setmaxnreg.inc would wait forever).

Two warpgroups (`if tid >= 128:` with a TMA producer) stay warp_specialize.py's form.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, i1, i64
from xdsl.ir import Block, Region

from tilec.dialects import tile

from . import warp_specialize as ws
from .values import BarrierRef, Scalar, TileRef

WARPGROUP = ws.WARPGROUP
MEETING_BARRIER = 15
"""The named barrier at which every role's threads meet before the roles (after the prologue's tile
work, or at its T.sync_threads()): reached from each role's own code, so not barrier 0, which
compute-sanitizer's synccheck takes for __syncthreads and reports as divergent there (session 26,
H100). The last of the 16 ids: tilec's consumer groups take 1 to 4, TileLang's kernels 1 and 3."""

_WHOLE_TILE_CALLS = frozenset({
    "gemm", "wgmma_gemm", "Parallel", "fill", "clear", "reduce", "reduce_max", "reduce_min", "reduce_sum",
    "reduce_abssum", "reduce_absmax", "reduce_bitand", "reduce_bitor", "reduce_bitxor", "cumsum", "cummax",
    "copy", "Pipelined", "gemm_sp", "atomic_add", "atomic_max", "atomic_min"})
"""Calls that make a side a consumer: work spread over its warpgroup's threads."""

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Mod: operator.mod, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_COMPARE = {**ws._COMPARE, ast.Eq: operator.eq, ast.NotEq: operator.ne}


@dataclass
class Side:
    body: list[ast.stmt]
    base: int  # the kernel's index of the side's first thread
    producer: bool


@dataclass
class Plan:
    prologue: list[ast.stmt]  # the statements before the chain, less the thread-index assignments
    sides: list[Side]  # in the order of their threads
    tids: list[str]  # names of `T.get_thread_binding()` assignments, bound in each role
    chain: ast.If


class _NotStatic(Exception):
    """The test is not a function of the thread index and compile-time values alone."""


def _value(v, node: ast.expr, tids: set[str], t: int):
    if isinstance(node, ast.Name) and node.id in tids or ws._is_thread_index(node):
        return t
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_value(v, node.left, tids, t), _value(v, node.right, tids, t))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _value(v, node.operand, tids, t)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(v, node.operand, tids, t)
    if isinstance(node, ast.BoolOp):
        values = (_value(v, x, tids, t) for x in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and all(type(o) in _COMPARE for o in node.ops):
        left = _value(v, node.left, tids, t)
        for o, right in zip(node.ops, node.comparators):
            right = _value(v, right, tids, t)
            if not _COMPARE[type(o)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Name | ast.Attribute):
        value = ws._evaluate(node, v)
        if isinstance(value, int):
            return value
    raise _NotStatic


def _chain(node: ast.If) -> list[tuple[ast.expr | None, list[ast.stmt]]]:
    """The sides of `if a: .. elif b: .. else: ..` in order, (None, else body) last."""
    sides = []
    while True:
        sides.append((node.test, node.body))
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
            continue
        sides.append((None, node.orelse))
        return sides


def _calls(stmts: list[ast.stmt]) -> set[str]:
    return {ws._call_name(n) for s in stmts for n in ast.walk(s)} - {None}


def plan(v, stmts: list[ast.stmt], threads: list[int]) -> Plan | None:
    """The roles of a kernel body whose threads (three warpgroups or more) split by a chain of
    branches on the thread index holding mbarrier operations, one warpgroup per side; None for
    other bodies."""
    total = threads[0]
    if threads[1:] != [1, 1] or total % WARPGROUP or total < 2 * WARPGROUP or ws.uses_ws(stmts):
        return None
    tids = [s.targets[0].id for s in stmts if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and ws._is_thread_index(s.value)]
    for i, s in enumerate(stmts):
        if not isinstance(s, ast.If) or not _calls([s]) & ws._PROTOCOL_CALLS:
            continue
        chain = _chain(s)
        try:
            taken = [next(k for k, (test, _) in enumerate(chain) if test is None or _value(v, test, set(tids), t))
                     for t in range(total)]
        except _NotStatic:
            continue
        v.b.loc = v.loc_of(s)
        counts = [taken.count(k) for k in range(len(chain))]
        if any(0 < n < 32 or n and not body for n, (_, body) in zip(counts, chain)):
            continue  # some threads alone (`if tx == 0:`), or some doing nothing here: not warpgroup roles
        if total == 2 * WARPGROUP and not _both_compute(chain, taken):
            continue  # two warpgroups, one of them a producer: warp_specialize.py's form
        sides = []
        for k, (_, body) in enumerate(chain):
            mine = [t for t in range(total) if taken[t] == k]
            if not mine:
                continue
            base = mine[0]
            if base % WARPGROUP or mine != list(range(base, base + WARPGROUP)):
                raise v.b.error(f"this branch on the thread index gives threads {mine[0]}..{mine[-1]} "
                                f"({len(mine)} threads{'' if len(mine) == mine[-1] - mine[0] + 1 else ', not a range'})"
                                " to one side: tilec runs each side of a split into roles on one warpgroup "
                                f"(128 threads from a multiple of 128)",
                                hint="split the threads at multiples of 128, one warpgroup per side")
            sides.append(Side(body, base, not _calls(body) & _WHOLE_TILE_CALLS))
        producers = [x for x in sides if x.producer]
        if len(producers) > 1 or len(sides) - len(producers) > 4:
            what = f"{len(producers)} sides have none" if len(producers) > 1 else \
                f"{len(sides) - len(producers)} sides have some"
            raise v.b.error(f"tilec runs a split into {len(sides)} warpgroup roles as consumers (sides with "
                            f"whole-tile work: T.gemm, T.Parallel, T.copy, ...; at most four) and at most one "
                            f"producer (a side without, each thread running its code: T.ptx_cp_async, T.tma_copy, "
                            f"element copies); here {what}",
                            hint="move the loads into one warpgroup and the computation into the others "
                                 "(at most four)")
        for later in stmts[i + 1:]:
            if not (isinstance(later, ast.Expr) and isinstance(later.value, ast.Constant)):
                v.b.loc = v.loc_of(later)
                raise v.b.error("a statement after the branch that splits the kernel into warpgroup roles: tilec "
                                "ends the kernel with the roles", hint="move it into the sides that need it")
        prologue = [x for x in stmts[:i] if not (isinstance(x, ast.Assign) and len(x.targets) == 1 and
                                                 isinstance(x.targets[0], ast.Name) and x.targets[0].id in tids)]
        for x in (n for s2 in stmts[:i + 1] for n in ast.walk(s2)):
            if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store) and x.id in tids and \
                    not any(isinstance(a, ast.Assign) and x in a.targets and ws._is_thread_index(a.value)
                            for a in stmts[:i]):
                v.b.loc = v.loc_of(x)
                raise v.b.error(f"`{x.id}` holds the thread index the kernel splits its warpgroups by, and is assigned "
                                "again here: tilec binds it to each role's thread index",
                                hint="assign the derived value to another name")
        return Plan(prologue, sorted(sides, key=lambda x: x.base), tids, s)
    return None


def _both_compute(chain, taken: list[int]) -> bool:
    """Whether a chain over two warpgroups gives each a side of its own (in either order) with
    whole-tile work."""
    sides = [taken[0], taken[WARPGROUP]]
    return sides[0] != sides[1] and all(taken[t] == sides[t // WARPGROUP] for t in range(len(taken))) and \
        all(_calls(chain[k][1]) & _WHOLE_TILE_CALLS for k in sides)


def emit(v, p: Plan) -> None:
    """The kernel body: the prologue's declarations, then one `tile.warp_specialize` of the roles."""
    computed = ws._prologue(v, p.prologue, frozenset(p.tids))
    work = {id(s): _prologue_work(v, s) for s in computed}
    consumers = [x for x in p.sides if not x.producer]
    runs = {id(x): [s for s in computed if {"thread": True, "registers": not x.producer,
                                            "memory": x is consumers[0]}[work[id(s)]]] for x in p.sides}
    met = "memory" in work.values()
    producer = next((x for x in p.sides if x.producer), None)  # (None: every warpgroup computes)
    split = v.b.emit(tile.WarpSpecializeOp(Block(), Block(), WARPGROUP if producer is not None else 0,
                                           consumer_groups=len(consumers), all_producer_threads=True,
                                           user_roles=True))
    regs: list[tuple[int, int, object]] = []  # (first thread, count, location) of each role's T.set_max_nreg
    try:
        if producer is not None:
            with v.runtime_region(split.producer.block, carried=False):
                _role(v, producer, p, runs[id(producer)], met, regs)
        with v.runtime_region(split.consumer.block, carried=False):
            group = v.b.emit(tile.ConsumerGroupOp()).results[0] if len(consumers) > 1 else None
            _groups(v, group, consumers, 0, p, runs, met, regs)
    finally:
        v.ws = None
    _check_registers(v, regs, len(p.sides))
    v.b.verify(split)


def _groups(v, group, sides: list[Side], g: int, p: Plan, runs: dict, met: bool, regs) -> None:
    """Consumer group g's side if the running group is g, else the next groups'."""
    if len(sides) == 1:
        _role(v, sides[0], p, runs[id(sides[0])], met, regs)
        return
    cond = v.b.emit(arith.CmpiOp(group, v.index_ssa(g), "eq")).results[0]
    then_block, else_block = Block(), Block()
    v.b.emit(scf.IfOp(cond, [], Region(then_block), Region(else_block)))
    then_block.add_op(scf.YieldOp())
    else_block.add_op(scf.YieldOp())
    with v.runtime_region(then_block, carried=False):
        _role(v, sides[0], p, runs[id(sides[0])], met, regs)
    with v.runtime_region(else_block, carried=False):
        _groups(v, group, sides[1:], g + 1, p, runs, met, regs)


def _role(v, side: Side, p: Plan, prologue: list[ast.stmt], met: bool, regs) -> None:
    """One side on its warpgroup: its share of the prologue's statements (`_prologue_work`), then
    the side's, per thread; with `met`, the block's threads meet after the prologue (TileLang's
    threads share its tile work and meet after it)."""
    threads = len(p.sides) * WARPGROUP
    state = v.ws = ws.WsState("threads", base=side.base, prologue=True, threads=threads)
    for name in p.tids:
        v.bind(name, thread_index(v))
    v.visit_body(prologue)
    _check_pending(v, state, prologue)
    if met:
        v.b.emit(tile.BarrierOp(MEETING_BARRIER, threads, unaligned=True))
    state.prologue = False
    state.block = v.b.blocks[-1]
    v.visit_body(side.body)
    _check_pending(v, state, side.body)
    if state.regs is not None:
        regs.append((side.base, *state.regs))


def _prologue_work(v, s: ast.stmt) -> str:
    """Who runs statement `s` of the prologue: "thread" (each thread of every role: scalar code,
    arrivals, T.tma_copy), "registers" (whole-tile work on fragments: each consumer group, its own
    registers) or "memory" (whole-tile work on shared or global memory: the first consumer group)."""
    if not _calls([s]) & _WHOLE_TILE_CALLS:
        return "thread"
    written = ws._touched(v, [s])
    if not any(ws._is_memory(v, name) for name in written):
        return "registers"
    if any(not ws._is_memory(v, name) and isinstance(v.frame.names.get(name), TileRef) for name in written):
        v.b.loc = v.loc_of(s)
        raise v.b.error("before warpgroup roles, whole-tile work that writes both registers (a fragment) and "
                        "shared or global memory: tilec runs the memory work on one warpgroup and the register "
                        "work on each consumer warpgroup (each its own registers)",
                        hint="split it into a statement for the memory and one for the fragment")
    return "memory"


def _check_pending(v, state, stmts) -> None:
    if state.pending:
        v.b.loc = v.loc_of(stmts[-1])
        raise v.b.error("T.tma_copy(..., barrier=b) in a warpgroup role must be followed by T.barrier_arrive(b) "
                        "in the same block: the issuing thread's announcement of the bytes is its arrival there")


def _check_registers(v, regs, roles: int) -> None:
    threads = roles * WARPGROUP
    start = tile.launch_registers(threads)
    regs = sorted(regs, key=lambda r: r[0])
    asked = sum(count for _, count, _ in regs) + start * (roles - len(regs))
    if regs and asked * WARPGROUP > threads * start:
        v.b.loc = max(reversed(regs), key=lambda r: r[1])[2]  # the largest ask (the last of equals)
        listed = " + ".join(str(c) for _, c, _ in regs)
        raise v.b.error(f"the roles' T.set_max_nreg ask for {asked} registers per thread of a warpgroup ({listed}"
                        f"{f' + {start} x {roles - len(regs)} unset' if roles > len(regs) else ''}), more than the "
                        f"block's {threads} threads start with ({start} each): a setmaxnreg.inc would wait forever",
                        hint="lower the counts so that they sum to at most "
                             f"{threads * start // WARPGROUP} over the {roles} warpgroups")


# ------------------------------------------------------------------ the calls, per thread


def thread_index(v) -> Scalar:
    """T.get_thread_binding() in a role: the thread's index as the kernel numbers it."""
    tid = Scalar(v.b.emit(tile.ThreadIdOp(0)).results[0])
    return tid if v.ws.base == 0 else v.b.binop("+", tid, v.ws.base)


def _first_thread(v):
    """Whether the running thread is the first of its role."""
    tid = v.b.emit(tile.ThreadIdOp(0)).results[0]
    return v.b.emit(arith.CmpiOp(tid, v.index_ssa(0), "eq")).results[0]


def tma_copy(v, barrier: BarrierRef, src, dst) -> None:
    """T.tma_copy(src, dst, barrier=b) run by a role's threads: issued by the first of the threads
    running it (before the chain: the block's thread 0, in the role holding it)."""
    state = v.ws
    if state.prologue and state.base != 0:
        return  # another warpgroup holds thread 0
    nbytes = ws.nbytes(dst.type)
    here = v.b.blocks[-1]
    entry = next((e for e in state.pending if e[0] is barrier.ssa and ws._same(e[1], barrier.index)), None)
    if entry is not None and entry[3] is here:  # another copy before the arrival: its bytes join the announcement
        entry[2].bytes = IntegerAttr(entry[2].bytes.value.data + nbytes, i64)
        with v.b.under(_first_thread(v)):
            v.b.emit(tile.TmaLoadOp(src, dst, barrier.ssa, barrier.index))
        return
    if entry is not None:
        raise v.b.error("T.tma_copy(..., barrier=b) here, and an earlier one on the same barrier in another block "
                        "(a loop's or a branch's), before T.barrier_arrive(b): tilec announces a phase's bytes in one "
                        "arrival", hint="issue the copies of one barrier phase in the same block, then "
                                        "T.barrier_arrive(b)")
    with v.b.under(_first_thread(v)):
        announce = v.b.emit(tile.MBarrierExpectTxOp(barrier.ssa, nbytes, barrier.index))
        v.b.emit(tile.TmaLoadOp(src, dst, barrier.ssa, barrier.index))
    state.pending.append([barrier.ssa, barrier.index, announce, here])


def barrier_arrive(v, barrier: BarrierRef) -> None:
    """Each thread's arrival; the thread that announced a T.tma_copy's bytes on this barrier phase
    has arrived then."""
    state = v.ws
    entry = next((e for e in state.pending if e[0] is barrier.ssa and ws._same(e[1], barrier.index)), None)
    if entry is None:
        v.b.emit(tile.MBarrierArriveOp(barrier.ssa, barrier.index))
        return
    if entry[3] is not v.b.blocks[-1]:
        raise ws.nested_copy(v)
    state.pending.remove(entry)
    others = v.b.emit(arith.XOrIOp(_first_thread(v), v.b.to_ssa(True, i1))).results[0]
    with v.b.under(others):
        v.b.emit(tile.MBarrierArriveOp(barrier.ssa, barrier.index))


def sync_threads(v) -> None:
    """T.sync_threads() (all of the block's threads) before the roles: every role meets there
    (`bar.sync MEETING_BARRIER` of the block's threads)."""
    if not v.ws.prologue:
        raise v.b.error("T.sync_threads() in a warpgroup role waits for every thread of the block, which the other "
                        "roles do not reach: the roles meet at mbarriers",
                        hint="synchronize the roles with T.barrier_arrive / T.barrier_wait, or a named barrier of "
                             "the threads that meet: T.sync_threads(barrier_id, arrive_count)")
    v.b.emit(tile.BarrierOp(MEETING_BARRIER, v.ws.threads, unaligned=True))


def set_max_nreg(v, count: int, increase: bool) -> None:
    if v.ws.prologue or v.b.blocks[-1] is not v.ws.block:
        raise v.b.error("T.set_max_nreg in a warpgroup role is setmaxnreg, which every thread of the warpgroup must "
                        "run together: call it in the role's body, outside loops and branches")
    if v.ws.regs is not None:
        raise v.b.error("a second T.set_max_nreg in this warpgroup role: tilec sets a role's registers once")
    if not (24 <= count <= 256 and count % 8 == 0):
        raise v.b.error(f"T.set_max_nreg: the count must be a multiple of 8 in [24, 256], got {count}")
    start = tile.launch_registers(v.ws.threads)
    if count < start if increase else count > start:
        kind, way = ("inc", "raise") if increase else ("dec", "lower")
        raise v.b.error(f"T.set_max_nreg({count}, {int(increase)}) is setmaxnreg.{kind}, which may only {way} a "
                        f"thread's register count, and each thread of this block starts with {start}",
                        hint=f"ask for {'at least' if increase else 'at most'} {start}, or the other direction")
    v.ws.regs = (count, v.b.loc)
    v.b.emit(tile.SetMaxNRegOp(count, increase))


__all__ = ["Plan", "barrier_arrive", "emit", "plan", "set_max_nreg", "sync_threads", "thread_index", "tma_copy"]
