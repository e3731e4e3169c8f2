"""Global tensors from device addresses: `T.make_tensor`, `T.make_tensor_from_addr` (`T.ptr` is
in dtypes.py).

A pointer table is an int64 tensor parameter annotated `T.Tensor([n], T.ptr)`, filled on the
host with the tensors' `data_ptr()`s; `T.make_tensor(table[i], shape, dtype)` in a kernel is then
tensor i, contiguous and row-major, usable by T.copy, T.gemm and indexing like any global tensor.
Its sizes may be run-time values (the kernel's scalar parameters). On the CPU targets the
addresses must be those of live CPU torch tensors (or of the call's own arrays): the interpreter
maps an address back to its tensor and refuses one it does not know.
"""

from __future__ import annotations

from ._builtin import builtin


@builtin
def make_tensor(ptr, shape, dtype="float32", strides=None):
    """The global tensor of `shape` and `dtype` at address `ptr` (a `T.ptr` parameter or a value of
    a pointer table: a 64-bit integer), contiguous and row-major. `strides` other than the
    contiguous ones are not supported."""


@builtin
def make_tensor_from_addr(addr, shape, dtype="float32", strides=None, storage_scope="global"):
    """`T.make_tensor` of a 64-bit address expression (TileLang's spelling for an address that is
    not a pointer variable)."""
