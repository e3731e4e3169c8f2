"""Run-time values of the interpreter: numpy dtypes for tilec types, and tiles.

A scalar SSA value is a numpy scalar of its type (`np.float16(1.0)`, `np.int64(3)` for
`index`); inside a `tile.parallel` it may instead be a numpy array that broadcasts over the
iteration space (one lane per element).  A tensor or buffer value is a `Tile`: a rectangular
window on numpy storage that may reach past the storage (global regions past the tensor's
end), so reads of the outside part give 0 and writes there are dropped.

Element access (`gather`, `scatter`, `atomic_at`) takes indices that are scalars or lane
arrays, and an optional lane mask; lanes that are masked off or, for global tensors, out
of range neither read nor write.
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute

from tilec.errors import error_at

from .float8 import is_float8, to_float8

bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
HALF_DTYPES = (np.dtype(np.float16), bfloat16, float8_e4m3fn, float8_e5m2)
"""Floats narrower than 32 bits: math on them is computed in float32, as on the GPU."""

_FLOAT_DTYPES = {
    Float8E4M3FNType: float8_e4m3fn,
    Float8E5M2Type: float8_e5m2,
    Float16Type: np.dtype(np.float16),
    BFloat16Type: bfloat16,
    Float32Type: np.dtype(np.float32),
    Float64Type: np.dtype(np.float64),
}


def numpy_dtype(typ: Attribute) -> np.dtype | None:
    """The numpy dtype holding values of the scalar type `typ` (None if it has none)."""
    if isinstance(typ, IndexType):
        return np.dtype(np.int64)
    if isinstance(typ, IntegerType):
        width = typ.width.data
        if width == 1:
            return np.dtype(np.bool_)
        unsigned = typ.signedness.data == Signedness.UNSIGNED
        return np.dtype(f"{'u' if unsigned else 'i'}{width // 8}") if width in (8, 16, 32, 64) else None
    return _FLOAT_DTYPES.get(type(typ))


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """Where math on `dtype` is computed: float32 for the 8- and 16-bit floats, else the dtype itself."""
    return np.dtype(np.float32) if dtype in HALF_DTYPES else dtype


def convert(x, dtype: np.dtype):
    """`x` converted to `dtype` as the GPU converts: numpy's casts, except into fp8, which rounds
    by torch's rule (`float8.py`: e4m3 saturates, e5m2 overflows to inf)."""
    if is_float8(dtype) and np.asarray(x).dtype != dtype:
        return to_float8(x, dtype)
    return x.astype(dtype) if isinstance(x, (np.ndarray, np.generic)) else np.asarray(x).astype(dtype)[()]


def unsigned(x):
    """`x` reinterpreted as unsigned (the `u` predicates and ops of arith on signless ints)."""
    dtype = x.dtype
    if dtype.kind != "i":
        return x
    return x.astype(f"u{dtype.itemsize}")


def scalarize(x):
    """A 0-d array becomes a numpy scalar, so that scalar code stays scalar."""
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return x[()]
    return x


def uniform(value, op, what: str) -> int:
    """The one integer all lanes of `value` agree on (a TilecError if they differ)."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        first = value.flat[0]
        if not np.all(value == first):
            raise error_at(op, f"{op.name}: {what} differs between the elements of the enclosing T.Parallel",
                           hint="the interpreter needs loop bounds and tile offsets that are the same for every element")
        value = first
    return int(value)


class Tile:
    """A window `offsets .. offsets + shape` on `base` (a tensor or buffer value).

    `view` is the numpy view of the window when it lies inside `base`, else None (only
    global regions reach outside).  `lanes` is set for a buffer allocated inside a
    `tile.parallel`: each lane owns a copy, so `base` has the lane shape in front.
    """

    __slots__ = ("base", "is_global", "lanes", "offsets", "shape", "view")

    def __init__(self, base: np.ndarray, offsets: Sequence[int], shape: Sequence[int], is_global: bool,
                 lanes: tuple[np.ndarray, ...] | None = None):
        self.base, self.offsets, self.shape = base, tuple(offsets), tuple(shape)
        self.is_global, self.lanes = is_global, lanes
        self.view = None
        if lanes is None and all(0 <= o and o + s <= b for o, s, b in zip(self.offsets, self.shape, base.shape)):
            self.view = base[tuple(slice(o, o + s) for o, s in zip(self.offsets, self.shape))]

    @classmethod
    def whole(cls, array: np.ndarray, is_global: bool) -> Tile:
        return cls(array, (0,) * array.ndim, array.shape, is_global)

    @property
    def dtype(self) -> np.dtype:
        return self.base.dtype

    def window(self, offsets: Sequence[int], shape: Sequence[int]) -> Tile:
        return Tile(self.base, [a + b for a, b in zip(self.offsets, offsets)], shape, self.is_global)

    def _clip(self) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
        """(slices of base, slices of the window) of the part inside base; None if empty."""
        base_sl, win_sl = [], []
        for o, s, b in zip(self.offsets, self.shape, self.base.shape):
            lo, hi = max(o, 0), min(o + s, b)
            if hi <= lo:
                return None
            base_sl.append(slice(lo, hi))
            win_sl.append(slice(lo - o, hi - o))
        return tuple(base_sl), tuple(win_sl)

    def read(self) -> np.ndarray:
        """The window's contents, with 0 for the part outside the storage."""
        if self.view is not None:
            return self.view
        out = np.zeros(self.shape, self.base.dtype)
        clip = self._clip()
        if clip is not None:
            out[clip[1]] = self.base[clip[0]]
        return out

    def write(self, values) -> None:
        """Stores `values` (converted to the element type) where the window is inside the storage."""
        if is_float8(self.base.dtype):
            values = convert(values, self.base.dtype)
        if self.view is not None:
            np.copyto(self.view, values, casting="unsafe")
            return
        clip = self._clip()
        if clip is not None:
            values = np.broadcast_to(values, self.shape)
            np.copyto(self.base[clip[0]], values[clip[1]], casting="unsafe")

    def combine(self, ufunc: np.ufunc, values: np.ndarray) -> None:
        """`window = ufunc(window, values)` where the window is inside the storage."""
        target, values = (self.view, values) if self.view is not None else self._clipped(values)
        if target is not None:
            if is_float8(self.base.dtype):  # fp8 math in float32, rounded once
                target[...] = convert(ufunc(target.astype(np.float32), values.astype(np.float32)), self.base.dtype)
            else:
                target[...] = ufunc(target, values.astype(self.base.dtype, copy=False))

    def _clipped(self, values: np.ndarray):
        clip = self._clip()
        if clip is None:
            return None, None
        return self.base[clip[0]], np.broadcast_to(values, self.shape)[clip[1]]


