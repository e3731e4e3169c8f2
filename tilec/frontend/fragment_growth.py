"""Fragments a T.Parallel indexes past their declared shape, sized by the loop as TileLang does.

TileLang lays a fragment out from the T.Parallel loops that use it, so a fragment declared smaller
than the loop that writes it (`sinks = T.alloc_fragment([heads], dtype)` filled by
`for i in T.Parallel(block_M): sinks[i] = ...`, in TileLang's attention-sink examples) still holds
one element per iteration there. tilec declares what it builds: such a fragment is allocated as
large as the loops index it instead, and a `TilecWarning` at the first access past the shape says so. Only a
fragment used element by element (tile.load / tile.store) grows; one that a whole-tile operation
also takes (T.copy, T.fill, T.gemm, T.reduce, a view, a layout annotation) keeps its shape, because
that operation's extent would change with it, and the access gets its located error instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.compiler.pass_configs import report
from tilec.dialects import tile
from tilec.errors import TilecError

__all__ = ["FragmentGrowth", "apply_fragment_growth", "grow_fragment"]

@dataclass
class FragmentGrowth:
    alloc: tile.AllocOp
    shape: list[int]
    error: TilecError  # the first access past the shape: raised where the fragment cannot grow


def grow_fragment(v, ref, dim: int, size: int, error: TilecError) -> None:
    """Record that T.Parallel indexes dimension `dim` of fragment `ref` up to `size - 1`."""
    alloc = ref.ssa.owner
    if not isinstance(alloc, tile.AllocOp):  # a view or reshape of another buffer: its extent is that buffer's
        raise error
    growth = v.fragment_growth.get(ref.ssa)
    if growth is None:
        growth = v.fragment_growth[ref.ssa] = FragmentGrowth(alloc, list(ref.shape), error)
    growth.shape[dim] = max(growth.shape[dim], size)


def apply_fragment_growth(v) -> None:
    """At the end of a kernel: allocate each recorded fragment at the extent its loops index."""
    for ssa, growth in v.fragment_growth.items():
        others = sorted({use.operation.name for use in ssa.uses
                         if not isinstance(use.operation, tile.LoadOp | tile.StoreOp)})
        if others:
            error = growth.error
            raise TilecError(error.msg, loc=error.loc,
                             hint=f"make the buffer as large as the loop: it is also used whole ({', '.join(others)}), "
                                  "so tilec cannot size it by the loop as TileLang's layout inference would")
        old = growth.alloc
        typ = old.results[0].type
        new = tile.AllocOp(tile.BufferType(growth.shape, typ.element_type, typ.scope))
        if getattr(old, "location", None) is not None:
            new.location = old.location
        old.parent_block().insert_op_before(new, old)
        old.results[0].replace_all_uses_with(new.results[0])
        old.detach()
        old.erase()
        declared = "x".join(str(d) for d in typ.shape)
        grown = "x".join(str(d) for d in growth.shape)
        report(f"{growth.error.msg}: tilec allocates it as {grown} (declared {declared}), one element per "
               "iteration, as TileLang's layout inference does; declare it with the loop's extent", growth.error.loc)
    v.fragment_growth = {}
