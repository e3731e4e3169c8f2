"""Custom layouts of global tensors: `T.annotate_layout({dQ: T.Layout(dQ.shape, fn)})`.

A TileLang program may keep a global tensor in an order of its own: flash attention's backward
pass stores dQ as `lambda b, h, l, d: [b, h, l // 8, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2]`,
so that the atomic adds of one warp land on consecutive addresses. The layout says that element
`idx` of the tensor lives at the row-major position of `fn(*idx)` in a buffer of fn's output
extents, which holds as many elements as the tensor (checked). Every kernel that shares the
buffer annotates it with the same layout, so the order is a matter between those kernels.

This module owns that rule in the frontend:

- `make_layout` builds a `CustomLayout` (output extents by interval arithmetic on `fn`, and, for
  static shapes, a check that `fn` is a one-to-one map onto the buffer);
- `physical_indices` turns an element access `A[idx]` of a laid-out tensor into the logical index
  of the same memory position, `unravel(ravel(fn(idx)))` over the tensor's own shape, which every
  target then addresses as usual;
- `copy_elementwise` builds a `T.copy` (or a tile-wide `T.atomic_*`) one of whose sides is a
  laid-out tensor as an element loop (`T.Parallel` over the region, each element guarded by the
  tensor's bounds as T.copy masks).

Any other tile operation on a laid-out tensor is refused where it is written
(`refuse_tile_operand`).
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass

import numpy as np

from tilec.dialects import tile
from tilec.language.program import Symbol

from .values import Access, Scalar, SliceIndex, TileRef

CHECK_LIMIT = 1 << 22
"""Static layouts of at most this many elements are checked to be one-to-one."""


@dataclass(frozen=True)
class CustomLayout:
    """`T.Layout(shape, fn)`: element idx of a tensor of `shape` at row-major position fn(idx) of `out_shape`."""

    shape: tuple  # ints and Symbols (a T.dynamic size)
    fn: object
    out_shape: tuple  # ints and Symbols

    def __repr__(self) -> str:
        return f"T.Layout({list(self.shape)} -> {list(self.out_shape)})"


# ------------------------------------------------------------------ output extents


@dataclass(frozen=True)
class _Range:
    """An integer expression of the layout's inputs, by its range [lo, hi] (hi may be inf); `var` is
    the input dimension it is, when it is one bare."""

    lo: float
    hi: float
    var: int | None = None

    def _other(self, x):
        if isinstance(x, _Range):
            return x
        if isinstance(x, int) and not isinstance(x, bool):
            return _Range(x, x)
        raise TypeError(f"layout functions compute with integers, got {x!r}")

    def __add__(self, x):
        x = self._other(x)
        return _Range(self.lo + x.lo, self.hi + x.hi)

    __radd__ = __add__

    def __sub__(self, x):
        x = self._other(x)
        return _Range(self.lo - x.hi, self.hi - x.lo)

    def __rsub__(self, x):
        return self._other(x) - self

    def __mul__(self, x):
        x = self._other(x)
        ends = [a * b for a in (self.lo, self.hi) for b in (x.lo, x.hi) if not (math.isinf(a) and b == 0)
                and not (math.isinf(b) and a == 0)] or [0]
        return _Range(min(ends), max(ends))

    __rmul__ = __mul__

    def __floordiv__(self, x):
        k = self._divisor(x)
        return _Range(self.lo // k, self.hi if math.isinf(self.hi) else self.hi // k)

    def __mod__(self, x):
        k = self._divisor(x)
        if self.lo >= 0 and self.hi < k:
            return self
        return _Range(0, k - 1)

    def _divisor(self, x) -> int:
        if not isinstance(x, int) or isinstance(x, bool) or x <= 0:
            raise TypeError(f"layout functions divide by positive integer constants, got {x!r}")
        return x


def make_layout(v, shape, fn) -> CustomLayout:
    """The `CustomLayout` of `T.Layout(shape, fn)`, or a located error saying what is wrong with it."""
    if isinstance(shape, int):
        shape = (shape,)
    if not isinstance(shape, tuple | list) or not callable(fn):
        raise v.b.error("T.Layout takes a shape and a function of the indices: T.Layout(A.shape, lambda i, j: [...])")
    dims = tuple(Symbol("?") if d == tile.DYNAMIC else d for d in shape)
    for d in dims:
        if not (isinstance(d, Symbol) or isinstance(d, int) and not isinstance(d, bool) and d > 0):
            raise v.b.error(f"T.Layout: the shape's sizes must be positive integers or tensor sizes, got {d!r}")
    ranges = [_Range(0, d - 1 if isinstance(d, int) else math.inf, var=k) for k, d in enumerate(dims)]
    try:
        out = fn(*ranges)
    except TypeError as e:
        raise v.b.error(f"T.Layout: the function cannot be evaluated on {len(dims)} indices: {e}",
                        hint="write it with + - * and // % by integer constants, e.g. lambda i, j: [j, i]") from None
    out = list(out) if isinstance(out, list | tuple) else [out]
    out_shape = []
    for k, e in enumerate(out):
        if isinstance(e, int) and not isinstance(e, bool):
            e = _Range(e, e)
        if not isinstance(e, _Range):
            raise v.b.error(f"T.Layout: output {k} of the function is {e!r}, not an integer expression")
        if e.var is not None:
            out_shape.append(dims[e.var])
        elif e.lo < 0 or math.isinf(e.hi):
            raise v.b.error(f"T.Layout: output {k} of the function has no bounded non-negative range "
                            f"({e.lo} to {e.hi})", hint="a run-time size may only appear as a bare index "
                                                         "(a permutation of that dimension)")
        else:
            out_shape.append(int(e.hi) + 1)
    layout = CustomLayout(dims, fn, tuple(out_shape))
    _check_one_to_one(v, layout)
    return layout


def _check_one_to_one(v, layout: CustomLayout) -> None:
    static = [d for d in layout.shape if isinstance(d, int)]
    out_static = [d for d in layout.out_shape if isinstance(d, int)]
    dynamic = sorted(id(d) for d in layout.shape if isinstance(d, Symbol))
    out_dynamic = sorted(id(d) for d in layout.out_shape if isinstance(d, Symbol))
    if math.prod(static) != math.prod(out_static) or dynamic != out_dynamic:
        raise v.b.error(f"{layout!r} does not have as many elements as the tensor",
                        hint="a layout of a global tensor must place every element exactly once")
    if dynamic or math.prod(static) > CHECK_LIMIT:
        return
    idx = np.indices(layout.shape).reshape(len(layout.shape), -1)
    out = [np.broadcast_to(np.asarray(e, dtype=np.int64), idx.shape[1:]) for e in layout.fn(*idx)]
    flat = np.ravel_multi_index(out, layout.out_shape, mode="clip")
    if np.unique(flat).size != flat.size:
        raise v.b.error(f"{layout!r} maps two elements to one position",
                        hint="a layout of a global tensor must place every element exactly once")


# ------------------------------------------------------------------ element accesses


class _Value:
    """A frontend integer (int or index Scalar) that builds IR for the layout function's arithmetic."""

    def __init__(self, v, value):
        self.v, self.value = v, value

    def _op(self, op: str, other, reverse: bool = False):
        other = other.value if isinstance(other, _Value) else other
        a, b = (other, self.value) if reverse else (self.value, other)
        return _Value(self.v, _arith(self.v, op, a, b))

    def __add__(self, x):
        return self._op("+", x)

    def __radd__(self, x):
        return self._op("+", x, True)

    def __sub__(self, x):
        return self._op("-", x)

    def __rsub__(self, x):
        return self._op("-", x, True)

    def __mul__(self, x):
        return self._op("*", x)

    def __rmul__(self, x):
        return self._op("*", x, True)

    def __floordiv__(self, x):
        return self._op("//", x)

    def __mod__(self, x):
        return self._op("%", x)


