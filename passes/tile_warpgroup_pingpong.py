"""Ping-pong of the consumer warpgroups of one tile at the tensor cores (FlashAttention-3 §3.1).

Requires: tile-warp-specialize (its consumer loop, `warp_specialized_stages`, with each gemm
  waited for: `in_flight = 0`); runs last (after tile-insert-barriers, so that it sees every
  block barrier a turn would hold).
Establishes: in the consumer region of a `tile.warp_specialize` of one consumer group whose W
  (2 to 4) warpgroups share a tile (attention: 64 query rows each, the same K/V stages), whose
  warp-specialized loop holds two top-level wgmma gemms G1 (S = Q K^T) and G2 (O += P V) with
  work on G1's result between them (the softmax), the gemms take turns: warpgroup w issues G2 of
  iteration j and G1 of j + 1 only after warpgroup w − 1 has issued its own, and passes the
  turn as soon as G1 is issued (G1 becomes `in_flight = 1`, waited for right after the pass by
  `tile.gemm_wait`). So one warpgroup's softmax runs while the other's gemms have the tensor
  cores (FA3's `warp_scheduler_barrier_sync` / `_arrive`).
  On a loop softmax_overlap.py rotated (`tilec.softmax_overlap`: G1 of block k and G2 of
  block k − 1 issued together), FA3's turns: a turn holds the issue of those two gemms only (wait
  for the turn, G1_k, the rescale, the wait for V, G2_{k-1}, pass the turn; the waits for the
  gemms after it), and the first block's G1 and the last block's G2 before and after the loop take
  a turn each; the stage releases stay where the rotation put them (none is delayed).
Fails: never; a loop that does not fit is left alone, the reason in its
  `tilec.not_warpgroup_pingpong` attribute when it was a candidate (two gemms, W ≥ 2).

    tile.for %k { wait full ; fill %s ; gemm Q, K, %s ; softmax(%s) → %p ; gemm %p, V, %o ; arrive empty }
  becomes
    tile.warpgroup_wait_turn {start}
    tile.for %k {
      wait full ; fill %s ; gemm Q, K, %s {in_flight = 1} ; tile.warpgroup_pass_turn ; tile.gemm_wait %s
      softmax(%s) → %p
      tile.warpgroup_wait_turn ; gemm %p, V, %o ; arrive empty
    }
    tile.warpgroup_pass_turn {final}

A turn (from a wait to the next pass) holds G2, the end of the iteration, the start of the next
and its G1: those ops must not wait for the other warpgroups (a block barrier there would wait
for a warpgroup that waits for the turn), so only element-wise work, fills, stage views and
mbarrier waits and arrivals may sit there.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.dialects import tile
from tilec.dialects.tile.turns import MAX_WARPGROUPS, WARPGROUP
from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from .layouts import wgmma_register_a_layout
from .softmax_overlap import ROTATED
from .loop_stages import Builder, pure
from .tile_infer_layout import layout_of, root_alloc, same_threads
from .tile_warp_specialize import arrive_per_warp

__all__ = ["TileWarpgroupPingpongPass"]

NOT_APPLIED = "tilec.not_warpgroup_pingpong"

_QUIET = (tile.FillOp, tile.ParallelOp, tile.StageOp, tile.MBarrierWaitParityOp, tile.MBarrierArriveOp,
          tile.ThreadIdOp, tile.LoadOp, tile.StoreOp, tile.YieldOp, scf.IfOp, scf.YieldOp,
          tile.GemmWaitOp)  # (wgmma.wait_group: the warpgroup's own gemms)


def _quiet(op: Operation) -> bool:
    """Whether `op` runs without waiting for other threads of the block (no barrier in its lowering)."""
    return all(isinstance(inner, _QUIET) or inner.name.startswith(("arith.", "math.")) for inner in op.walk())


@dataclass
class _Turns:
    loop: tile.ForOp
    first: tile.GemmOp  # G1: its result is read before G2
    second: tile.GemmOp


def _loop(ws: tile.WarpSpecializeOp) -> tile.ForOp | None:
    loops = [op for op in ws.consumer_tile.ops if isinstance(op, tile.ForOp) and op.warp_specialized_stages is not None]
    return loops[0] if len(loops) == 1 else None


def _register_a_in_place(gemm: tile.GemmOp, threads: int) -> bool:
    """Whether wgmma reads G2's register A as it is (no conversion through shared memory and barriers)."""
    if gemm.a.type.scope != "fragment":
        return True
    alloc = root_alloc(gemm.a)
    have = layout_of(alloc) if isinstance(alloc, tile.AllocOp) else None
    m, _, k = gemm.mnk()
    want = wgmma_register_a_layout(m, k, threads)
    return have is None or (want is not None and same_threads(have, want))


