"""Attributes of the `tile` dialect: the enums of kinds and policies, and the layout attributes.

Each enum is a `StrEnum` (its members compare equal to their strings, so `op.kind.data == "sum"`
holds) wrapped in an `EnumAttribute` printed MLIR-style: `#tile<reduce_kind sum>`. Ops take
the plain strings in their Python constructors.

```
loop_kind      tile.for         serial | pipelined | unroll | vectorized
gemm_policy    tile.gemm        square | full_row | full_col
mma_kind       tile.gemm        m16n8k16 | wgmma          (tile-select-mma's choice)
reduce_kind    tile.reduce      sum | max | min | abssum | absmax
atomic_kind    tile.atomic      add | max | min
raster_order   tile.use_swizzle row | col
scope          !tile.buffer     shared | fragment | local (printed bare: !tile.buffer<4xf32, local>)
```
"""

from __future__ import annotations

from enum import IntEnum

from xdsl.dialects.builtin import IntAttr, StringAttr
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, ParametrizedAttribute, SpacedOpaqueSyntaxAttribute
from xdsl.irdl import irdl_attr_definition, param_def
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from .layout import Layout
from .shared_layout import SWIZZLE_WIDTHS


class LoopKind(StrEnum):
    SERIAL = "serial"
    PIPELINED = "pipelined"
    UNROLL = "unroll"
    VECTORIZED = "vectorized"


class GemmPolicy(StrEnum):
    SQUARE = "square"
    FULL_ROW = "full_row"
    FULL_COL = "full_col"


class MmaKind(StrEnum):
    M16N8K16 = "m16n8k16"  # mma.sync, sm_80 and later
    WGMMA = "wgmma"  # wgmma.mma_async m64nNk16, sm_90a


class ReduceKind(StrEnum):
    SUM = "sum"
    MAX = "max"
    MIN = "min"
    ABSSUM = "abssum"
    ABSMAX = "absmax"


class AtomicKind(StrEnum):
    ADD = "add"
    MAX = "max"
    MIN = "min"


class RasterOrder(StrEnum):
    ROW = "row"
    COL = "col"


class Scope(StrEnum):
    SHARED = "shared"
    FRAGMENT = "fragment"
    LOCAL = "local"


@irdl_attr_definition
class LoopKindAttr(EnumAttribute[LoopKind], SpacedOpaqueSyntaxAttribute):
    """How a `tile.for` runs: `#tile<loop_kind pipelined>`."""

    name = "tile.loop_kind"


@irdl_attr_definition
class GemmPolicyAttr(EnumAttribute[GemmPolicy], SpacedOpaqueSyntaxAttribute):
    """How the warps of a `tile.gemm` split its tile: `#tile<gemm_policy full_row>`."""

    name = "tile.gemm_policy"


@irdl_attr_definition
class MmaKindAttr(EnumAttribute[MmaKind], SpacedOpaqueSyntaxAttribute):
    """The tensor-core instruction of a `tile.gemm`: `#tile<mma_kind wgmma>`."""

    name = "tile.mma_kind"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    """What a `tile.reduce` combines with: `#tile<reduce_kind sum>`."""

    name = "tile.reduce_kind"


@irdl_attr_definition
class AtomicKindAttr(EnumAttribute[AtomicKind], SpacedOpaqueSyntaxAttribute):
    """What a `tile.atomic` combines with: `#tile<atomic_kind add>`."""

    name = "tile.atomic_kind"


@irdl_attr_definition
class RasterOrderAttr(EnumAttribute[RasterOrder], SpacedOpaqueSyntaxAttribute):
    """Along which grid dimension `tile.use_swizzle` forms panels: `#tile<raster_order col>`."""

    name = "tile.raster_order"


@irdl_attr_definition
class ScopeAttr(EnumAttribute[Scope], SpacedOpaqueSyntaxAttribute):
    """Where a buffer lives; `!tile.buffer` prints it bare (`shared`)."""

    name = "tile.scope"


class AtomicRMWKind(IntEnum):
    """The codes of upstream `memref.atomic_rmw`'s `kind` (MLIR's arith::AtomicRMWKind, in its
    enum order): what the lowering emits (`atomic_rmw_kind`), the simulator and the NVPTX
    translation decode."""

    ADDF = 0
    ADDI = 1
    ASSIGN = 2
    MAXIMUMF = 3
    MAXS = 4
    MAXU = 5
    MINIMUMF = 6
    MINS = 7
    MINU = 8
    MULF = 9
    MULI = 10
    ORI = 11
    ANDI = 12
    MAXNUMF = 13
    MINNUMF = 14


_RMW = {
    (AtomicKind.ADD, True): AtomicRMWKind.ADDF,
    (AtomicKind.ADD, False): AtomicRMWKind.ADDI,
    (AtomicKind.MAX, True): AtomicRMWKind.MAXNUMF,  # NaN-ignoring, as CUDA's atomicMax on floats
    (AtomicKind.MAX, False): AtomicRMWKind.MAXS,
    (AtomicKind.MIN, True): AtomicRMWKind.MINNUMF,
    (AtomicKind.MIN, False): AtomicRMWKind.MINS,
}


def atomic_rmw_kind(kind: AtomicKind | str, is_float: bool) -> AtomicRMWKind:
    """The `memref.atomic_rmw` kind a `tile.atomic` of `kind` on float (or integer) data becomes."""
    return _RMW[(AtomicKind(kind), is_float)]


# --------------------------------------------------------------------------- layouts


@irdl_attr_definition
class SwizzleLayoutAttr(ParametrizedAttribute):
    """A shared-memory layout whose 16-byte chunks are XOR-swizzled.

    `#tile.swizzle<128>` is the 128-byte swizzle (address bits 4-6 XOR bits
    7-9) that TMA and wgmma use; 64 and 32 are the narrower variants.
    """

    name = "tile.swizzle"
    bytes_attr: IntAttr = param_def()

    def __init__(self, nbytes: int):
        super().__init__(IntAttr(nbytes))

    @property
    def bytes(self) -> int:
        return self.bytes_attr.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            return [IntAttr(parser.parse_integer())]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.bytes}>")

    def verify(self) -> None:
        if self.bytes not in SWIZZLE_WIDTHS:
            raise VerifyException(f"swizzle must be 32, 64 or 128 bytes, got {self.bytes}")


@irdl_attr_definition
class FragmentLayoutAttr(ParametrizedAttribute):
    """Which thread holds which element of a fragment, in which register slot.

    The text is `tilec.dialects.tile.layout.Layout`'s: per dimension, modes of
    `<size><t|s><stride>` (thread or slot), most significant first, then the
    replicated thread modes: `#tile.fragment<"(4s8)x(128t1,8s1)|r()">`.
    """

    name = "tile.fragment"
    spec: StringAttr = param_def()

    def __init__(self, spec: str):
        super().__init__(StringAttr(spec))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            return [StringAttr(parser.parse_str_literal())]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_string_literal(self.spec.data)
        printer.print_string(">")

    @property
    def layout(self) -> Layout:
        return Layout.parse(self.spec.data)

    def verify(self) -> None:
        try:
            layout = Layout.parse(self.spec.data)
        except ValueError:
            layout = None
        if layout is None or str(layout) != self.spec.data:
            raise VerifyException(f"tile.fragment: '{self.spec.data}' is not a layout (modes like "
                                  f"'(4s8)x(128t1,8s1)|r()')")
