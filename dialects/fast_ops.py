"""The upstream ops the tile → thread lowering emits by the thousand, built without IRDL's builder.

An xDSL op's `__init__` goes through `irdl_op_init`, which normalizes every operand, result,
region and successor group against the op definition; for the ~2000 index-arithmetic, constant
and fragment load/store ops of the 4096³ gemm's lowering that is ~2/3 of their construction
time (~0.04 s of a cold build). `Op.create` takes the flattened operands and the properties
directly. Each function here builds exactly the op the op's own constructor would (same
operands, result types, properties and attributes; tests/compiler/test_compile_time.py compares
them), for op classes without operand segments.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, memref, vector
from xdsl.dialects.builtin import DenseArrayBase, i64
from xdsl.ir import Attribute, Operation, SSAValue

_NO_OVERFLOW = arith.IntegerOverflowAttr("none")
_WITH_OVERFLOW = frozenset(c for c in vars(arith).values()
                           if isinstance(c, type) and issubclass(c, arith.SignlessIntegerBinaryOperationWithOverflow))
_BINARY = frozenset(c for c in vars(arith).values()
                    if isinstance(c, type) and issubclass(c, arith.SignlessIntegerBinaryOperation))


def binary(cls: type[Operation], lhs: SSAValue, rhs: SSAValue) -> Operation:
    """`cls(lhs, rhs)` for an arith binary op on signless integers (addi, muli, divui, xori, ...)."""
    assert cls in _BINARY, cls
    properties = {"overflowFlags": _NO_OVERFLOW} if cls in _WITH_OVERFLOW else {}
    return cls.create(operands=(lhs, rhs), result_types=(lhs.type,), properties=properties)


def constant(value: Attribute, typ: Attribute) -> Operation:
    """`arith.ConstantOp(value, typ)`."""
    return arith.ConstantOp.create(result_types=(typ,), properties={"value": value})


def load(mem: SSAValue, indices: Sequence[SSAValue]) -> Operation:
    """`memref.LoadOp.get(mem, indices)`."""
    return memref.LoadOp.create(operands=(mem, *indices), result_types=(mem.type.element_type,))


def store(value: SSAValue, mem: SSAValue, indices: Sequence[SSAValue]) -> Operation:
    """`memref.StoreOp.get(value, mem, indices)`."""
    return memref.StoreOp.create(operands=(value, mem, *indices))


def vector_load(mem: SSAValue, indices: Sequence[SSAValue], typ: Attribute) -> Operation:
    """`vector.LoadOp(mem, indices, typ)`."""
    return vector.LoadOp.create(operands=(mem, *indices), result_types=(typ,))


def vector_store(value: SSAValue, mem: SSAValue, indices: Sequence[SSAValue]) -> Operation:
    """`vector.StoreOp(value, mem, indices)`."""
    return vector.StoreOp.create(operands=(value, mem, *indices))


def broadcast(source: SSAValue, typ: Attribute) -> Operation:
    """`vector.BroadcastOp(source, typ)`."""
    return vector.BroadcastOp.create(operands=(source,), result_types=(typ,))


_LANES: dict[int, DenseArrayBase] = {}


def _lane(lane: int) -> DenseArrayBase:
    position = _LANES.get(lane)
    if position is None:
        position = _LANES[lane] = DenseArrayBase.from_list(i64, [lane])
    return position


def insert(source: SSAValue, dest: SSAValue, lane: int, typ: Attribute) -> Operation:
    """`vector.InsertOp(source, dest, [lane], typ)` (a constant lane)."""
    return vector.InsertOp.create(operands=(source, dest), result_types=(typ,),
                                  properties={"static_position": _lane(lane)})


def extract(source: SSAValue, lane: int, typ: Attribute) -> Operation:
    """`vector.ExtractOp(source, [lane], typ)` (a constant lane)."""
    return vector.ExtractOp.create(operands=(source,), result_types=(typ,),
                                   properties={"static_position": _lane(lane)})
