"""Helpers over upstream `arith` shared by the frontend and the lowering (MLIR's Arith/Utils).

`convert` emits the ops that turn a scalar of one builtin type into another, with C's
rules: floats truncate toward zero into integers, i1 widens unsigned, anything becomes
i1 by comparing with zero, and float16 <-> bfloat16 goes through float32.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerType, f32
from xdsl.ir import Attribute, Operation, SSAValue

_FLOAT_RANK = {"f8E4M3FN": 0, "f8E5M2": 0, "f16": 1, "bf16": 1, "f32": 2, "f64": 3}


def is_float(typ: Attribute) -> bool:
    return not isinstance(typ, IndexType | IntegerType)


def _rank(typ: Attribute) -> int:
    return _FLOAT_RANK[str(typ)]


def _unsigned(typ: IntegerType) -> bool:
    return typ.signedness.data.name == "UNSIGNED"


def convert(value: SSAValue, typ: Attribute, emit: Callable[[Operation], Operation],
            const: Callable[[object, Attribute], SSAValue]) -> SSAValue:
    """`value` as type `typ`, built with `emit` (which inserts an op) and `const` (a constant)."""
    src = value.type
    if src == typ:
        return value

    def op(o: Operation) -> SSAValue:
        return emit(o).results[0]

    if isinstance(typ, IndexType):
        if is_float(src):
            value = op(arith.FPToSIOp(value, IntegerType(64)))
        return op(arith.IndexCastOp(value, typ))
    if isinstance(src, IndexType):
        if isinstance(typ, IntegerType):
            return op(arith.IndexCastOp(value, typ))
        return op(arith.SIToFPOp(op(arith.IndexCastOp(value, IntegerType(64))), typ))
    if isinstance(src, IntegerType) and isinstance(typ, IntegerType):
        if typ.width.data > src.width.data:
            return op((arith.ExtUIOp if src.width.data == 1 or _unsigned(src) else arith.ExtSIOp)(value, typ))
        if typ.width.data == 1:
            return op(arith.CmpiOp(value, const(0, src), "ne"))
        return op(arith.TruncIOp(value, typ))
    if isinstance(src, IntegerType):
        return op((arith.UIToFPOp if src.width.data == 1 or _unsigned(src) else arith.SIToFPOp)(value, typ))
    if isinstance(typ, IntegerType):
        if typ.width.data == 1:
            return op(arith.CmpfOp(value, const(0.0, src), "une"))
        return op((arith.FPToUIOp if _unsigned(typ) else arith.FPToSIOp)(value, typ))
    if _rank(typ) > _rank(src):
        return op(arith.ExtFOp(value, typ))
    if _rank(typ) == _rank(src):  # float16 <-> bfloat16
        return convert(op(arith.ExtFOp(value, f32)), typ, emit, const)
    return op(arith.TruncFOp(value, typ))
