"""Buffer ops of the `tile` dialect: allocations and their shared-memory layout, views of tiles
(regions, stages of multi-buffered tiles, reshapes), element access and async-copy groups."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
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
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure

from .structure import in_kernel
from .types import (
    DYNAMIC,
    BufferType,
    SwizzleLayoutAttr,
    TensorType,
    TileType,
    _i64,
    _require,
    _require_tile,
    tile_type,
)


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
        _require(in_kernel(self),
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


def verify_access(op: Operation, tile: SSAValue, indices: Sequence[SSAValue], element: Attribute, verb: str) -> None:
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
        verify_access(self, self.source, self.indices, self.result.type, "reads")


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

