"""Scalar math inside kernels."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def ceildiv(a, b):
    """(a + b - 1) // b; folds when both are compile-time integers."""


@builtin
def if_then_else(cond, then_value, else_value):
    """`then_value` where `cond` holds, else `else_value`."""


@builtin
def infinity(dtype):
    """+inf of a floating-point dtype."""


@builtin
def cast(value, dtype):
    """Converts a scalar to `dtype`."""


def _unary(name: str, doc: str):
    def fn(x):
        pass

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn)


exp = _unary("exp", "e**x")
exp2 = _unary("exp2", "2**x")
log = _unary("log", "natural logarithm")
log2 = _unary("log2", "base-2 logarithm")
sqrt = _unary("sqrt", "square root")
rsqrt = _unary("rsqrt", "1 / sqrt(x)")
tanh = _unary("tanh", "hyperbolic tangent")
sigmoid = _unary("sigmoid", "1 / (1 + exp(-x))")
abs = _unary("abs", "absolute value")  # noqa: A001 - TileLang's name
floor = _unary("floor", "round toward -inf")
ceil = _unary("ceil", "round toward +inf")
sin = _unary("sin", "sine")
cos = _unary("cos", "cosine")
erf = _unary("erf", "error function")


@builtin
def max(a, b):  # noqa: A001 - TileLang's name
    """The larger of two scalars."""


@builtin
def min(a, b):  # noqa: A001 - TileLang's name
    """The smaller of two scalars."""


@builtin
def pow(a, b):  # noqa: A001 - TileLang's name
    """a ** b."""
