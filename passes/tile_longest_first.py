"""Launch the blocks that loop longest first.

Requires: nothing (runs on the frontend's tile IR; any later pass keeps the property).
Establishes: `launch_reversed = array<i64: d>` on a `tile.kernel` when the trip count of one of
  its `tile.for` loops grows with the block index along grid dim d (and no loop's shrinks with
  it): the lowering then numbers the blocks along d from the last, `(grid_d - 1) - blockIdx.d`.
  Each block computes what it did; only the order in which the hardware starts them changes.
Fails: never. Left alone: kernels with a `tile.atomic` on a global tensor (blocks that may wait on each other through
  memory assume the hardware's order), kernels of clusters, kernels with `T.use_swizzle` (an
  order the author chose), and loops whose bounds are not monotone in the block index.

Why: the hardware starts blocks in index order as multiprocessors free up. Causal attention's
block bx walks min(n, ceil((bx + 1) M / N)) key blocks, so in index order the longest blocks of
the last heads start last and run alone at the end of the grid. Longest first (the LPT rule,
FlashAttention-3's causal scheduler) ends the grid on the shortest ones.

    tile.kernel (%bx, %by) in (%c64, %c16) threads [256, 1, 1] {
      %n = arith.minsi %c64, %bx1 : index            // %bx1 = ceildiv((%bx + 1) * 128, 128)
      tile.for %k = %c0 to %n step %c1 { ... }
    }
  becomes
    tile.kernel (%bx, %by) in (%c64, %c16) threads [256, 1, 1] { ... } {launch_reversed = array<i64: 0>}
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.dialects import tile
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i64
from xdsl.ir import BlockArgument, SSAValue
from xdsl.passes import ModulePass

from .analysis import affine_form, constant_value

__all__ = ["TileLongestFirstPass", "growth"]

_MONOTONE = (arith.MinSIOp, arith.MaxSIOp, arith.MinUIOp, arith.MaxUIOp)
_DIVIDE = (arith.DivSIOp, arith.DivUIOp, arith.FloorDivSIOp, arith.CeilDivSIOp, arith.CeilDivUIOp)


def _both(a: int | None, b: int | None) -> int | None:
    """The direction of a function increasing in two arguments moving in directions a and b."""
    if a is None or b is None:
        return None
    if a == 0 or a == b:
        return b
    return a if b == 0 else None


def _scaled(g: int | None, k: int) -> int | None:
    """The direction of `k * x` for x moving in direction g (k != 0)."""
    return None if g is None else (g if k > 0 else -g)


def growth(value: SSAValue, index: BlockArgument, depth: int = 0) -> int | None:
    """How `value` moves as `index` grows with everything else fixed: 1 never down, -1 never up,
    0 independent of it, None unknown. Sums, differences and multiples are read through
    `affine_form`; min / max and divisions by a positive constant keep their operands' direction."""
    if value is index:
        return 1
    if depth > 32:
        return None
    form = affine_form(value)
    if form is not None and form[1] != {value: 1}:  # const + sum(k * leaf)
        moves = 0
        for leaf, k in form[1].items():
            moves = _both(moves, _scaled(growth(leaf, index, depth + 1), k))
        return moves
    if isinstance(value, BlockArgument):  # another block index or a kernel parameter: 0; a loop's index: unknown
        return 0 if value.block is index.block or not _inside(value, index) else None
    op = value.owner
    if isinstance(op, _MONOTONE):
        return _both(growth(op.lhs, index, depth + 1), growth(op.rhs, index, depth + 1))
    if isinstance(op, _DIVIDE):
        c = constant_value(op.rhs)
        if c is not None and c > 0:
            return growth(op.lhs, index, depth + 1)
    if all(growth(v, index, depth + 1) == 0 for v in op.operands) and not op.regions:
        return 0  # e.g. tile.dim, or arithmetic on other block indices
    return None


def _inside(arg: BlockArgument, index: BlockArgument) -> bool:
    """Whether `arg` belongs to a block nested in the kernel of `index` (a loop or parallel index,
    which may run with the block index)."""
    op = arg.block.parent_op()
    kernel = index.block.parent_op()
    while op is not None and op is not kernel:
        op = op.parent_op()
    return op is kernel


def longest_first_dims(kernel: tile.KernelOp) -> list[int]:
    """The grid dims along which some loop's trip count grows with the block index and none shrinks."""
    if kernel.cluster is not None or kernel.launch_reversed is not None:
        return []
    ops = list(kernel.walk())
    if any(isinstance(op, tile.UseSwizzleOp) or isinstance(op, tile.AtomicOp) and isinstance(op.dst.type, tile.TensorType)
           for op in ops):
        return []
    loops = [op for op in ops if isinstance(op, tile.ForOp)]
    dims = []
    for d, index in enumerate(kernel.body.block.args):
        moves = set()
        for loop in loops:
            moves.add(_both(growth(loop.ub, index), _scaled(growth(loop.lb, index), -1)))
        if 1 in moves and -1 not in moves and constant_value(kernel.grid[d]) != 1:
            dims.append(d)
    return dims


@dataclass(frozen=True)
class TileLongestFirstPass(ModulePass):
    """Launch the blocks that loop longest first (`launch_reversed` on the kernel)."""

    name = "tile-longest-first"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            dims = longest_first_dims(kernel)
            if dims:
                kernel.launch_reversed = DenseArrayBase.from_list(i64, dims)