def _plan(loop: tile.ForOp, threads: int) -> _Turns | str | None:
    """The two gemms of `loop` that take turns, why not (a candidate that does not fit), or None."""
    body = loop.body.block
    gemms = [op for op in loop.walk() if isinstance(op, tile.GemmOp)]
    if len(gemms) != 2:
        return None
    first, second = gemms
    if first.parent_block() is not body or second.parent_block() is not body:
        return "a gemm inside a branch or an inner loop"
    if any(g.mma_kind != tile.MmaKind.WGMMA or g.in_flight is None or g.in_flight.value.data != 0 for g in gemms):
        return "not both gemms are wgmmas waited for in their iteration"
    ops = list(body.ops)
    between = ops[ops.index(first) + 1:ops.index(second)]
    if not any(v is first.c for op in between for inner in op.walk() for v in inner.operands):
        return "the second gemm does not depend on work on the first one's result"
    turn = [op for op in ops if op is not first and op is not second and
            (ops.index(op) < ops.index(first) or ops.index(op) > ops.index(second))]
    loud = next((op for op in turn if not _quiet(op)), None)
    if loud is not None:
        return f"{loud.name} between the second gemm and the first one of the next iteration may wait for " \
               f"the other warpgroups"
    if not _register_a_in_place(second, threads):
        return "the second gemm's register operand is converted through shared memory (block barriers)"
    return _Turns(loop, first, second)


def _take_turns(turns: _Turns) -> None:
    loop, first, second = turns.loop, turns.first, turns.second
    first.in_flight = IntegerAttr(1, i64)
    start, give, wait_s = tile.WarpgroupWaitTurnOp(start=True), tile.WarpgroupPassTurnOp(), tile.GemmWaitOp(first.c, 0)
    take, final = tile.WarpgroupWaitTurnOp(), tile.WarpgroupPassTurnOp(final=True)
    start.location = final.location = loop.location
    give.location = wait_s.location = first.location
    take.location = second.location
    Rewriter.insert_op(start, InsertPoint.before(loop))
    Rewriter.insert_op([give, wait_s], InsertPoint.after(first))
    Rewriter.insert_op(take, InsertPoint.before(second))
    Rewriter.insert_op(final, InsertPoint.after(loop))
    _keep_second_in_flight(turns, wait_s, final)


def _release(turns: _Turns) -> scf.IfOp | None:
    """tile-warp-specialize's release of the iteration's stage after G2: `scf.if lane == 0 { arrive %empty[s] }`."""
    ops = list(turns.loop.body.block.ops)
    for op in ops[ops.index(turns.second) + 1:]:
        inner = [o for o in op.walk() if o is not op and not isinstance(o, scf.YieldOp)]
        if isinstance(op, scf.IfOp) and len(inner) == 1 and isinstance(inner[0], tile.MBarrierArriveOp):
            return op
    return None


def _keep_second_in_flight(turns: _Turns, wait_s: tile.GemmWaitOp, final: tile.WarpgroupPassTurnOp) -> None:
    """G2 (P V) stays in flight over the turn, into the next iteration: G1 of j + 1 is issued right
    behind it (no tensor-core bubble in the warpgroup's turn), the wait for S also waits for it, and
    the stage it read goes back there (the stage of the iteration before), not at the end of its
    own iteration. With one stage the producer would wait for that stage to load the next: no."""
    loop, first, second = turns.loop, turns.first, turns.second
    release = _release(turns)
    stages = loop.warp_specialized_stages.value.data
    if release is None or stages < 2:
        return
    arrive = next(o for o in release.walk() if isinstance(o, tile.MBarrierArriveOp))
    first.in_flight = IntegerAttr(2, i64)  # G2 of the iteration before and G1 of this one: the pass comes right after
    second.in_flight = IntegerAttr(1, i64)
    b = Builder()
    b.ops.append(tile.GemmWaitOp(second.c, 0))  # its accumulator is read from here on
    later = Builder()
    previous = later.binary(arith.RemUIOp, later.binary(arith.AddiOp, arrive.index, stages - 1), stages)
    arrive_per_warp(later, arrive.barrier, previous, cluster=arrive.cluster is not None)  # (tile-cluster's)
    later.ops.append(scf.YieldOp())
    started = b.add(arith.CmpiOp(loop.induction_var, loop.lb, "ne"))
    b.ops.append(scf.IfOp(started, [], Region(Block(later.ops))))
    for op in b.ops:
        op.location = wait_s.location
    Rewriter.insert_op(b.ops, InsertPoint.after(wait_s))
    condition = release.cond.owner
    Rewriter.erase_op(release)
    _erase_unused(condition)
    done = tile.GemmWaitOp(second.c, 0)  # the last iteration's P V, before the epilogue reads O
    done.location = loop.location
    Rewriter.insert_op(done, InsertPoint.after(final))


def _erase_unused(op: Operation | None) -> None:
    """`op` and the ops it alone used, when pure and now unused (the old release's lane test)."""
    if not isinstance(op, Operation) or not (pure(op) or isinstance(op, tile.ThreadIdOp)) or \
            any(r.uses for r in op.results):
        return
    feeding = [v.owner for v in op.operands]
    Rewriter.erase_op(op)
    for owner in feeding:
        _erase_unused(owner)


