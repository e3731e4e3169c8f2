"""Operations of the `tile` dialect (see the package docstring for the whole picture)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    StringAttr,
    i1,
)
from xdsl.ir import (
    Attribute,
    Block,
    Operation,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasCanonicalizationPatternsTrait,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
)

from .types import (
    ATOMIC_KINDS,
    DYNAMIC,
    GEMM_POLICIES,
    LOOP_KINDS,
    REDUCE_KINDS,
    BufferType,
    MBarrierType,
    SwizzleLayoutAttr,
    TensorType,
    TileType,
    _bool,
    _i64,
    _i64_array,
    _require,
    _require_tile,
    squeezed,
    tile_type,
)


def _in_kernel(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, KernelOp):
            return True
        parent = parent.parent_op()
    return False


# --------------------------------------------------------------------------- #
# Structure: kernel, loops, terminator
# --------------------------------------------------------------------------- #


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates the body of `tile.kernel`, `tile.parallel` and `tile.for`."""

    name = "tile.yield"
    traits = lazy_traits_def(lambda: (IsTerminator(), Pure()))
    assembly_format = "attr-dict"


def _print_body(printer: Printer, body: Region) -> None:
    printer.print_string(" ")
    printer.print_region(body, print_entry_block_args=False, print_block_terminators=False)


def _parse_body(parser: Parser, args: Sequence[Parser.Argument]) -> Region:
    region = parser.parse_region(args)
    block = region.block
    if not isinstance(block.last_op, YieldOp):
        block.add_op(YieldOp())
    return region


def _parse_index_args(parser: Parser) -> list[Parser.Argument]:
    return [
        arg.resolve(IndexType())
        for arg in parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False)
        )
    ]


@irdl_op_definition
class KernelOp(IRDLOperation):
    """Launches the body once per block of a 1-3 dimensional grid.

    The body's arguments are the block indices, one per grid dimension.
    `threads` is the block shape [x, y, z].

    ```mlir
    %n = arith.constant 4 : index
    tile.kernel (%bx) in (%n) threads [128, 1, 1] {
    }
    ```
    """

    name = "tile.kernel"
    grid = var_operand_def(IndexType())
    threads = prop_def(DenseArrayBase)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(self, grid: Sequence[SSAValue], threads: Sequence[int]):
        block = Block(arg_types=[IndexType()] * len(grid))
        block.add_op(YieldOp())
        super().__init__(
            operands=[grid],
            properties={"threads": _i64_array(threads)},
            regions=[Region(block)],
        )

    @property
    def thread_extents(self) -> tuple[int, int, int]:
        x, y, z = self.threads.get_values()
        return x, y, z

    @property
    def num_threads(self) -> int:
        x, y, z = self.thread_extents
        return x * y * z

    def verify_(self) -> None:
        _require(1 <= len(self.grid) <= 3, f"{self.name}: grid must have 1 to 3 dimensions, got {len(self.grid)}")
        _require(
            len(self.body.block.args) == len(self.grid),
            f"{self.name}: the body needs one block index per grid dimension",
        )
        threads = self.threads.get_values()
        _require(len(threads) == 3 and all(t >= 1 for t in threads),
                 f"{self.name}: threads must be three positive extents, got {list(threads)}")
        _require(self.num_threads <= 1024,
                 f"{self.name}: at most 1024 threads per block, got {self.num_threads}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_list(self.body.block.args, printer.print_ssa_value)
        printer.print_string(") in (")
        printer.print_list(self.grid, printer.print_ssa_value)
        printer.print_string(f") threads [{', '.join(map(str, self.thread_extents))}]")
        _print_body(printer, self.body)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        args = _parse_index_args(parser)
        parser.parse_keyword("in")
        grid = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        grid = parser.resolve_operands(grid, [IndexType()] * len(grid), parser.pos)
        parser.parse_keyword("threads")
        threads = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
        body = _parse_body(parser, args)
        attrs = parser.parse_optional_attr_dict()
        op = cls.__new__(cls)
        IRDLOperation.__init__(
            op, operands=[grid], properties={"threads": _i64_array(threads)}, regions=[body]
        )
        op.attributes |= attrs
        return op


@irdl_op_definition
class ParallelOp(IRDLOperation):
    """An element-wise loop nest over a tile: `T.Parallel(4, 512)`.

    Iterations are independent; the compiler partitions them over the block's
    threads and vectorizes them.  So the body works on elements (`parallel_body_error`
    says what it may not hold): no whole-tile or block-wide ops, only local buffers
    allocated in it, each fragment element written by one iteration, inner loops with
    the same bounds for every iteration, and no writes to local buffers allocated
    outside (a per-element temporary lives in the body).

    ```mlir
    tile.parallel (%i, %j) in [4, 512] {
    }
    ```
    """

    name = "tile.parallel"
    extents = prop_def(DenseArrayBase)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(self, extents: Sequence[int]):
        block = Block(arg_types=[IndexType()] * len(extents))
        block.add_op(YieldOp())
        super().__init__(properties={"extents": _i64_array(extents)}, regions=[Region(block)])

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.extents.get_values())

    def verify_(self) -> None:
        _require(len(self.shape) >= 1, f"{self.name}: needs at least one extent")
        _require(all(e >= 1 for e in self.shape), f"{self.name}: extents must be positive, got {list(self.shape)}")
        _require(len(self.body.block.args) == len(self.shape),
                 f"{self.name}: the body needs one index per extent")
        _require(_in_kernel(self), f"{self.name}: must be inside a tile.kernel")
        from .parallel_body import parallel_body_error  # it needs the op classes below

        error = parallel_body_error(self)
        _require(error is None, error or "")

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_list(self.body.block.args, printer.print_ssa_value)
        printer.print_string(f") in [{', '.join(map(str, self.shape))}]")
        _print_body(printer, self.body)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ParallelOp:
        args = _parse_index_args(parser)
        parser.parse_keyword("in")
        extents = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
        body = _parse_body(parser, args)
        attrs = parser.parse_optional_attr_dict()
        op = cls.__new__(cls)
        IRDLOperation.__init__(op, properties={"extents": _i64_array(extents)}, regions=[body])
        op.attributes |= attrs
        return op


