"""Attributes of tilec's `nvvm` dialect (enums spelled as upstream) and operand checks."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I32,
    I64,
    IntAttr,
    IntegerAttr,
    UnitAttr,
    VectorType,
    f16,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.dialects.llvm import LLVMPointerType, LLVMStructType
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

GENERIC, GLOBAL, SHARED = 0, 1, 3  # LLVM address spaces of `!llvm.ptr<AS>`


def _check_ptr(op: Operation, value: SSAValue, space: int, what: str) -> None:
    ty = value.type
    if not isinstance(ty, LLVMPointerType):
        raise VerifyException(f"{op.name}: {what} must be !llvm.ptr<{space}>, got {ty}")
    if (ty.addr_space.data if isinstance(ty.addr_space, IntAttr) else 0) != space:  # `!llvm.ptr` is space 0
        raise VerifyException(f"{op.name}: {what} must be !llvm.ptr<{space}>, got {ty}")


def _check_struct(
    op: Operation, ty: Attribute, elems: Sequence[Attribute], what: str
) -> None:
    expected = elems[0] if len(elems) == 1 else LLVMStructType.from_type_list(elems)
    if ty != expected:
        raise VerifyException(f"{op.name}: {what} must be {expected}, got {ty}")


# --------------------------------------------------------------------------------- attributes


class _AngleEnum:
    """Mixin for `#nvvm.<name><value>` enum spellings (xDSL's default has no brackets)."""

    @classmethod
    def parse_parameter(cls, parser: AttrParser):
        with parser.in_angle_brackets():
            text = parser.parse_identifier()
        if text not in set(cls.enum_type):
            parser.raise_error(f"{cls.name}: unknown value `{text}`")
        return cls.enum_type(text)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.value}>")


class ShflKind(StrEnum):
    BFLY = "bfly"
    UP = "up"
    DOWN = "down"
    IDX = "idx"


@irdl_attr_definition
class ShflKindAttr(EnumAttribute[ShflKind], SpacedOpaqueSyntaxAttribute):
    """`#nvvm<shfl_kind bfly>`"""

    name = "nvvm.shfl_kind"


class ReduxKind(StrEnum):
    ADD = "add"
    AND = "and"
    MAX = "max"
    MIN = "min"
    OR = "or"
    UMAX = "umax"
    UMIN = "umin"
    XOR = "xor"


@irdl_attr_definition
class ReduxKindAttr(EnumAttribute[ReduxKind], SpacedOpaqueSyntaxAttribute):
    """`#nvvm<redux_kind add>`"""

    name = "nvvm.redux_kind"


class ProxyKind(StrEnum):
    ALIAS = "alias"
    ASYNC = "async"
    ASYNC_GLOBAL = "async.global"
    ASYNC_SHARED = "async.shared"
    TENSORMAP = "tensormap"
    GENERIC = "generic"


@irdl_attr_definition
class ProxyKindAttr(_AngleEnum, EnumAttribute[ProxyKind]):
    """`#nvvm.proxy_kind<async.shared>`"""

    name = "nvvm.proxy_kind"


class SharedSpace(StrEnum):
    CTA = "cta"
    CLUSTER = "cluster"


@irdl_attr_definition
class SharedSpaceAttr(_AngleEnum, EnumAttribute[SharedSpace]):
    """`#nvvm.shared_space<cta>`"""

    name = "nvvm.shared_space"


class LoadCacheModifier(StrEnum):
    CA = "ca"
    CG = "cg"
    CS = "cs"
    LU = "lu"
    CV = "cv"


@irdl_attr_definition
class LoadCacheModifierAttr(_AngleEnum, EnumAttribute[LoadCacheModifier]):
    """`#nvvm.load_cache_modifier<cg>`"""

    name = "nvvm.load_cache_modifier"


class MMALayout(StrEnum):
    ROW = "row"
    COL = "col"


@irdl_attr_definition
class MMALayoutAttr(_AngleEnum, EnumAttribute[MMALayout]):
    """`#nvvm.mma_layout<row>`"""

    name = "nvvm.mma_layout"


class MMAType(StrEnum):
    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    TF32 = "tf32"
    E4M3 = "e4m3"  # fp8 (float8_e4m3fn): wgmma k32, K-major operands only
    E5M2 = "e5m2"  # fp8 (float8_e5m2)


@irdl_attr_definition
class MMATypeAttr(_AngleEnum, EnumAttribute[MMAType]):
    """`#nvvm.mma_type<bf16>`"""

    name = "nvvm.mma_type"


@irdl_attr_definition
class MMAShapeAttr(ParametrizedAttribute):
    """`#nvvm.shape<m = 16, n = 8, k = 16>`"""

    name = "nvvm.shape"
    m: IntAttr
    n: IntAttr
    k: IntAttr

    def __init__(self, m: int, n: int, k: int):
        super().__init__(IntAttr(m), IntAttr(n), IntAttr(k))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[IntAttr]:
        values = []
        with parser.in_angle_brackets():
            for i, key in enumerate("mnk"):
                if i:
                    parser.parse_punctuation(",")
                parser.parse_keyword(key)
                parser.parse_punctuation("=")
                values.append(IntAttr(parser.parse_integer()))
        return values

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(
            f"<m = {self.m.data}, n = {self.n.data}, k = {self.k.data}>"
        )


class SetMaxRegisterAction(StrEnum):
    INCREASE = "increase"
    DECREASE = "decrease"


@irdl_attr_definition
class SetMaxRegisterActionAttr(_AngleEnum, EnumAttribute[SetMaxRegisterAction]):
    """`#nvvm.action<increase>`"""

    name = "nvvm.action"
