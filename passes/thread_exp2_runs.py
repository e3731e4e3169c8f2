"""Check a run of f32 exponentials' range once, and skip each one's subnormal fix-up, bit for bit.

Requires: thread-level IR (after convert-tile-to-thread; a T.Parallel body with exponentials is
  lowered op by op, so that a thread's `math.exp2`s come in one run).
Establishes: every run of at least `min_run` consecutive `math.exp2` on f32 without fast-math
  flags is computed as below; results are unchanged, bit for bit.
Fails: never.

`math.exp2` without fast-math flags is `ex2.approx.f32`, which keeps subnormal results: ptxas
wraps each MUFU.EX2 in a range check and two predicated multiplies (x < -126: 2^(x/2), squared),
three instructions beside the one that computes. For x >= -126 (and for NaN) the MUFU.EX2 alone
is the whole computation, which is what `ex2.approx.ftz.f32` (`fastmath<afn>`) emits. So one
minimum of the run's arguments decides for all of them (FMNMX: one instruction each, NaNs
ignored, as they take the short path too):

    %m   = minnumf(x_0, ..., x_{n-1})
    %ok  = cmpf uge %m, -126                      // not below: every x_k >= -126 or NaN
    %e:n = scf.if %ok {
      yield exp2 x_k {fastmath<afn>}              // MUFU.EX2 alone
    } else {
      yield exp2 x_k                               // with the fix-up, exactly as before
    }

In attention's online softmax (`exp2(s * scale - m * scale)` over a thread's 64 scores) the
arguments are at most 0 and in practice far above -126: the loop's 64 exponentials cost 128
instructions instead of 256. A causal diagonal block (masked scores are -inf) takes the exact path.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects import math as mth
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilec.dialects import walk_ops

__all__ = ["ThreadExp2RunsPass"]

SUBNORMAL_BELOW = -126.0
"""2^x is subnormal (ex2.approx.f32's fix-up) for x below this."""


def _plain_f32_exp2(op: Operation) -> bool:
    return isinstance(op, mth.Exp2Op) and op.result.type == f32 and (op.fastmath is None or not op.fastmath.data)


def _runs(block: Block, min_run: int) -> list[list[mth.Exp2Op]]:
    """Maximal runs of consecutive plain f32 exponentials, none the argument of a later one."""
    runs, current = [], []
    for op in list(block.ops):
        if _plain_f32_exp2(op) and op.operand not in {e.result for e in current}:
            current.append(op)
            continue
        runs.append(current)
        current = [op] if _plain_f32_exp2(op) else []
    runs.append(current)
    return [r for r in runs if len(r) >= min_run]


def _rewrite(run: list[mth.Exp2Op]) -> None:
    ops: list[Operation] = []

    def add(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    level = [e.operand for e in run]
    while len(level) > 1:  # a balanced tree: depth log2(n), not a chain of n dependent minimums
        level = [add(arith.MinnumfOp(a, b)) for a, b in zip(level[::2], level[1::2])] + level[len(level) & ~1:]
    low = level[0]
    bound = add(arith.ConstantOp(FloatAttr(SUBNORMAL_BELOW, f32)))
    ok = add(arith.CmpfOp(low, bound, "uge"))
    fast, exact = Block(), Block()
    quick = [mth.Exp2Op(e.operand, fastmath=arith.FastMathFlagsAttr(["afn"])) for e in run]
    fast.add_ops([*quick, scf.YieldOp(*[q.result for q in quick])])
    slow = [mth.Exp2Op(e.operand) for e in run]
    exact.add_ops([*slow, scf.YieldOp(*[s.result for s in slow])])
    branch = scf.IfOp(ok, [f32] * len(run), Region(fast), Region(exact))
    ops.append(branch)
    location = getattr(run[0], "location", None)
    for op in ops if location is not None else ():
        op.location = location
    Rewriter.insert_op(ops, InsertPoint.before(run[0]))
    for e, value in zip(run, branch.results, strict=True):
        e.result.replace_all_uses_with(value)
        Rewriter.erase_op(e)


@dataclass(frozen=True)
class ThreadExp2RunsPass(ModulePass):
    """Check a run of f32 exponentials' range once, and skip each one's subnormal fix-up."""

    name = "thread-exp2-runs"

    min_run: int = 8
    """The fewest consecutive exponentials worth a shared range check (a pair saves nothing:
    the check and the branch cost what the fix-ups do)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        blocks = dict.fromkeys(e.parent_block() for e in walk_ops(op) if _plain_f32_exp2(e))
        for block in blocks:
            for run in _runs(block, self.min_run):
                _rewrite(run)
