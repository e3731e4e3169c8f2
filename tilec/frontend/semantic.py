"""Type rules and IR building for scalars, shared by the visitor and the builtins.

`Builder` owns the insertion point and the current source location; every op
goes through `emit`, which stamps the location and verifies ops that have no
regions right away, so a verifier's complaint points at the user's line.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

from xdsl.dialects import arith, scf
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    i1,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from tilec.dialects import append_op, arith_utils
from tilec.dialects.arith_utils import is_float as is_float_type
from tilec.dtypes import DType, as_dtype, from_ir
from tilec.errors import SourceLoc, TilecError

from .values import Affine, Scalar

INDEX = IndexType()

_FLOAT_RANK = {"float8_e4m3fn": 0, "float8_e5m2": 0, "float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}

_ARITH = {  # python operator → (int op, float op)
    "+": (arith.AddiOp, arith.AddfOp),
    "-": (arith.SubiOp, arith.SubfOp),
    "*": (arith.MuliOp, arith.MulfOp),
    "/": (None, arith.DivfOp),
    "//": (arith.FloorDivSIOp, None),
    "%": (arith.RemSIOp, None),
    "&": (arith.AndIOp, None),
    "|": (arith.OrIOp, None),
    "^": (arith.XOrIOp, None),
    "<<": (arith.ShLIOp, None),
    ">>": (arith.ShRSIOp, None),
}
_UNSIGNED = {"//": arith.DivUIOp, "%": arith.RemUIOp, ">>": arith.ShRUIOp}
"""The ops that differ for unsigned integers (the rest compute the same bits)."""


def _signed_bits(value: int, width: int) -> int:
    """`value`'s low `width` bits read as a signed integer (how a signless constant holds them)."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def _is_unsigned(typ) -> bool:
    return isinstance(typ, IntegerType) and typ.signedness.data == Signedness.UNSIGNED


_CMP = {  # python comparison → (cmpi predicate, cmpf predicate)
    "<": ("slt", "olt"), "<=": ("sle", "ole"), ">": ("sgt", "ogt"), ">=": ("sge", "oge"),
    "==": ("eq", "oeq"), "!=": ("ne", "une"),
}
_PY_OPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "**": lambda a, b: a**b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}
UNARY_MATH = {
    "exp": mathd.ExpOp, "exp2": mathd.Exp2Op, "log": mathd.LogOp, "log2": mathd.Log2Op,
    "sqrt": mathd.SqrtOp, "rsqrt": mathd.RsqrtOp, "tanh": mathd.TanhOp, "floor": mathd.FloorOp,
    "ceil": mathd.CeilOp, "sin": mathd.SinOp, "cos": mathd.CosOp, "erf": mathd.ErfOp,
}


def is_compile_time(value) -> bool:
    return isinstance(value, bool | int | float) and not isinstance(value, Scalar)


