"""T.Parallel loops that index a fragment at a shifted loop variable, rotated so they index it
at the variable itself (a tile-infer-layout helper, before inference).

A loop that reads rows `s * 16` on of a 32-row fragment (`F[i + s * 16, j]` in
`T.Parallel(32, n)`, guarded by `i < 16`: TileLang's split stores of an accumulator) indexes F
at another row than the loop variable, so the thread that runs iteration `i` is not the one
holding the element, and the access would go through a shared copy of the whole fragment
(fragment_conversions.py). Renumbering the iterations by `i' = i + c` (mod the extent n) makes
the access `F[i', j]`, which F's layout serves from registers; every other use of `i` becomes
`(i' - c) mod n`. The loop still runs each iteration once (a rotation is a bijection of
[0, n)), and each access reads the same element wherever the original index was inside F (an
index past F's end, never executed behind a guard, is out of bounds as written).

Rotated: a loop dimension `k` where every fragment access that uses `i_k` indexes a dimension
of the loop's extent with `i_k + c`, one shift `c` for all of them (a constant other than 0, or
a value defined outside the loop). A loop where any fragment access uses `i_k` otherwise is
left as it is.

    tile.parallel (%i, %j) in [32, 64] { scf.if (%i < 16) { %v = tile.load %f[%i + %c, %j] ... } }
  becomes
    tile.parallel (%r, %j) in [32, 64] { %i = (%r + 32 - %c mod 32) mod 32
                                         scf.if (%i < 16) { %v = tile.load %f[%r, %j] ... } }
"""

from __future__ import annotations

from tilec.dialects import tile
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from .analysis import constant_value
from .fragment_conversions import fragment_view, is_fragment_alloc, located

__all__ = ["rotate_shifted_accesses"]


_PURE = (arith.ConstantOp, arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.DivUIOp, arith.DivSIOp, arith.RemUIOp,
         arith.RemSIOp, arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp, arith.ShLIOp)


def _inside(value: SSAValue, loop: tile.ParallelOp) -> bool:
    owner = value.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    return op is not None and loop.is_ancestor(op)


def _invariant(value: SSAValue, loop: tile.ParallelOp, depth: int = 0) -> bool:
    """Whether `value` is the same in every iteration: defined outside the loop, or integer arithmetic
    on such values (the frontend's constants sit where they are used)."""
    if not _inside(value, loop):
        return True
    op = value.owner
    return isinstance(op, _PURE) and depth < 16 and all(_invariant(v, loop, depth + 1) for v in op.operands)


def _hoisted(value: SSAValue, loop: tile.ParallelOp, ops: list, done: dict) -> SSAValue:
    """`value` computed before the loop's body runs (an invariant one, cloned into `ops` where it is inside)."""
    if not _inside(value, loop):
        return value
    if value not in done:
        op = value.owner
        operands = [_hoisted(v, loop, ops, done) for v in op.operands]
        clone = op.clone()
        for i, v in enumerate(operands):
            clone.operands[i] = v
        ops.append(clone)
        done[value] = clone.results[0]
    return done[value]


def _shift(index: SSAValue, iv: SSAValue, loop: tile.ParallelOp):
    """`c` where `index` is `iv + c` with `c` fixed over the loop (None: another form)."""
    op = index.owner
    if not isinstance(op, arith.AddiOp):
        return None
    for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if a is iv and b is not iv and _invariant(b, loop):
            return b
    return None


def _same(a: SSAValue, b: SSAValue) -> bool:
    """Whether two invariant shifts are the same value: one SSA value, equal constants, or the same
    arithmetic on the same values."""
    if a is b:
        return True
    ca, cb = constant_value(a), constant_value(b)
    if ca is not None or cb is not None:
        return ca == cb
    x, y = a.owner, b.owner  # (arithmetic only: two loads of one address may read different values)
    return (isinstance(x, _PURE) and type(x) is type(y) and len(x.operands) == len(y.operands)
            and x.properties == y.properties and all(_same(u, v) for u, v in zip(x.operands, y.operands)))


def _uses_iv(index: SSAValue, iv: SSAValue, seen: set | None = None) -> bool:
    seen = set() if seen is None else seen
    if index is iv:
        return True
    op = index.owner
    if not isinstance(op, Operation) or op in seen:
        return False
    seen.add(op)
    return any(_uses_iv(v, iv, seen) for v in op.operands)


def _plan(loop: tile.ParallelOp, k: int):
    """The shift of loop dim `k` and the (access, operand index) pairs it applies to, or None."""
    iv, extent = loop.body.block.args[k], loop.shape[k]
    shift, sites = None, []
    for op in loop.body.walk():
        if not isinstance(op, tile.LoadOp | tile.StoreOp):
            continue
        buf = op.source if isinstance(op, tile.LoadOp) else op.dest
        if not is_fragment_alloc(buf) and fragment_view(buf) is None:  # (a view follows its fragment's layout)
            continue
        first = len(op.operands) - len(op.indices)  # the indices come last
        for d, index in enumerate(op.indices):
            if not _uses_iv(index, iv):
                continue
            c = _shift(index, iv, loop)
            if c is None or buf.type.shape[d] != extent or (shift is not None and not _same(c, shift)):
                return None
            shift = c
            sites.append((op, first + d))
    if shift is None or constant_value(shift) == 0:
        return None
    return shift, sites


def _rotate(loop: tile.ParallelOp, k: int, shift: SSAValue, sites) -> None:
    iv, extent = loop.body.block.args[k], loop.shape[k]
    ops: list[Operation] = []
    shift = _hoisted(shift, loop, ops, {})
    n = arith.ConstantOp.from_int_and_width(extent, IndexType())
    c_mod = arith.RemSIOp(shift, n)  # c mod n, in (-n, n)
    c_pos = arith.AddiOp(c_mod, n)
    c_norm = arith.RemUIOp(c_pos, n)  # c mod n, in [0, n)
    back = arith.SubiOp(n, c_norm)  # n - c mod n, in (0, n]
    moved = arith.AddiOp(iv, back)
    original = arith.RemUIOp(moved, n)  # the original iteration: (i' - c) mod n
    ops += [n, c_mod, c_pos, c_norm, back, moved, original]
    block = loop.body.block
    Rewriter.insert_op(located(ops, loop), InsertPoint.at_start(block))
    for op, operand in sites:
        op.operands[operand] = iv
    mine = set(ops)
    site_set = {(op, operand) for op, operand in sites}
    iv.replace_uses_with_if(original.result, lambda use: use.operation not in mine
                            and (use.operation, use.index) not in site_set)


def rotate_shifted_accesses(kernel: tile.KernelOp) -> None:
    for loop in [op for op in kernel.walk() if isinstance(op, tile.ParallelOp)]:
        for k in range(len(loop.shape)):
            plan = _plan(loop, k)
            if plan is not None:
                _rotate(loop, k, *plan)
