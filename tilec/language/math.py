"""Scalar math inside kernels (and on plain Python numbers outside them)."""

from __future__ import annotations

import builtins
import math

from ._builtin import builtin


@builtin(py=lambda a, b: -(-a // b))
def ceildiv(a, b):
    """(a + b - 1) // b; folds when both are compile-time integers."""


@builtin(py=lambda a, b: a // b)
def floordiv(a, b):
    """a // b, rounding toward -inf."""


@builtin(py=lambda a, b: a % b)
def floormod(a, b):
    """a - floordiv(a, b) * b (the sign of b)."""


@builtin(py=lambda x, lo, hi: builtins.min(builtins.max(x, lo), hi))
def clamp(dst, min_val, max_val):
    """`dst` limited to [min_val, max_val]."""


@builtin(py=lambda c, a, b: a if c else b)
def if_then_else(cond, then_value, else_value):
    """`then_value` where `cond` holds, else `else_value`."""


@builtin
def infinity(dtype):
    """+inf of a floating-point dtype."""


@builtin
def cast(value, dtype):
    """Converts a scalar to `dtype`."""


@builtin
def Cast(dtype, value):  # noqa: N802 - TileLang's (TVM's) name
    """Converts a scalar to `dtype` (TVM's argument order: `T.Cast(dtype, value)`)."""


@builtin
def reinterpret(value, dtype):
    """The bits of a scalar read as `dtype` of the same width (`T.reinterpret(x, "uint32")`)."""


def _unary(name: str, doc: str, py):
    def fn(x):
        pass

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn, py=py)


exp = _unary("exp", "e**x", math.exp)
exp2 = _unary("exp2", "2**x", lambda x: 2.0**x)
log = _unary("log", "natural logarithm", math.log)
log2 = _unary("log2", "base-2 logarithm", math.log2)
sqrt = _unary("sqrt", "square root", math.sqrt)
rsqrt = _unary("rsqrt", "1 / sqrt(x)", lambda x: 1.0 / math.sqrt(x))
tanh = _unary("tanh", "hyperbolic tangent", math.tanh)
sigmoid = _unary("sigmoid", "1 / (1 + exp(-x))", lambda x: 1.0 / (1.0 + math.exp(-x)))
abs = _unary("abs", "absolute value", builtins.abs)  # noqa: A001 - TileLang's name
floor = _unary("floor", "round toward -inf", math.floor)
ceil = _unary("ceil", "round toward +inf", math.ceil)
sin = _unary("sin", "sine", math.sin)
cos = _unary("cos", "cosine", math.cos)
erf = _unary("erf", "error function", math.erf)


@builtin(py=builtins.max)
def max(a, b):  # noqa: A001 - TileLang's name
    """The larger of two scalars."""


@builtin(py=builtins.min)
def min(a, b):  # noqa: A001 - TileLang's name
    """The smaller of two scalars."""


@builtin(py=pow)
def pow(a, b):  # noqa: A001 - TileLang's name
    """a ** b."""
