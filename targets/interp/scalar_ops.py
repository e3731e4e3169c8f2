"""Interpreter handlers for the upstream scalar ops: arith, math and scf.

Every handler works elementwise on numpy scalars or lane arrays (inside a `tile.parallel`),
with C semantics: integers wrap, `divsi` truncates toward zero, `remsi` takes the sign of
the dividend, the `u` ops reinterpret signless integers as unsigned.  Float arithmetic stays
in the value's dtype, so f16 / bf16 results round after every op as on the GPU; math
functions on f16 / bf16 are computed in float32 and rounded back.

`HANDLERS` maps each op class to a builder `(op, compiler) -> runner | None`; a runner is
`runner(state)` and reads / writes `state.env`.  Builders read everything static (types,
predicates, operands) once, so runners do no reflection.
"""

from __future__ import annotations

import math
import operator

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, VectorType

from tilec.errors import error_at

from .float8 import is_float8
from .values import compute_dtype, convert, numpy_dtype, scalarize, uniform, unsigned


def _elementwise(make):
    """A builder for a one-result op computing `make(op)(*operand values)`."""

    def build(op, c):
        fn, args, r = make(op), tuple(op.operands), op.results[0]
        if len(args) == 1:
            (a,) = args

            def run1(st):
                st.env[r] = fn(st.env[a])

            return run1
        if len(args) == 2:
            a, b = args

            def run2(st):
                env = st.env
                env[r] = fn(env[a], env[b])

            return run2

        def run(st):
            env = st.env
            env[r] = fn(*[env[x] for x in args])

        return run

    return build


def _fixed(fn):
    return _elementwise(lambda op: fn)


def _result_dtype(op) -> np.dtype:
    dtype = numpy_dtype(op.results[0].type)
    if dtype is None:
        raise error_at(op, f"{op.name}: type {op.results[0].type} is not supported by the interpreter")
    return dtype


# --- integers -------------------------------------------------------------------------------


def _divsi(a, b):
    # C division truncates toward zero: subtract the C remainder, then the division is exact.
    return (a - np.fmod(a, b)) // b


def _ceildiv(a, b):
    q = a // b
    return q + (q * b != a).astype(q.dtype)


def _as_unsigned(fn):
    """`fn` on the operands reinterpreted as unsigned, the result cast back to the operand type."""

    def make(op):
        dtype = _result_dtype(op)
        return lambda *xs: fn(*map(unsigned, xs)).astype(dtype)

    return _elementwise(make)


_CMPI = {
    0: operator.eq, 1: operator.ne, 2: operator.lt, 3: operator.le, 4: operator.gt, 5: operator.ge,
    6: lambda a, b: unsigned(a) < unsigned(b), 7: lambda a, b: unsigned(a) <= unsigned(b),
    8: lambda a, b: unsigned(a) > unsigned(b), 9: lambda a, b: unsigned(a) >= unsigned(b),
}


def _const_like(value: bool):
    return lambda a, b: scalarize(np.full(np.broadcast_shapes(np.shape(a), np.shape(b)), value))


def _unordered(a, b):
    return np.isnan(a) | np.isnan(b)


# Ordered predicates are false on NaN, unordered ones true; numpy's comparisons are ordered
# except `!=`, so the unordered forms negate the opposite ordered comparison.
_CMPF = {
    0: _const_like(False), 1: operator.eq, 2: operator.gt, 3: operator.ge, 4: operator.lt, 5: operator.le,
    6: lambda a, b: (a < b) | (a > b), 7: lambda a, b: ~_unordered(a, b),
    8: lambda a, b: (a == b) | _unordered(a, b), 9: lambda a, b: ~(a <= b), 10: lambda a, b: ~(a < b),
    11: lambda a, b: ~(a >= b), 12: lambda a, b: ~(a > b), 13: operator.ne, 14: _unordered,
    15: _const_like(True),
}


def _compare(table):
    return _elementwise(lambda op: table[op.predicate.value.data])


def _select(c, a, b):
    if isinstance(c, np.ndarray):
        return np.where(c, a, b)
    return a if c else b


def _constant(op, c):
    attr, r, dtype = op.value, op.result, _result_dtype(op)
    if isinstance(attr, IntegerAttr):
        value = np.bool_(attr.value.data != 0) if dtype == np.bool_ else np.array(attr.value.data).astype(dtype)[()]
    elif isinstance(attr, FloatAttr):
        value = convert(np.float64(attr.value.data), dtype) if is_float8(dtype) else dtype.type(attr.value.data)
    else:
        raise error_at(op, f"arith.constant: {attr} is not supported by the interpreter")

    def run(st):
        st.env[r] = value

    return run


