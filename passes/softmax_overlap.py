"""FlashAttention-3's intra-warpgroup overlap (its Algorithm 2): the softmax of key block j runs
while the tensor cores do P V of block j − 1.

Requires: tile-warp-specialize's consumer loop (`warp_specialized_stages`; its caller, with
  `softmax_overlap`), with operand rings: two top-level wgmma gemms G1 (S = Q K^T) and G2
  (O += P V), each waited for in its iteration (in_flight = 0), G2's A in registers, and G2's
  staged tile on a ring of its own (a wait for it right before G2).
Establishes: the loop is rotated by half an iteration (FA3's mainloop, IntraWGOverlap). Its first
  iteration's G1 and softmax are peeled before it, its last iteration's G2 after it; iteration j
  issues G1_j, rescales O by the previous block's alpha (the ops that touch O, moved behind the
  softmax ops they do not depend on), issues G2_{j-1} (both gemms asynchronous: `in_flight` 1
  and 2), waits for G1 alone (`tile.gemm_wait %s {pending = 1}`), releases K_j and runs the
  softmax of S_j while G2_{j-1} may still run, then waits for G2 (`tile.gemm_wait %o`), releases
  V_{j-1} and only then writes P_j (the ops that write G2's A: P_{j-1} is in the registers G2
  reads until the wait). The rescale reads alpha_{j-1}, written before and overwritten only by
  the softmax after it.
Fails: never; a loop that does not fit is left as it is, the reason in its
  `tilec.not_softmax_overlap` attribute: among others, one whose S, O and P (P of the block
  before) with a margin of 40 take more 32-bit registers per consumer thread than setmaxnreg
  gives (D = 256 on one warpgroup with 64x128 tiles: 264 of 232; ptxas spills 300+ bytes).

    tile.for %k = lb to ub { head(k) ; G1 ; softmax(k) (o *= alpha, p = s) ; wait V(k) ; G2 ; release V(k) }
  becomes
    head(lb) ; G1 ; softmax(lb) without o *= alpha
    tile.for %k = lb + 1 to ub {
      head(k) ; G1 {in_flight = 1} ; tile.gemm_wait %o {pending = 1} ; o *= alpha (k-1) ; wait V(k-1)
      G2(k-1) {in_flight = 2}
      tile.gemm_wait %s {pending = 1} ; release K(k) ; softmax(k) without O and P
      tile.gemm_wait %o ; release V(k-1) ; p = s (k)
    }
    o *= alpha (ub-1) ; wait V(ub-1) ; G2(ub-1) ; release V(ub-1)

The rescale follows a `tile.gemm_wait %o {pending = 1}` (it returns at once: only G1 is in
flight) that O passes through: else LLVM folds the multiplication of the two loop-carried values
into the iteration before, behind the wait for G2, where it no longer runs under G1.
The wait for G2 has no register operand in PTX, and ptxas hoists it (and the V release) into
the row max, before the exponentials. A first version held it below the softmax with the wait
for K of block k + 1 in an `scf.if k + 1 < ub` (ptxas schedules within basic blocks); on the
H200 that kernel ran 16 % slower (D = 128, S = 8192, 128x128 tiles: 0.76x cuDNN against 0.91x
without it, run s7a, bench/NOTES.md), and it is gone: the other consumer warpgroup's gemms fill
the tensor cores while this one's exponentials wait.
"""

from __future__ import annotations

import math

from tilec.dialects import tile
from tilec.dialects.tile.turns import WARPGROUP
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, StringAttr, UnitAttr, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from .analysis import constant_value, surely_runs
from .fragment_conversions import reads, writes
from .loop_stages import Builder, clone_slice, pure

__all__ = ["NOT_APPLIED", "ROTATED", "overlap_softmax", "unfit"]

NOT_APPLIED = "tilec.not_softmax_overlap"
ROTATED = "tilec.softmax_overlap"  # on the rotated loop, for tile-warpgroup-pingpong


