"""Scalar math: `T.ceildiv`, `T.if_then_else`, `T.infinity`, `T.cast`, the unary and binary functions."""

from __future__ import annotations

import math

from xdsl.dialects import arith

from tilec.language.structure import SizeExpr, is_symbolic

from ..semantic import is_compile_time
from ..values import Scalar
from .operands import INDEX, describe_, dtype_of
from .registry import handles, handles_each

UNARY = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "abs", "floor", "ceil", "sin",
         "cos", "erf")


@handles("ceildiv")
def ceildiv(v, a, b):
    a, b = v.rvalue(a), v.rvalue(b)
    if is_symbolic(a) or is_symbolic(b):  # sizes not bound yet (an eager kernel's probe)
        return SizeExpr("ceildiv", (a, b))
    if is_compile_time(b) and b <= 0:
        what = "division by zero" if b == 0 else "the divisor must be positive"
        raise v.b.error(f"T.ceildiv({a if is_compile_time(a) else describe_(a)}, {b}): {what}",
                        hint="the divisor (often a block size passed as an argument) must be positive")
    if is_compile_time(a) and is_compile_time(b):
        return -(-a // b)
    x, y = v.b.to_ssa(a, INDEX), v.b.to_ssa(b, INDEX)
    return Scalar(v.b.emit(arith.CeilDivSIOp(x, y)).results[0])


@handles("if_then_else")
def if_then_else(v, cond, then_value, else_value):
    cond = v.condition(cond, "T.if_then_else")
    if not isinstance(cond, Scalar):
        return v.rvalue(then_value if cond else else_value)
    return v.b.select(cond, v.rvalue(then_value), v.rvalue(else_value))


@handles("infinity")
def infinity(v, dtype):
    d = dtype_of(v, dtype, "T.infinity")
    if not d.is_float:
        raise v.b.error(f"T.infinity needs a floating-point dtype, got {d.name}")
    return Scalar(v.b.const(math.inf, d.ir))


@handles("cast")
def cast(v, value, dtype):
    return v.b.cast(v.rvalue(value), dtype)


@handles_each({name: name for name in UNARY})
def unary(_, name: str):
    def handler(v, x):
        x = v.rvalue(x)
        if not isinstance(x, Scalar | int | float):
            raise v.b.error(f"T.{name} takes a scalar, got {describe_(x)}",
                            hint="apply it element-wise inside T.Parallel")
        return v.b.math_call(name, x)

    return handler


@handles_each({"max": "max", "min": "min", "pow": "pow"})
def binary(_, name: str):
    def handler(v, a, b):
        a, b = v.rvalue(a), v.rvalue(b)
        if is_symbolic(a) or is_symbolic(b):
            return SizeExpr(name, (a, b))
        return v.b.math_call(name, a, b)

    return handler


@handles("floordiv")
def floordiv(v, a, b):
    a, b = v.rvalue(a), v.rvalue(b)
    if is_symbolic(a) or is_symbolic(b):
        return SizeExpr("//", (a, b))
    return v.b.binop("//", a, b)


@handles("floormod")
def floormod(v, a, b):
    """a - floordiv(a, b) * b: the sign of b, as TileLang's (arith's remsi has the sign of a)."""
    a, b = v.rvalue(a), v.rvalue(b)
    if is_symbolic(a) or is_symbolic(b):
        return SizeExpr("%", (a, b))
    if is_compile_time(a) and is_compile_time(b):
        return v.b.binop("%", a, b)
    return v.b.binop("-", a, v.b.binop("*", v.b.binop("//", a, b), b))


@handles("clamp")
def clamp(v, dst, min_val, max_val):
    return v.b.math_call("min", v.b.math_call("max", v.rvalue(dst), v.rvalue(min_val)), v.rvalue(max_val))


@handles("Cast")
def cast_tvm_order(v, dtype, value):
    return v.b.cast(v.rvalue(value), dtype)


@handles("reinterpret")
def reinterpret(v, value, dtype):
    value = v.rvalue(value)
    d = dtype_of(v, dtype, "T.reinterpret")
    if not isinstance(value, Scalar):
        raise v.b.error(f"T.reinterpret takes a run-time scalar, got {describe_(value)}",
                        hint="reinterpret an element of a buffer, e.g. T.reinterpret(x_local[i], 'uint32')")
    if value.dtype.bits != d.bits:
        raise v.b.error(f"T.reinterpret: {value.dtype.name} has {value.dtype.bits} bits but {d.name} has {d.bits}",
                        hint="reinterpret between types of the same width")
    return Scalar(v.b.emit(arith.BitcastOp(value.ssa, d.ir)).results[0])