# --- conversions ----------------------------------------------------------------------------


def _signed_source(x):
    """i1 is signed in arith: true is -1 when sign-extended."""
    return np.where(x, -1, 0).astype(np.int8) if x.dtype == np.bool_ else x


def _cast(convert):
    """A conversion op: `convert(x, result dtype)`."""

    def make(op):
        dtype = _result_dtype(op)
        return lambda x: convert(x, dtype)

    return _elementwise(make)


def _astype(x, dtype):
    return convert(x, dtype)


def _trunci(x, dtype):
    return (x & 1).astype(dtype) if dtype == np.bool_ else x.astype(dtype)


def _fptoui(x, dtype):
    return x.astype(dtype) if dtype == np.bool_ else x.astype(f"u{dtype.itemsize}").astype(dtype)


def _bitcast(x, dtype):
    return scalarize(np.asarray(x).view(dtype))


# --- math -----------------------------------------------------------------------------------


def _erf(x):
    try:
        from scipy.special import erf  # optional dependency, imported on first use
    except ImportError:
        return np.vectorize(math.erf, otypes=[x.dtype])(x)
    return erf(x)


def _math(fn):
    """A math function: f16 / bf16 are computed in float32 and rounded back."""

    def make(op):
        dtype = _result_dtype(op)
        wide = compute_dtype(dtype)
        if wide == dtype:
            return fn
        return lambda *xs: convert(fn(*(x.astype(wide) for x in xs)), dtype)

    return _elementwise(make)


def _float(fn):
    """A float arithmetic op: in the operands' dtype (f16 / bf16 round after every op), except
    fp8, which numpy cannot compute in: float32, rounded once to fp8 (torch's rule)."""

    def make(op):
        dtype = _result_dtype(op)
        if not is_float8(dtype):
            return fn
        return lambda *xs: convert(fn(*(np.asarray(x).astype(np.float32) for x in xs)), dtype)

    return _elementwise(make)


def _fma(op):
    # One rounding like the hardware fma: compute in a wider type, round once (almost always).
    dtype = _result_dtype(op)
    wide = np.dtype(np.float64) if dtype.itemsize <= 4 else dtype
    return lambda a, b, c: convert(a.astype(wide) * b.astype(wide) + c.astype(wide), dtype)


# --- scf ------------------------------------------------------------------------------------


def _yielded(block):
    return tuple(block.last_op.operands) if block.last_op is not None else ()


def _if(op, c):
    """`scf.if`: a plain branch on a uniform condition, else both branches under lane masks."""
    cond, results = op.cond, tuple(op.results)
    vectors = [isinstance(r.type, VectorType) for r in results]
    then_run, then_out = c.block(op.true_region.block), _yielded(op.true_region.block)
    has_else = bool(op.false_region.blocks)
    else_run = c.block(op.false_region.block) if has_else else None
    else_out = _yielded(op.false_region.block) if has_else else ()

    def run(st):
        env = st.env
        cv = env[cond]
        if not isinstance(cv, np.ndarray):
            if cv:
                then_run(st)
                out = then_out
            elif has_else:
                else_run(st)
                out = else_out
            else:
                return
            for r, v in zip(results, out):
                env[r] = env[v]
            return
        outer = st.mask
        then_vals = else_vals = None
        m_then = cv if outer is None else outer & cv
        if m_then.any():
            st.mask = m_then
            then_run(st)
            then_vals = [env[v] for v in then_out]
        m_else = ~cv if outer is None else outer & ~cv
        if has_else and m_else.any():
            st.mask = m_else
            else_run(st)
            else_vals = [env[v] for v in else_out]
        st.mask = outer
        if results:
            then_vals = then_vals or else_vals
            else_vals = else_vals or then_vals
            for r, t, e, is_vector in zip(results, then_vals, else_vals, vectors):
                if is_vector:  # a vector value is (elements,) when uniform, (lanes, elements) otherwise
                    env[r] = np.where(cv[:, None], np.atleast_2d(t), np.atleast_2d(e))
                else:
                    env[r] = np.where(cv, t, e)

    return run


def _active(value, mask):
    """The lanes of `value` that run (all, without a mask): only theirs must agree on a bound."""
    if mask is None or not isinstance(value, np.ndarray) or value.ndim == 0 or value.shape[0] != mask.shape[0]:
        return value
    return value[mask]


