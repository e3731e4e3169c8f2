"""The upstream ops the tile → thread lowering emits by the thousand, built without IRDL's builder.

An xDSL op's `__init__` goes through `irdl_op_init`, which normalizes every operand, result,
region and successor group against the op definition; for the ~2000 index-arithmetic, constant
and fragment load/store ops of the 4096³ gemm's lowering that is ~2/3 of their construction
time (~0.03 s of a cold build). `Op.create` takes the flattened operands and the properties
directly. Each function here builds exactly the op the op's own constructor would (same
operands, result types, properties and attributes; tests/compiler/test_compile_time.py compares
them), for op classes without operand segments.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, memref
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
