"""Debugging inside kernels: `T.print`, `T.device_assert`."""

from __future__ import annotations

from xdsl.dialects.builtin import i1

import tilec.language as T
from tilec.dialects import tile

from ..values import Access, Scalar, TileRef
from .operands import INDEX, region, require_kernel
from .registry import handles


@handles("print")
def print_(v, obj, msg):
    require_kernel(v, "T.print")
    values = [] if obj is None else [region(v, obj, None, "T.print") if isinstance(obj, TileRef | Access) and
                                     not (isinstance(obj, Access) and obj.is_point) else
                                     _scalar_ssa(v, obj)]
    v.b.emit(tile.PrintOp(values, str(msg)))


def _scalar_ssa(v, value):
    value = v.rvalue(value)
    return value.ssa if isinstance(value, Scalar) else v.b.to_ssa(value, INDEX if isinstance(value, int) else
                                                                   T.float32.ir)


@handles("device_assert")
def device_assert(v, cond, msg):
    require_kernel(v, "T.device_assert")
    v.b.emit(tile.DeviceAssertOp(v.b.to_ssa(v.rvalue(cond), i1), str(msg)))