def _root(value: SSAValue) -> SSAValue:
    while isinstance(value.owner, tile.RegionOp | tile.ReshapeOp | tile.StageOp):
        value = value.owner.source
    return value


def _accesses(op: Operation) -> tuple[set, set]:
    """(buffers read, buffers written) by `op` and what it holds, by their allocations."""
    read, written = set(), set()
    for inner in op.walk():
        for v in inner.operands:
            if isinstance(v.type, tile.BufferType | tile.TensorType):
                if reads(inner, v):
                    read.add(_root(v))
                if writes(inner, v):
                    written.add(_root(v))
    return read, written


def _release(op: Operation) -> bool:
    """tile-warp-specialize's release of a stage: `scf.if lane == 0 { tile.mbarrier_arrive }`."""
    inner = [o for o in op.walk() if o is not op and not isinstance(o, scf.YieldOp)]
    return isinstance(op, scf.IfOp) and len(inner) == 1 and isinstance(inner[0], tile.MBarrierArriveOp)


def _index_math(op: Operation) -> bool:
    return pure(op) or isinstance(op, tile.ThreadIdOp | tile.StageOp)


def _slice_is_index_math(op: Operation, body: Block, iv: SSAValue, seen: set) -> bool:
    """Whether the ops of `body` that `op` (and what it holds) depends on are index arithmetic
    and stage views, which can be recomputed for another iteration."""
    for inner in op.walk():
        for v in inner.operands:
            owner = v.owner
            if v is iv or not isinstance(owner, Operation) or owner.parent_block() is not body or owner in seen:
                continue
            seen.add(owner)
            if not _index_math(owner) or not _slice_is_index_math(owner, body, iv, seen):
                return False
    return True


def _clone_at(ops: list[Operation], body: Block, iv: SSAValue, new_iv: SSAValue, b: Builder) -> list[Operation]:
    """Clones of `ops` (top-level ops of `body`, in order) into `b` for the iteration `new_iv`; the
    body's ops outside `ops` that they depend on (index arithmetic, stage views) come with them."""
    mapper: dict[SSAValue, SSAValue] = {iv: new_iv}
    done: dict[Operation, Operation] = {}
    inside = set(ops)
    clones = []
    for op in ops:
        for inner in op.walk():
            for v in inner.operands:
                owner = v.owner
                if v not in mapper and isinstance(owner, Operation) and owner.parent_block() is body and \
                        owner not in inside:
                    mapper[v] = clone_slice(v, body, iv, new_iv, b, done)
        clone = op.clone(value_mapper=mapper)
        b.ops.append(clone)
        clones.append(clone)
    return clones


class _Decline(Exception):
    pass