@irdl_op_definition
class ForOp(IRDLOperation):
    """A sequential loop `lb <= k < ub` by `step`; `kind` says how to run it.

    `serial` is a plain loop; `pipelined` (T.Pipelined) lets loads of later
    iterations overlap the compute of earlier ones, with `num_stages` buffers
    and the optional `order` / `stage` per statement of the body; `unroll` and
    `vectorized` are hints for the code generator.

    ```mlir
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    tile.for %k = %c0 to %c8 step %c1 {
    } {kind = "pipelined", num_stages = 3 : i64}
    ```
    """

    name = "tile.for"
    lb = operand_def(IndexType())
    ub = operand_def(IndexType())
    step = operand_def(IndexType())
    kind = prop_def(StringAttr, default_value=StringAttr("serial"))
    num_stages = opt_prop_def(IntegerAttr)
    order = opt_prop_def(DenseArrayBase)
    stage = opt_prop_def(DenseArrayBase)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, lb: SSAValue, ub: SSAValue, step: SSAValue, kind: str = "serial", *,
                 num_stages: int | None = None, order: Sequence[int] | None = None,
                 stage: Sequence[int] | None = None):
        block = Block(arg_types=[IndexType()])
        block.add_op(YieldOp())
        props: dict[str, Attribute] = {"kind": StringAttr(kind)}
        if num_stages is not None:
            props["num_stages"] = _i64(num_stages)
        if order is not None:
            props["order"] = _i64_array(order)
        if stage is not None:
            props["stage"] = _i64_array(stage)
        super().__init__(operands=[lb, ub, step], properties=props, regions=[Region(block)])

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    def verify_(self) -> None:
        _require(self.kind.data in LOOP_KINDS,
                 f"{self.name}: kind must be one of {', '.join(LOOP_KINDS)}, got '{self.kind.data}'")
        if self.num_stages is not None:
            _require(self.num_stages.value.data >= 0,
                     f"{self.name}: num_stages must be >= 0, got {self.num_stages.value.data}")
        _require(len(self.body.block.args) == 1 and isinstance(self.body.block.args[0].type, IndexType),
                 f"{self.name}: the body takes one index argument")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(" = ")
        printer.print_ssa_value(self.lb)
        printer.print_string(" to ")
        printer.print_ssa_value(self.ub)
        printer.print_string(" step ")
        printer.print_ssa_value(self.step)
        props = {k: v for k, v in self.properties.items() if not (k == "kind" and v == StringAttr("serial"))}
        _print_body(printer, self.body)
        printer.print_op_attributes(props | self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        iv = parser.parse_argument(expect_type=False).resolve(IndexType())
        parser.parse_punctuation("=")
        bounds = [parser.parse_unresolved_operand()]
        parser.parse_keyword("to")
        bounds.append(parser.parse_unresolved_operand())
        parser.parse_keyword("step")
        bounds.append(parser.parse_unresolved_operand())
        lb, ub, step = parser.resolve_operands(bounds, [IndexType()] * 3, parser.pos)
        body = _parse_body(parser, [iv])
        attrs = parser.parse_optional_attr_dict()
        props = {k: attrs.pop(k) for k in ("kind", "num_stages", "order", "stage") if k in attrs}
        props.setdefault("kind", StringAttr("serial"))
        op = cls.__new__(cls)
        IRDLOperation.__init__(op, operands=[lb, ub, step], properties=props, regions=[body])
        op.attributes |= attrs
        return op


# --------------------------------------------------------------------------- #
# Buffers and element access
# --------------------------------------------------------------------------- #


@irdl_op_definition
class AllocOp(IRDLOperation):
    """Allocates a shared, fragment or local buffer for the enclosing block.

    ```mlir
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    ```
    """

    name = "tile.alloc"
    result = result_def(BufferType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, buffer_type: BufferType):
        super().__init__(result_types=[buffer_type])

    def verify_(self) -> None:
        _require(_in_kernel(self),
                 f"{self.name}: {self.result.type.scope} buffers exist only inside a tile.kernel")


@irdl_op_definition
class RegionOp(IRDLOperation):
    """A rectangular window of a tile starting at `offsets`; its type gives the extents.

    ```mlir
    %r = tile.region %A[%i, %j] : !tile.tensor<256x128xf16> -> !tile.tensor<64x32xf16>
    ```
    """

    name = "tile.region"
    source = operand_def(TensorType | BufferType)
    offsets = var_operand_def(IndexType())
    result = result_def(TensorType | BufferType)
    traits = traits_def(Pure())
    assembly_format = "$source `[` $offsets `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, offsets: Sequence[SSAValue], result_type: TileType):
        super().__init__(operands=[source, offsets], result_types=[result_type])

    def verify_(self) -> None:
        src, res = tile_type(self.source), tile_type(self.result)
        _require(len(self.offsets) == src.rank,
                 f"{self.name}: {src.rank} offsets expected for a rank-{src.rank} tile, got {len(self.offsets)}")
        _require(type(src) is type(res) and src.scope == res.scope,
                 f"{self.name}: a region keeps the scope of its source ({src.scope}), got {res.scope}")
        _require(res.rank == src.rank, f"{self.name}: a region keeps the rank of its source")
        _require(res.element_type == src.element_type, f"{self.name}: a region keeps the element type")
        _require(all(d >= 1 for d in res.shape), f"{self.name}: region extents must be positive constants")


@irdl_op_definition
class StageOp(IRDLOperation):
    """Stage `index` of a multi-buffered shared buffer: the buffer without its leading dim.

    tile-pipeline gives a shared buffer that a pipelined loop fills one stage per iteration;
    each iteration reads and writes its stages through this view.

    ```mlir
    %s = tile.alloc : !tile.buffer<3x64x32xf16, shared>
    %i = arith.constant 1 : index
    %v = tile.stage %s[%i] : !tile.buffer<3x64x32xf16, shared> -> !tile.buffer<64x32xf16, shared>
    ```
    """

    name = "tile.stage"
    source = operand_def(BufferType)
    index = operand_def(IndexType())
    result = result_def(BufferType)
    traits = traits_def(Pure())
    assembly_format = "$source `[` $index `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, index: SSAValue):
        src = source.type
        super().__init__(operands=[source, index],
                         result_types=[BufferType(src.shape[1:], src.element_type, src.scope)])

    def verify_(self) -> None:
        src, res = self.source.type, self.result.type
        _require(src.scope == "shared" and res.scope == "shared", f"{self.name}: stages are of shared buffers")
        _require(src.rank >= 2 and tuple(res.shape) == tuple(src.shape[1:]) and res.element_type == src.element_type,
                 f"{self.name}: a stage of {src} is a buffer of shape {tuple(src.shape[1:])} and the same element "
                 f"type, got {res}")


@irdl_op_definition
class AsyncCommitOp(IRDLOperation):
    """Closes the group of this thread's async copies issued since the last commit.

    ```mlir
    tile.async_commit
    ```
    """

    name = "tile.async_commit"
    assembly_format = "attr-dict"


@irdl_op_definition
class AsyncWaitOp(IRDLOperation):
    """Waits until at most `pending` of this thread's committed async-copy groups are unfinished.

    A barrier after it makes every thread's finished copies visible to the block.

    ```mlir
    tile.async_wait {pending = 1 : i64}
    ```
    """

    name = "tile.async_wait"
    pending = prop_def(IntegerAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, pending: int):
        super().__init__(properties={"pending": _i64(pending)})

    def verify_(self) -> None:
        _require(self.pending.value.data >= 0, f"{self.name}: pending must be >= 0")


@irdl_op_definition
class DimOp(IRDLOperation):
    """The run-time size of one dimension of a global tensor.

    ```mlir
    %n = tile.dim %A {dim = 0 : i64} : !tile.tensor<?xf16>
    ```
    """

    name = "tile.dim"
    source = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(IndexType())
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$source attr-dict `:` type($source)"

    def __init__(self, source: SSAValue, dim: int):
        super().__init__(operands=[source], properties={"dim": _i64(dim)}, result_types=[IndexType()])

    def verify_(self) -> None:
        rank = tile_type(self.source).rank
        _require(0 <= self.dim.value.data < rank, f"{self.name}: dim {self.dim.value.data} out of range for rank {rank}")


def _verify_access(op: Operation, tile: SSAValue, indices: Sequence[SSAValue], element: Attribute) -> None:
    typ = tile_type(tile)
    _require(len(indices) == typ.rank,
             f"{op.name}: {typ.rank} indices expected for a rank-{typ.rank} tile, got {len(indices)}")
    _require(element == typ.element_type,
             f"{op.name}: element type {typ.element_type} expected, got {element}")
    if isinstance(typ, BufferType):  # buffers have no out-of-range part (global tensors mask it)
        for d, (index, size) in enumerate(zip(indices, typ.shape)):
            owner = index.owner
            if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
                c = owner.value.value.data
                verb = "writes" if isinstance(op, StoreOp) else "updates" if isinstance(op, AtomicOp) else "reads"
                _require(0 <= c < size, f"{op.name} {verb} out of range: index {c} of dim {d} is outside a "
                                        f"{typ.scope} buffer of shape {tuple(typ.shape)}")


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Reads one element of a tile.

    ```mlir
    %v = tile.load %x[%i, %j] : !tile.buffer<4x512xf32, fragment> -> f32
    ```
    """

    name = "tile.load"
    source = operand_def(TensorType | BufferType)
    indices = var_operand_def(IndexType())
    result = result_def()
    assembly_format = "$source `[` $indices `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[source, indices], result_types=[tile_type(source).element_type])

    def verify_(self) -> None:
        _verify_access(self, self.source, self.indices, self.result.type)


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Writes one element of a tile.

    ```mlir
    tile.store %v, %x[%i, %j] : f32, !tile.buffer<4x512xf32, fragment>
    ```
    """

    name = "tile.store"
    value = operand_def()
    dest = operand_def(TensorType | BufferType)
    indices = var_operand_def(IndexType())
    assembly_format = "$value `,` $dest `[` $indices `]` attr-dict `:` type($value) `,` type($dest)"

    def __init__(self, value: SSAValue, dest: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, dest, indices])

    def verify_(self) -> None:
        _verify_access(self, self.dest, self.indices, self.value.type)


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """The same buffer seen with another shape (`T.reshape` / `T.view`).

    ```mlir
    %v = tile.reshape %s : !tile.buffer<64x32xf16, shared> -> !tile.buffer<2048xf16, shared>
    ```
    """

    name = "tile.reshape"
    source = operand_def(TensorType | BufferType)
    result = result_def(TensorType | BufferType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, result_type: TileType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        src, res = tile_type(self.source), tile_type(self.result)
        _require(type(src) is type(res) and src.scope == res.scope, f"{self.name}: scope must not change")
        _require(src.element_type == res.element_type, f"{self.name}: element type must not change")
        if DYNAMIC not in src.shape + res.shape:
            _require(src.num_elements() == res.num_elements(),
                     f"{self.name}: {src.shape} and {res.shape} hold different numbers of elements")


# --------------------------------------------------------------------------- #
# Tile operations
# --------------------------------------------------------------------------- #


class _TileCanonicalization(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls):
        from tilec.passes.canonicalize.tile import patterns  # noqa: TID251 - lazy, see STYLE 2

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
            _verify_access(self, self.dst, self.indices, self.value.type)
            return
        _require_tile(self, self.value, "value")
        _require(squeezed(tile_type(self.value).shape) == squeezed(dst.shape),
                 f"{self.name}: shapes differ: value {tile_type(self.value).shape} vs dst {dst.shape}")


# --------------------------------------------------------------------------- #
# Annotations, synchronization, debugging
# --------------------------------------------------------------------------- #


@irdl_op_definition
class UseSwizzleOp(IRDLOperation):
    """Rasterizes blocks in panels of `panel_size` for L2 reuse (`T.use_swizzle`).

    ```mlir
    tile.use_swizzle {panel_size = 10 : i64, order = "row"}
    ```
    """

    name = "tile.use_swizzle"
    panel_size = prop_def(IntegerAttr)
    order = prop_def(StringAttr, default_value=StringAttr("row"))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, panel_size: int, order: str = "row"):
        super().__init__(properties={"panel_size": _i64(panel_size), "order": StringAttr(order)})

    def verify_(self) -> None:
        _require(self.panel_size.value.data >= 1, f"{self.name}: panel_size must be >= 1")
        _require(self.order.data in ("row", "col"), f"{self.name}: order must be 'row' or 'col', got '{self.order.data}'")