def _scf_for(op, c):
    """`scf.for` with loop-carried values: a serial loop with uniform bounds."""
    body, block = c.block(op.body.block), op.body.block
    iv, carried, out, results = block.args[0], block.args[1:], _yielded(block), tuple(op.results)
    iv_type = numpy_dtype(iv.type).type
    bounds, inits = (op.lb, op.ub, op.step), tuple(op.iter_args)

    def run(st):
        env = st.env
        lb, ub, step = (uniform(_active(env[v], st.mask), op, "a loop bound") for v in bounds)
        vals = [env[v] for v in inits]
        for k in range(lb, ub, step):
            env[iv] = iv_type(k)
            for a, v in zip(carried, vals):
                env[a] = v
            body(st)
            vals = [env[y] for y in out]
        for r, v in zip(results, vals):
            env[r] = v

    return run


def _terminator(op, c):
    return None  # read by the op that owns the region


HANDLERS = {
    arith.ConstantOp: _constant,
    arith.AddiOp: _fixed(operator.add), arith.SubiOp: _fixed(operator.sub), arith.MuliOp: _fixed(operator.mul),
    arith.DivSIOp: _fixed(_divsi), arith.RemSIOp: _fixed(np.fmod), arith.FloorDivSIOp: _fixed(operator.floordiv),
    arith.CeilDivSIOp: _fixed(_ceildiv), arith.DivUIOp: _as_unsigned(operator.floordiv),
    arith.RemUIOp: _as_unsigned(np.fmod), arith.CeilDivUIOp: _as_unsigned(_ceildiv),
    arith.MaxSIOp: _fixed(np.maximum), arith.MinSIOp: _fixed(np.minimum),
    arith.MaxUIOp: _as_unsigned(np.maximum), arith.MinUIOp: _as_unsigned(np.minimum),
    arith.AndIOp: _fixed(operator.and_), arith.OrIOp: _fixed(operator.or_), arith.XOrIOp: _fixed(operator.xor),
    arith.ShLIOp: _fixed(np.left_shift), arith.ShRSIOp: _fixed(np.right_shift),
    arith.ShRUIOp: _as_unsigned(np.right_shift),
    arith.AddfOp: _float(operator.add), arith.SubfOp: _float(operator.sub), arith.MulfOp: _float(operator.mul),
    arith.DivfOp: _float(operator.truediv), arith.NegfOp: _float(operator.neg),
    arith.MaximumfOp: _fixed(np.maximum), arith.MinimumfOp: _fixed(np.minimum),
    arith.MaxnumfOp: _fixed(np.fmax), arith.MinnumfOp: _fixed(np.fmin),
    arith.CmpiOp: _compare(_CMPI), arith.CmpfOp: _compare(_CMPF), arith.SelectOp: _fixed(_select),
    arith.ExtFOp: _cast(_astype), arith.TruncFOp: _cast(_astype),
    arith.ExtSIOp: _cast(lambda x, t: _signed_source(x).astype(t)),
    arith.ExtUIOp: _cast(lambda x, t: unsigned(x).astype(t)),
    arith.TruncIOp: _cast(_trunci), arith.IndexCastOp: _cast(_astype),
    arith.SIToFPOp: _cast(lambda x, t: convert(_signed_source(x), t)),
    arith.UIToFPOp: _cast(lambda x, t: convert(unsigned(x), t)),
    arith.FPToSIOp: _cast(_astype), arith.FPToUIOp: _cast(_fptoui),
    arith.BitcastOp: _cast(_bitcast),
    mathd.ExpOp: _math(np.exp), mathd.Exp2Op: _math(np.exp2), mathd.ExpM1Op: _math(np.expm1),
    mathd.LogOp: _math(np.log), mathd.Log2Op: _math(np.log2), mathd.Log10Op: _math(np.log10),
    mathd.Log1pOp: _math(np.log1p), mathd.SqrtOp: _math(np.sqrt),
    mathd.RsqrtOp: _math(lambda x: np.reciprocal(np.sqrt(x))), mathd.TanhOp: _math(np.tanh),
    mathd.SinOp: _math(np.sin), mathd.CosOp: _math(np.cos), mathd.TanOp: _math(np.tan),
    mathd.AtanOp: _math(np.arctan), mathd.Atan2Op: _math(np.arctan2), mathd.ErfOp: _math(_erf),
    mathd.FloorOp: _math(np.floor), mathd.CeilOp: _math(np.ceil), mathd.TruncOp: _math(np.trunc),
    mathd.RoundEvenOp: _math(np.rint), mathd.PowFOp: _math(np.power), mathd.CopySignOp: _math(np.copysign),
    mathd.AbsFOp: _fixed(np.abs), mathd.AbsIOp: _fixed(np.abs), mathd.FmaOp: _elementwise(_fma),
    scf.IfOp: _if, scf.ForOp: _scf_for, scf.YieldOp: _terminator, func.ReturnOp: _terminator,
}