def _split(loop: tile.ForOp):
    """The loop's body in the parts the rotation moves (see the module's docstring), or _Decline."""
    body = loop.body.block
    ops = list(body.ops)
    gemms = [op for op in loop.walk() if isinstance(op, tile.GemmOp)]
    if len(gemms) != 2 or any(g.parent_block() is not body for g in gemms):
        raise _Decline("not two gemms at the top of the loop")
    first, second = gemms
    if any(g.mma_kind != tile.MmaKind.WGMMA or g.in_flight is None or g.in_flight.value.data != 0 for g in gemms):
        raise _Decline("not both gemms are wgmmas waited for in their iteration")
    if first.zero_on_entry is not None or second.zero_on_entry is not None:
        which = "first" if first.zero_on_entry is not None else "second"
        raise _Decline(f"the {which} gemm starts from zero in the first iteration (zero_on_entry), which is peeled")
    if second.a.type.scope != "fragment":
        raise _Decline("the second gemm's A is not in registers (the threads would overwrite it under the gemm)")
    if constant_value(loop.step) != 1:
        raise _Decline("a step other than 1")
    if not surely_runs(loop):
        raise _Decline("the loop may run no iteration (its first and last are peeled)")
    why = _registers_short(loop, first, second)
    if why is not None:
        raise _Decline(why)
    i1, i2 = ops.index(first), ops.index(second)
    head, mid, tail = ops[:i1], ops[i1 + 1:i2], ops[i2 + 1:-1]
    o = _root(second.c)
    if any(o in set().union(*_accesses(op)) or _root(second.a) in _accesses(op)[1] for op in head + [first]):
        raise _Decline("the second gemm's operands are used before the first gemm (it moves behind it)")
    if any(not (_release(op) or _index_math(op)) for op in tail):
        raise _Decline("work after the second gemm other than releasing its stage")
    waits = [op for op in mid if isinstance(op, tile.MBarrierWaitParityOp)]
    if not waits:
        raise _Decline("the second gemm's staged tile shares the first one's ring (operand rings off)")
    p = _root(second.a)
    convert = [op for op in mid if p in _accesses(op)[1]]  # P from S: after G2 of the iteration before
    rescale = [op for op in mid if op not in convert and o in set().union(*_accesses(op))]  # o *= alpha
    early = [op for op in mid if op not in waits and op not in convert and op not in rescale]
    for op in convert + rescale:
        if any(r.uses for r in op.results) or not isinstance(op, tile.ParallelOp | tile.CopyOp):
            raise _Decline(f"{op.name} on the second gemm's operands is not element-wise")
        passed = [e for e in mid if mid.index(e) > mid.index(op) and e not in waits and
                  (e in early or (op in rescale and e in convert))]
        if op in rescale:  # it moves into the next iteration, behind its head and first gemm
            passed += [*head, first]
        other = next((e for e in passed if _conflict(op, e)), None)
        if other is not None:
            raise _Decline(f"{op.name} on the second gemm's operands cannot move behind the {other.name} "
                           f"after it")
    group = [*rescale, *waits, second, *tail]
    seen: set = set()
    if not all(_slice_is_index_math(op, body, loop.induction_var, seen) for op in group + convert):
        raise _Decline("the second gemm's operands depend on more than the iteration's index")
    return first, second, head, early, convert, group


# registers besides the gemms' fragments: addresses, row statistics, the softmax's temporaries. 32: D=64
# with 192x128 tiles on three consumer warpgroups (128 words of fragments) builds at 160 registers without
# spills, its consumers' SASS reaching R151 (ptxas 13, sm_90a); at 152 it spilled 48 bytes
MARGIN = 32


def _registers_short(loop: tile.ForOp, first: tile.GemmOp, second: tile.GemmOp) -> str | None:
    """Why the rotated loop would not fit the consumers (None: it fits), from the
    tile.warp_specialize around `loop`."""
    ws = tile.enclosing(loop, tile.WarpSpecializeOp)
    kernel = tile.enclosing_kernel(ws) if ws is not None else None
    if ws is None or kernel is None or ws.consumer_regs is None:
        return "not in the consumer region of a tile.warp_specialize"
    return short_of(first, second, kernel.num_threads, ws.consumer_regs.value.data)


def unfit(loop: tile.ForOp, threads: int, registers: int) -> str | None:
    """Why a loop of two top-level gemms would not fit the rotation on `threads` consumer threads
    with `registers` each (None: it fits, or it is not such a loop: `overlap_softmax` says why),
    asked before tile-warp-specialize gives the loop operand rings."""
    gemms = [op for op in loop.body.block.ops if isinstance(op, tile.GemmOp)]
    return short_of(*gemms, threads, registers) if len(gemms) == 2 else None


