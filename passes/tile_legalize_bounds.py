"""Mark the global-memory accesses proven to stay inside their tensor.

Requires: nothing (runs on the frontend's tile IR).
Establishes: `in_bounds` (a unit property) on each `tile.region` of a global
  tensor, and each `tile.load` / `tile.store` / indexed `tile.atomic` /
  `tile.cp_async` on one, whose every element lies inside the tensor's static
  shape.  Unmarked ones keep the semantics of `dialects/tile.py` (out-of-range
  elements are neither read nor written): the lowering predicates them
  ("predicated tails").
Fails: never; what it cannot prove stays unmarked.

Proof, per dimension d: the offset (or index) has a range [lo, hi] from
`analysis.value_range` (block indices, loop and parallel variables with
constant bounds); the access is in bounds iff the dimension is static,
lo >= 0 and hi + extent <= dim.  An element access is also bounded by the
`scf.if` conditions around it (`arith.cmpi slt %idx, %n` and friends, joined
by `arith.andi`).  A region or access of a region result must also have its
source in bounds.

    %r = arith.muli %by, %c128 : index                  // by in [0, 1]
    %a = tile.region %A[%r, %c0] : !tile.tensor<256x32xf16> -> !tile.tensor<128x32xf16>
  becomes
    %a = tile.region %A[%r, %c0] {in_bounds} : !tile.tensor<256x32xf16> -> ...
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tilec.dialects import tile
from tilec.passes.analysis import value_range
from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

Facts = dict[SSAValue, tuple[int | None, int | None]]
"""Ranges that the enclosing `scf.if` conditions impose on particular values."""

# cmpi predicate -> (says lhs < rhs, strict, unsigned); the "g" forms say rhs < lhs.
_LESS = {
    "slt": (True, True, False),
    "sle": (True, False, False),
    "ult": (True, True, True),
    "ule": (True, False, True),
    "sgt": (False, True, False),
    "sge": (False, False, False),
    "ugt": (False, True, True),
    "uge": (False, False, True),
}
_NEGATE = {"slt": "sge", "sle": "sgt", "ult": "uge", "ule": "ugt"}
_NEGATE |= {v: k for k, v in _NEGATE.items()}


def _global_shape(value: SSAValue) -> tuple[int, ...] | None:
    typ = value.type
    return typ.shape if isinstance(typ, tile.TensorType) else None


def _conjuncts(cond: SSAValue) -> list[SSAValue]:
    if isinstance(cond.owner, arith.AndIOp):
        return _conjuncts(cond.owner.lhs) + _conjuncts(cond.owner.rhs)
    return [cond]


def _add_fact(facts: Facts, value: SSAValue, lo: int | None, hi: int | None) -> None:
    old_lo, old_hi = facts.get(value, (None, None))
    facts[value] = (_tighter(old_lo, lo, max), _tighter(old_hi, hi, min))


def _tighter(a: int | None, b: int | None, pick) -> int | None:
    return b if a is None else a if b is None else pick(a, b)


def _learn(facts: Facts, cmp: arith.CmpiOp, negate: bool) -> None:
    """Adds what `cmp` (or its negation) being true says about its operands."""
    pred = arith.CMPI_COMPARISON_OPERATIONS[cmp.predicate.value.data]
    pred = _NEGATE.get(pred, "") if negate else pred
    if pred not in _LESS:
        return
    less, strict, unsigned = _LESS[pred]
    small, big = (cmp.lhs, cmp.rhs) if less else (cmp.rhs, cmp.lhs)
    gap = 1 if strict else 0
    big_range, small_range = value_range(big), value_range(small)
    if unsigned:  # small <u big, with 0 <= big: 0 <= small <= big.hi - gap
        if big_range is not None and big_range[0] >= 0:
            _add_fact(facts, small, 0, big_range[1] - gap)
        return
    if big_range is not None:
        _add_fact(facts, small, None, big_range[1] - gap)
    if small_range is not None:
        _add_fact(facts, big, small_range[0] + gap, None)


def _bounds(value: SSAValue, facts: Facts) -> tuple[int | None, int | None]:
    """`value_range(value)` narrowed by the guard facts; None for an unknown side."""
    lo, hi = value_range(value) or (None, None)
    fact_lo, fact_hi = facts.get(value, (None, None))
    return _tighter(lo, fact_lo, max), _tighter(hi, fact_hi, min)


def _guard_facts(op: Operation, kernel: tile.KernelOp) -> Facts:
    """What the `scf.if` ops between `op` and `kernel` guarantee where `op` runs."""
    facts: Facts = {}
    child, parent = op, op.parent_op()
    while parent is not None and parent is not kernel:
        if isinstance(parent, scf.IfOp):
            in_then = child.parent_region() is parent.true_region
            conds = _conjuncts(parent.cond) if in_then else [parent.cond]
            for cond in conds:
                if isinstance(cond.owner, arith.CmpiOp):
                    _learn(facts, cond.owner, negate=not in_then)
        child, parent = parent, parent.parent_op()
    return facts


def _window_in_bounds(
    shape: Sequence[int],
    offsets: Sequence[SSAValue],
    extents: Sequence[int],
    facts: Facts,
) -> bool:
    for dim, offset, extent in zip(shape, offsets, extents, strict=True):
        lo, hi = _bounds(offset, facts)
        if dim == tile.DYNAMIC or lo is None or hi is None:
            return False
        if lo < 0 or hi + extent > dim:
            return False
    return True


def _source_in_bounds(value: SSAValue) -> bool:
    """Whether all of the global tile `value` lies inside the tensor it views."""
    op = value.owner
    if isinstance(op, tile.RegionOp):
        return op.in_bounds is not None or _region_in_bounds(op)
    if isinstance(op, tile.ReshapeOp):
        return _source_in_bounds(op.source)
    return True  # a kernel argument: the whole tensor


def _region_in_bounds(op: tile.RegionOp) -> bool:
    shape, extents = _global_shape(op.source), tile.tile_type(op.result).shape
    return _window_in_bounds(shape, op.offsets, extents, {}) and _source_in_bounds(
        op.source
    )


def _element_access(op: Operation) -> tuple[SSAValue, Sequence[SSAValue], list[int]] | None:
    """The global tile, indices and extents of an access of one element (or of a raw cp.async's
    run along the last dim), or None."""
    if isinstance(op, tile.LoadOp):
        tile_value, indices = op.source, op.indices
    elif isinstance(op, tile.StoreOp | tile.AtomicOp):
        tile_value, indices = (
            op.dst if isinstance(op, tile.AtomicOp) else op.dest,
            op.indices,
        )
    elif isinstance(op, tile.CpAsyncOp):
        return op.src, op.src_indices, op.extents
    else:
        return None
    if _global_shape(tile_value) is None or not indices:
        return None
    return tile_value, indices, [1] * len(indices)


def _access_in_bounds(op: Operation, kernel: tile.KernelOp) -> bool:
    tile_value, indices, extents = _element_access(op)
    shape = _global_shape(tile_value)
    facts = _guard_facts(op, kernel)
    return _window_in_bounds(shape, indices, extents, facts) and _source_in_bounds(tile_value)


def legalize_kernel(kernel: tile.KernelOp) -> None:
    """Marks what `kernel` accesses in bounds; program order decides a region before its uses."""
    for op in kernel.walk():
        if isinstance(op, tile.RegionOp) and _global_shape(op.source) is not None:
            proven = op.in_bounds is not None or _region_in_bounds(op)
        elif _element_access(op) is not None:
            proven = op.in_bounds is not None or _access_in_bounds(op, kernel)
        else:
            continue
        if proven:
            op.in_bounds = UnitAttr()


@dataclass(frozen=True)
class TileLegalizeBoundsPass(ModulePass):
    """Mark the global-memory accesses proven to stay inside their tensor."""

    name = "tile-legalize-bounds"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.walk():
            if isinstance(kernel, tile.KernelOp):
                legalize_kernel(kernel)
