"""TileLang's raw per-thread cp.async in the `tile` dialect: `T.ptx_cp_async` and
`T.cp_async_barrier_noinc`.

Unlike `tile.copy`, whose work the lowering spreads over the block's threads, these ops are run
by each thread that reaches them, on its own indices (computed from `tile.thread_id`): every
thread issues its own copy of a few contiguous elements, and its own arrival on an mbarrier
once its copies have landed. A `tile.async_commit` / `tile.async_wait` pair, or the mbarrier
arrival here, tells the thread when its copies are done; a barrier then shows them to the block.

```mlir
%t = tile.thread_id
%c8 = arith.constant 8 : index
%r = arith.divui %t, %c8 : index
%q = arith.remui %t, %c8 : index
%col = arith.muli %q, %c8 : index
%s = tile.alloc : !tile.buffer<16x64xf16, shared>
%b = tile.alloc_barrier {arrive_count = 128 : i64} : !tile.mbarrier
tile.cp_async %G[%r, %col], %s[%r, %col] {elements = 8 : i64} : !tile.tensor<16x64xf16>, !tile.buffer<16x64xf16, shared>
tile.cp_async_arrive %b : !tile.mbarrier
```
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType, IntegerAttr, UnitAttr, i1
from xdsl.ir import SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    var_operand_def,
)

from .memory import verify_in_bounds
from .sync import _check_index
from .types import BufferType, MBarrierType, TensorType, _i64, _require, element_bytes

CP_ASYNC_BYTES = (4, 8, 16)
"""The sizes one cp.async copies (bytes)."""


@irdl_op_definition
class CpAsyncOp(IRDLOperation):
    """The calling thread copies `elements` elements from global tensor `src`, starting at
    `src_indices`, to shared buffer `dst`, starting at `dst_indices`, asynchronously (PTX
    `cp.async`): both runs go along the last dim, `elements` times the element size is 4, 8 or
    16 bytes, and the buffer's rows hold whole runs. The copy lands by the thread's
    `tile.async_wait` of its group or by the phase of its `tile.cp_async_arrive`.

    Source elements outside the tensor read as zero (`in_bounds`, from tile-legalize-bounds: the
    whole run is proven inside it); with `predicate` false the thread writes zeros and reads
    nothing (TileLang's predicated cp.async).

    ```mlir
    %i = arith.constant 0 : index
    %j = arith.constant 8 : index
    %s = tile.alloc : !tile.buffer<64x64xf16, shared>
    tile.cp_async %A[%i, %j], %s[%i, %j] {elements = 8 : i64} : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, shared>
    %p = arith.constant true
    tile.cp_async %A[%i, %j], %s[%i, %j] if %p {elements = 4 : i64} : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, shared>
    ```
    """

    name = "tile.cp_async"
    src = operand_def(TensorType)
    src_indices = var_operand_def(IndexType())
    dst = operand_def(BufferType)
    dst_indices = var_operand_def(IndexType())
    predicate = opt_operand_def(i1)
    elements = prop_def(IntegerAttr)
    in_bounds = opt_prop_def(UnitAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = ("$src `[` $src_indices `]` `,` $dst `[` $dst_indices `]` (`if` $predicate^)? attr-dict "
                       "`:` type($src) `,` type($dst)")

    def __init__(self, src: SSAValue, src_indices: Sequence[SSAValue], dst: SSAValue,
                 dst_indices: Sequence[SSAValue], elements: int, predicate: SSAValue | None = None):
        super().__init__(operands=[src, src_indices, dst, dst_indices, [] if predicate is None else [predicate]],
                         properties={"elements": _i64(elements)})

    @property
    def nbytes(self) -> int:
        return self.elements.value.data * element_bytes(self.dst.type.element_type)

    @property
    def extents(self) -> list[int]:
        """The run's extent along each dim of the source (1 but along the last)."""
        return [1] * (self.src.type.rank - 1) + [self.elements.value.data]

    def verify_(self) -> None:
        src, dst, n = self.src.type, self.dst.type, self.elements.value.data
        _require(dst.scope == "shared", f"{self.name}: the destination is a shared buffer, got a {dst.scope} one")
        for what, typ, indices in (("src", src, self.src_indices), ("dst", dst, self.dst_indices)):
            _require(len(indices) == typ.rank,
                     f"{self.name}: {typ.rank} {what} indices expected for a rank-{typ.rank} tile, got {len(indices)}")
        _require(src.element_type == dst.element_type,
                 f"{self.name}: element types differ: {src.element_type} and {dst.element_type}")
        _require(n > 0 and self.nbytes in CP_ASYNC_BYTES,
                 f"{self.name}: copies 4, 8 or 16 bytes, got {n} elements of {dst.element_type}")
        _require(dst.shape[-1] % n == 0,
                 f"{self.name}: the destination's rows of {dst.shape[-1]} elements do not hold whole runs of {n}")
        if self.in_bounds is not None:
            verify_in_bounds(self, self.src, self.src_indices, self.extents)


@irdl_op_definition
class CpAsyncArriveOp(IRDLOperation):
    """An arrival of the calling thread on an mbarrier (element `index` of an array), made once all
    of its earlier cp.async copies have landed (PTX `cp.async.mbarrier.arrive.noinc`): it is one of
    the phase's `arrive_count` arrivals.

    ```mlir
    %b = tile.alloc_barrier {arrive_count = 128 : i64} : !tile.mbarrier<2>
    %i = arith.constant 1 : index
    tile.cp_async_arrive %b[%i] : !tile.mbarrier<2>
    ```
    """

    name = "tile.cp_async_arrive"
    barrier = operand_def(MBarrierType)
    index = opt_operand_def(IndexType())
    assembly_format = "$barrier (`[` $index^ `]`)? attr-dict `:` type($barrier)"

    def __init__(self, barrier: SSAValue, index: SSAValue | None = None):
        super().__init__(operands=[barrier, [] if index is None else [index]])

    def verify_(self) -> None:
        _check_index(self, self.barrier, self.index)
