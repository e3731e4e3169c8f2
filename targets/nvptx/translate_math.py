"""NVPTX translations of the `math` dialect, without libdevice.

LLVM's NVPTX backend has no libcalls: `llvm.exp.f32`, `llvm.log.f32`, `llvm.pow.f32`, and
`llvm.tanh`/`llvm.sin` without `afn` abort code generation. So the transcendental ops are
built on the MUFU approximations (`ex2.approx`, `lg2.approx`; ~2 ulp):

    exp(x) = ex2(x·log2 e)        log(x) = lg2(x)·ln 2        pow(x, y) = ex2(y·lg2 x)
    tanh   = Cephes tanhf (odd polynomial for |x| < 0.625, else 1 − 2·rcp(e^{2|x|} + 1))
    erf    = Taylor series for |x| < 0.5, else Abramowitz–Stegun 7.1.26 (|error| < 5e-7), rcp too

(the reciprocals are of values >= 1: `rcp.approx.ftz`'s 1 ulp is within the functions' own error)

An op is *fast* when it carries `fastmath<afn>` (or `fast`) or the translation runs with
`fast_math=True`: then ex2/lg2/rsqrt use the `.ftz` NVVM intrinsics, tanh becomes
`tanh.approx.f32`, sqrt `sqrt.approx`, and sin/cos (fast only) `sin/cos.approx`.
f16/bf16 inputs of the transcendental ops are computed in f32; vectors are scalarized,
since the NVVM intrinsics are scalar. `pow` of a negative base is NaN (no odd-integer
exponent rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from llvmlite import ir
from xdsl.dialects import math as mth

from .translate import FunctionTranslator as T
from .translate import error, lowers
from .translate_ops import fastmath, splat, type_suffix

F32 = ir.FloatType()
LOG2E, LN2 = 1.0 / math.log(2.0), math.log(2.0)


def is_fast(t: T, op) -> bool:
    flags = fastmath(op)
    return t.options.fast_math or "afn" in flags or "fast" in flags


def in_f32(t: T, args: list[ir.Value], fn: Callable[..., ir.Value]) -> ir.Value:
    """Apply a scalar f32 builder `fn` elementwise, widening f16/bf16 to f32 and back."""
    ty = args[0].type
    elem = ty.element if isinstance(ty, ir.VectorType) else ty
    narrow = elem != F32
    if narrow:
        wide = ir.VectorType(F32, ty.count) if isinstance(ty, ir.VectorType) else F32
        args = [t.b.fpext(a, wide) for a in args]
    if isinstance(ty, ir.VectorType):
        result = ir.Constant(args[0].type, ir.Undefined)
        for i in range(ty.count):
            lane = ir.IntType(32)(i)
            value = fn(*(t.b.extract_element(a, lane) for a in args))
            result = t.b.insert_element(result, value, lane)
    else:
        result = fn(*args)
    return t.b.fptrunc(result, ty) if narrow else result


def nvvm(t: T, name: str, x: ir.Value, fast: bool) -> ir.Value:
    """`llvm.nvvm.<name>.approx[.ftz].f` on an f32 scalar."""
    return t.call(f"llvm.nvvm.{name}.approx{'.ftz' if fast else ''}.f", F32, [x])


def c(value: float) -> ir.Constant:
    return ir.Constant(F32, value)


def poly(t: T, x: ir.Value, coeffs: list[float]) -> ir.Value:
    """Horner evaluation with fma, highest coefficient first."""
    acc = c(coeffs[0])
    for coeff in coeffs[1:]:
        acc = t.call("llvm.fma.f32", F32, [acc, x, c(coeff)])
    return acc


def exp_f32(t: T, x: ir.Value, fast: bool) -> ir.Value:
    return nvvm(t, "ex2", t.b.fmul(x, c(LOG2E)), fast)


def tanh_f32(t: T, x: ir.Value) -> ir.Value:
    ax = t.call("llvm.fabs.f32", F32, [x])
    z = t.b.fmul(x, x)
    p = poly(
        t,
        z,
        [
            -5.70498872745e-3,
            2.06390887954e-2,
            -5.37397155531e-2,
            1.33314422036e-1,
            -3.33332819422e-1,
        ],
    )
    small = t.call("llvm.fma.f32", F32, [t.b.fmul(p, z), x, x])
    e = exp_f32(t, t.b.fmul(ax, c(2.0)), False)
    # 2 / (e + 1) with the hardware reciprocal: e + 1 >= 1, so rcp.approx.ftz's 1 ulp (no subnormals,
    # 1/inf = 0) is within tanh's own error, where div.rn would add a checked slow path per element
    large = t.b.fsub(c(1.0), t.b.fmul(c(2.0), t.call("llvm.nvvm.rcp.approx.ftz.f", F32, [t.b.fadd(e, c(1.0))])))
    large = t.call("llvm.copysign.f32", F32, [large, x])
    return t.b.select(t.b.fcmp_ordered("<", ax, c(0.625)), small, large)


def erf_f32(t: T, x: ir.Value) -> ir.Value:
    ax = t.call("llvm.fabs.f32", F32, [x])
    z = t.b.fmul(x, x)
    two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
    series = [1 / 216, -1 / 42, 1 / 10, -1 / 3, 1.0]
    small = t.b.fmul(t.b.fmul(poly(t, z, series), x), c(two_over_sqrt_pi))
    k = t.call("llvm.nvvm.rcp.approx.ftz.f", F32, [t.call("llvm.fma.f32", F32, [ax, c(0.3275911), c(1.0)])])  # >= 1
    p = t.b.fmul(
        poly(t, k, [1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592]),
        k,
    )
    e = exp_f32(t, t.b.fneg(z), False)
    large = t.call("llvm.copysign.f32", F32, [t.b.fsub(c(1.0), t.b.fmul(p, e)), x])
    return t.b.select(t.b.fcmp_ordered("<", ax, c(0.5)), small, large)


def pow_f32(t: T, x: ir.Value, y: ir.Value, fast: bool) -> ir.Value:
    r = nvvm(t, "ex2", t.b.fmul(y, nvvm(t, "lg2", x, fast)), fast)
    return t.b.select(t.b.fcmp_ordered("==", y, c(0.0)), c(1.0), r)  # pow(x, 0) = 1


# ----------------------------------------------------------------------- translations

# ops whose f32 expansion is written above: op → (fast, *f32 args) → f32
_EXPANDED: dict[type, Callable[..., ir.Value]] = {
    mth.Exp2Op: lambda t, fast, x: nvvm(t, "ex2", x, fast),
    mth.ExpOp: lambda t, fast, x: exp_f32(t, x, fast),
    mth.Log2Op: lambda t, fast, x: nvvm(t, "lg2", x, fast),
    mth.LogOp: lambda t, fast, x: t.b.fmul(nvvm(t, "lg2", x, fast), c(LN2)),
    mth.PowFOp: lambda t, fast, x, y: pow_f32(t, x, y, fast),
    mth.ErfOp: lambda t, fast, x: erf_f32(t, x),
}
# plain LLVM intrinsics that NVPTX selects for any float type and vector
_INTRINSICS = {
    mth.AbsFOp: "fabs",
    mth.FmaOp: "fma",
    mth.CopySignOp: "copysign",
    mth.FloorOp: "floor",
    mth.CeilOp: "ceil",
    mth.TruncOp: "trunc",
    mth.RoundEvenOp: "roundeven",
    mth.AbsIOp: "abs",
    mth.CountLeadingZerosOp: "ctlz",
    mth.CountTrailingZerosOp: "cttz",
    mth.CtPopOp: "ctpop",
}


@lowers(*_EXPANDED)
def _expanded(t: T, op) -> None:
    fast = is_fast(t, op)
    expand = _EXPANDED[type(op)]
    t.set(op, in_f32(t, t.operands(op), lambda *a: expand(t, fast, *a)))


@lowers(*_INTRINSICS)
def _intrinsic(t: T, op) -> None:
    args = t.operands(op)
    name = f"llvm.{_INTRINSICS[type(op)]}.{type_suffix(args[0].type)}"
    if isinstance(op, (mth.AbsIOp, mth.CountLeadingZerosOp, mth.CountTrailingZerosOp)):
        args.append(ir.IntType(1)(0))  # is_int_min_poison / is_zero_poison = false
    t.set(op, t.call(name, args[0].type, args, fastmath=fastmath(op)))


@lowers(mth.SqrtOp)
def _sqrt(t: T, op: mth.SqrtOp) -> None:
    (x,) = t.operands(op)
    flags = ["afn"] if is_fast(t, op) else []  # afn: sqrt.approx, else sqrt.rn
    t.set(op, t.call(f"llvm.sqrt.{type_suffix(x.type)}", x.type, [x], fastmath=flags))


@lowers(mth.RsqrtOp)
def _rsqrt(t: T, op: mth.RsqrtOp) -> None:
    (x,) = t.operands(op)
    if is_fast(t, op):
        t.set(op, in_f32(t, [x], lambda v: nvvm(t, "rsqrt", v, True)))
        return
    root = t.call(f"llvm.sqrt.{type_suffix(x.type)}", x.type, [x])
    t.set(op, t.b.fdiv(splat(x.type, 1.0), root))


@lowers(mth.TanhOp)
def _tanh(t: T, op: mth.TanhOp) -> None:
    fast = is_fast(t, op)
    approx = lambda v: t.call(
        "llvm.tanh.f32", F32, [v], fastmath=["afn"]
    )  # tanh.approx.f32
    t.set(op, in_f32(t, t.operands(op), approx if fast else (lambda v: tanh_f32(t, v))))


@lowers(mth.SinOp, mth.CosOp)
def _sin_cos(t: T, op) -> None:
    if not is_fast(t, op):
        raise error(op, "only the fast (afn) form is supported: there is no libdevice")
    name = "llvm.sin.f32" if isinstance(op, mth.SinOp) else "llvm.cos.f32"
    t.set(
        op,
        in_f32(t, t.operands(op), lambda v: t.call(name, F32, [v], fastmath=["afn"])),
    )
