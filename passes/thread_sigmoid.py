"""`1 + tanh(u)` as `2·σ(2u)`: the sigmoid inside gelu_tanh in four instructions instead of ~20.

Requires: thread-level IR (after convert-tile-to-thread).
Establishes: every f32 `arith.addf` of the constant 1.0 and a `math.tanh` (either order),
  neither with fast-math flags, is computed as

      rcp(0.5 + 0.5 · 2^(−2u·log2 e))      (one fma; ex2.approx.ftz, rcp.approx.ftz: its argument is ≥ 0.5 or +inf)

  and `arith.subf 1.0, tanh(u)` as the same with u negated; the tanh goes once nothing else
  uses it. When u is `c · w` for a constant c and feeds only this tanh, the exponent is
  w · (−2c·log2 e), the two constants multiplied at compile time, and the multiply by c goes;
  when w is v + c₃·v³ (c₃ > 0), the exponent is v · (k + k·c₃·v²). Where the sum's only use is a
  product with 0.5 · v, that product is v · rcp(1 + 2^(...)).
Fails: never.

`0.5 * v * (1 + tanh(0.79788 * (v + 0.044715 * v³)))`, the tanh GELU of every fused epilogue,
pays for the tanh's two branches (Cephes' odd polynomial for |x| < 0.625 and 1 − 2/(e^{2|x|} + 1)
above, both computed and selected per element: ~20 instructions) and then adds 1 to a value
near −1 for negative v, where the sum loses its relative precision. 1 + tanh(u) = 2σ(2u)
holds exactly, and 2/(1 + e^{−2u}) has no cancellation anywhere: relative error about 3 ulp
(two MUFU approximations and the exponent's rounding), ±inf give 2 and 0, NaN stays NaN.
2/d is computed as 1/(d/2): halving is exact and so is the approximate reciprocal's scaling,
so the fma form returns what 2·rcp(1 + e) would (except where 1/d is below the normal range,
which 2·rcp flushes to 0 and 1/(d/2) keeps). Folding c into the exponent's constant trades the
rounding of u = c·w for the rounding of the product of the constants: the exponent stays within
the same ~1.5 ulp of its exact value, so the bound above holds unchanged.

Two more folds take gelu's epilogue from 8 to 6 FP instructions an element:
- `(0.5 · v) · (1 ± tanh(u))`, the sum's only use, is `v · rcp(1 + e)`: the same value bit for bit
  (0.5·v is exact, and so are rcp((1 + e)/2) = 2·rcp(1 + e) and the product of the two halvings)
  except below the normal range, where rcp(1 + e) flushes first. The multiply by 0.5 and the fma go.
- An exponent argument w = v + c₃·v³ (c₃ > 0; the product in any order; each step used once) is
  computed as v · (k + k·c₃ · v²), Horner's form, 3 instructions instead of 4. Both terms have
  the same sign, so neither form cancels: each rounds 4 times (the constant k·c₃ once more, at
  compile time) to within ~2.5 ulp of the exact exponent, as before; ex2.approx's own error
  (2 ulp) dominates.
"""


from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects import math as mth
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilec.dialects import nvvm, walk_ops

__all__ = ["ThreadSigmoidPass"]


def _constant(value: SSAValue) -> float | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, FloatAttr):
        return op.value.value.data
    return None


def _plain(op: Operation) -> bool:
    """No fast-math flags: with `afn` the tanh is `tanh.approx.f32` already, one instruction."""
    flags = getattr(op, "fastmath", None)
    return flags is None or not flags.data


def _tanh(value: SSAValue) -> mth.TanhOp | None:
    op = value.owner
    return op if isinstance(op, mth.TanhOp) and op.result.type == f32 and _plain(op) else None


def _match(op: Operation) -> tuple[mth.TanhOp, float] | None:
    """(the tanh, the sign of u in the sigmoid) when `op` is 1 + tanh(u), tanh(u) + 1 or 1 − tanh(u)."""
    if not isinstance(op, arith.AddfOp | arith.SubfOp) or not _plain(op) or op.result.type != f32:
        return None
    lhs, rhs = op.operands
    if isinstance(op, arith.AddfOp):
        for one, t in ((lhs, rhs), (rhs, lhs)):
            if _constant(one) == 1.0 and (tanh := _tanh(t)) is not None:
                return tanh, 1.0
    if isinstance(op, arith.SubfOp) and _constant(lhs) == 1.0 and (tanh := _tanh(rhs)) is not None:
        return tanh, -1.0
    return None


def _scaled(u: SSAValue, tanh: mth.TanhOp) -> tuple[arith.MulfOp, SSAValue, float] | None:
    """(the multiply, w, c) when u = c · w (either order) for an f32 constant c and u feeds only `tanh`."""
    mul = u.owner
    if not isinstance(mul, arith.MulfOp) or not _plain(mul) or u.uses.get_length() != 1 or tanh.result.uses.get_length() != 1:
        return None
    for c, w in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
        if (value := _constant(c)) is not None and math.isfinite(value) and value != 0.0:
            return mul, w, _f32(value)  # the constant as f32 holds it
    return None