_VERBS = {"tile.store": "writes", "tile.cp_async": "writes", "tile.atomic": "updates"}
"""What an element access out of a buffer's range does, by op (the others read)."""


def _locate(tile: Tile, indices: Sequence, mask, op):
    """Full indices into `tile.base` and the lanes that may touch it (None: all).

    Global tensors drop out-of-range lanes; buffers must be in range on every active lane.
    """
    full = [o + i for o, i in zip(tile.offsets, indices)]
    bounds = tile.base.shape[tile.base.ndim - len(full):]
    valid = None
    for axis, (idx, bound) in enumerate(zip(full, bounds)):
        ok = (idx >= 0) & (idx < bound)
        if ok.all() if isinstance(ok, np.ndarray) else ok:
            continue
        if not tile.is_global:
            bad = ~ok if mask is None else ~ok & mask
            if np.any(bad):
                shape = np.broadcast_shapes(np.shape(idx), np.shape(bad))
                got = np.broadcast_to(idx, shape)[np.broadcast_to(bad, shape)].flat[0]
                verb = _VERBS.get(op.name, "reads")
                raise error_at(op, f"{op.name} {verb} out of range: index {int(got)} of dim {axis} is outside a "
                                   f"buffer of shape {tuple(bounds)}")
        valid = ok if valid is None else valid & ok
    if mask is not None:
        valid = mask if valid is None else valid & mask
    if tile.lanes is not None:
        full = list(tile.lanes) + full
    return full, valid


def gather(tile: Tile, indices: Sequence, mask, op):
    """`tile[indices]` per lane; 0 on lanes that are masked off or outside a global tensor."""
    full, valid = _locate(tile, indices, mask, op)
    if valid is None:
        return tile.base[tuple(full)]
    if not np.any(valid):
        shape = np.broadcast_shapes(*(np.shape(i) for i in full), np.shape(valid))
        return scalarize(np.zeros(shape, tile.dtype))
    safe = tuple(np.where(valid, i, 0) for i in full)
    return scalarize(np.where(valid, tile.base[safe], np.zeros((), tile.dtype)))


def _scatter_args(tile: Tile, indices: Sequence, value, mask, op):
    full, valid = _locate(tile, indices, mask, op)
    if valid is None and all(np.ndim(i) == 0 for i in full) and np.ndim(value) == 0:
        return tuple(full), value
    arrays = list(np.broadcast_arrays(*full, value, *(() if valid is None else (valid,))))
    if valid is not None:
        keep = arrays.pop()
        arrays = [a[keep] for a in arrays]
    return tuple(arrays[:-1]), arrays[-1]


def scatter(tile: Tile, indices: Sequence, value, mask, op) -> None:
    """`tile[indices] = value` on the active, in-range lanes (the last lane wins a collision)."""
    where, value = _scatter_args(tile, indices, value, mask, op)
    tile.base[where] = convert(value, tile.base.dtype) if is_float8(tile.base.dtype) else value


def atomic_at(tile: Tile, indices: Sequence, value, mask, ufunc: np.ufunc, op) -> None:
    """`tile[indices] = ufunc(tile[indices], value)` on the active lanes, colliding lanes included."""
    where, value = _scatter_args(tile, indices, value, mask, op)
    ufunc.at(tile.base, where, value)
