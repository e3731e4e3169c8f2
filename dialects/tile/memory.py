"""Buffer ops of the `tile` dialect: allocations and their shared-memory layout, views of tiles
(regions, stages of multi-buffered tiles, reshapes), element access and async-copy groups."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    UnitAttr,
)
from xdsl.ir import (
    Attribute,
    Operation,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure

from .attrs import FragmentLayoutAttr, Scope, SwizzleLayoutAttr
from .shared_layout import SWIZZLE_WIDTHS, alignment, swizzles_whole
from .structure import in_kernel
from .sync import AllocBarrierOp
from .types import (
    DYNAMIC,
    BufferType,
    TensorType,
    TileType,
    _i64,
    _require,
    _require_tile,
    element_bytes,
    tile_type,
)


@irdl_op_definition
class AllocOp(IRDLOperation):
    """Allocates a shared, fragment or local buffer for the enclosing block.

    What the passes decide about a buffer is recorded on its allocation:

    - `swizzle` (shared, tile-select-mma): bytes of the XOR swizzle (32, 64, 128) of a
      tensor-core operand, unless a `tile.annotate_layout` lays the buffer out; it applies to a
      buffer of whole 128-byte groups (`swizzle_bytes`, shared_layout.py).
    - `chunk` (shared, tile-select-mma): the last dim is stored in chunks of this many columns,
      one chunk (every row) after the other: a wgmma N-major operand wider than its swizzle.
    - `offset` (shared, tile-plan-shared-memory): where the buffer starts in the block's shared
      memory, a multiple of its `alignment`.
    - `layout` (fragment, tile-infer-layout): which thread holds which element, in which slot.

    ```mlir
    %s = tile.alloc : !tile.buffer<64x32xf16, shared>
    %w = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64, offset = 1024 : i64} : !tile.buffer<64x256xf16, shared>
    ```
    """

    name = "tile.alloc"
    swizzle = opt_prop_def(IntegerAttr)
    chunk = opt_prop_def(IntegerAttr)
    offset = opt_prop_def(IntegerAttr)
    layout = opt_prop_def(FragmentLayoutAttr)
    result = result_def(BufferType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, buffer_type: BufferType):
        super().__init__(result_types=[buffer_type])

    @property
    def nbytes(self) -> int:
        typ = self.result.type
        return typ.num_elements() * element_bytes(typ.element_type)

    @property
    def swizzle_bytes(self) -> int:
        """Bytes of the XOR swizzle every access of this shared buffer applies (0: none): its
        `tile.annotate_layout`'s, else its `swizzle`; none unless it is whole 128-byte groups."""
        if not swizzles_whole(self.nbytes):
            return 0
        if (annotated := self.annotated_swizzle) is not None:
            return annotated
        return self.swizzle.value.data if self.swizzle is not None else 0

    @property
    def annotated_swizzle(self) -> int | None:
        """Bytes of the swizzle `tile.annotate_layout` fixes for this buffer (None: no annotation)."""
        for use in self.result.uses:
            if isinstance(use.operation, AnnotateLayoutOp):
                return use.operation.layout.bytes
        return None

    @property
    def chunk_columns(self) -> int:
        """Columns per chunk of the last dim (0: the buffer is plain row-major)."""
        typ = self.result.type
        if self.chunk is None or typ.rank < 2 or typ.shape[-1] <= self.chunk.value.data:
            return 0
        return self.chunk.value.data

    @property
    def alignment(self) -> int:
        """Bytes the buffer's `offset` is a multiple of."""
        return alignment(self.swizzle_bytes)

    def verify_(self) -> None:
        typ = self.result.type
        _require(in_kernel(self), f"{self.name}: {typ.scope} buffers exist only inside a tile.kernel")
        for what in ("swizzle", "chunk", "offset"):
            _require(getattr(self, what) is None or typ.scope == Scope.SHARED,
                     f"{self.name}: {what} is a fact of shared buffers, not of a {typ.scope} one")
        _require(self.layout is None or typ.scope == Scope.FRAGMENT,
                 f"{self.name}: layout is a fact of fragments, not of a {typ.scope} buffer")
        if self.swizzle is not None:
            _require(self.swizzle.value.data in SWIZZLE_WIDTHS,
                     f"{self.name}: swizzle must be 32, 64 or 128 bytes, got {self.swizzle.value.data}")
        if self.chunk is not None:
            chunk = self.chunk.value.data
            _require(chunk > 0 and typ.shape[-1] % chunk == 0,
                     f"{self.name}: chunk {chunk} must be positive and divide the last dim of {typ.shape}")
        if self.offset is not None:
            offset = self.offset.value.data
            _require(offset >= 0 and offset % self.alignment == 0,
                     f"{self.name}: offset {offset} must be a multiple of the buffer's alignment, "
                     f"{self.alignment} bytes")
        if self.layout is not None:
            shape = self.layout.layout.shape
            _require(shape == typ.shape, f"{self.name}: a layout of shape {shape} for a buffer of shape {typ.shape}")


