"""Split a loop's masked `tile.parallel` at the iteration where its mask becomes uniformly true.

Requires: tile-legalize-bounds (it reads loop bounds as they come from the frontend);
  runs before tile-select-mma, tile-warp-specialize and tile-pipeline.
Establishes: in a `tile.for` (any kind, any step: the guard compares k itself), a `tile.parallel`
  directly in its body whose `arith.select` / `scf.if` conditions include an affine
  comparison (`arith.cmpi` sge/sgt/sle/slt, or an `arith.andi` of such) in the induction
  variable k, the parallel's own indices and values defined outside the loop, true at every
  index of the parallel for a prefix (or suffix) of k, is versioned:
  `scf.if k < split` (`k >= split` for a suffix) runs a copy of the parallel with the
  condition replaced by `true` (selects take their true operand, ifs their then-region);
  a copy that is left storing one loop-invariant value to every element of a buffer
  becomes a `tile.fill`. The other iterations run the parallel as it was. `split` is computed
  once before the loop, at run time (block indices and sizes may enter it). The `scf.if`
  carries the note `tilec.split_mask = "prefix"` / `"suffix"` (read by no pass: for the
  reader of the IR).
Fails: never; a parallel whose conditions are not of that form is left alone.

Why the parallel and not the loop: tile-warp-specialize and tile-pipeline build their
schedule (a TMA producer, cp.async stages) around one `T.Pipelined` loop; splitting it
into two loops would cost a second pipeline prologue and drain (and tile-warp-specialize
takes one loop only). Versioning the masked statement keeps one loop whose structure those
passes see unchanged, at one uniform branch per iteration.

Causal attention (`bx * 64 + i >= k * 64 + j`, i, j < 64) holds everywhere for
`k <= (64 bx - 63) / 64`:
    tile.for %k ... { tile.parallel (%i, %j) in [64, 64] { ... select %c, 0, -inf ... } ... }
  becomes
    %split = (64 bx - 63) floordiv 64 + 1
    tile.for %k ... { scf.if (k < %split) { tile.fill %s, 0 } else { tile.parallel ... } ... }
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.dialects import tile
from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, ModuleOp, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from .analysis import affine_form, value_range
from .loop_stages import Builder

__all__ = ["TileSplitMasksPass"]

INDEX = IndexType()

_GE_FORM = {"sge": (1, 0), "sgt": (1, -1), "sle": (-1, 0), "slt": (-1, -1)}
"""cmpi predicate → (sign, offset): `lhs P rhs` iff `sign * (lhs - rhs) + offset >= 0`."""


@dataclass(frozen=True)
class _Bound:
    """`coeff * k + const + sum(invariant * c) >= 0` at every index of the parallel."""

    coeff: int  # of the induction variable, never 0
    const: int  # with the parallel indices at their worst
    invariant: tuple[tuple[SSAValue, int], ...]  # loop-invariant leaves and their coefficients

    @property
    def prefix(self) -> bool:
        return self.coeff < 0


def _defined_outside(value: SSAValue, loop: tile.ForOp) -> bool:
    owner = value.block.parent_op() if isinstance(value, BlockArgument) else value.owner
    return owner is not None and not loop.is_ancestor(owner)


def _bound(cmp: arith.CmpiOp, loop: tile.ForOp, par: tile.ParallelOp) -> _Bound | None:
    """The worst case over `par`'s indices of a comparison, as a bound on the loop's k."""
    form = _GE_FORM.get(arith.CMPI_COMPARISON_OPERATIONS[cmp.predicate.value.data])
    lhs, rhs = affine_form(cmp.lhs), affine_form(cmp.rhs)
    if form is None or lhs is None or rhs is None:
        return None
    sign, offset = form
    const = sign * (lhs[0] - rhs[0]) + offset
    coeffs: dict[SSAValue, int] = {}
    for side, s in ((lhs[1], sign), (rhs[1], -sign)):
        for leaf, c in side.items():
            coeffs[leaf] = coeffs.get(leaf, 0) + s * c
    coeff = coeffs.pop(loop.induction_var, 0)
    if coeff == 0:
        return None
    invariant = []
    for leaf, c in coeffs.items():
        if c == 0:
            continue
        if isinstance(leaf, BlockArgument) and leaf.block is par.body.block:
            const += min(0, c * (par.shape[leaf.index] - 1))  # the index that makes the sum smallest
        elif _defined_outside(leaf, loop):
            invariant.append((leaf, c))
        else:
            return None  # computed inside the loop: no split point before it
    return _Bound(coeff, const, tuple(invariant))


def _bounds(cond: SSAValue, loop: tile.ForOp, par: tile.ParallelOp) -> list[_Bound] | None:
    """The bounds whose conjunction makes `cond` true at every index of `par` (None: unknown)."""
    op = cond.owner
    if isinstance(op, arith.CmpiOp):
        b = _bound(op, loop, par)
        return [b] if b is not None else None
    if isinstance(op, arith.AndIOp):
        lhs, rhs = _bounds(op.lhs, loop, par), _bounds(op.rhs, loop, par)
        return lhs + rhs if lhs is not None and rhs is not None else None
    return None


def _masks(par: tile.ParallelOp) -> list[SSAValue]:
    """The conditions of the selects and ifs in `par`, first use first, each once."""
    conds = [op.cond for op in par.body.walk() if isinstance(op, arith.SelectOp | scf.IfOp)]
    return list(dict.fromkeys(conds))


def _split_point(b: Builder, bound: _Bound) -> SSAValue:
    """The first k the bound fails at (a prefix) or holds from (a suffix)."""
    if not bound.invariant:
        n = bound.const // -bound.coeff + 1 if bound.prefix else -(bound.const // bound.coeff)
        return b.index(n)
    total = b.index(bound.const)
    for leaf, c in bound.invariant:
        term = leaf if isinstance(leaf.type, IndexType) else b.add(arith.IndexCastOp(leaf, INDEX))
        total = b.add(arith.AddiOp(total, b.add(arith.MuliOp(term, b.index(c))) if c != 1 else term))
    if bound.prefix:  # -coeff * k <= total  iff  k <= floor(total / -coeff)
        return b.add(arith.AddiOp(b.add(arith.FloorDivSIOp(total, b.index(-bound.coeff))), b.index(1)))
    return b.add(arith.CeilDivSIOp(b.add(arith.SubiOp(b.index(0), total)), b.index(bound.coeff)))


def _holds(loop: tile.ForOp, bound: _Bound, split: SSAValue) -> bool | None:
    """Whether the bound holds in every iteration (True), in none (False), or depends on k (None)."""
    k, at = value_range(loop.induction_var), value_range(split)
    if k is None or at is None:
        return None
    lo, hi = k
    if bound.prefix:
        return True if at[0] > hi else False if at[1] <= lo else None
    return True if at[1] <= lo else False if at[0] > hi else None


def _assume_true(par: tile.ParallelOp, cond: SSAValue) -> None:
    """In `par` (a copy), selects on `cond` take their true operand and ifs their then-region."""
    for op in [o for o in par.body.walk() if isinstance(o, arith.SelectOp | scf.IfOp) and o.cond is cond]:
        if isinstance(op, arith.SelectOp):
            op.result.replace_all_uses_with(op.lhs)
            Rewriter.erase_op(op)
            continue
        then = op.true_region.block
        Rewriter.erase_op(then.last_op)  # its scf.yield (no results: the CUDA target has none)
        Rewriter.inline_block(then, InsertPoint.before(op))
        Rewriter.erase_op(op)
    _erase_dead(par.body.block)


def _erase_dead(block: Block) -> None:
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.walk())):
            if op.dialect_name() == "arith" and not op.regions and not any(r.uses for r in op.results):
                Rewriter.erase_op(op)
                changed = True


def _as_fill(par: tile.ParallelOp) -> list[Operation] | None:
    """`tile.fill` for a parallel that only stores one invariant value to all of a buffer, in index order."""
    ops = [op for op in par.body.block.ops if not isinstance(op, tile.YieldOp)]
    store = ops[-1] if ops else None
    if not isinstance(store, tile.StoreOp) or list(store.indices) != list(par.body.block.args):
        return None
    if tuple(store.dest.type.shape) != par.shape or any(op is not store and not _is_constant(op) for op in ops):
        return None
    value = store.value
    if isinstance(value.owner, Operation) and value.owner.parent_op() is par:
        if not _is_constant(value.owner):
            return None
        value = value.owner.clone().results[0]
        return [value.owner, tile.FillOp(store.dest, value)]
    return [tile.FillOp(store.dest, value)]


def _is_constant(op: Operation) -> bool:
    return isinstance(op, arith.ConstantOp)


def _unmasked(par: tile.ParallelOp, cond: SSAValue) -> list[Operation]:
    """A copy of `par` with `cond` true: a tile.fill where that leaves a constant stored everywhere."""
    mapping: dict[SSAValue, SSAValue] = {}
    fast = par.clone(value_mapper=mapping)
    _assume_true(fast, mapping.get(cond, cond))
    fill = _as_fill(fast)
    if fill is None:
        return [fast]
    fast.erase()
    return fill


def _version(loop: tile.ForOp, par: tile.ParallelOp, cond: SSAValue, bounds: list[_Bound]) -> bool:
    """Guards an unmasked copy of `par` by the bounds; False (nothing changed) when one never holds."""
    before, guards, kinds = [], [], set()
    for bound in bounds:
        b = Builder()
        split = _split_point(b, bound)
        holds = _holds(loop, bound, split)
        if holds is False:
            return False
        if holds is None:
            before += b.ops
            guards.append((split, bound.prefix))
            kinds.add(bound.prefix)
    fast = _unmasked(par, cond)
    for op in fast:
        op.location = par.location
    if not guards:  # unmasked in every iteration: the mask goes
        fast[-1].attributes["tilec.split_mask"] = StringAttr("every iteration")
        Rewriter.insert_op(fast, InsertPoint.before(par))
        Rewriter.erase_op(par)
        return True
    head = Builder()
    conds = [head.add(arith.CmpiOp(loop.induction_var, split, "slt" if prefix else "sge")) for split, prefix in guards]
    uniform = conds[0]
    for c in conds[1:]:
        uniform = head.add(arith.AndIOp(uniform, c))
    Rewriter.insert_op(before, InsertPoint.before(loop))
    Rewriter.insert_op(head.ops, InsertPoint.before(par))
    branch = scf.IfOp(uniform, [], Region(Block([*fast, scf.YieldOp()])), Region(Block()))
    branch.attributes["tilec.split_mask"] = StringAttr(
        "prefix" if kinds == {True} else "suffix" if kinds == {False} else "prefix and suffix")
    branch.location = par.location
    Rewriter.insert_op(branch, InsertPoint.before(par))
    par.detach()
    branch.false_region.block.add_ops([par, scf.YieldOp()])
    return True


def _split(loop: tile.ForOp) -> None:
    for par in [op for op in loop.body.block.ops if isinstance(op, tile.ParallelOp)]:
        for cond in _masks(par):
            bounds = _bounds(cond, loop, par)
            if bounds is not None and _version(loop, par, cond, bounds):
                break


@dataclass(frozen=True)
class TileSplitMasksPass(ModulePass):
    """Split a loop's masked `tile.parallel` at the iteration where its mask becomes uniformly true."""

    name = "tile-split-masks"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in [o for o in op.walk() if isinstance(o, tile.ForOp)]:
            _split(loop)
