"""Divide a run of f32 values by one divisor with one reciprocal, bit for bit as `div.rn.f32`.

Requires: thread-level IR (after convert-tile-to-thread).
Establishes: every run of at least `min_run` consecutive `arith.divf` on f32 without
  fast-math flags that divide by the same value (the same SSA value, or loads of the same
  address with no write in between) is computed as below; results are unchanged, bit for bit.
Fails: never.

`x[i, j] / s[i]` in a `T.Parallel` becomes, per thread, one division per element by the
same divisor. Each `div.rn.f32` costs about ten instructions: ptxas emits the hardware
reciprocal (MUFU.RCP), two FMAs that refine it, the quotient and its one-FMA correction,
and a range check (FCHK) that branches to a slow path for operands near the ends of the
exponent range. Only the last three FMAs depend on the dividend. This pass computes the
refined reciprocal once per run and the guarded correction per element, which is the same
arithmetic as ptxas' fast path, so the quotient is the same correctly rounded value:

    %r0 = nvvm.rcp.approx.ftz.f %s                 // once per run
    %r  = fma(r0, fma(-s, r0, 1), r0)
    %lo = |s| in [2^-60, 2^60] ? 2^-60 : inf       // an unusual divisor sends all to div.rn
    %ok = and_k(|x_k| >= lo && |x_k| < 2^60)       // so do zeros, subnormals, inf, NaN
    %q:n = scf.if %ok {                            // per element: 3 FMAs, 2 compares
      q0 = x_k * r ; e = fma(-s, q0, x_k) ; yield fma(r, e, q0)
    } else {
      yield x_k / s                                 // div.rn.f32, exactly as before
    }

With both operands' magnitudes in [2^-60, 2^60] the quotient, the residual and the
reciprocal are far from overflow and from subnormals, where ptxas' check passes and its
fast path is the whole computation (tests/gpu checks the equality bit for bit on the GPU).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects import math as mth
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f32, i1
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilec.dialects import nvvm, walk_ops

__all__ = ["ThreadSharedDivisorPass"]

LO, HI = 2.0**-60, 2.0**60

# ops that may sit between a divisor's load and its divisions without changing memory
_PURE = (memref.LoadOp, vector.LoadOp, vector.ExtractOp, vector.BroadcastOp)


def _is_pure(op: Operation) -> bool:
    return isinstance(op, _PURE) or op.dialect_name() in ("arith", "math")


def _plain_f32_div(op: Operation) -> bool:
    if not isinstance(op, arith.DivfOp) or op.result.type != f32:
        return False
    flags = op.fastmath
    return flags is None or not flags.data


def _divisor_key(div: arith.DivfOp) -> object:
    """Divisions with equal keys divide by the same value (checked by the caller for loads)."""
    y = div.rhs
    owner = y.owner
    if isinstance(owner, memref.LoadOp):
        return ("load", owner.memref, tuple(owner.indices))
    return y


def _loads_unchanged(block: Block, run: list[arith.DivfOp]) -> bool:
    """No op between the first divisor load and the run could write memory (or there is one
    divisor value, whatever defines it)."""
    if len({d.rhs for d in run}) == 1:
        return True
    loads = {d.rhs.owner for d in run if isinstance(d.rhs.owner, memref.LoadOp)}
    if not loads:
        return True
    if any(load.parent_block() is not block for load in loads):
        return False
    started = False
    for op in block.ops:
        if op is run[0]:
            return True
        started = started or op in loads
        if started and not _is_pure(op):
            return False
    return False


def _runs(block: Block, min_run: int) -> list[list[arith.DivfOp]]:
    """Maximal runs of consecutive plain f32 divisions with one divisor key."""
    runs, current, key = [], [], None
    for op in list(block.ops):
        if _plain_f32_div(op):
            k = _divisor_key(op)
            produced = {d.result for d in current}
            if current and k == key and op.lhs not in produced:
                current.append(op)
                continue
            runs.append(current)
            current, key = [op], k
        else:
            runs.append(current)
            current, key = [], None
    runs.append(current)
    return [r for r in runs if len(r) >= min_run and _loads_unchanged(block, r)]


def _const(value: float) -> arith.ConstantOp:
    return arith.ConstantOp(FloatAttr(value, f32))


def _rewrite(run: list[arith.DivfOp]) -> None:
    y = run[0].rhs
    ops: list[Operation] = []

    def add(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    one, lo_c, hi_c, inf_c = (add(_const(v)) for v in (1.0, LO, HI, float("inf")))
    neg_y = add(arith.NegfOp(y))
    r0 = add(nvvm.RcpApproxFtzF32Op(y))
    r = add(mth.FmaOp(r0, add(mth.FmaOp(neg_y, r0, one)), r0))
    ay = add(mth.AbsFOp(y))
    y_ok = add(arith.AndIOp(add(arith.CmpfOp(ay, lo_c, "oge")), add(arith.CmpfOp(ay, hi_c, "ole"))))
    lo = add(arith.SelectOp(y_ok, lo_c, inf_c))
    ok: SSAValue | None = None
    for d in run:
        ax = add(mth.AbsFOp(d.lhs))
        in_range = add(arith.AndIOp(add(arith.CmpfOp(ax, lo, "oge")), add(arith.CmpfOp(ax, hi_c, "olt"))))
        ok = in_range if ok is None else add(arith.AndIOp(ok, in_range))
    assert ok is not None and ok.type == i1

    fast, slow = Block(), Block()

    def emit(block: Block, op: Operation) -> SSAValue:
        block.add_op(op)
        return op.results[0]

    quotients = []
    for d in run:
        q0 = emit(fast, arith.MulfOp(d.lhs, r))
        e = emit(fast, mth.FmaOp(neg_y, q0, d.lhs))
        quotients.append(emit(fast, mth.FmaOp(r, e, q0)))
    fast.add_op(scf.YieldOp(*quotients))
    exact = [emit(slow, arith.DivfOp(d.lhs, d.rhs)) for d in run]
    slow.add_op(scf.YieldOp(*exact))
    branch = scf.IfOp(ok, [f32] * len(run), Region(fast), Region(slow))
    ops.append(branch)

    Rewriter.insert_op(ops, InsertPoint.before(run[0]))
    for d, q in zip(run, branch.results, strict=True):
        d.result.replace_all_uses_with(q)
        Rewriter.erase_op(d)


@dataclass(frozen=True)
class ThreadSharedDivisorPass(ModulePass):
    name = "thread-shared-divisor"

    min_run: int = 2
    """The fewest consecutive divisions by one value worth a shared reciprocal."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # the blocks holding a plain f32 division, in walk order (a run has at least one)
        blocks = dict.fromkeys(div.parent_block() for div in walk_ops(op) if _plain_f32_div(div))
        for block in blocks:
            for run in _runs(block, self.min_run):
                _rewrite(run)