@dataclass
class _RotatedTurns:
    """The turns of a loop softmax_overlap.py rotated: each holds the issue of the gemms only."""

    first: tile.GemmOp  # G1 of the first block, before the loop
    loop: tile.ForOp
    g1: tile.GemmOp  # in the loop: G1 of block k ...
    g2: tile.GemmOp  # ... and G2 of block k - 1, issued together
    last: tile.GemmOp  # G2 of the last block, after the loop


def _plan_rotated(ws: tile.WarpSpecializeOp, loop: tile.ForOp, threads: int) -> _RotatedTurns | str:
    ops = list(ws.consumer_tile.ops)
    at = ops.index(loop)
    before = [op for op in ops[:at] if isinstance(op, tile.GemmOp)]
    after = [op for op in ops[at + 1:] if isinstance(op, tile.GemmOp)]
    body = list(loop.body.block.ops)
    gemms = [op for op in body if isinstance(op, tile.GemmOp)]
    if not before or not after or len(gemms) != 2 or any(not isinstance(g.parent_op(), tile.ForOp | tile.WarpSpecializeOp | tile.PersistentOp)
                                                          for g in gemms):
        return "the rotated loop's gemms are not where softmax_overlap.py puts them"
    g1, g2 = gemms
    first, last = before[-1], after[0]
    if first.c is not g1.c or last.c is not g2.c:
        return "the gemms before and after the rotated loop are not its first and last blocks'"
    inside = body[body.index(g1) + 1:body.index(g2)]
    loud = next((op for op in inside if not _quiet(op)), None)
    if loud is not None:
        return f"{loud.name} between the gemms of a turn may wait for the other warpgroups"
    if not _register_a_in_place(g2, threads):
        return "the second gemm's register operand is converted through shared memory (block barriers)"
    return _RotatedTurns(first, loop, g1, g2, last)


def _take_rotated_turns(t: _RotatedTurns) -> None:
    """FA3's turns on the rotated loop: wait for the turn, issue G1_k and G2_{k-1}, pass it, then
    wait for the gemms (the waits and releases softmax_overlap.py placed stay where they are).
    The first block's G1 and the last block's G2 take a turn of their own."""
    def turn(gemm: tile.GemmOp, end: tile.GemmOp, start: bool = False, final: bool = False, wait=None):
        take, give = tile.WarpgroupWaitTurnOp(start=start), tile.WarpgroupPassTurnOp(final=final)
        take.location, give.location = gemm.location, end.location
        Rewriter.insert_op(take, InsertPoint.before(gemm))
        Rewriter.insert_op([give, *([wait] if wait is not None else [])], InsertPoint.after(end))

    t.first.in_flight = IntegerAttr(1, i64)  # issued, the turn passed, then waited for
    turn(t.first, t.first, start=True, wait=tile.GemmWaitOp(t.first.c, 0))
    turn(t.g1, t.g2)  # the wait for S (pending 1) follows G2
    t.last.in_flight = IntegerAttr(1, i64)
    turn(t.last, t.last, final=True, wait=tile.GemmWaitOp(t.last.c, 0))


def warpgroup_pingpong(kernel: tile.KernelOp, rotated_only: bool = False) -> None:
    """The turns in each warp-specialized loop of `kernel` that fits (see the module's docstring);
    with `rotated_only`, in those softmax_overlap.py rotated only."""
    threads = kernel.num_threads
    warpgroups = threads // WARPGROUP
    if threads % WARPGROUP or not 2 <= warpgroups <= MAX_WARPGROUPS:
        return
    for ws in [op for op in kernel.walk() if isinstance(op, tile.WarpSpecializeOp) and op.groups == 1]:
        loop = _loop(ws)
        if loop is not None and ROTATED in loop.attributes:
            rotated = _plan_rotated(ws, loop, threads)
            if isinstance(rotated, str):
                loop.attributes[NOT_APPLIED] = StringAttr(rotated)
            else:
                _take_rotated_turns(rotated)
            continue
        if rotated_only:
            continue
        plan = _plan(loop, threads) if loop is not None else None
        if isinstance(plan, str):
            loop.attributes[NOT_APPLIED] = StringAttr(plan)
        elif plan is not None:
            _take_turns(plan)


@dataclass(frozen=True)
class TileWarpgroupPingpongPass(ModulePass):
    """Ping-pong of the consumer warpgroups of one tile at the tensor cores (FlashAttention-3)."""

    name = "tile-warpgroup-pingpong"

    rotated_only: bool = False
    """Only loops softmax_overlap.py rotated (the default pass list's choice: on the H200 the turns
    made causal D=128 attention 0.81 -> 0.90x cuDNN on the rotated loop, run s7b, but the loop as
    written slower, run s5f)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            # named barriers of the kernel's own could be the turns' (5 to 5 + W - 1)
            if any(isinstance(b, tile.BarrierOp) and b.barrier_id is not None for b in kernel.walk()):
                continue
            warpgroup_pingpong(kernel, self.rotated_only)