def short_of(first: tile.GemmOp, second: tile.GemmOp, threads: int, registers: int) -> str | None:
    """Why the rotated loop would spill or serialize (None: it fits).
    Registers: during the softmax of S_j, O and P_{j-1} (both still read by G2) and S_j are all
    live, in 32-bit registers per consumer thread. Rows: with two m64 blocks of S on one
    warpgroup ptxas serializes the peeled first Q K^T (C7519, a warpgroup.arrive it injects), and
    the schedule was measured on 64 rows per warpgroup only."""
    words = sum(math.prod(v.type.shape) * tile.element_bytes(v.type.element_type) for v in (first.c, second.c, second.a))
    need = words // 4 // threads + MARGIN
    if need > registers:
        return f"S, O and P of two blocks need about {need} registers per consumer thread, more than its {registers}"
    rows = first.c.type.shape[0] // max(1, threads // WARPGROUP)
    if rows > 64:
        return f"each consumer warpgroup holds {rows} rows of S, more than one m64 block (64 rows per warpgroup)"
    return None


def _conflict(a: Operation, b: Operation) -> bool:
    """Whether `a` and `b` cannot trade places: one writes a buffer the other reads or writes."""
    a_read, a_written = _accesses(a)
    b_read, b_written = _accesses(b)
    return bool(a_written & (b_read | b_written) or a_read & b_written)


def overlap_softmax(loop: tile.ForOp) -> bool:
    """Rotate `loop` (see the module's docstring); False, with the reason on it, when it does not fit."""
    try:
        first, second, head, early, convert, group = _split(loop)
    except _Decline as why:
        loop.attributes[NOT_APPLIED] = StringAttr(str(why))
        return False
    body = loop.body.block
    iv = loop.induction_var
    # before the loop: the first iteration up to P (its rescale and G2 run in the loop's first iteration)
    pre = Builder()
    _clone_at([*head, first, *[op for op in body.ops if op in early or op in convert]], body, iv, loop.lb, pre)
    Rewriter.insert_op(pre.ops, InsertPoint.before(loop))
    _drop_unused(pre.ops)  # G2's stage view
    # after the loop: the last iteration's rescale, G2 and its release
    post = Builder()
    last = post.binary(arith.SubiOp, loop.ub, 1)
    _clone_at(group, body, iv, last, post)
    Rewriter.insert_op(post.ops, InsertPoint.after(loop))
    # in the loop: G1 of k, the rescale and G2 of k - 1, the wait for G1, the softmax, the wait for G2, P
    now = Builder()
    previous = now.binary(arith.SubiOp, iv, 1)
    g2 = _clone_at(group, body, iv, previous, now)
    issued = next(op for op in g2 if isinstance(op, tile.GemmOp))
    first.in_flight = IntegerAttr(1, i64)
    issued.in_flight = IntegerAttr(2, i64)  # G1 of this iteration and G2 of the one before
    split = now.ops.index(issued) + 1
    # O passes through a wait that returns at once (only G1 is in flight): LLVM would otherwise fold the
    # rescale into the iteration before (the multiplication of two loop-carried values), behind the wait for G2
    held = tile.GemmWaitOp(second.c, 1)
    Rewriter.insert_op([held, *now.ops[:split], tile.GemmWaitOp(first.c, 1)], InsertPoint.after(first))
    yield_op = body.last_op
    for op in convert:
        op.detach()
    Rewriter.insert_op([tile.GemmWaitOp(second.c, 0), *now.ops[split:], *convert], InsertPoint.before(yield_op))
    for op in reversed(group):
        Rewriter.erase_op(op)
    one = arith.ConstantOp(IntegerAttr(1, loop.lb.type))
    start = arith.AddiOp(loop.lb, one.result)
    Rewriter.insert_op([one, start], InsertPoint.before(loop))
    loop.operands[0] = start.result
    loop.attributes[ROTATED] = UnitAttr()
    _drop_unused(list(body.ops))
    return True


def _drop_unused(ops: list[Operation]) -> None:
    """The index arithmetic and stage views among `ops` that nothing reads (any more)."""
    for op in reversed(ops):
        if _index_math(op) and all(not r.uses for r in op.results):
            Rewriter.erase_op(op)