@irdl_op_definition
class AnnotateLayoutOp(IRDLOperation):
    """Fixes the layout of a shared buffer (`T.annotate_layout`).

    ```mlir
    tile.annotate_layout %s {layout = #tile.swizzle<128>} : !tile.buffer<64x64xf16, shared>
    ```
    """

    name = "tile.annotate_layout"
    buffer = operand_def(BufferType)
    layout = prop_def(SwizzleLayoutAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$buffer attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue, layout: SwizzleLayoutAttr):
        super().__init__(operands=[buffer], properties={"layout": layout})

    def verify_(self) -> None:
        _require_tile(self, self.buffer, "buffer", ("shared",))


@irdl_op_definition
class ThreadIdOp(IRDLOperation):
    """The calling thread's index within the block along `dim` (`T.get_thread_binding`).

    ```mlir
    %tx = tile.thread_id {dim = 0 : i64}
    ```
    """

    name = "tile.thread_id"
    dim = prop_def(IntegerAttr, default_value=_i64(0))
    result = result_def(IndexType())
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, dim: int = 0):
        super().__init__(properties={"dim": _i64(dim)}, result_types=[IndexType()])

    def verify_(self) -> None:
        _require(0 <= self.dim.value.data <= 2, f"{self.name}: dim must be 0, 1 or 2")


@irdl_op_definition
class PrintOp(IRDLOperation):
    """Prints a scalar or a tile with a message (`T.print`).

    ```mlir
    %v = arith.constant 1.0 : f32
    tile.print %v : f32 {msg = "v"}
    ```
    """

    name = "tile.print"
    values = var_operand_def()
    msg = prop_def(StringAttr, default_value=StringAttr(""))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue], msg: str = ""):
        super().__init__(operands=[values], properties={"msg": StringAttr(msg)})


@irdl_op_definition
class DeviceAssertOp(IRDLOperation):
    """Traps with `msg` when `cond` is false (`T.device_assert`).

    ```mlir
    %t = arith.constant true
    tile.device_assert %t {msg = "ok"}
    ```
    """

    name = "tile.device_assert"
    cond = operand_def(i1)
    msg = prop_def(StringAttr, default_value=StringAttr(""))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$cond attr-dict"

    def __init__(self, cond: SSAValue, msg: str = ""):
        super().__init__(operands=[cond], properties={"msg": StringAttr(msg)})
