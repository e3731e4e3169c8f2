"""The `T.Parallel` lane model: code is lowered for a list of *lanes*. `None` means uniform
code (run once by every thread); otherwise each lane is one slot of a parallel loop's layout,
with its own value map. Lanes of one vector group run in lockstep: their memory accesses merge
into vector accesses and a condition that is the same for the whole group stays one branch.

This module holds the model and the per-lane analysis of tile-level index expressions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import BlockArgument, Operation, SSAValue


from tilec.passes.analysis import constant_value
from tilec.dialects import tile
from tilec.dialects.tile.layout import Layout

from .context import Lowerer, SlotMap


@dataclass
class Lanes:
    """The lanes a parallel loop body is being lowered for."""

    maps: list[SlotMap]
    slots: list[int]
    layout: Layout
    ivs: dict  # tile-level induction var → loop dim
    leader: SSAValue | None  # replica leader predicate for stores to memory


def lane_maps(L: Lowerer, lanes: Lanes | None):
    return [L.vmap] if lanes is None else lanes.maps


def lane_coef(value: SSAValue, iv: SSAValue) -> int | None:
    """d(value)/d(iv) when value is affine in iv with an integer slope, else None (0: independent)."""
    if value is iv:
        return 1
    op = value.owner
    if isinstance(op, arith.AddiOp | arith.SubiOp):
        a, b = lane_coef(op.lhs, iv), lane_coef(op.rhs, iv)
        if a is None or b is None:
            return None
        return a + b if isinstance(op, arith.AddiOp) else a - b
    if isinstance(op, arith.MuliOp):
        a, b = lane_coef(op.lhs, iv), lane_coef(op.rhs, iv)
        if a == 0 and b == 0:
            return 0
        const = constant_value(op.rhs if a else op.lhs)
        return None if const is None or (a and b) else (a or b) * const
    if isinstance(op, arith.IndexCastOp):
        return lane_coef(op.input, iv)
    if depends_on(value, iv):
        return None
    return 0


def depends_on(value: SSAValue, iv: SSAValue, depth: int = 0) -> bool:
    """Whether `value` may differ between the iterations of the loop of `iv`: it is computed from
    `iv`, or from a buffer allocated inside that loop (each iteration's own T.alloc_var)."""
    if value is iv:
        return True
    op = value.owner
    if not isinstance(op, Operation) or depth > 64:
        return False
    if isinstance(op, tile.LoadOp) and _allocated_in_loop(op.source, iv):
        return True
    return any(depends_on(o, iv, depth + 1) for o in op.operands)


def _allocated_in_loop(buffer: SSAValue, iv: SSAValue) -> bool:
    alloc = buffer.owner
    loop = iv.owner.parent_op() if isinstance(iv, BlockArgument) else None
    return isinstance(alloc, tile.AllocOp) and loop is not None and loop.is_ancestor(alloc)


def tile_mult(L: Lowerer, value: SSAValue, lane: SlotMap) -> int:
    """A number the lane's value of tile-level `value` is known to be a multiple of."""
    c = constant_value(value)
    if c is not None:
        return abs(c)
    op = value.owner
    if isinstance(op, arith.AddiOp | arith.SubiOp):
        return math.gcd(tile_mult(L, op.lhs, lane), tile_mult(L, op.rhs, lane))
    if isinstance(op, arith.MuliOp):
        return tile_mult(L, op.lhs, lane) * tile_mult(L, op.rhs, lane)
    mapped = lane.get(value)
    return L.mult(mapped) if mapped is not None else 1


def vector_iv(lanes: Lanes) -> SSAValue | None:
    last = len(lanes.layout.dims) - 1
    return next((iv for iv, d in lanes.ivs.items() if d == last), None)


def group_uniform(L: Lowerer, cond: SSAValue, lanes: Lanes) -> bool:
    """Whether `cond` has the same value on every lane of the group."""
    if len(lanes.maps) == 1:
        return True
    iv = vector_iv(lanes)
    if iv is None or not depends_on(cond, iv):
        return True
    op = cond.owner
    if isinstance(op, arith.AndIOp | arith.OrIOp):  # a range test: both ends uniform over the group
        return group_uniform(L, op.lhs, lanes) and group_uniform(L, op.rhs, lanes)
    if not isinstance(op, arith.CmpiOp):
        return False
    pred = op.predicate.value.data  # eq ne slt sle sgt sge ult ule ugt uge
    a, b = lane_coef(op.lhs, iv), lane_coef(op.rhs, iv)
    width = len(lanes.maps)
    lead = {(1, 0): (2, 5, 6, 9), (0, 1): (3, 4, 7, 8)}  # x < n, x >= n / n > x, n <= x
    if (a, b) not in lead or pred not in lead[(a, b)]:
        return False
    m = math.gcd(tile_mult(L, op.lhs, lanes.maps[0]), tile_mult(L, op.rhs, lanes.maps[0]))
    return m % width == 0