class Builder:
    """Appends ops at the insertion point, stamped with the current location."""

    def __init__(self):
        self.blocks: list[Block] = []
        self.loc: SourceLoc | None = None
        self.affine: dict[SSAValue, Affine] = {}
        self.constants: dict[SSAValue, object] = {}

    # -- insertion ---------------------------------------------------------
    @contextmanager
    def at_end_of(self, block: Block):
        self.blocks.append(block)
        try:
            yield block
        finally:
            self.blocks.pop()

    @contextmanager
    def under(self, cond: SSAValue):
        """Emits into a new `scf.if cond` (no else, no results) here: what runs where `cond` holds."""
        then_block = Block()
        self.emit(scf.IfOp(cond, [], Region(then_block)))
        then_block.add_op(scf.YieldOp())
        with self.at_end_of(then_block):
            yield then_block

    @staticmethod
    def stamp(loc: SourceLoc) -> FileLineColLoc:
        return FileLineColLoc(StringAttr(loc.file), IntAttr(loc.line), IntAttr(loc.col))

    def emit(self, op: Operation) -> Operation:
        if self.loc is not None:
            op.location = self.stamp(self.loc)
        append_op(self.blocks[-1], op)
        if not op.regions:
            self.verify(op)
        return op

    def verify(self, op: Operation) -> None:
        try:
            op.verify()
        except VerifyException as e:
            msg = str(e).split("\n")[0]
            raise TilecError(msg, loc=self.loc) from None

    def error(self, msg: str, hint: str | None = None) -> TilecError:
        return TilecError(msg, loc=self.loc, hint=hint)

    # -- constants -----------------------------------------------------------
    def const(self, value, typ) -> SSAValue:
        if isinstance(typ, IndexType | IntegerType):
            if isinstance(value, float):
                if not value.is_integer():
                    raise self.error(f"{value} is not an integer, but an integer of type {typ} is needed here")
                value = int(value)
            _check_fits(self, int(value), typ)
            if _is_unsigned(typ):  # arith's constants are signless: the same bits, bitcast
                plain = IntegerType(typ.width.data)
                bits = self.emit(arith.ConstantOp(IntegerAttr(_signed_bits(int(value), plain.width.data), plain),
                                                  plain)).results[0]
                result = self.emit(arith.BitcastOp(bits, typ)).results[0]
                self.constants[result] = value
                return result
            attr = IntegerAttr(int(value), typ)
        else:
            attr = FloatAttr(float(value), typ)
        result = self.emit(arith.ConstantOp(attr, typ)).results[0]
        self.constants[result] = value
        if isinstance(typ, IndexType):
            self.affine[result] = Affine(int(value))
        return result

    def affine_of(self, value) -> Affine | None:
        if isinstance(value, int) and not isinstance(value, bool):
            return Affine(value)
        if isinstance(value, Scalar) and value.is_int and not value.is_bool:  # an index or an integer
            return self.affine.get(value.ssa, Affine.of(value.ssa))
        return None

    # -- conversions ----------------------------------------------------------
    def to_ssa(self, value, typ) -> SSAValue:
        """`value` (compile-time or Scalar) converted to IR type `typ`."""
        if isinstance(value, Scalar):
            return self.convert(value.ssa, typ)
        if isinstance(value, bool | int | float):
            if isinstance(value, float) and math.isinf(value) and not is_float_type(typ):
                raise self.error(f"infinity cannot be stored in integer type {typ}")
            return self.const(value, typ)
        raise self.error(f"expected a scalar, got {describe(value)}")

    def convert(self, value: SSAValue, typ) -> SSAValue:
        """`value` as IR type `typ`. arith computes on signless integers: an unsigned value is bitcast
        to the signless type of its width (zero-extended, converted with the unsigned ops), and a value
        bound for an unsigned type is made in the signless type and bitcast."""
        src = value.type
        if src == typ:
            return value
        if isinstance(src, IntegerType) and isinstance(typ, IntegerType) and src.width == typ.width:
            return self.emit(arith.BitcastOp(value, typ)).results[0]  # the same bits, another signedness
        if _is_unsigned(src):
            width = src.width.data
            value = self.emit(arith.BitcastOp(value, IntegerType(width))).results[0]
            if is_float_type(typ):
                return self.emit(arith.UIToFPOp(value, typ)).results[0]
            target = 64 if isinstance(typ, IndexType) else typ.width.data
            if target > width:
                value = self.emit(arith.ExtUIOp(value, IntegerType(target))).results[0]
            return self.convert(value, typ)
        if _is_unsigned(typ):
            plain = IntegerType(typ.width.data)
            value = self.emit(arith.FPToUIOp(value, plain)).results[0] if is_float_type(src) else \
                self.convert(value, plain)
            return self.emit(arith.BitcastOp(value, typ)).results[0]
        return arith_utils.convert(value, typ, self.emit, self.const)

    def _signless(self, value, typ) -> SSAValue:
        """`value` (a Scalar or a number) as the signless integer type of unsigned `typ`'s width."""
        plain = IntegerType(typ.width.data)
        if not isinstance(value, Scalar):
            return self.const(int(value) & ((1 << typ.width.data) - 1), plain)
        return self.convert(self.to_ssa(value, typ), plain)

    def cast(self, value, dtype) -> Scalar:
        d = as_dtype(dtype)
        if d is None:
            raise self.error(f"unknown dtype {dtype!r}", hint="use T.float16, T.float32, T.int32, ...")
        if not d.computable:
            raise self.error(f"cast to {d.name}: tilec cannot compute with this dtype (a storage format)",
                             hint="cast to float16 / bfloat16 / float32 or an integer type")
        return Scalar(self.to_ssa(value, d.ir))

    # -- typing -------------------------------------------------------------
    def common_type(self, a, b):
        """The IR type two operands meet in (at least one is a Scalar)."""
        ta = a.type if isinstance(a, Scalar) else None
        tb = b.type if isinstance(b, Scalar) else None
        if ta is None or tb is None:
            t = ta or tb
            other = b if ta is not None else a
            if isinstance(other, float) and not is_float_type(t):
                from xdsl.dialects.builtin import f32

                return f32
            return t
        if ta == tb:
            return ta
        fa, fb = is_float_type(ta), is_float_type(tb)
        if fa and fb:
            ra, rb = _FLOAT_RANK[from_ir(ta).name], _FLOAT_RANK[from_ir(tb).name]
            if ra == rb:  # float16 with bfloat16
                from xdsl.dialects.builtin import f32

                return f32
            return ta if ra > rb else tb
        if fa != fb:
            return ta if fa else tb
        if isinstance(ta, IndexType) or isinstance(tb, IndexType):
            return INDEX
        return ta if ta.width.data >= tb.width.data else tb

    def binop(self, op: str, a, b):
        if op in ("//", "%") and is_compile_time(b) and b == 0:
            raise self.error(f"integer division by zero (`{op} 0`)",
                             hint="the divisor (often a size passed as an argument) must not be 0")
        if is_compile_time(a) and is_compile_time(b):
            if op == "/" and b == 0:
                raise self.error("division by zero in a compile-time expression")
            return _PY_OPS[op](a, b)
        if op == "**":
            return self.math_call("pow", a, b)
        if op in _CMP:
            return self.compare(op, a, b)
        typ = self.common_type(a, b)
        if op == "/" and not is_float_type(typ):
            from xdsl.dialects.builtin import f32

            typ = f32
        int_op, float_op = _ARITH[op]
        ir_op = float_op if is_float_type(typ) else int_op
        if ir_op is None:
            raise self.error(f"operator {op} is not defined for {typ}")
        if op == "//" and is_float_type(typ):
            raise self.error("// on floating-point values is not supported", hint="use T.floor(a / b)")
        if _is_unsigned(typ):  # arith computes on signless integers, with unsigned ops where it matters
            ir_op = _UNSIGNED.get(op, ir_op)
            r = self.emit(ir_op(self._signless(a, typ), self._signless(b, typ))).results[0]
            return Scalar(self.emit(arith.BitcastOp(r, typ)).results[0])
        x, y = self.to_ssa(a, typ), self.to_ssa(b, typ)
        result = self.emit(ir_op(x, y)).results[0]
        self._track_affine(op, a, b, result)
        return Scalar(result)

    def _track_affine(self, op: str, a, b, result: SSAValue) -> None:
        if not isinstance(result.type, IndexType | IntegerType) or result.type == i1:
            return
        fa, fb = self.affine_of(a), self.affine_of(b)
        if fa is None or fb is None:
            return
        if op == "+":
            self.affine[result] = fa + fb
        elif op == "-":
            self.affine[result] = fa - fb
        elif op == "*" and (not fa.terms or not fb.terms):
            self.affine[result] = fb.scale(fa.const) if not fa.terms else fa.scale(fb.const)

    def compare(self, op: str, a, b) -> Scalar:
        typ = self.common_type(a, b)
        ipred, fpred = _CMP[op]
        if _is_unsigned(typ):
            return Scalar(self.emit(arith.CmpiOp(self._signless(a, typ), self._signless(b, typ),
                                                 ipred.replace("s", "u", 1) if ipred[0] == "s" else ipred)).results[0])
        x, y = self.to_ssa(a, typ), self.to_ssa(b, typ)
        if is_float_type(typ):
            return Scalar(self.emit(arith.CmpfOp(x, y, fpred)).results[0])
        return Scalar(self.emit(arith.CmpiOp(x, y, ipred)).results[0])

    def logical(self, op: str, a, b):
        if is_compile_time(a) and is_compile_time(b):
            return (a and b) if op == "and" else (a or b)
        x, y = self.to_ssa(a, i1), self.to_ssa(b, i1)
        ir_op = arith.AndIOp if op == "and" else arith.OrIOp
        return Scalar(self.emit(ir_op(x, y)).results[0])

    def negate(self, a):
        if is_compile_time(a):
            return -a
        if a.ssa in self.constants:
            return Scalar(self.const(-self.constants[a.ssa], a.type))
        if is_float_type(a.type):
            return Scalar(self.emit(arith.NegfOp(a.ssa)).results[0])
        return self.binop("-", 0, a)

    def logical_not(self, a):
        if is_compile_time(a):
            return not a
        x = self.to_ssa(a, i1)
        return Scalar(self.emit(arith.XOrIOp(x, self.const(1, i1))).results[0])

    def select_type(self, a, b):
        """The IR type a choice between `a` and `b` has (compile-time values alone: index or f32)."""
        return self.common_type(a, b) if isinstance(a, Scalar) or isinstance(b, Scalar) else _py_type(a, b)

    def select(self, cond, a, b) -> Scalar:
        typ = self.select_type(a, b)
        c = self.to_ssa(cond, i1)
        return Scalar(self.emit(arith.SelectOp(c, self.to_ssa(a, typ), self.to_ssa(b, typ))).results[0])

    def math_call(self, name: str, *args):
        if all(is_compile_time(a) for a in args):
            return _PY_MATH[name](*args)
        if name in ("max", "min"):
            a, b = args
            typ = self.common_type(a, b)
            x, y = self.to_ssa(a, typ), self.to_ssa(b, typ)
            if is_float_type(typ):
                op = arith.MaxnumfOp if name == "max" else arith.MinnumfOp
            else:
                op = arith.MaxSIOp if name == "max" else arith.MinSIOp
            return Scalar(self.emit(op(x, y)).results[0])
        if name == "pow":
            a, b = args
            typ = self.common_type(a, b)
            if not is_float_type(typ):
                from xdsl.dialects.builtin import f32

                typ = f32
            return Scalar(self.emit(mathd.PowFOp(self.to_ssa(a, typ), self.to_ssa(b, typ))).results[0])
        (x,) = args
        if name == "abs":
            op = mathd.AbsFOp if is_float_type(x.type) else mathd.AbsIOp
            return Scalar(self.emit(op(x.ssa)).results[0])
        if not is_float_type(x.type):
            from xdsl.dialects.builtin import f32

            x = Scalar(self.convert(x.ssa, f32))
        if name == "sigmoid":
            e = Scalar(self.emit(mathd.ExpOp(self.negate(x).ssa)).results[0])
            return self.binop("/", 1.0, self.binop("+", 1.0, e))
        return Scalar(self.emit(UNARY_MATH[name](x.ssa)).results[0])


