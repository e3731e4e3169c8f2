"""The custom syntax the `tile` ops share: a trailing attribute dictionary that holds the op's
properties (those at their default left out) and its discardable attributes, and enum
properties spelled there as their strings.

An enum property (`kind` of `tile.reduce`, `mma` of `tile.gemm`, ...) holds its typed
`EnumAttribute` (attrs.py); the custom form spells it as the string the frontend passes
(`{kind = "sum"}`), the generic form shows the attribute (`<{kind = #tile<reduce_kind sum>}>`).
A string that names no member stays a `StringAttr`, which the op's verifier rejects by name
("kind must be one of ..."): that is how a bad `policy=` of `T.gemm` becomes a located error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer

from .types import _require


def enum_attr(cls: type[EnumAttribute], value: str | Attribute) -> Attribute:
    """`cls` of `value` (a string or an attribute holding one); a non-member stays a StringAttr."""
    if isinstance(value, cls):
        return value
    text = value.data if isinstance(value, StringAttr) else value
    if isinstance(text, str) and text in set(cls.enum_type):
        return cls(cls.enum_type(text))
    return value if isinstance(value, Attribute) else StringAttr(str(value))


def require_enum(op: IRDLOperation, name: str, cls: type[EnumAttribute]) -> None:
    """The verifier's check of enum property `name`: a member of `cls`'s enum."""
    attr = op.properties.get(name)
    if attr is None or isinstance(attr, cls):
        return
    got = attr.data if isinstance(attr, StringAttr) else attr
    _require(False, f"{op.name}: {name} must be one of {', '.join(cls.enum_type)}, got '{got}'")


def print_attr_dict(printer: Printer, op: IRDLOperation, exclude: Iterable[str] = ()) -> None:
    """The op's properties (but `exclude` and those at their default) and attributes, enums as strings."""
    defs = op.get_irdl_definition().properties
    shown: dict[str, Attribute] = {}
    for name, attr in op.properties.items():
        default = defs[name].default_value if name in defs else None
        if name in exclude or (default is not None and attr == default):
            continue
        shown[name] = StringAttr(str(attr.data)) if isinstance(attr, EnumAttribute) else attr
    printer.print_op_attributes(shown | op.attributes)


def parse_attr_dict(parser: Parser, op_type: type[IRDLOperation],
                    enums: dict[str, type[EnumAttribute]]) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """(properties, attributes) of an optional trailing dictionary; `enums` names the enum properties."""
    attrs = parser.parse_optional_attr_dict()
    defs = op_type.get_irdl_definition().properties
    props = {name: attrs.pop(name) for name in list(attrs) if name in defs}
    for name, cls in enums.items():
        if name in props:
            props[name] = enum_attr(cls, props[name])
    return props, attrs


def print_operands(printer: Printer, values: Sequence[SSAValue]) -> None:
    printer.print_string(" ")
    printer.print_list(values, printer.print_ssa_value)


def print_types(printer: Printer, values: Sequence[SSAValue]) -> None:
    printer.print_string(" : ")
    printer.print_list([v.type for v in values], printer.print_attribute)


def parse_operands(parser: Parser) -> list[UnresolvedOperand]:
    return parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_unresolved_operand)


def parse_types(parser: Parser, operands: Sequence[UnresolvedOperand]) -> list[SSAValue]:
    """`: t1, t2, ...` for `operands`, resolved."""
    parser.parse_punctuation(":")
    pos = parser.pos
    types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
    if len(types) != len(operands):
        parser.raise_error(f"{len(operands)} types expected, got {len(types)}", pos, parser.pos)
    return [parser.resolve_operand(o, t) for o, t in zip(operands, types)]
