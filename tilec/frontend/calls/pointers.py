"""`T.make_tensor` / `T.make_tensor_from_addr`: a global tensor at a run-time device address
(a `T.ptr` parameter, or an element of a `T.Tensor([n], T.ptr)` pointer table)."""

from __future__ import annotations

import tilec.language as T
from tilec.dialects import tile

from ..values import Scalar, TileRef
from .operands import INDEX, describe_, dtype_of
from .registry import handles


def _address(v, ptr, what: str) -> Scalar:
    """The 64-bit integer holding the address (TileLang reinterprets any 64-bit value as one)."""
    value = v.rvalue(ptr)
    if isinstance(value, TileRef):
        raise v.b.error(f"{what} takes a pointer, got the tensor `{value}`",
                        hint="a tensor is already a tensor: use it directly, or T.reshape / T.view it; a pointer "
                             "comes from a `p: T.ptr` parameter or a `T.Tensor([n], T.ptr)` table (`ptrs[i]`)")
    if not isinstance(value, Scalar):
        raise v.b.error(f"{what} takes a run-time pointer, got {describe_(value)}",
                        hint="pass a `p: T.ptr` parameter or an element of a `T.Tensor([n], T.ptr)` table")
    if not value.is_int or value.is_index or value.type.width.data != 64:
        raise v.b.error(f"{what} takes a pointer (a 64-bit integer), got a value of type {value.type}",
                        hint="pointers are T.ptr parameters or elements of a `T.Tensor([n], T.ptr)` table "
                             "(int64), filled on the host with tensors' data_ptr()")
    return value


def _dims(v, shape, what: str) -> tuple[list[int], list]:
    """(the tensor type's shape with `tile.DYNAMIC` for run-time sizes, the index values of those)."""
    if not isinstance(shape, list | tuple):
        shape = (shape,)
    if not shape:
        raise v.b.error(f"{what}: the shape needs at least one size")
    static, sizes = [], []
    for d in shape:
        if isinstance(d, T.Symbol):
            d = v.program.resolve_symbol(v, d)
        d = v.rvalue(d)
        if isinstance(d, Scalar) and d.ssa in v.b.constants:
            d = v.b.constants[d.ssa]
        if isinstance(d, bool) or not isinstance(d, int | Scalar) or (isinstance(d, Scalar) and not d.is_int):
            raise v.b.error(f"{what}: sizes must be integers (compile-time or run-time), got {describe_(d)}")
        if isinstance(d, int):
            if d <= 0:
                raise v.b.error(f"{what}: sizes must be positive, got {d}")
            static.append(d)
            continue
        static.append(tile.DYNAMIC)
        sizes.append(v.b.convert(d.ssa, INDEX))
    return static, sizes


@handles("make_tensor", "make_tensor_from_addr")
def make_tensor(v, ptr, shape, dtype, strides, storage_scope="global"):
    what = "T.make_tensor"
    if strides is not None:
        raise v.b.error(f"{what}: explicit strides are not supported by tilec: the tensor is contiguous and "
                        "row-major", hint="drop `strides=`, or view a contiguous tensor and index it yourself")
    if storage_scope != "global":
        raise v.b.error(f"{what}: tilec's pointers address global memory, got storage_scope={storage_scope!r}")
    address = _address(v, ptr, what)
    static, sizes = _dims(v, shape, what)
    d = dtype_of(v, dtype, what)
    result = v.b.emit(tile.MakeTensorOp(address.ssa, sizes, tile.TensorType(static, d.ir))).results[0]
    return TileRef(result)
