"""What a name or an expression can stand for while a kernel is being built.

Compile-time values are plain Python objects (ints, floats, dtypes, lists...).
Run-time values wrap the SSA value that holds them:

- `Scalar`: one number (an index, an integer, a float or a bool);
- `TileRef`: a global tensor or an on-chip buffer;
- `VarRef`: a `T.alloc_var` scalar variable (a 1-element local buffer);
- `Access`: `tile[indices]`, resolved by its use: a load in an expression, a
  store as an assignment target, a region when passed to a tile op.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.ir import SSAValue

from tilec.dialects.tile import BufferType, TensorType
from tilec.dtypes import DType, from_ir


@dataclass(frozen=True)
class Scalar:
    """A run-time scalar."""

    ssa: SSAValue

    @property
    def type(self):
        return self.ssa.type

    @property
    def is_index(self) -> bool:
        return isinstance(self.ssa.type, IndexType)

    @property
    def is_int(self) -> bool:
        return isinstance(self.ssa.type, IndexType | IntegerType)

    @property
    def is_bool(self) -> bool:
        return isinstance(self.ssa.type, IntegerType) and self.ssa.type.width.data == 1

    @property
    def dtype(self) -> DType:
        return from_ir(self.ssa.type)


@dataclass(frozen=True)
class TileRef:
    """A tensor in global memory or a buffer on chip."""

    ssa: SSAValue
    name: str = ""

    @property
    def type(self) -> TensorType | BufferType:
        return self.ssa.type

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def scope(self) -> str:
        return self.type.scope

    @property
    def dtype(self) -> DType:
        return from_ir(self.type.element_type)

    def __str__(self) -> str:
        return self.name or self.ssa.name_hint or "tile"


@dataclass(frozen=True)
class VarRef:
    """A scalar variable from `T.alloc_var`: reading the name loads it, assigning stores."""

    tile: TileRef


@dataclass(frozen=True)
class TensorData:
    """`A.data` of a global tensor: what `T.Tensor(shape, dtype, A.data)` views with another shape."""

    tensor: TileRef


@dataclass(frozen=True)
class BarrierRef:
    """An mbarrier of `T.alloc_barrier` (an array of them when allocated with a list), or element `index`."""

    ssa: SSAValue
    index: SSAValue | None = None

    @property
    def count(self) -> int:
        return self.ssa.type.count


@dataclass(frozen=True)
class SliceIndex:
    """`start:stop` inside a subscript; either bound may be missing."""

    start: object = None
    stop: object = None


@dataclass(frozen=True)
class Access:
    """`tile[indices]` before its use decides between load, store and region."""

    tile: TileRef
    indices: tuple = field(default_factory=tuple)

    @property
    def is_point(self) -> bool:
        return not any(isinstance(i, SliceIndex) for i in self.indices)


@dataclass(frozen=True)
class BoundMethod:
    """`x.astype` before it is called."""

    receiver: object
    name: str


@dataclass(frozen=True)
class SwizzleLayout:
    """What `tilec.layout.make_swizzled_layout(buf)` returns inside a kernel."""

    buffer: TileRef
    nbytes: int = 128


@dataclass(frozen=True)
class Affine:
    """`const + sum(coeff * value)` over run-time index values, for slice extents."""

    const: int = 0
    terms: tuple[tuple[SSAValue, int], ...] = ()

    @staticmethod
    def of(value: SSAValue) -> Affine:
        return Affine(0, ((value, 1),))

    def _combine(self, other: Affine, sign: int) -> Affine:
        terms = dict(self.terms)
        for v, c in other.terms:
            terms[v] = terms.get(v, 0) + sign * c
        return Affine(self.const + sign * other.const, tuple((v, c) for v, c in terms.items() if c))

    def __add__(self, other: Affine) -> Affine:
        return self._combine(other, 1)

    def __sub__(self, other: Affine) -> Affine:
        return self._combine(other, -1)

    def scale(self, k: int) -> Affine:
        return Affine(self.const * k, tuple((v, c * k) for v, c in self.terms if c * k))