def _monomial(q: SSAValue) -> tuple[SSAValue, int, float, list[Operation]] | None:
    """(v, n, c, the multiplies) when q is c·vⁿ as a tree of plain f32 multiplies, each used once, whose
    leaves are f32 constants and n ≥ 1 uses of one value v."""
    bases: list[SSAValue] = []
    coefficient, ops, todo = 1.0, [], [q]
    while todo:
        value = todo.pop()
        if (c := _constant(value)) is not None:
            coefficient *= c
            continue
        op = value.owner
        if isinstance(op, arith.MulfOp) and _plain(op) and op.result.type == f32 and value.uses.get_length() == 1:
            ops.append(op)
            todo += [op.lhs, op.rhs]
            continue
        bases.append(value)
    if not bases or any(b is not bases[0] for b in bases) or not ops:
        return None
    return bases[0], len(bases), coefficient, ops


def _odd_cubic(w: SSAValue) -> tuple[SSAValue, float, list[Operation]] | None:
    """(v, c₃, the ops computing w, outermost first) when w = v + c₃·v³ for an f32 constant c₃ > 0,
    every step used once (the last by the exponent's multiply)."""
    add = w.owner
    if not isinstance(add, arith.AddfOp) or not _plain(add) or add.result.type != f32 or w.uses.get_length() != 1:
        return None
    for v, q in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        found = _monomial(q)
        if found is not None and found[0] is v and found[1] == 3 and math.isfinite(found[2]) and found[2] > 0.0:
            return v, found[2], [add, *found[3]]
    return None


def _f32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def _sigmoid_twice(u: SSAValue, sign: float, tanh: mth.TanhOp, whole: bool
                   ) -> tuple[list[Operation], SSAValue, list[Operation]]:
    """1 / (0.5 + 0.5 · 2^(−2·sign·u·log2 e)), or with `whole` 1 / (1 + 2^(...)) (the sigmoid itself,
    half the value), and the ops it folded (to erase, outermost first)."""
    scale, folded = -2.0 * sign / math.log(2.0), []
    if (found := _scaled(u, tanh)) is not None:
        mul, u, c = found
        folded.append(mul)
        scale *= c
    ops: list[Operation] = [k := arith.ConstantOp(FloatAttr(scale, f32))]
    cubic = _odd_cubic(u) if tanh.result.uses.get_length() == 1 else None  # (else the tanh keeps w)
    if cubic is not None:  # v · (k + k·c₃ · v²)
        v, c3, steps = cubic
        folded += steps
        k3 = arith.ConstantOp(FloatAttr(_f32(scale) * c3, f32))
        square = arith.MulfOp(v, v)
        horner = mth.FmaOp(square.result, k3.result, k.result)
        x = arith.MulfOp(v, horner.result)
        ops += [k3, square, horner, x]
    else:
        x = arith.MulfOp(u, k.result)
        ops.append(x)
    e = mth.Exp2Op(x.result, mth.FastMathFlagsAttr([arith.FastMathFlag.APPROX_FUNC]))  # ex2.approx.ftz: a flushed 2^x still adds to 1
    ops.append(e)
    if whole:
        one = arith.ConstantOp(FloatAttr(1.0, f32))
        d = arith.AddfOp(e.result, one.result)
        ops += [one, d]
    else:
        half = arith.ConstantOp(FloatAttr(0.5, f32))
        d = mth.FmaOp(e.result, half.result, half.result)  # (1 + e) / 2, rounded as 1 + e is
        ops += [half, d]
    r = nvvm.RcpApproxFtzF32Op(d.result)
    ops.append(r)
    return ops, r.res, folded


def _halved_product(op: Operation) -> tuple[arith.MulfOp, SSAValue, arith.MulfOp] | None:
    """(the product, v, the halving) when the only use of `op`'s result is (0.5 · v) · it, either order,
    the halving used only there."""
    uses = list(op.results[0].uses)
    if len(uses) != 1 or not isinstance(product := uses[0].operation, arith.MulfOp) or not _plain(product):
        return None
    other = product.operands[1 - uses[0].index]
    half = other.owner
    if product.lhs is product.rhs or not isinstance(half, arith.MulfOp) or not _plain(half) or other.uses.get_length() != 1:
        return None
    for c, v in ((half.lhs, half.rhs), (half.rhs, half.lhs)):
        if _constant(c) == 0.5:
            return product, v, half
    return None


@dataclass(frozen=True)
class ThreadSigmoidPass(ModulePass):
    """Compute 1 ± tanh(u) as 2·σ(±2u): one exp2 and one reciprocal, no cancellation."""

    name = "thread-sigmoid"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for candidate in walk_ops(op):
            found = _match(candidate)
            if found is None:
                continue
            tanh, sign = found
            halved = _halved_product(candidate)
            ops, value, folded = _sigmoid_twice(tanh.operand, sign, tanh, whole=halved is not None)
            Rewriter.insert_op(ops, InsertPoint.before(candidate))
            if halved is not None:  # (0.5 · v) · 2σ = v · σ
                product, v, half = halved
                y = arith.MulfOp(v, value)
                Rewriter.insert_op(y, InsertPoint.before(product))
                product.result.replace_all_uses_with(y.result)
                Rewriter.erase_op(product)
                Rewriter.erase_op(half)
            else:
                candidate.results[0].replace_all_uses_with(value)
            Rewriter.erase_op(candidate)
            if not tanh.result.uses:
                Rewriter.erase_op(tanh)
                for dead in folded:
                    if not dead.results[0].uses:
                        Rewriter.erase_op(dead)
