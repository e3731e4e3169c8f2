"""Tile ops of the `tile` dialect: whole-tile copies, gemms, fills, reductions, scans and atomics."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BoolAttr,
    IndexType,
    IntegerAttr,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasCanonicalizationPatternsTrait

from .attrs import (
    AtomicKindAttr,
    GemmPolicy,
    GemmPolicyAttr,
    MmaKind,
    MmaKindAttr,
    ReduceKindAttr,
    Scope,
)
from .memory import verify_access
from .structure import ForOp
from .syntax import (
    enum_attr,
    parse_attr_dict,
    parse_operands,
    parse_types,
    print_attr_dict,
    print_operands,
    print_types,
    require_enum,
)
from .types import (
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

    The two shapes must agree once unit dimensions are dropped. `async` (tile-pipeline): a
    cp.async copy from a global tensor into a shared buffer of the same element type, complete
    only after the thread's `tile.async_wait` for its group (and, for other threads, a barrier).

    ```mlir
    tile.copy %a, %s : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
    ```
    """

    name = "tile.copy"
    src = operand_def(TensorType | BufferType)
    dst = operand_def(TensorType | BufferType)
    async_ = opt_prop_def(UnitAttr, prop_name="async")
    traits = traits_def(_TileCanonicalization())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src `,` $dst attr-dict `:` type($src) `,` type($dst)"

    def __init__(self, src: SSAValue, dst: SSAValue, *, is_async: bool = False):
        super().__init__(operands=[src, dst], properties={"async": UnitAttr()} if is_async else {})

    @property
    def is_async(self) -> bool:
        return self.async_ is not None

    def verify_(self) -> None:
        src, dst = tile_type(self.src), tile_type(self.dst)
        _require(squeezed(src.shape) == squeezed(dst.shape),
                 f"{self.name}: shapes differ: src {src.shape} vs dst {dst.shape}")
        if self.is_async:
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

    What the passes decide: `mma` (tile-select-mma) is the tensor-core instruction,
    "m16n8k16" (mma.sync: 16-bit A and B, an f32 fragment C, M % 16, N % 8 and K % 16 zero) or
    "wgmma" (wgmma.mma_async m64nNk16: also A and B shared, A not transposed, M % 64 zero);
    without it the gemm runs on the SIMT cores. On a wgmma inside the consumer loop of a
    warp-specialized kernel (tile-warp-specialize), `in_flight` N leaves the newest N groups of
    wgmmas running past the gemm, and `zero_on_entry` says the fill of C with zeros before the
    loop was dropped: the loop's first iteration computes C = A @ B. `wg_wait` is the program's own
    completion of a wgmma (TileLang's `wg_wait`, `T.wgmma_gemm`): N >= 0 waits until N groups of the
    warpgroup's wgmmas are left running (`wgmma.wait_group N`), -1 leaves this one running until a
    `tile.gemm_wait`; the program then neither reads C nor writes the operands before that wait. A
    gemm the passes pipeline follows `in_flight` instead; on mma.sync and the SIMT path every gemm
    completes in program order, which the program's waits then find done. `wgmma_only`
    (`T.wgmma_gemm`): tile-select-mma gives the gemm wgmma or stops with an error at it.

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
    policy = prop_def(GemmPolicyAttr | StringAttr, default_value=GemmPolicyAttr(GemmPolicy.SQUARE))
    k_pack = prop_def(IntegerAttr, default_value=_i64(1))
    mma = opt_prop_def(MmaKindAttr | StringAttr)
    in_flight = opt_prop_def(IntegerAttr)
    zero_on_entry = opt_prop_def(UnitAttr)
    wg_wait = opt_prop_def(IntegerAttr)
    wgmma_only = opt_prop_def(UnitAttr)

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
        if policy != GemmPolicy.SQUARE:
            props["policy"] = enum_attr(GemmPolicyAttr, policy)
        if k_pack != 1:
            props["k_pack"] = _i64(k_pack)
        super().__init__(operands=[a, b, c], properties=props)

    @property
    def trans_a(self) -> bool:
        return bool(self.transpose_a.value.data)

    @property
    def trans_b(self) -> bool:
        return bool(self.transpose_b.value.data)

    @property
    def mma_kind(self) -> MmaKind | None:
        """The tensor-core instruction tile-select-mma chose (None: the SIMT path)."""
        return self.mma.data if isinstance(self.mma, MmaKindAttr) else None

    def print(self, printer: Printer) -> None:
        print_operands(printer, [self.a, self.b, self.c])
        print_attr_dict(printer, self)
        print_types(printer, [self.a, self.b, self.c])

    @classmethod
    def parse(cls, parser: Parser) -> GemmOp:
        operands = parse_operands(parser)
        props, attrs = parse_attr_dict(parser, cls, {"policy": GemmPolicyAttr, "mma": MmaKindAttr})
        op = cls.create(operands=parse_types(parser, operands), properties=props)
        op.attributes |= attrs
        return op

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
        require_enum(self, "policy", GemmPolicyAttr)
        _require(self.k_pack.value.data >= 1, f"{self.name}: k_pack must be >= 1")
        require_enum(self, "mma", MmaKindAttr)
        self._verify_mma(a, b, c, m, n, k)

    def _verify_mma(self, a, b, c, m: int, n: int, k: int) -> None:
        kind = self.mma_kind
        fp8 = str(a.element_type) in ("f8E4M3FN", "f8E5M2")
        if kind is not None:
            _require((str(a.element_type) in ("f16", "bf16") or fp8 and kind == MmaKind.WGMMA)
                     and str(c.element_type) == "f32" and c.scope == Scope.FRAGMENT,
                     f"{self.name}: mma = {kind} multiplies f16 or bf16{' (or fp8)' if kind == MmaKind.WGMMA else ''} "
                     f"into an f32 fragment, got "
                     f"{a.element_type} into {c}")
            _require(m % 16 == 0 and n % 8 == 0 and k % 16 == 0,
                     f"{self.name}: mma = {kind} needs M % 16, N % 8 and K % 16 zero, got {(m, n, k)}")
        if kind == MmaKind.WGMMA and fp8:  # 8-bit operands: k32 steps, both K-major in shared memory
            _require(a.scope == Scope.SHARED and self.trans_b and k % 32 == 0,
                     f"{self.name}: mma = wgmma reads fp8 A [M, K] and B [N, K] (transpose_b) from shared memory, "
                     f"K % 32 zero")
        if kind == MmaKind.WGMMA:  # A from shared memory (SS, K- or M-major) or from registers (RS, a fragment)
            _require(a.scope in (Scope.SHARED, Scope.FRAGMENT) and b.scope == Scope.SHARED and m % 64 == 0
                     and not (self.trans_a and a.scope == Scope.FRAGMENT),
                     f"{self.name}: mma = wgmma reads A ([M, K] or, transposed, [K, M]; M % 64 zero) from shared "
                     f"memory or ([M, K]) from registers, and B from shared memory")
        for what in ("in_flight", "zero_on_entry"):
            _require(getattr(self, what) is None or kind == MmaKind.WGMMA,
                     f"{self.name}: {what} is a fact of asynchronous wgmmas (mma = wgmma)")
        _require(self.in_flight is None or self.in_flight.value.data >= 0,
                 f"{self.name}: in_flight must be >= 0")
        _require(self.wg_wait is None or self.wg_wait.value.data >= -1,
                 f"{self.name}: wg_wait must be -1 (no wait) or a count of groups >= 0")
        if self.zero_on_entry is not None:
            _require(isinstance(self.parent_op(), ForOp) and not self.clear_accum.value.data,
                     f"{self.name}: zero_on_entry is for a gemm of a loop body that accumulates")


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
    kind = prop_def(ReduceKindAttr | StringAttr)
    dim = prop_def(IntegerAttr)
    clear = prop_def(BoolAttr)

    def __init__(self, src: SSAValue, dst: SSAValue, kind: str, dim: int, clear: bool = True):
        super().__init__(operands=[src, dst], properties={"kind": enum_attr(ReduceKindAttr, kind), "dim": _i64(dim),
                                                          "clear": _bool(clear)})

    def print(self, printer: Printer) -> None:
        print_operands(printer, [self.src, self.dst])
        print_attr_dict(printer, self)
        print_types(printer, [self.src, self.dst])

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        operands = parse_operands(parser)
        props, attrs = parse_attr_dict(parser, cls, {"kind": ReduceKindAttr})
        op = cls.create(operands=parse_types(parser, operands), properties=props)
        op.attributes |= attrs
        return op

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        src, dst = tile_type(self.src), tile_type(self.dst)
        require_enum(self, "kind", ReduceKindAttr)
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
    `dst` and `value` are tiles of the same shape. `in_bounds`: as for `tile.region`.
    `prev` (one element only, `return_prev=True`): the element's value just before this
    update, as CUDA's `atomicAdd` returns it.

    ```mlir
    tile.atomic %C[%i], %v {kind = "add"} : !tile.tensor<64xf32>, f32
    %old = tile.atomic %C[%i], %v {kind = "add"} : !tile.tensor<64xf32>, f32 -> f32
    ```
    """

    name = "tile.atomic"
    dst = operand_def(TensorType | BufferType)
    indices = var_operand_def(IndexType())
    value = operand_def()
    kind = prop_def(AtomicKindAttr | StringAttr)
    in_bounds = opt_prop_def(UnitAttr)
    prev = opt_result_def()

    def __init__(self, dst: SSAValue, indices: Sequence[SSAValue], value: SSAValue, kind: str,
                 return_prev: bool = False):
        results = [[tile_type(dst).element_type] if return_prev else []]
        super().__init__(operands=[dst, indices, value], properties={"kind": enum_attr(AtomicKindAttr, kind)},
                         result_types=results)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.dst)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_ssa_value)
        printer.print_string("], ")
        printer.print_ssa_value(self.value)
        print_attr_dict(printer, self)
        print_types(printer, [self.dst, self.value])
        if self.prev is not None:
            printer.print_string(" -> ")
            printer.print_attribute(self.prev.type)

    @classmethod
    def parse(cls, parser: Parser) -> AtomicOp:
        dst = parser.parse_unresolved_operand()
        indices = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        parser.parse_punctuation(",")
        value = parser.parse_unresolved_operand()
        props, attrs = parse_attr_dict(parser, cls, {"kind": AtomicKindAttr})
        dst, value = parse_types(parser, [dst, value])
        results = [parser.parse_type()] if parser.parse_optional_punctuation("->") else []
        indices = [parser.resolve_operand(i, IndexType()) for i in indices]
        op = cls.create(operands=[dst, *indices, value], properties=props, result_types=results)
        op.attributes |= attrs
        return op

    def verify_(self) -> None:
        require_enum(self, "kind", AtomicKindAttr)
        dst = tile_type(self.dst)
        _require(dst.scope in ("global", "shared"), f"{self.name}: dst must be global or shared, got {dst.scope}")
        if self.indices:
            verify_access(self, self.dst, self.indices, self.value.type, "updates")
            _require(self.prev is None or self.prev.type == dst.element_type,
                     f"{self.name}: prev must be of dst's element type {dst.element_type}")
            return
        _require(self.prev is None, f"{self.name}: prev is one element's value: a tile-wide atomic has none")
        _require_tile(self, self.value, "value")
        _require(squeezed(tile_type(self.value).shape) == squeezed(dst.shape),
                 f"{self.name}: shapes differ: value {tile_type(self.value).shape} vs dst {dst.shape}")

