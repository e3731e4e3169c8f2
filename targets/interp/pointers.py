"""Device addresses on the CPU targets: which host memory a pointer of `tile.make_tensor` names.

A pointer table holds `data_ptr()`s, which on the CPU targets are host addresses. They are
never dereferenced as such: an address is looked up among the memory the call may reach (its
own arrays, and the live CPU torch tensors, which a host program fills a pointer table from),
and the tensor is a numpy view of that memory, bounds-checked as any other. An address that no
such memory holds, or a tensor that would reach past its end, is a located error.

`registered(arrays)` makes the memory of one call current (the interpreter's `run` and the
runtime's simulator launch do); `view(address, shape, dtype, op)` is the lookup. The simulator
of the thread-level IR reads `llvm.inttoptr` / the cast to a memref through `sim_int_to_ptr`
and `sim_pointer_memref`.
"""

from __future__ import annotations

import bisect
import contextlib
import contextvars
import gc
import math
import warnings
from collections.abc import Iterable

import numpy as np

from tilec.errors import error_at

_HINT = ("on the CPU targets (interp, sim) a pointer must be the data_ptr() of a CPU torch tensor that is alive "
         "during the call (or of one of the call's own arrays)")


class HostMemory:
    """The spans of host memory a call's pointers may name: (start, bytes as a uint8 array)."""

    def __init__(self, arrays: Iterable = ()):
        self._arrays = [a for a in arrays if isinstance(a, np.ndarray)]
        self._starts: list[int] | None = None
        self._spans: list[np.ndarray] = []

    def _build(self) -> None:
        spans: dict[int, np.ndarray] = {}
        for a in self._arrays:
            root = a
            while isinstance(root.base, np.ndarray):
                root = root.base
            if root.flags.c_contiguous and root.nbytes:
                spans.setdefault(root.ctypes.data, root.reshape(-1).view(np.uint8))
        for start, raw in _torch_cpu_storages():
            spans.setdefault(start, raw)
        self._starts = sorted(spans)
        self._spans = [spans[s] for s in self._starts]

    def _span(self, address: int, dtype: np.dtype, op) -> tuple[int, np.ndarray]:
        """(offset of `address` in the span holding it, the span's bytes); a located error at `op`
        if no known memory holds the address or it is not aligned to `dtype`."""
        if self._starts is None:
            self._build()
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0 or address >= self._starts[i] + self._spans[i].size:
            raise error_at(op, f"{op.name}: address {address:#x} is not inside any tensor this call can reach",
                           hint=_HINT)
        offset = address - self._starts[i]
        if offset % dtype.itemsize:
            raise error_at(op, f"{op.name}: address {address:#x} is not aligned to the {dtype.itemsize} bytes of "
                               f"a {dtype.name} element")
        return offset, self._spans[i]

    def view(self, address: int, shape: tuple[int, ...], dtype: np.dtype, op) -> np.ndarray:
        """The array of `shape` and `dtype` at `address`."""
        offset, raw = self._span(address, dtype, op)
        nbytes = math.prod(shape) * dtype.itemsize
        if offset + nbytes > raw.size:
            raise error_at(op, f"{op.name}: a tensor of shape {tuple(shape)} and dtype {dtype.name} at {address:#x} "
                               f"needs {nbytes} bytes, but the memory holding that address has {raw.size - offset} "
                               "bytes from there",
                           hint="make the tensor the pointer names at least as large as the shape given to "
                                "T.make_tensor")
        return raw[offset:offset + nbytes].view(dtype).reshape(shape)

    def rest(self, address: int, dtype: np.dtype, op) -> np.ndarray:
        """The `dtype` elements from `address` to the end of the memory holding it (flat)."""
        offset, raw = self._span(address, dtype, op)
        count = (raw.size - offset) // dtype.itemsize
        return raw[offset:offset + count * dtype.itemsize].view(dtype)


def _torch_cpu_storages():
    """(address, bytes) of the storage of every live CPU torch tensor."""
    try:
        import torch
    except ImportError:
        return
    seen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tensors = [o for o in gc.get_objects() if issubclass(type(o), torch.Tensor)]
    for t in tensors:
        try:
            if t.device.type != "cpu" or t.layout != torch.strided:
                continue
            storage = t.untyped_storage()
        except (RuntimeError, NotImplementedError, TypeError):
            continue
        start = storage.data_ptr()
        if start in seen or not storage.nbytes():
            continue
        seen.add(start)
        yield start, torch.empty(0, dtype=torch.uint8).set_(storage).numpy()


_CURRENT: contextvars.ContextVar[HostMemory | None] = contextvars.ContextVar("tilec_host_memory", default=None)


@contextlib.contextmanager
def registered(arrays: Iterable):
    """Makes the memory of a call with `arrays` (and the live CPU tensors) what its pointers may name."""
    token = _CURRENT.set(HostMemory(arrays))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> HostMemory:
    memory = _CURRENT.get()
    return memory if memory is not None else HostMemory()


def address_of(value) -> int:
    """An i64 pointer value as the unsigned address it holds."""
    return int(value) & (2**64 - 1)


# --- the thread-level simulator -----------------------------------------------------------------


class Address:
    """An `!llvm.ptr` made from an integer (`llvm.inttoptr`): resolved when it is viewed as a memref."""

    __slots__ = ("value",)

    def __init__(self, value: int):
        self.value = value


def sim_int_to_ptr(op, c):
    """`llvm.inttoptr`: the address, uniform over the block's threads."""
    from .values import uniform

    src, r = op.input, op.output

    def run(st):
        st.env[r] = Address(address_of(uniform(st.env[src], op, "a pointer")))

    return run


def sim_pointer_memref(op, st, memory_class, numpy_dtype) -> None:
    """The cast of an `Address` to `memref<?xT>`: a "global" `memory_class` over the memory from
    there to the end of the tensor holding it (accesses past that end are the simulator's errors)."""
    (src,), (res,) = op.inputs, op.outputs
    dtype = numpy_dtype(res.type.element_type)
    st.env[res] = memory_class(current().rest(st.env[src].value, dtype, op), "global")
