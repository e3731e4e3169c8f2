"""Random element-wise expressions: source text, tilec's typing, the float64 value and its
error bound.

An expression is built over `Leaf`s (a tile element `x[i, j]`, a broadcast `y[i]`, a global
element `A[by * 16 + i, j]`) with tilec's scalar typing (frontend/semantic.py): equal dtypes
stay, float16 with bfloat16 meets in float32, otherwise the wider float wins, and a Python
float constant takes the other operand's dtype.  Every node tracks a bound on |value| so the
generator only builds expressions that stay in range in float16 (no exp of a large
argument, no product that overflows) and only takes logs and roots of positive values.

Each node's reference follows the error model of program.py: a first-order forward bound,
one rounding in the node's dtype per operation plus the f32 approximation error of the
transcendental functions.  Comparisons (in `T.if_then_else`) only compare exact leaves, so
the kernel and the reference always take the same branch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .program import APPROX, UNIT, R

_RANK = {"float16": 1, "bfloat16": 1, "float32": 2}
CONSTANTS = (0.5, 1.5, 2.0, 0.25, 3.0, 0.75, 1.0)  # exact in every dtype


def common(a: str | None, b: str | None) -> str:
    """The dtype two operands meet in (None: a Python constant)."""
    if a is None or b is None:
        return a or b
    if a == b:
        return a
    if _RANK[a] == _RANK[b]:
        return "float32"
    return a if _RANK[a] > _RANK[b] else b


@dataclass
class Leaf:
    """An element read inside the loop: text, dtype, |value| bound, its R in the loop's shape,
    and whether it is exactly the stored input (so comparisons on it are exact)."""

    text: str
    dtype: str
    bound: float
    get: object  # Env -> R
    exact: bool = True


@dataclass
class Expr:
    """A node: text, dtype, |value| bound, its reference (Env -> R), node count. An f16 node's
    reference value is rounded to f16, as the hardware rounds the op's result: the relative
    budget covers rounding in f16's normal range, not a result that underflows below it
    (sigmoid(-20) is 0 in f16; seed 20294993)."""

    text: str
    dtype: str | None
    bound: float
    fn: object  # Env -> R
    size: int = 1  # node count

    def __post_init__(self):
        if self.dtype == "float16":
            inner = self.fn

            def rounded(env, inner=inner):
                r = inner(env)
                with np.errstate(over="ignore"):
                    v = np.asarray(r.v, dtype=np.float64).astype(np.float16).astype(np.float64)
                return R(v, r.m, r.b)

            self.fn = rounded


def _u(dtype: str | None) -> float:
    return UNIT[dtype or "float32"]


def _const(c: float) -> Expr:
    return Expr(repr(c), None, abs(c), lambda env, c=c: R(np.array(c), np.array(abs(c)), 0.0))


def _leaf(leaf: Leaf) -> Expr:
    return Expr(leaf.text, leaf.dtype, leaf.bound, leaf.get)


# -- node constructors: each returns an Expr, or None where the bounds forbid it ----------


def _add(a: Expr, b: Expr, sign: str) -> Expr | None:
    if a.bound + b.bound > 1e4:
        return None
    dt = common(a.dtype, b.dtype)
    op = np.add if sign == "+" else np.subtract

    def fn(env):
        x, y = a.fn(env), b.fn(env)
        return R(op(x.v, y.v), x.m + y.m, max(x.b, y.b) + _u(dt))

    return Expr(f"({a.text} {sign} {b.text})", dt, a.bound + b.bound, fn, a.size + b.size + 1)


def _mul(a: Expr, b: Expr) -> Expr | None:
    if a.bound * b.bound > 2000:
        return None
    dt = common(a.dtype, b.dtype)

    def fn(env):
        x, y = a.fn(env), b.fn(env)
        return R(x.v * y.v, x.m * y.m, x.b + y.b + _u(dt))

    return Expr(f"({a.text} * {b.text})", dt, a.bound * b.bound, fn, a.size + b.size + 1)


def _div(a: Expr, b: Expr) -> Expr | None:
    """a / (|b| + 1): the denominator is at least 1."""
    if b.dtype is None:
        return None
    dt = common(a.dtype, b.dtype)

    def fn(env):
        x, y = a.fn(env), b.fn(env)
        c = np.abs(y.v) + 1.0
        mc, bc = y.m + 1.0, y.b + _u(b.dtype)
        v = x.v / c
        return R(v, x.m / c + np.abs(x.v) * mc / c**2 + np.abs(v), max(x.b, bc) + _u(dt))

    return Expr(f"({a.text} / (T.abs({b.text}) + 1.0))", dt, a.bound, fn, a.size + b.size + 3)


def _minmax(a: Expr, b: Expr, which: str) -> Expr:
    dt = common(a.dtype, b.dtype)
    op = np.maximum if which == "max" else np.minimum

    def fn(env):
        x, y = a.fn(env), b.fn(env)
        return R(op(x.v, y.v), np.maximum(x.m, y.m), max(x.b, y.b))

    return Expr(f"T.{which}({a.text}, {b.text})", dt, max(a.bound, b.bound), fn, a.size + b.size + 1)


def _unary(name: str, a: Expr) -> Expr | None:
    """A math function of `a` (computed in f32 on the GPU, rounded to a's dtype)."""
    dt, u = a.dtype, _u(a.dtype) + APPROX
    if dt is None:
        return None
    if name in ("neg", "abs"):  # exact
        op = np.negative if name == "neg" else np.abs

        def fn(env):
            x = a.fn(env)
            return R(op(x.v), x.m, x.b)

        return Expr(f"(-{a.text})" if name == "neg" else f"T.abs({a.text})", dt, a.bound, fn, a.size + 1)
    if name == "exp" and a.bound <= 4:
        def fn(env):
            x = a.fn(env)
            v = np.exp(x.v)
            return R(v, v * (x.m + 1.0), x.b + u)

        return Expr(f"T.exp({a.text})", dt, math.exp(a.bound), fn, a.size + 1)
    if name == "exp2" and a.bound <= 5:
        def fn(env):
            x = a.fn(env)
            v = np.exp2(x.v)
            return R(v, v * (math.log(2) * x.m + 1.0), x.b + u)

        return Expr(f"T.exp2({a.text})", dt, 2.0**a.bound, fn, a.size + 1)
    if name == "log":
        def fn(env):
            x = a.fn(env)
            c = np.abs(x.v) + 1.0
            v = np.log(c)
            return R(v, np.abs(v) + (x.m + 1.0) / c, x.b + _u(dt) + u)

        return Expr(f"T.log(T.abs({a.text}) + 1.0)", dt, math.log(a.bound + 1.0), fn, a.size + 3)
    if name == "sqrt":
        def fn(env):
            x = a.fn(env)
            v = np.sqrt(np.abs(x.v) + 0.5)
            return R(v, v + (x.m + 0.5) / (2 * v), x.b + _u(dt) + u)

        return Expr(f"T.sqrt(T.abs({a.text}) + 0.5)", dt, math.sqrt(a.bound + 0.5), fn, a.size + 3)
    if name == "rsqrt" and a.bound <= 100:
        def fn(env):
            x = a.fn(env)
            c = x.v * x.v + 1.0
            v = c**-0.5
            return R(v, v + 0.5 * c**-1.5 * (x.m * x.m + 1.0), 2 * x.b + 2 * _u(dt) + u)

        return Expr(f"T.rsqrt({a.text} * {a.text} + 1.0)", dt, 1.0, fn, 2 * a.size + 3)
    if name == "tanh":
        def fn(env):
            x = a.fn(env)
            v = np.tanh(x.v)
            return R(v, np.abs(v) + (1 - v * v) * x.m, x.b + u)

        return Expr(f"T.tanh({a.text})", dt, 1.0, fn, a.size + 1)
    if name == "sigmoid":
        def fn(env):
            x = a.fn(env)
            v = 1.0 / (1.0 + np.exp(-x.v))
            return R(v, v + v * (1 - v) * x.m, x.b + 3 * u)

        return Expr(f"T.sigmoid({a.text})", dt, 1.0, fn, a.size + 3)
    if name == "erf":
        from math import erf as _erf

        verf = np.vectorize(_erf, otypes=[np.float64])

        def fn(env):
            x = a.fn(env)
            v = verf(x.v)
            return R(v, np.abs(v) + 2 / math.sqrt(math.pi) * np.exp(-x.v * x.v) * x.m, x.b + u)

        return Expr(f"T.erf({a.text})", dt, 1.0, fn, a.size + 1)
    return None


def _pow(a: Expr, e: float) -> Expr | None:
    """(|a| + 0.5) ** e through T.pow."""
    if a.dtype is None or (a.bound + 0.5) ** e > 1000:
        return None
    dt = a.dtype

    def fn(env):
        x = a.fn(env)
        c = np.abs(x.v) + 0.5
        v = c**e
        return R(v, v + abs(e) * c ** (e - 1) * (x.m + 0.5), x.b + _u(dt) + _u(dt) + 8 * APPROX)

    return Expr(f"T.pow(T.abs({a.text}) + 0.5, {e!r})", dt, (a.bound + 0.5) ** e, fn, a.size + 3)


def _cast(a: Expr, dtype: str, style: str) -> Expr | None:
    if a.dtype is None:
        return None
    from .program import convert_unit, converted

    def fn(env):
        x = a.fn(env)
        return R(converted(x.v, a.dtype, dtype), x.m, x.b + convert_unit(a.dtype, dtype))

    text = f"T.cast({a.text}, T.{dtype})" if style == "cast" else f"{a.text}.astype(T.{dtype})"
    if style != "cast" and not (a.text.endswith("]") or a.text.endswith(")")):
        text = f"({a.text}).astype(T.{dtype})"
    return Expr(text, dtype, a.bound, fn, a.size + 1)


@dataclass
class Cond:
    """A comparison of exact leaves (or a leaf and a constant): text and its boolean array."""

    text: str
    fn: object  # Env -> bool array


def _condition(d, leaves: list[Leaf]) -> Cond | None:
    exact = [leaf for leaf in leaves if leaf.exact]
    if not exact:
        return None
    lhs = d.choice(exact)
    rhs = d.choice(exact) if d.chance(0.5) else d.choice((0.0, 0.5, -0.5))
    op = d.choice((">", "<", ">=", "<="))
    cmp = {">": np.greater, "<": np.less, ">=": np.greater_equal, "<=": np.less_equal}[op]
    rtext = rhs.text if isinstance(rhs, Leaf) else repr(rhs)

    def fn(env):
        return cmp(lhs.get(env).v, rhs.get(env).v if isinstance(rhs, Leaf) else rhs)

    return Cond(f"{lhs.text} {op} {rtext}", fn)


condition = _condition


def _select(cond: Cond, a: Expr, b: Expr) -> Expr:
    dt = common(a.dtype, b.dtype)

    def fn(env):
        x, y = a.fn(env), b.fn(env)
        c = cond.fn(env)
        return R(np.where(c, x.v, y.v), np.where(c, x.m, y.m), max(x.b, y.b))

    return Expr(f"T.if_then_else({cond.text}, {a.text}, {b.text})", dt, max(a.bound, b.bound), fn,
                a.size + b.size + 2)


UNARY = ("neg", "abs", "exp", "exp2", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf")
BINARY = ("+", "-", "*", "/", "max", "min")


def expression(d, leaves: list[Leaf], depth: int) -> Expr:
    """A random expression over `leaves` of at most `depth` levels; never a bare constant."""
    e = _expression(d, leaves, depth)
    return e if e.dtype is not None else _leaf(d.choice(leaves))


def _expression(d, leaves: list[Leaf], depth: int) -> Expr:
    if depth <= 0 or d.chance(0.15):
        if d.chance(0.15):
            return _const(d.choice(CONSTANTS))
        return _leaf(d.choice(leaves))
    form = d.choice(("binary", "binary", "unary", "cast", "select", "pow"))
    if form == "unary":
        a = expression(d, leaves, depth - 1)
        return _unary(d.choice(UNARY), a) or a
    if form == "cast":
        a = expression(d, leaves, depth - 1)
        return _cast(a, d.choice(("float16", "bfloat16", "float32")), d.choice(("cast", "astype"))) or a
    if form == "pow":
        a = expression(d, leaves, depth - 1)
        return _pow(a, d.choice((0.5, 1.5, 2.0, -1.0))) or a
    if form == "select":
        a, b = expression(d, leaves, depth - 1), _expression(d, leaves, depth - 1)
        cond = _condition(d, leaves)
        return a if cond is None else _select(cond, a, b)
    a, b = _expression(d, leaves, depth - 1), _expression(d, leaves, depth - 1)
    if a.dtype is None and b.dtype is None:
        b = _leaf(d.choice(leaves))
    op = d.choice(BINARY)
    if op in ("+", "-"):
        out = _add(a, b, op)
    elif op == "*":
        out = _mul(a, b)
    elif op == "/":
        out = _div(a, b) if a.dtype is not None else _div(b, a)
    else:
        out = _minmax(a, b, op)
    return out or (a if a.dtype is not None else b)
