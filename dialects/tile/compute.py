"""Tile ops of the `tile` dialect: whole-tile copies, gemms, fills, reductions, scans and atomics."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BoolAttr,
    IndexType,
    IntegerAttr,
    StringAttr,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import HasCanonicalizationPatternsTrait

from .memory import verify_access
from .types import (
    ATOMIC_KINDS,
    GEMM_POLICIES,
    REDUCE_KINDS,
    BufferType,
    TensorType,
    _bool,
    _i64,
    _require,
    _require_tile,
    squeezed,
    tile_type,
)


class _TileCanonicalization(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls):
        from tilec.passes.canonicalize.tile import patterns

        return patterns()


@irdl_op_definition
class CopyOp(IRDLOperation):
    """Copies `src` into `dst`, converting the element type.

    The two shapes must agree once unit dimensions are dropped.

    ```mlir
    tile.copy %a, %s : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
    ```
    """

    name = "tile.copy"
    src = operand_def(TensorType | BufferType)
    dst = operand_def(TensorType | BufferType)
    traits = traits_def(_TileCanonicalization())
    assembly_format = "$src `,` $dst attr-dict `:` type($src) `,` type($dst)"

    def __init__(self, src: SSAValue, dst: SSAValue):
        super().__init__(operands=[src, dst])

    def verify_(self) -> None:
        src, dst = tile_type(self.src), tile_type(self.dst)
        _require(squeezed(src.shape) == squeezed(dst.shape),
                 f"{self.name}: shapes differ: src {src.shape} vs dst {dst.shape}")
        if "async" in self.attributes:
            _require(isinstance(src, TensorType) and isinstance(dst, BufferType) and dst.scope == "shared"
                     and src.element_type == dst.element_type,
                     f"{self.name}: an async copy goes from a global tensor to a shared buffer of the same element "
                     f"type, got {src} to {dst}")


@irdl_op_definition
class GemmOp(IRDLOperation):
    """`C += A @ B` on tiles (`C = A @ B` with `clear_accum`).

    A is MxK (KxM with `transpose_a`), B is KxN (NxK with `transpose_b`), C is
    an MxN fragment.  `policy` says how warps split the MxN tile
    (square, full_row, full_col); `k_pack` packs K for MFMA.

    ```mlir
    tile.gemm %a, %b, %c {transpose_b = true} : !tile.buffer<64x32xf16, shared>, !tile.buffer<64x32xf16, shared>, !tile.buffer<64x64xf32, fragment>
    ```
    """

    name = "tile.gemm"
    a = operand_def(BufferType)
    b = operand_def(BufferType)
    c = operand_def(BufferType)
    transpose_a = prop_def(BoolAttr, default_value=_bool(False))
    transpose_b = prop_def(BoolAttr, default_value=_bool(False))
    clear_accum = prop_def(BoolAttr, default_value=_bool(False))
    policy = prop_def(StringAttr, default_value=StringAttr("square"))
    k_pack = prop_def(IntegerAttr, default_value=_i64(1))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$a `,` $b `,` $c attr-dict `:` type($a) `,` type($b) `,` type($c)"

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue, *, transpose_a=False, transpose_b=False,
                 clear_accum=False, policy="square", k_pack=1):
        props = {}
        # Defaults stay implicit so that the printed form shows only what differs.
        if transpose_a:
            props["transpose_a"] = _bool(True)
        if transpose_b:
            props["transpose_b"] = _bool(True)
        if clear_accum:
            props["clear_accum"] = _bool(True)
        if policy != "square":
            props["policy"] = StringAttr(policy)
        if k_pack != 1:
            props["k_pack"] = _i64(k_pack)
        super().__init__(operands=[a, b, c], properties=props)

    @property
    def trans_a(self) -> bool:
        return bool(self.transpose_a.value.data)

    @property
    def trans_b(self) -> bool:
        return bool(self.transpose_b.value.data)

    def mnk(self) -> tuple[int, int, int]:
        a, b = tile_type(self.a).shape, tile_type(self.b).shape
        m, k = (a[1], a[0]) if self.trans_a else a
        _, n = (b[1], b[0]) if self.trans_b else b
        return m, n, k

    def verify_(self) -> None:
        for what, value, scopes in (("A", self.a, ("shared", "fragment")), ("B", self.b, ("shared", "fragment")),
                                    ("C", self.c, ("fragment", "local"))):
            _require_tile(self, value, what, scopes)
            _require(tile_type(value).rank == 2, f"{self.name}: {what} must be 2-D, got shape {tile_type(value).shape}")
        a, b, c = (tile_type(v) for v in (self.a, self.b, self.c))
        m, k = (a.shape[1], a.shape[0]) if self.trans_a else a.shape
        kb, n = (b.shape[1], b.shape[0]) if self.trans_b else b.shape
        _require(k == kb, f"{self.name}: K differs: A gives {k}, B gives {kb} (A {a.shape}, B {b.shape})")
        _require(c.shape == (m, n), f"{self.name}: C must be {(m, n)} for A {a.shape} and B {b.shape}, got {c.shape}")
        _require(a.element_type == b.element_type,
                 f"{self.name}: A and B element types differ: {a.element_type} vs {b.element_type}")
        _require(self.policy.data in GEMM_POLICIES,
                 f"{self.name}: policy must be one of {', '.join(GEMM_POLICIES)}, got '{self.policy.data}'")
        _require(self.k_pack.value.data >= 1, f"{self.name}: k_pack must be >= 1")


@irdl_op_definition
class FillOp(IRDLOperation):
    """Sets every element of a tile to `value` (`T.fill`, `T.clear`).

    ```mlir
    %z = arith.constant 0.0 : f32
    tile.fill %c, %z : !tile.buffer<64x64xf32, fragment>, f32
    ```
    """

    name = "tile.fill"
    dst = operand_def(TensorType | BufferType)
    value = operand_def()
    assembly_format = "$dst `,` $value attr-dict `:` type($dst) `,` type($value)"

    def __init__(self, dst: SSAValue, value: SSAValue):
        super().__init__(operands=[dst, value])

    def verify_(self) -> None:
        typ = tile_type(self.dst)
        _require(self.value.type == typ.element_type,
                 f"{self.name}: value type {self.value.type} differs from element type {typ.element_type}")


def reduced_shape(shape: Sequence[int], dim: int) -> tuple[int, ...]:
    """The shape a reduction along `dim` produces (a 1-D tile reduces to (1,))."""
    rest = tuple(s for i, s in enumerate(shape) if i != dim)
    return rest or (1,)


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """Reduces `src` along `dim` into `dst` (`T.reduce_sum` and friends).

    With `clear = false` the old contents of `dst` take part in the reduction.

    ```mlir
    tile.reduce %x, %m {kind = "max", dim = 1 : i64, clear = true} : !tile.buffer<4x512xf32, fragment>, !tile.buffer<4xf32, fragment>
    ```
    """

    name = "tile.reduce"
    src = operand_def(BufferType)
    dst = operand_def(BufferType)
    kind = prop_def(StringAttr)
    dim = prop_def(IntegerAttr)
    clear = prop_def(BoolAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src `,` $dst attr-dict `:` type($src) `,` type($dst)"

    def __init__(self, src: SSAValue, dst: SSAValue, kind: str, dim: int, clear: bool = True):
        super().__init__(operands=[src, dst],
                         properties={"kind": StringAttr(kind), "dim": _i64(dim), "clear": _bool(clear)})

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        src, dst = tile_type(self.src), tile_type(self.dst)
        _require(self.kind.data in REDUCE_KINDS,
                 f"{self.name}: kind must be one of {', '.join(REDUCE_KINDS)}, got '{self.kind.data}'")
        _require(0 <= self.axis < src.rank, f"{self.name}: dim {self.axis} out of range for a rank-{src.rank} source")
        want = reduced_shape(src.shape, self.axis)
        _require(dst.shape == want,
                 f"{self.name}: reducing {src.shape} along dim {self.axis} gives {want}, but dst is {dst.shape}")


class _ScanOp(IRDLOperation):
    src = operand_def(BufferType)
    dst = operand_def(BufferType)
    dim = prop_def(IntegerAttr, default_value=_i64(0))
    reverse = prop_def(BoolAttr, default_value=_bool(False))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src `,` $dst attr-dict `:` type($src) `,` type($dst)"

    def __init__(self, src: SSAValue, dst: SSAValue, dim: int = 0, reverse: bool = False):
        props = {"dim": _i64(dim)}
        if reverse:
            props["reverse"] = _bool(True)
        super().__init__(operands=[src, dst], properties=props)

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        src, dst = tile_type(self.src), tile_type(self.dst)
        _require(src.shape == dst.shape, f"{self.name}: src {src.shape} and dst {dst.shape} shapes differ")
        _require(0 <= self.axis < src.rank, f"{self.name}: dim {self.axis} out of range for a rank-{src.rank} source")


@irdl_op_definition
class CumsumOp(_ScanOp):
    """Inclusive prefix sum along `dim` (`T.cumsum`); `reverse` scans from the end.

    ```mlir
    tile.cumsum %x, %y {dim = 1 : i64} : !tile.buffer<4x64xf32, fragment>, !tile.buffer<4x64xf32, fragment>
    ```
    """

    name = "tile.cumsum"


@irdl_op_definition
class CummaxOp(_ScanOp):
    """Inclusive running maximum along `dim` (`T.cummax`).

    ```mlir
    tile.cummax %x, %y : !tile.buffer<64xf32, shared>, !tile.buffer<64xf32, shared>
    ```
    """

    name = "tile.cummax"


@irdl_op_definition
class AtomicOp(IRDLOperation):
    """Atomically combines `value` into `dst` (`T.atomic_add/max/min`).

    With indices, `dst[indices]` is one element and `value` a scalar; without,
    `dst` and `value` are tiles of the same shape.

    ```mlir
    tile.atomic %C[%i], %v {kind = "add"} : !tile.tensor<64xf32>, f32
    ```
    """

    name = "tile.atomic"
    dst = operand_def(TensorType | BufferType)
    indices = var_operand_def(IndexType())
    value = operand_def()
    kind = prop_def(StringAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$dst `[` $indices `]` `,` $value attr-dict `:` type($dst) `,` type($value)"

    def __init__(self, dst: SSAValue, indices: Sequence[SSAValue], value: SSAValue, kind: str):
        super().__init__(operands=[dst, indices, value], properties={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        _require(self.kind.data in ATOMIC_KINDS,
                 f"{self.name}: kind must be one of {', '.join(ATOMIC_KINDS)}, got '{self.kind.data}'")
        dst = tile_type(self.dst)
        _require(dst.scope in ("global", "shared"), f"{self.name}: dst must be global or shared, got {dst.scope}")
        if self.indices:
            verify_access(self, self.dst, self.indices, self.value.type, "updates")
            return
        _require_tile(self, self.value, "value")
        _require(squeezed(tile_type(self.value).shape) == squeezed(dst.shape),
                 f"{self.name}: shapes differ: value {tile_type(self.value).shape} vs dst {dst.shape}")

