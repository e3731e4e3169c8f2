"""Integer analyses of index values in tile IR: affine forms, ranges, alignment.

Shared by `tile-legalize-bounds` (which proves accesses in bounds) and the
lowering (which needs alignment to vectorize).  All three functions look
through `arith` integer ops and read loop / grid bounds; none changes the IR.

    %r = arith.muli %by, %c128 : index      // by: block index of a grid of 2
    %o = arith.addi %r, %c32 : index
    affine_form(%o)    == (32, {%by: 128})
    value_range(%o)    == (32, 160)
    known_multiple(%o) == 32

Values are mathematical integers: wrap-around of narrow integer types is not
modelled (tile IR indices are `index`, and i32 indices of real kernels do not
overflow).
"""

from __future__ import annotations

import math

from tilec.dialects import tile
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType
from xdsl.ir import BlockArgument, Operation, SSAValue

AffineForm = tuple[int, dict[SSAValue, int]]
"""`const + sum(coeff * leaf)`: the constant and each leaf's coefficient (never 0)."""

Range = tuple[int, int]
"""An inclusive interval `[lo, hi]` of integers."""

_CASTS = (arith.IndexCastOp, arith.ExtSIOp)


def constant_value(value: SSAValue) -> int | None:
    """The integer of an `arith.constant`, or None."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def affine_form(value: SSAValue) -> AffineForm | None:
    """`value` as `const + sum(coeff * leaf)` over integers; None if it is not an integer.

    Looks through arith.constant / addi / subi / index_cast / extsi, muli and
    shli by a constant.  Any other value is a leaf of coefficient 1: a block
    index (`tile.kernel` body argument), a loop induction variable, or an
    opaque result (`arith.minsi`, `tile.dim`, ...), whose range
    `value_range` still tries to bound.
    """
    if not isinstance(value.type, IndexType | IntegerType):
        return None
    op = value.owner
    c = constant_value(value)
    if c is not None:
        return c, {}
    if isinstance(op, arith.AddiOp | arith.SubiOp):
        lhs, rhs = affine_form(op.lhs), affine_form(op.rhs)
        if lhs is not None and rhs is not None:
            sign = 1 if isinstance(op, arith.AddiOp) else -1
            return _combine(lhs, rhs, sign)
    if isinstance(op, arith.MuliOp):
        lhs, rhs = affine_form(op.lhs), affine_form(op.rhs)
        if lhs is not None and rhs is not None and not rhs[1]:
            return _scale(lhs, rhs[0])
        if lhs is not None and rhs is not None and not lhs[1]:
            return _scale(rhs, lhs[0])
    if isinstance(op, arith.ShLIOp):
        lhs, shift = affine_form(op.lhs), constant_value(op.rhs)
        if lhs is not None and shift is not None and 0 <= shift < 64:
            return _scale(lhs, 1 << shift)
    if isinstance(op, _CASTS) and isinstance(op.input.type, IndexType | IntegerType):
        return affine_form(op.input)
    return 0, {value: 1}


def _combine(a: AffineForm, b: AffineForm, sign: int) -> AffineForm:
    coeffs = dict(a[1])
    for leaf, k in b[1].items():
        coeffs[leaf] = coeffs.get(leaf, 0) + sign * k
    return a[0] + sign * b[0], {v: k for v, k in coeffs.items() if k != 0}


def _scale(a: AffineForm, k: int) -> AffineForm:
    if k == 0:
        return 0, {}
    return a[0] * k, {v: c * k for v, c in a[1].items()}


def value_range(value: SSAValue) -> Range | None:
    """An interval holding every run-time value of `value`, or None if unbounded.

    The affine form's constant plus each leaf's range times its coefficient.
    Leaf ranges: a `tile.kernel` block index is [0, grid - 1], a
    `tile.parallel` index [0, extent - 1], a `tile.for` induction variable
    [lb, last iteration] (constant step > 0, bounds with known ranges), a
    `tile.thread_id` [0, threads - 1]; min / max / div / rem / select / muli
    of bounded values are bounded by interval arithmetic.  Leaves are treated
    as independent, so the interval may be wider than the true one, never
    narrower.
    """
    form = affine_form(value)
    if form is None:
        return None
    const, coeffs = form
    lo = hi = const
    for leaf, k in coeffs.items():
        r = _leaf_range(leaf)
        if r is None:
            return None
        lo, hi = lo + min(k * r[0], k * r[1]), hi + max(k * r[0], k * r[1])
    return lo, hi


def _leaf_range(leaf: SSAValue) -> Range | None:
    if isinstance(leaf, BlockArgument):
        return _block_arg_range(leaf)
    op = leaf.owner
    if isinstance(op, tile.ThreadIdOp):
        kernel = tile.enclosing_kernel(op)
        return (0, kernel.thread_extents[op.dim.value.data] - 1) if kernel else None
    if isinstance(op, arith.SelectOp):
        return _hull(value_range(op.lhs), value_range(op.rhs))
    if not isinstance(op, arith.SignlessIntegerBinaryOperation):
        return None
    a, b = value_range(op.lhs), value_range(op.rhs)
    if a is None or b is None:
        return None
    return _binary_range(op, a, b)


def _binary_range(op: Operation, a: Range, b: Range) -> Range | None:
    if isinstance(op, arith.MinSIOp):
        return min(a[0], b[0]), min(a[1], b[1])
    if isinstance(op, arith.MaxSIOp):
        return max(a[0], b[0]), max(a[1], b[1])
    if isinstance(op, arith.MuliOp):
        corners = [x * y for x in a for y in b]
        return min(corners), max(corners)
    if b[0] <= 0:
        return None  # division / remainder only by a positive divisor
    if isinstance(op, arith.FloorDivSIOp | arith.DivSIOp) and a[0] >= 0:
        return a[0] // b[1], a[1] // b[0]
    if isinstance(op, arith.FloorDivSIOp):
        return min(a[0] // b[0], a[0] // b[1]), max(a[1] // b[0], a[1] // b[1])
    if isinstance(op, arith.CeilDivSIOp):
        return min(-(-a[0] // b[0]), -(-a[0] // b[1])), max(
            -(-a[1] // b[0]), -(-a[1] // b[1])
        )
    if isinstance(op, arith.RemSIOp | arith.RemUIOp) and a[0] >= 0:
        return 0, min(a[1], b[1] - 1)
    return None


def _hull(a: Range | None, b: Range | None) -> Range | None:
    if a is None or b is None:
        return None
    return min(a[0], b[0]), max(a[1], b[1])


def _block_arg_range(arg: BlockArgument) -> Range | None:
    owner = arg.block.parent_op()
    if isinstance(owner, tile.KernelOp):
        grid = value_range(owner.grid[arg.index])
        return (0, grid[1] - 1) if grid is not None and grid[1] >= 1 else None
    if isinstance(owner, tile.ParallelOp):
        return 0, owner.shape[arg.index] - 1
    if isinstance(owner, tile.PersistentOp) and arg.index < len(owner.grid):  # a tile's index, as a block's
        grid = value_range(owner.grid[arg.index])
        return (0, grid[1] - 1) if grid is not None and grid[1] >= 1 else None
    if isinstance(owner, tile.ForOp):
        return _loop_range(owner)
    return None


def surely_runs(loop: tile.ForOp) -> bool:
    """Whether `loop` runs at least one iteration whatever the run-time values: its start is
    below its end in every case `value_range` allows."""
    lb, ub = value_range(loop.lb), value_range(loop.ub)
    return lb is not None and ub is not None and lb[1] < ub[0]


def _loop_range(loop: tile.ForOp) -> Range | None:
    lb, ub, step = value_range(loop.lb), value_range(loop.ub), constant_value(loop.step)
    if lb is None or ub is None or step is None or step <= 0:
        return None
    last = ub[1] - 1
    if lb[0] == lb[1]:  # a constant start: the last iteration is on the step grid
        last = lb[0] + (ub[1] - 1 - lb[0]) // step * step
    # An empty loop never runs its body; None keeps its accesses unproven.
    return (lb[0], last) if last >= lb[0] else None


def known_multiple(value: SSAValue) -> int:
    """The largest k known to divide `value` at run time (1 if nothing is known).

    The gcd of the affine form's constant and of each coefficient times its
    leaf's own known multiple (a `tile.for` induction variable with constant
    lb and step is a multiple of gcd(lb, step)).  The constant 0 gives 0, a
    multiple of everything, so test alignment as `known_multiple(v) % n == 0`.
    """
    form = affine_form(value)
    if form is None:
        return 1
    const, coeffs = form
    g = abs(const)
    for leaf, k in coeffs.items():
        g = math.gcd(g, k * _leaf_multiple(leaf))
    return g


def _leaf_multiple(leaf: SSAValue) -> int:
    if isinstance(leaf, BlockArgument):
        loop = leaf.block.parent_op()
        if isinstance(loop, tile.ForOp):
            lb, step = constant_value(loop.lb), constant_value(loop.step)
            if lb is not None and step is not None:
                return math.gcd(lb, step) or 1
        return 1
    op = leaf.owner
    if isinstance(op, arith.MuliOp):
        return known_multiple(op.lhs) * known_multiple(op.rhs) or 1
    return 1


def computed_from(value: SSAValue, kinds: type[Operation] | tuple[type[Operation], ...], depth: int = 0) -> bool:
    """Whether `value` is computed from a result of an op of `kinds` through ops' operands (not
    through memory or block arguments; chains deeper than 64 ops count as not)."""
    op = value.owner
    if not isinstance(op, Operation) or depth > 64:
        return False
    return isinstance(op, kinds) or any(computed_from(v, kinds, depth + 1) for v in op.operands)


def root_alloc(value: SSAValue) -> tile.AllocOp | None:
    """The `tile.alloc` a buffer value comes from, through regions, reshapes and stages."""
    op = value.owner
    while isinstance(op, tile.RegionOp | tile.ReshapeOp | tile.StageOp):
        op = op.source.owner
    return op if isinstance(op, tile.AllocOp) else None
