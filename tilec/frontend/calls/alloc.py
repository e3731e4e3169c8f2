"""Buffers of a block: `T.alloc_shared / alloc_fragment / alloc_local`, `T.alloc_var`, barriers, views."""

from __future__ import annotations

from tilec.dialects import tile
from tilec.dtypes import as_dtype

from ..values import BarrierRef, Scalar, TileRef, VarRef
from .operands import describe_, dtype_of, require_kernel, shape_of, static_int
from .registry import handles, handles_each


@handles_each({"alloc_shared": "shared", "alloc_fragment": "fragment", "alloc_local": "local"})
def alloc(name: str, scope: str):
    def handler(v, shape, dtype, scope_=None, **_):
        what = f"T.{name}"
        require_kernel(v, what)
        if scope != "local" and v.parallel_loops:
            raise v.b.error(f"{what}: {scope} buffers cannot be allocated inside T.Parallel: they belong to the "
                            "whole block",
                            hint="allocate it before the loop (per-element temporaries are T.alloc_var or "
                                 "T.alloc_local)")
        typ = tile.BufferType(shape_of(v, shape, what), dtype_of(v, dtype, what).ir, scope)
        return TileRef(v.b.emit(tile.AllocOp(typ)).results[0])

    return handler


@handles("alloc_var")
def alloc_var(v, dtype, init, scope):
    require_kernel(v, "T.alloc_var")
    d = dtype_of(v, dtype, "T.alloc_var")
    ref = TileRef(v.b.emit(tile.AllocOp(tile.BufferType((1,), d.ir, "local"))).results[0])
    var = VarRef(ref)
    if init is not None:
        v.store_var(var, init)
    return var


@handles("alloc_barrier")
def alloc_barrier(v, arrive_count):
    require_kernel(v, "T.alloc_barrier", whole_tiles=True)
    if isinstance(arrive_count, list | tuple):  # an array of barriers, one count each
        counts = [static_int(v, c, "arrive_count") for c in arrive_count]
        if not counts or len(set(counts)) != 1:
            raise v.b.error(f"T.alloc_barrier({counts}): tilec's barrier arrays expect one arrival count for all "
                            "their barriers", hint="allocate barriers of different counts separately")
        return BarrierRef(v.b.emit(tile.AllocBarrierOp(counts[0], len(counts))).results[0])
    return BarrierRef(v.b.emit(tile.AllocBarrierOp(static_int(v, arrive_count, "arrive_count"))).results[0])


@handles("reshape", "view")
def reshape(v, buffer, shape, dtype=None):
    require_kernel(v, "T.reshape / T.view", whole_tiles=True)
    if not isinstance(buffer, TileRef):
        raise v.b.error(f"T.reshape needs a whole buffer, got {describe_(buffer)}")
    if dtype is not None and as_dtype(dtype) != buffer.dtype:
        raise v.b.error("T.view with a different dtype is not supported yet")
    shape = buffer.shape if shape is None else shape_of(v, shape, "T.reshape")
    typ = buffer.type
    new = tile.TensorType(shape, typ.element_type) if typ.scope == "global" else \
        tile.BufferType(shape, typ.element_type, typ.scope)
    return TileRef(v.b.emit(tile.ReshapeOp(buffer.ssa, new)).results[0])
