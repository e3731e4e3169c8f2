"""Types of the `tile` dialect: global tensors, on-chip buffers, mbarriers; the verifier helpers."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    IntAttr,
    IntegerAttr,
    i64,
)
from xdsl.ir import (
    Attribute,
    Operation,
    ParametrizedAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    irdl_attr_definition,
    param_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from .attrs import AtomicKind, GemmPolicy, LoopKind, ReduceKind, Scope, ScopeAttr

DYNAMIC = -1
"""A dimension whose size is only known at run time (printed `?`)."""

SCOPES = tuple(Scope)
REDUCE_KINDS = tuple(ReduceKind)
ATOMIC_KINDS = tuple(AtomicKind)
LOOP_KINDS = tuple(LoopKind)
GEMM_POLICIES = tuple(GemmPolicy)
"""The members of each enum (attrs.py), as the strings the frontend passes."""


# --------------------------------------------------------------------------- #
# Types and attributes
# --------------------------------------------------------------------------- #


def _print_shape(printer: Printer, shape: Sequence[int], element_type: Attribute):
    for dim in shape:
        printer.print_string("?" if dim == DYNAMIC else str(dim))
        printer.print_string("x")
    printer.print_attribute(element_type)


class TileLike:
    """What tensors and buffers have in common: a shape and an element type."""

    shape_attr: ArrayAttr[IntAttr]
    element_type: Attribute

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape_attr.data)

    @property
    def rank(self) -> int:
        return len(self.shape_attr.data)

    @property
    def scope(self) -> str:
        raise NotImplementedError

    def num_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@irdl_attr_definition
class TensorType(TileLike, ParametrizedAttribute, TypeAttribute):
    """A tensor in global memory; `?` marks a size bound at run time."""

    name = "tile.tensor"
    shape_attr: ArrayAttr[IntAttr] = param_def()
    element_type: Attribute = param_def()

    def __init__(self, shape: Sequence[int], element_type: Attribute):
        super().__init__(ArrayAttr([IntAttr(d) for d in shape]), element_type)

    @property
    def scope(self) -> str:
        return "global"

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            shape, element_type = parser.parse_ranked_shape()
        # xDSL parses `?` as -2**63; tilec spells a dynamic size DYNAMIC (-1)
        return [ArrayAttr([IntAttr(DYNAMIC if d < 0 else d) for d in shape]), element_type]

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            _print_shape(printer, self.shape, self.element_type)

    def verify(self) -> None:
        if any(d < 0 and d != DYNAMIC for d in self.shape):
            raise VerifyException(f"{self.name}: negative dimension in {self.shape}")


@irdl_attr_definition
class BufferType(TileLike, ParametrizedAttribute, TypeAttribute):
    """An on-chip tile: block-shared memory, a register fragment, or per-thread local."""

    name = "tile.buffer"
    shape_attr: ArrayAttr[IntAttr] = param_def()
    element_type: Attribute = param_def()
    scope_attr: ScopeAttr = param_def()

    def __init__(self, shape: Sequence[int], element_type: Attribute, scope: str | Scope):
        super().__init__(ArrayAttr([IntAttr(d) for d in shape]), element_type, _scope(scope))

    @property
    def scope(self) -> Scope:
        return self.scope_attr.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            shape, element_type = parser.parse_ranked_shape()
            parser.parse_punctuation(",")
            scope = parser.parse_identifier()
        return [ArrayAttr([IntAttr(d) for d in shape]), element_type, _scope(scope)]

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            _print_shape(printer, self.shape, self.element_type)
            printer.print_string(f", {self.scope}")

    def verify(self) -> None:
        if any(d <= 0 for d in self.shape):
            raise VerifyException(
                f"{self.name}: buffer sizes must be positive constants, got {self.shape}"
            )


@irdl_attr_definition
class MBarrierType(ParametrizedAttribute, TypeAttribute):
    """`count` shared-memory mbarrier objects (sm_90 asynchronous transaction barriers), 8 bytes
    each: `!tile.mbarrier` is one, `!tile.mbarrier<4>` an array of four (one per pipeline stage)."""

    name = "tile.mbarrier"
    count_attr: IntAttr = param_def()

    def __init__(self, count: int = 1):
        super().__init__(IntAttr(count))

    @property
    def count(self) -> int:
        return self.count_attr.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        if parser.parse_optional_punctuation("<") is None:
            return [IntAttr(1)]
        count = parser.parse_integer()
        parser.parse_punctuation(">")
        return [IntAttr(count)]

    def print_parameters(self, printer: Printer) -> None:
        if self.count != 1:
            printer.print_string(f"<{self.count}>")

    def verify(self) -> None:
        if self.count < 1:
            raise VerifyException(f"tile.mbarrier: count must be positive, got {self.count}")


def _scope(scope: str | Scope) -> ScopeAttr:
    if scope not in SCOPES:
        raise VerifyException(f"tile.buffer: scope must be one of {', '.join(SCOPES)}, got '{scope}'")
    return ScopeAttr(Scope(scope))


TileType = TensorType | BufferType


def tile_type(value: SSAValue) -> TensorType | BufferType:
    """The tensor or buffer type of `value` (ops verify this beforehand)."""
    assert isinstance(value.type, TensorType | BufferType), value.type
    return value.type


def squeezed(shape: Sequence[int]) -> tuple[int, ...]:
    """`shape` without its unit dimensions: how T.copy matches its two sides."""
    return tuple(d for d in shape if d != 1)


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise VerifyException(msg)


def _require_tile(op: Operation, value: SSAValue, what: str, scopes=None) -> None:
    typ = value.type
    _require(
        isinstance(typ, TensorType | BufferType),
        f"{op.name}: {what} must be a tile (tensor or buffer), got {typ}",
    )
    if scopes is not None:
        _require(
            typ.scope in scopes,
            f"{op.name}: {what} must be in {' or '.join(scopes)} scope, got {typ.scope}",
        )


def _bool(value: bool) -> BoolAttr:
    return IntegerAttr.from_bool(value)


def _i64(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def element_bytes(element_type: Attribute) -> int:
    """Bytes one element of `element_type` takes in memory (sub-byte types round up)."""
    return (element_type.bitwidth + 7) // 8
