"""Which lowering handles which tile op, and the walk over a block.

Each op family's module registers its handlers with `@uniform(OpClass)` (ops lowered once for
the whole block: tile ops, buffers, views) or `@element(OpClass)` (ops lowered per lane inside
`T.Parallel` as well: loads, stores, scalar control flow), as `targets/nvptx` registers its
translations with `@lowers`. Ops with no handler and no regions are cloned per lane. The
families in `LAZY` register when the first op of theirs is lowered.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


from xdsl.dialects import scf
from xdsl.ir import Block, Operation

from tilec.dialects import tile

from .context import Lowerer
from .lanes import Lanes, lane_maps


Uniform = Callable[[Lowerer, Operation], None]
Element = Callable[[Lowerer, Operation, "Lanes | None"], None]
UNIFORM: dict[type[Operation], Uniform] = {}
ELEMENT: dict[type[Operation], Element] = {}
LAZY: dict[type[Operation], str] = {
    tile.ReduceOp: "reduce", tile.CumsumOp: "scan", tile.CummaxOp: "scan",
    tile.WarpgroupWaitTurnOp: "turns", tile.WarpgroupPassTurnOp: "turns",
    tile.CpAsyncOp: "raw_copy", tile.CpAsyncArriveOp: "raw_copy",
}
"""Op → the module of its family's handlers, imported at the first such op (a gemm has none:
where bytecode is not cached, their source is not compiled)."""


def uniform(*op_types: type[Operation]):
    """Register a handler of ops lowered once for the whole block (not inside T.Parallel)."""

    def register(fn):
        for op_type in op_types:
            UNIFORM[op_type] = fn
        return fn

    return register


def element(*op_types: type[Operation]):
    """Register a handler of ops lowered per lane inside T.Parallel as well."""

    def register(fn):
        for op_type in op_types:
            ELEMENT[op_type] = fn
        return fn

    return register


def lower_block(L: Lowerer, block: Block, lanes: Lanes | None = None) -> None:
    for op in block.ops:
        if isinstance(op, tile.YieldOp | scf.YieldOp):
            continue
        L.location = op.location
        if type(op) in LAZY:  # registers the handlers of its family (once: the module stays imported)
            importlib.import_module(f"{__package__}.{LAZY.pop(type(op))}")
        handler = UNIFORM.get(type(op))
        if handler is not None:
            if lanes is not None:
                raise L.error(op, f"{op.name} cannot be used inside T.Parallel",
                              hint="move the tile operation out of the element-wise loop")
            handler(L, op)
            continue
        handler = ELEMENT.get(type(op))
        if handler is not None:
            handler(L, op, lanes)
            continue
        if op.regions:
            raise L.error(op, f"{op.name} is not supported by the CUDA target yet")
        for lane in lane_maps(L, lanes):
            L.emit(op.clone(value_mapper=lane))
