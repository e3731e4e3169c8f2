"""NVPTX translations of fp8 (`f8E4M3FN`, `f8E5M2`): stored as i8, converted with the sm_89+ cvt.

An fp8 value is an `i8` in LLVM (a `vector<Nxf8…>` is `<N x i8>`): loads, stores, selects, vector
ops and bitcasts need nothing more. What does:

- `arith.truncf` (and `sitofp` / `uitofp`) into fp8: the source is brought to f32 (f16 / bf16
  exactly, f64 rounded, as torch does), then `llvm.nvvm.ff.to.{e4m3,e5m2}x2.rn` (PTX
  `cvt.rn.satfinite.e4m3x2.f32`: round to nearest even, two values per instruction where a vector
  gives pairs, and two scalar conversions a few ops apart share one: `_partner`), then the fix-ups that make it torch's rule (`targets/interp/float8.py`): NaN keeps
  its sign; e5m2 overflow (|x| ≥ 61440, which rounds above 57344) and ±inf are ±inf, not the
  saturated ±57344 (e4m3fn has no infinity: saturating to ±448 is torch's rule as it is);
- `arith.extf` (and `fptosi` / `fptoui`) out of fp8: `llvm.nvvm.{e4m3,e5m2}x2.to.f16x2.rn` (exact),
  then the f16 extended to the result type;
- `arith.constant` of an fp8: its code;
- float arithmetic and comparisons on fp8 operands: computed in f32, the result rounded once.

The conversions exist from sm_89 on (PTX 8.1 there, 7.8 on sm_90): `emit.compile_llvm_ir` asks
`fp8_ptx_version`, which refuses them for an older arch before LLVM, which would abort on an
intrinsic it cannot select.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float8E4M3FNType,
    Float8E5M2Type,
    FloatAttr,
    VectorType,
)

from . import translate_ops
from .translate import LOWERINGS, TranslationError, error, lowers
from .translate import FunctionTranslator as T

I8, I16, I32 = ir.IntType(8), ir.IntType(16), ir.IntType(32)
F16, F32 = ir.HalfType(), ir.FloatType()
FP8_INTRINSIC_MARKERS = ("llvm.nvvm.ff.to.e4m3x2", "llvm.nvvm.ff.to.e5m2x2", "llvm.nvvm.e4m3x2.to.f16x2",
                         "llvm.nvvm.e5m2x2.to.f16x2")
"""Names whose presence in the LLVM IR means the module needs sm_89 or newer."""
_FORMAT = {Float8E4M3FNType: "e4m3", Float8E5M2Type: "e5m2"}
_E5M2_INF_FROM = 61440.0  # the midpoint between 57344 and 65536: rounds (to even) to infinity


def fp8_format(ty) -> str | None:
    """"e4m3" / "e5m2" for an fp8 type or a vector of one, else None."""
    elem = ty.element_type if isinstance(ty, VectorType) else ty
    return _FORMAT.get(type(elem))


def _elements(t: T, value: ir.Value) -> list[ir.Value]:
    if not isinstance(value.type, ir.VectorType):
        return [value]
    return [t.b.extract_element(value, I32(i)) for i in range(value.type.count)]


def _gather(t: T, values: list[ir.Value], ty: ir.Type) -> ir.Value:
    if not isinstance(ty, ir.VectorType):
        (value,) = values
        return value
    out = ir.Constant(ty, ir.Undefined)
    for i, v in enumerate(values):
        out = t.b.insert_element(out, v, I32(i))
    return out


def _float_to_f32(t: T, x: ir.Value) -> ir.Value:
    if x.type == F32:
        return x
    if isinstance(x.type, ir.DoubleType):
        return t.b.fptrunc(x, F32)
    return t.b.fpext(x, F32)


def _sign_byte(t: T, x: ir.Value) -> ir.Value:
    """0x80 if the float `x` has its sign bit set (NaNs included), else 0, as i8."""
    bits = x.type.width if hasattr(x.type, "width") else {"half": 16, "bfloat": 16, "float": 32, "double": 64}[str(x.type)]
    word = ir.IntType(bits)
    top = t.b.trunc(t.b.lshr(t.b.bitcast(x, word), ir.Constant(word, bits - 8)), I8)
    return t.b.and_(top, I8(0x80))


def _fix_up(t: T, fmt: str, x: ir.Value, code: ir.Value, sign: ir.Value | None = None) -> ir.Value:
    """cvt.satfinite's code for f32 `x` made torch's: NaN → 0x7F | sign; e5m2 |x| ≥ 61440 → ±inf.
    `sign`: the sign byte of the value `x` was widened from (the GPU's f16 → f32 conversion of a
    NaN drops its sign)."""
    if sign is None:
        sign = _sign_byte(t, x)
    if fmt == "e5m2":
        big = t.b.fcmp_ordered(">=", t.call("llvm.fabs.f32", F32, [x]), F32(_E5M2_INF_FROM))
        code = t.b.select(big, t.b.or_(sign, I8(0x7C)), code)
    nan = t.b.fcmp_unordered("uno", x, x)
    return t.b.select(nan, t.b.or_(sign, I8(0x7F)), code)


def f32_to_fp8(t: T, fmt: str, xs: list[ir.Value], signs: list | None = None) -> list[ir.Value]:
    """The fp8 codes (i8) of f32 values `xs`, two per cvt (`signs`: the sign bytes of the values
    they were widened from)."""
    name = f"llvm.nvvm.ff.to.{fmt}x2.rn"
    codes = []
    for i in range(0, len(xs), 2):
        lo = xs[i]
        hi = xs[i + 1] if i + 1 < len(xs) else F32(0.0)
        pair = t.call(name, I16, [hi, lo])  # cvt d, a, b: a → the upper byte
        codes.append(t.b.trunc(pair, I8))
        if i + 1 < len(xs):
            codes.append(t.b.trunc(t.b.lshr(pair, I16(8)), I8))
    return [_fix_up(t, fmt, x, c, signs[i] if signs else None) for i, (x, c) in enumerate(zip(xs, codes))]


def fp8_to_f16(t: T, fmt: str, codes: list[ir.Value]) -> list[ir.Value]:
    """The f16 values (exact) of fp8 codes (i8), two per cvt."""
    name = f"llvm.nvvm.{fmt}x2.to.f16x2.rn"
    out = []
    for i in range(0, len(codes), 2):
        lo = t.b.zext(codes[i], I16)
        if i + 1 < len(codes):
            lo = t.b.or_(lo, t.b.shl(t.b.zext(codes[i + 1], I16), I16(8)))
        pair = t.call(name, ir.VectorType(F16, 2), [lo])
        out.append(t.b.extract_element(pair, I32(0)))
        if i + 1 < len(codes):
            out.append(t.b.extract_element(pair, I32(1)))
    return out


def _widen(t: T, fmt: str, value: ir.Value, ty: ir.Type) -> list[ir.Value]:
    """fp8 `value` (i8 or <N x i8>) as f32 scalars."""
    return [t.b.fpext(h, F32) for h in fp8_to_f16(t, fmt, _elements(t, value))]


_INT_TO_FLOAT = {arith.SIToFPOp: "sitofp", arith.UIToFPOp: "uitofp"}
_FLOAT_TO_INT = {arith.FPToSIOp: "fptosi", arith.FPToUIOp: "fptoui"}


_PAIR_WINDOW = 8
"""How many ops ahead a scalar fp8 conversion looks for its partner (`_partner`)."""


def _partner(t: T, op):
    """A later op of the same block doing the same scalar conversion whose operand is already
    translated (so it dominates `op`): the two share one cvt. The search stops at ops with
    regions, `_PAIR_WINDOW` ops ahead."""
    if isinstance(op.operands[0].type, VectorType):
        return None
    other = op.next_op
    for _ in range(_PAIR_WINDOW):
        if other is None or other.regions:
            return None
        if type(other) is type(op) and other.operands[0].type == op.operands[0].type and \
                other.results[0].type == op.results[0].type and other.operands[0] in t.values and \
                other.results[0] not in t.values:
            return other
        other = other.next_op
    return None


@lowers(arith.ExtFOp, arith.TruncFOp, *_INT_TO_FLOAT, *_FLOAT_TO_INT)
def _cast(t: T, op) -> None:
    src_fmt, dst_fmt = fp8_format(op.operands[0].type), fp8_format(op.results[0].type)
    if src_fmt is None and dst_fmt is None:
        translate_ops._cast(t, op)
        return
    if op.results[0] in t.values:  # converted with an earlier op's pair
        return
    partner = _partner(t, op)
    if partner is None:
        _convert(t, op, [op])
        return
    _convert(t, op, [op, partner])


def _convert(t: T, op, ops: list) -> None:
    """The fp8 conversion of `ops` (one op, or two scalar ones of the same types sharing a cvt)."""
    src_fmt, dst_fmt = fp8_format(op.operands[0].type), fp8_format(op.results[0].type)
    ty = t.types(op.results[0].type)
    if len(ops) == 2:  # two scalars as a 2-vector, split again at the end
        value = _gather(t, [t.get(o.operands[0]) for o in ops], ir.VectorType(t.get(op.operands[0]).type, 2))
        ty = ir.VectorType(ty, 2)
    else:
        value = t.get(op.operands[0])
    out = _converted(t, op, src_fmt, dst_fmt, value, ty)
    if len(ops) == 2:
        for i, o in enumerate(ops):
            t.values[o.results[0]] = t.b.extract_element(out, I32(i))
    else:
        t.set(op, out)


def _converted(t: T, op, src_fmt, dst_fmt, value: ir.Value, ty: ir.Type) -> ir.Value:
    elem = ty.element if isinstance(ty, ir.VectorType) else ty
    if src_fmt is not None and dst_fmt is not None:  # e4m3 ↔ e5m2 through f32 (exact widening, one rounding)
        return _gather(t, f32_to_fp8(t, dst_fmt, _widen(t, src_fmt, value, ty)), ty)
    if src_fmt is not None:
        wide = _widen(t, src_fmt, value, ty)
        if type(op) in _FLOAT_TO_INT:
            out = [getattr(t.b, _FLOAT_TO_INT[type(op)])(x, elem) for x in wide]
        else:
            out = [x if elem == F32 else (t.b.fpext(x, elem) if isinstance(elem, ir.DoubleType)
                                          else t.b.fptrunc(x, elem)) for x in wide]
        return _gather(t, out, ty)
    xs = _elements(t, value)
    signs = None
    if type(op) in _INT_TO_FLOAT:
        xs = [getattr(t.b, _INT_TO_FLOAT[type(op)])(x, F32) for x in xs]
    else:
        signs = [_sign_byte(t, x) for x in xs]  # before widening: a widened NaN may lose its sign
        xs = [_float_to_f32(t, x) for x in xs]
    return _gather(t, f32_to_fp8(t, dst_fmt, xs, signs), ty)


def _code(value: float, fmt: str) -> int:
    from tilec.targets.interp.float8 import encode
    from tilec.targets.interp.values import float8_e4m3fn, float8_e5m2

    return int(encode(value, float8_e4m3fn if fmt == "e4m3" else float8_e5m2))


@lowers(arith.ConstantOp)
def _constant(t: T, op: arith.ConstantOp) -> None:
    fmt = fp8_format(op.result.type)
    if fmt is None:
        translate_ops._constant(t, op)
        return
    ty, attr = t.types(op.result.type), op.value
    if isinstance(attr, FloatAttr):
        t.set(op, ir.Constant(ty, _code(attr.value.data, fmt)))
    elif isinstance(attr, DenseIntOrFPElementsAttr) and isinstance(ty, ir.VectorType):
        values = attr.get_values()
        values = values * ty.count if len(values) == 1 else values
        t.set(op, ir.Constant(ty, [ir.Constant(I8, _code(v, fmt)) for v in values]))
    else:
        raise error(op, f"unsupported fp8 constant {attr}")


def _in_f32(lowering):
    """A float op on fp8 operands: the operands widened to f32 for `lowering`, an fp8 result
    rounded once from its f32 value."""

    def run(t: T, op) -> None:
        fmts = [fp8_format(v.type) for v in op.operands]
        if not any(fmts):
            lowering(t, op)
            return
        saved = {}
        for v, fmt in zip(op.operands, fmts):
            if fmt is not None and v not in saved:
                saved[v] = t.values[v]
                ty = t.types(v.type)
                wide = _widen(t, fmt, t.values[v], ty)
                t.values[v] = _gather(t, wide, ir.VectorType(F32, ty.count) if isinstance(ty, ir.VectorType) else F32)
        try:
            lowering(t, op)
        finally:
            t.values.update(saved)
        res = op.results[0]
        fmt = fp8_format(res.type)
        if fmt is not None:
            t.values[res] = _gather(t, f32_to_fp8(t, fmt, _elements(t, t.values[res])), t.types(res.type))

    return run


_FP8_OPERANDS = (*translate_ops._FLOAT_BINOPS, *translate_ops._INTRINSIC_BINOPS, arith.NegfOp, arith.CmpfOp)
for _op_type in _FP8_OPERANDS:  # wraps translate_ops' lowering (imported above, so registered first)
    lowers(_op_type)(_in_f32(LOWERINGS[_op_type]))


def fp8_ptx_version(llvm_ir: str, arch: str) -> int:
    """The PTX version (as 81 for 8.1) the module's fp8 conversions need on `arch`, 0 for none:
    8.1 on sm_89, LLVM's default elsewhere. An arch without them (before sm_89) is refused with a
    TranslationError naming the feature, where LLVM would abort the process on the intrinsic."""
    if not any(marker in llvm_ir for marker in FP8_INTRINSIC_MARKERS):
        return 0
    digits = "".join(ch for ch in arch[3:] if ch.isdigit())
    if not arch.startswith("sm_") or not digits:
        return 0
    if int(digits) >= 89:
        return 81 if int(digits) == 89 else 0
    raise TranslationError(f"fp8 (float8_e4m3fn / float8_e5m2) conversions need sm_89 or newer "
                           f"(PTX cvt … e4m3x2 / e5m2x2); the target is {arch}")