def _check_fits(b: Builder, value: int, typ) -> None:
    """An integer constant must fit its type (signless ints hold -2^(w-1) .. 2^w - 1, as in MLIR)."""
    width = 64 if isinstance(typ, IndexType) else typ.width.data
    low, high = (0, 1) if width == 1 else (-(1 << (width - 1)), (1 << width) - 1)
    if not low <= value <= high:
        raise b.error(f"the integer {value} does not fit in {typ}",
                      hint=f"{typ} holds {low} .. {high}; compute in a wider type (T.int64) or a float")


def _py_type(a, b):
    from xdsl.dialects.builtin import f32

    return f32 if isinstance(a, float) or isinstance(b, float) else INDEX


_PY_MATH = {
    "exp": math.exp, "exp2": lambda x: 2.0**x, "log": math.log, "log2": math.log2, "sqrt": math.sqrt,
    "rsqrt": lambda x: 1.0 / math.sqrt(x), "tanh": math.tanh, "sigmoid": lambda x: 1.0 / (1.0 + math.exp(-x)),
    "abs": abs, "floor": math.floor, "ceil": math.ceil, "sin": math.sin, "cos": math.cos, "erf": math.erf,
    "max": max, "min": min, "pow": pow,
}


def describe(value) -> str:
    """A short human description of a frontend value, for error messages."""
    from .values import Access, TileRef, VarRef

    if isinstance(value, TileRef):
        kind = "tensor" if value.scope == "global" else f"{value.scope} buffer"
        return f"{kind} {value.name or ''} of shape {value.shape}".replace("  ", " ")
    if isinstance(value, Access):
        return f"an element/region of {describe(value.tile)}"
    if isinstance(value, Scalar):
        return f"a run-time {value.type} scalar"
    if isinstance(value, VarRef):
        return "a T.alloc_var variable"
    if isinstance(value, DType):
        return f"dtype {value.name}"
    return f"{type(value).__name__} {value!r}"
