"""Atomics: `T.atomic_add / atomic_max / atomic_min` on one element or a whole tile, and
`T.atomic_addx2 / atomic_addx4` on 2 or 4 consecutive elements (one atomic per element: the same
sum; TileLang's packed `red.v4` is a faster spelling of it)."""

from __future__ import annotations

from tilec.compiler.pass_configs import report
from tilec.dialects import tile

from ..values import Access, Scalar, TileRef
from .operands import explicit_shape, region, require_kernel
from .registry import handles_each


@handles_each({"atomic_add": "add", "atomic_max": "max", "atomic_min": "min"})
def atomic(_, kind: str):
    def handler(v, dst, value, memory_order, return_prev, use_tma):
        require_kernel(v, f"T.atomic_{kind}")
        if memory_order not in (None, "relaxed"):
            raise v.b.error(f"T.atomic_{kind}(memory_order={memory_order!r}) is not supported: tilec's atomics "
                            "are relaxed", hint="use memory_order='relaxed' (or none) and order with T.sync_threads")
        if use_tma:
            report(f"T.atomic_{kind}(use_tma=True) is not applied: tilec adds with atomic instructions (the "
                   "same result)", v.b.loc)
        value = v.rvalue(value) if not isinstance(value, Access) or value.is_point else value
        if isinstance(dst, Access) and dst.is_point and not isinstance(value, TileRef | Access):
            v.check_point(dst)
            indices = [v.index_ssa(i) for i in v.element_indices(dst)]
            ssa = v.b.to_ssa(value, dst.tile.type.element_type)
            v.check_fragment_write(dst.tile, indices)
            op = v.b.emit(tile.AtomicOp(dst.tile.ssa, indices, ssa, kind, return_prev=bool(return_prev)))
            return Scalar(op.prev) if return_prev else None
        if return_prev:
            raise v.b.error(f"T.atomic_{kind}(return_prev=True) returns one element's old value: its destination "
                            "must be one element (`X[i]`) and its value a scalar",
                            hint="update a tile element by element to read each old value")
        require_kernel(v, f"a tile-wide T.atomic_{kind}", whole_tiles=True)
        if v.custom_layouts:  # custom_layout.py loads with the first T.Layout
            from ..custom_layout import copy_elementwise, laid_out

            if laid_out(v, dst) is not None or laid_out(v, value) is not None:
                copy_elementwise(v, value, dst, atomic=kind)
                return
        src = region(v, value, explicit_shape(v, dst), f"T.atomic_{kind} value")
        d = region(v, dst, src.type.shape, f"T.atomic_{kind} destination")
        v.b.emit(tile.AtomicOp(d, [], src, kind))

    return handler


@handles_each({"atomic_addx2": 2, "atomic_addx4": 4})
def atomic_add_vector(name: str, width: int):
    def handler(v, dst, value, return_prev):
        require_kernel(v, f"T.{name}")
        if return_prev:
            raise v.b.error(f"T.{name}(return_prev=True) is not supported yet")
        for what, x in (("destination", dst), ("value", value)):
            if not isinstance(x, Access) or not x.is_point:
                raise v.b.error(f"T.{name} takes the first of {width} elements of a tensor or buffer as its {what} "
                                f"(`X[i, {width} * j]`)", hint=f"for a whole tile use T.atomic_add(dst_tile, src_tile)")
            v.check_point(x)
        for c in range(width):
            d, s = _shifted(v, dst, c), _shifted(v, value, c)
            indices = [v.index_ssa(i) for i in v.element_indices(d)]
            v.check_fragment_write(d.tile, indices)
            ssa = v.b.to_ssa(v.load(s), d.tile.type.element_type)
            v.b.emit(tile.AtomicOp(d.tile.ssa, indices, ssa, "add"))

    return handler


def _shifted(v, access: Access, c: int) -> Access:
    """`access` moved `c` elements along its last dim."""
    if c == 0:
        return access
    *head, last = access.indices
    return Access(access.tile, (*head, v.b.binop("+", v.rvalue(last), c)))
