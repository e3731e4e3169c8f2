"""Global tensors built from device addresses (`T.make_tensor`): the pointer-table op of the
`tile` dialect.

A pointer is an `i64` (TileLang's ABI: a table of pointers is an int64 tensor, `T.ptr` a 64-bit
scalar parameter); `tile.make_tensor` views the memory at that address as a contiguous,
row-major global tensor. No host code knows such a tensor, so nothing that needs a host-side
description of it (a TMA descriptor) can read it: copies from it are plain or cp.async loads.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure

from .types import DYNAMIC, TensorType, _require


@irdl_op_definition
class MakeTensorOp(IRDLOperation):
    """The global tensor at device address `address` (`T.make_tensor(ptr, shape, dtype)`).

    The result type gives the shape and element type; each `?` dim takes its size from
    `sizes`, in order. The elements are contiguous and row-major from `address`, which must be
    aligned to the element size; reading or writing outside the tensor is the same as for any
    global tensor (out-of-range parts of regions are neither read nor written).

    ```mlir
    %p = tile.load %ptrs[%i] : !tile.tensor<3xi64> -> i64
    %A = tile.make_tensor %p [%m] : i64 -> !tile.tensor<?x64xf16>
    ```
    """

    name = "tile.make_tensor"
    address = operand_def(IntegerType)
    sizes = var_operand_def(IndexType())
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$address `[` $sizes `]` attr-dict `:` type($address) `->` type($result)"

    def __init__(self, address: SSAValue, sizes: Sequence[SSAValue], result_type: TensorType):
        super().__init__(operands=[address, list(sizes)], result_types=[result_type])

    @property
    def dims(self) -> list[int | SSAValue]:
        """Each dim of the tensor: its static size, or the `sizes` operand giving it."""
        dynamic = iter(self.sizes)
        return [next(dynamic) if d == DYNAMIC else d for d in self.result.type.shape]

    def verify_(self) -> None:
        typ = self.result.type
        width = self.address.type.width.data
        _require(width == 64, f"{self.name}: an address is a 64-bit integer, got i{width}")
        dynamic = sum(d == DYNAMIC for d in typ.shape)
        _require(len(self.sizes) == dynamic,
                 f"{self.name}: {dynamic} sizes expected for the `?` dims of {typ}, got {len(self.sizes)}")
        _require(typ.rank >= 1 and all(d == DYNAMIC or d >= 1 for d in typ.shape),
                 f"{self.name}: a tensor has at least one dim, each at least 1, got {typ}")


def tensor_root(value: SSAValue) -> SSAValue:
    """The tensor `value` is a region or reshape of: a kernel argument or a `tile.make_tensor`."""
    from .memory import RegionOp, ReshapeOp

    while isinstance(value.owner, RegionOp | ReshapeOp):
        value = value.owner.source
    return value


def built_from_pointer(value: SSAValue) -> bool:
    """Whether the global tensor `value` views memory at a run-time address (`tile.make_tensor`)."""
    return isinstance(tensor_root(value).owner, MakeTensorOp)


ALIGNED_SIZES = "tilec.aligned_sizes"
"""The attribute of a kernel's `func.func` (pass config `tilec.aligned_sizes`, set by the compiler
for a build that the launcher only runs where it holds, tilec/compiler/size_variants.py): per
argument, per dim, a multiple that its run-time size is known to be (1: nothing known)."""


def size_multiple(tensor: SSAValue, dim: int) -> int:
    """The multiple the run-time size of dim `dim` of the kernel argument that `tensor` views is
    known to be (`ALIGNED_SIZES`); 1 where nothing is known (a tensor at a run-time address too)."""
    from xdsl.ir import Block

    root = tensor_root(tensor)
    block = root.owner
    if not isinstance(block, Block) or block.parent_op() is None:
        return 1
    attr = block.parent_op().attributes.get(ALIGNED_SIZES)
    if attr is None or root.index >= len(attr.data):
        return 1
    multiples = attr.data[root.index].get_values()
    return multiples[dim] if dim < len(multiples) else 1

