"""Atomics: `T.atomic_add / atomic_max / atomic_min` on one element or a whole tile."""

from __future__ import annotations

from tilec.dialects import tile

from ..values import Access, TileRef
from .operands import explicit_shape, region, require_kernel
from .registry import handles_each


@handles_each({"atomic_add": "add", "atomic_max": "max", "atomic_min": "min"})
def atomic(_, kind: str):
    def handler(v, dst, value, memory_order, return_prev):
        require_kernel(v, f"T.atomic_{kind}")
        if return_prev:
            raise v.b.error(f"T.atomic_{kind}(return_prev=True) is not supported yet")
        value = v.rvalue(value) if not isinstance(value, Access) or value.is_point else value
        if isinstance(dst, Access) and dst.is_point and not isinstance(value, TileRef | Access):
            v.check_point(dst)
            indices = [v.index_ssa(i) for i in dst.indices]
            ssa = v.b.to_ssa(value, dst.tile.type.element_type)
            v.check_fragment_write(dst.tile, indices)
            v.b.emit(tile.AtomicOp(dst.tile.ssa, indices, ssa, kind))
            return
        require_kernel(v, f"a tile-wide T.atomic_{kind}", whole_tiles=True)
        src = region(v, value, explicit_shape(v, dst), f"T.atomic_{kind} value")
        d = region(v, dst, src.type.shape, f"T.atomic_{kind} destination")
        v.b.emit(tile.AtomicOp(d, [], src, kind))

    return handler