def planned_bytes(op: Operation) -> tuple[int, int] | None:
    """The bytes [start, end) tile-plan-shared-memory gave a shared buffer or mbarriers (None:
    `op` is no planned allocation)."""
    offset = getattr(op, "offset", None) if isinstance(op, AllocOp | AllocBarrierOp) else None
    if offset is None:
        return None
    nbytes = op.nbytes if isinstance(op, AllocOp) else 8 * op.result.type.count
    return offset.value.data, offset.value.data + nbytes


@irdl_op_definition
class RegionOp(IRDLOperation):
    """A rectangular window of a tile starting at `offsets`; its type gives the extents.

    `in_bounds` (tile-legalize-bounds) on a region of a global tensor: every element of it lies
    inside the tensor, so no access of it needs a predicate.

    ```mlir
    %r = tile.region %A[%i, %j] : !tile.tensor<256x128xf16> -> !tile.tensor<64x32xf16>
    ```
    """

    name = "tile.region"
    source = operand_def(TensorType | BufferType)
    offsets = var_operand_def(IndexType())
    in_bounds = opt_prop_def(UnitAttr)
    result = result_def(TensorType | BufferType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
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
        if self.in_bounds is not None:
            verify_in_bounds(self, self.source, self.offsets, res.shape)


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


def verify_in_bounds(op: Operation, tile: SSAValue, offsets: Sequence[SSAValue], extents: Sequence[int]) -> None:
    """What an op's `in_bounds` claims, as far as constants show it: `tile` is global, each
    constant offset keeps its extent inside the static dim, and the regions `tile` views are
    `in_bounds` themselves (the claim is about the whole tensor)."""
    typ = tile_type(tile)
    _require(isinstance(typ, TensorType) and len(offsets) > 0,
             f"{op.name}: in_bounds is a fact of accesses of global tensors, not of a {typ.scope} tile")
    for d, (offset, extent, size) in enumerate(zip(offsets, extents, typ.shape)):
        owner = offset.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr) and size != DYNAMIC:
            c = owner.value.value.data
            _require(0 <= c and c + extent <= size,
                     f"{op.name}: in_bounds, but [{c}, {c + extent}) of dim {d} leaves the tensor's {size}")
    view = tile.owner
    while isinstance(view, ReshapeOp):
        view = view.source.owner
    _require(not isinstance(view, RegionOp) or view.in_bounds is not None,
             f"{op.name}: in_bounds on a view of a region that is not in_bounds itself")


def verify_access(op: Operation, tile: SSAValue, indices: Sequence[SSAValue], element: Attribute, verb: str) -> None:
    typ = tile_type(tile)
    _require(len(indices) == typ.rank,
             f"{op.name}: {typ.rank} indices expected for a rank-{typ.rank} tile, got {len(indices)}")
    _require(element == typ.element_type,
             f"{op.name}: element type {typ.element_type} expected, got {element}")
    if getattr(op, "in_bounds", None) is not None:
        verify_in_bounds(op, tile, indices, [1] * len(indices))
    if isinstance(typ, BufferType):  # buffers have no out-of-range part (global tensors mask it)
        for d, (index, size) in enumerate(zip(indices, typ.shape)):
            owner = index.owner
            if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
                c = owner.value.value.data
                _require(0 <= c < size, f"{op.name} {verb} out of range: index {c} of dim {d} is outside a "
                                        f"{typ.scope} buffer of shape {tuple(typ.shape)}")


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Reads one element of a tile (`in_bounds`: as for `tile.region`, proven inside the tensor).

    ```mlir
    %v = tile.load %x[%i, %j] : !tile.buffer<4x512xf32, fragment> -> f32
    ```
    """

    name = "tile.load"
    source = operand_def(TensorType | BufferType)
    indices = var_operand_def(IndexType())
    in_bounds = opt_prop_def(UnitAttr)
    result = result_def()
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$source `[` $indices `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[source, indices], result_types=[tile_type(source).element_type])

    def verify_(self) -> None:
        verify_access(self, self.source, self.indices, self.result.type, "reads")


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Writes one element of a tile (`in_bounds`: as for `tile.region`, proven inside the tensor).

    ```mlir
    tile.store %v, %x[%i, %j] : f32, !tile.buffer<4x512xf32, fragment>
    ```
    """

    name = "tile.store"
    value = operand_def()
    dest = operand_def(TensorType | BufferType)
    indices = var_operand_def(IndexType())
    in_bounds = opt_prop_def(UnitAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$value `,` $dest `[` $indices `]` attr-dict `:` type($value) `,` type($dest)"

    def __init__(self, value: SSAValue, dest: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, dest, indices])

    def verify_(self) -> None:
        verify_access(self, self.dest, self.indices, self.value.type, "writes")


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