def _arith(v, op: str, a, b):
    if not isinstance(a, Scalar) and not isinstance(b, Scalar):
        return {"+": a + b, "-": a - b, "*": a * b}.get(op) if op in "+-*" else (a // b if op == "//" else a % b)
    if op in "+*" and (b == 0 if not isinstance(b, Scalar) else False):
        return 0 if op == "*" else a
    if op == "*" and not isinstance(b, Scalar) and b == 1 or op in "+-" and not isinstance(b, Scalar) and b == 0:
        return a
    return v.b.binop(op, a, b)


def _size(v, ref: TileRef, axis: int):
    n = ref.shape[axis]
    if n != tile.DYNAMIC:
        return n
    return Scalar(v.b.emit(tile.DimOp(ref.ssa, axis)).results[0])


def physical_indices(v, ref: TileRef, layout: CustomLayout, indices) -> tuple:
    """The logical indices of `ref` that address the memory position where `layout` puts `indices`."""
    values = [v.rvalue(i) for i in indices]
    if len(values) != len(layout.shape):
        raise v.b.error(f"{ref} has {len(layout.shape)} dimensions but is indexed with {len(values)}")
    out = layout.fn(*[_Value(v, x) for x in values])
    out = list(out) if isinstance(out, list | tuple) else [out]
    if [o.value if isinstance(o, _Value) else o for o in out] == values and layout.out_shape == layout.shape:
        return tuple(values)  # the identity layout
    flat = 0
    for k, o in enumerate(out):
        o = o.value if isinstance(o, _Value) else o
        n = layout.out_shape[k]
        n = _size(v, ref, next(a for a, d in enumerate(layout.shape) if d is n)) if isinstance(n, Symbol) else n
        flat = _arith(v, "+", _arith(v, "*", flat, n), o)
    logical = []
    for axis in reversed(range(len(ref.shape))):
        n = _size(v, ref, axis)
        logical.append(_arith(v, "%", flat, n) if axis else flat)
        if axis:
            flat = _arith(v, "//", flat, n)
    return tuple(reversed(logical))


def laid_out(v, value) -> CustomLayout | None:
    """The custom layout of the tensor `value` (a tensor or an access of one) addresses, if any."""
    ref = value.tile if isinstance(value, Access) else value
    return v.custom_layouts.get(ref.ssa) if isinstance(ref, TileRef) else None


def refuse_tile_operand(v, value, what: str) -> None:
    if laid_out(v, value) is not None:
        raise v.b.error(f"{what}: {value.tile if isinstance(value, Access) else value} has a custom T.Layout, "
                        "which tilec addresses element by element", hint="read or write it element-wise "
                                                                         "(inside T.Parallel) or with T.copy")


# ------------------------------------------------------------------ T.copy as an element loop


def _side(v, value, other_shape, what: str):
    """(root tensor or buffer, offset per dimension, extent per dimension) of a T.copy operand."""
    from .calls.operands import _extent

    if isinstance(value, TileRef):
        return value, [0] * len(value.shape), list(value.shape)
    if not isinstance(value, Access):
        raise v.b.error(f"{what} must be a tile or a region of one")
    ref = value.tile
    if value.is_point:
        if other_shape is None:
            raise v.b.error(f"{what} is a single element; the other operand does not give a region shape")
        hint = [e for e in other_shape]
        while len(hint) > len(ref.shape) and hint[0] == 1:
            hint = hint[1:]
        extents = [1] * (len(ref.shape) - len(hint)) + hint
        return ref, list(value.indices), extents
    extents = [_extent(v, ref, d, i) for d, i in enumerate(value.indices)]
    offsets = [(0 if i.start is None else i.start) if isinstance(i, SliceIndex) else i for i in value.indices]
    return ref, offsets, extents


def copy_elementwise(v, src, dst, atomic: str | None = None) -> None:
    """`T.copy(src, dst)` where a side is a laid-out tensor: `for i.. in T.Parallel(extents): dst[..] = src[..]`,
    each element of a global side guarded by that tensor's bounds; with `atomic` ("add", "max", "min"),
    `T.atomic_<atomic>(dst, src)` the same way, one element atomic each."""
    import tilec.language as T

    from .calls.operands import explicit_shape

    s_ref, s_off, s_ext = _side(v, src, explicit_shape(v, dst), "T.copy source")
    d_ref, d_off, d_ext = _side(v, dst, s_ext, "T.copy destination")
    extents = [e for e in s_ext if e != 1] or [1]
    if extents != ([e for e in d_ext if e != 1] or [1]):
        raise v.b.error(f"T.copy shapes differ: src {tuple(s_ext)} vs dst {tuple(d_ext)}",
                        hint="make both sides the same shape")
    names = {"_tl_T": T, "_tl_s": s_ref, "_tl_d": d_ref}
    ivs = [f"_tl_i{m}" for m in range(len(extents))]

    def indices(prefix: str, offsets, exts, ref) -> tuple[str, list[str]]:
        out, guards, m = [], [], 0
        for k, (o, e) in enumerate(zip(offsets, exts)):
            names[f"{prefix}{k}"] = o
            expr = f"{prefix}{k}" if e == 1 else f"{prefix}{k} + {ivs[m]}"
            m += e != 1
            out.append(expr)
            n = ref.shape[k]
            static_fit = isinstance(o, int) and n != tile.DYNAMIC and o + e <= n
            if ref.scope == "global" and not static_fit:
                names[f"{prefix}n{k}"] = _size(v, ref, k)
                guards.append(f"{expr} < {prefix}n{k}")
        return ", ".join(out), guards

    s_idx, s_guards = indices("_tl_so", s_off, s_ext, s_ref)
    d_idx, d_guards = indices("_tl_do", d_off, d_ext, d_ref)
    body = f"_tl_d[{d_idx}] = _tl_s[{s_idx}]" if atomic is None else \
        f"_tl_T.atomic_{atomic}(_tl_d[{d_idx}], _tl_s[{s_idx}])"
    guards = s_guards + d_guards
    if guards:
        body = f"if {' and '.join(guards)}:\n        {body}"
    code = f"for {', '.join(ivs)} in _tl_T.Parallel({', '.join(map(str, extents))}):\n    {body}\n"
    visit_generated(v, code, names)


def visit_generated(v, code: str, names: dict) -> None:
    """Builds `code` (kernel Python written by the compiler) where the current builtin is called:
    `names` are bound for it, and its errors point at the builtin's call."""
    loc, frame = v.b.loc, v.frame
    tree = ast.parse(code).body
    for node in [n for stmt in tree for n in ast.walk(stmt)]:
        if hasattr(node, "lineno"):
            node.lineno = loc.line - frame.first_line + 1
            node.col_offset = max(0, loc.col - frame.indent - 1)
    saved = {k: frame.names[k] for k in names if k in frame.names}
    frame.names.update(names)
    try:
        v.visit_body(tree)
    finally:
        for k in names:
            frame.names.pop(k, None)
        frame.names.update(saved)
        v.b.loc = loc
