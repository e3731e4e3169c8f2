"""Structure ops of the `tile` dialect: the kernel launch, element-wise and sequential loops,
their terminator, block rasterization, thread indices and debugging output."""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    StringAttr,
    i1,
)
from xdsl.ir import (
    Attribute,
    Block,
    Operation,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
)

from .attrs import (
    FragmentLayoutAttr,
    LoopKind,
    LoopKindAttr,
    RasterOrder,
    RasterOrderAttr,
)
from .syntax import enum_attr, parse_attr_dict, print_attr_dict, require_enum
from .types import (
    _i64,
    _i64_array,
    _require,
)


def constant_index(value: SSAValue) -> int | None:
    """The value of an `arith.constant` index, or None."""
    from xdsl.dialects import arith

    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def enclosing(op: Operation, kind: type[Operation]) -> Operation | None:
    """The nearest op of `kind` that `op` is inside (None: none)."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, kind):
        parent = parent.parent_op()
    return parent


def enclosing_kernel(op: Operation) -> KernelOp | None:
    """The `tile.kernel` that `op` is inside (None: none)."""
    return enclosing(op, KernelOp)


def in_kernel(op: Operation) -> bool:
    return enclosing_kernel(op) is not None



@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates the body of `tile.kernel`, `tile.parallel` and `tile.for`."""

    name = "tile.yield"
    traits = lazy_traits_def(lambda: (IsTerminator(), Pure()))
    assembly_format = "attr-dict"


def _top_block(op: Operation, ancestor: Operation):
    """The block of `ancestor`'s regions that holds `op` (or the op nesting it)."""
    while op.parent_op() is not ancestor:
        op = op.parent_op()
    return op.parent_block()


def _print_body(printer: Printer, body: Region) -> None:
    printer.print_string(" ")
    printer.print_region(body, print_entry_block_args=False, print_block_terminators=False)


def _parse_body(parser: Parser, args: Sequence[Parser.Argument]) -> Region:
    region = parser.parse_region(args)
    block = region.block
    if not isinstance(block.last_op, YieldOp):
        block.add_op(YieldOp())
    return region


def _print_grid_args(printer: Printer, args, grid) -> None:
    """` (%a, %b) in (%ga, %gb)`: a region's index arguments over its grid."""
    printer.print_string(" (")
    printer.print_list(args, printer.print_ssa_value)
    printer.print_string(") in (")
    printer.print_list(grid, printer.print_ssa_value)
    printer.print_string(")")


def _parse_index_args(parser: Parser) -> list[Parser.Argument]:
    return [
        arg.resolve(IndexType())
        for arg in parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False)
        )
    ]


@irdl_op_definition
class KernelOp(IRDLOperation):
    """Launches the body once per block of a 1-3 dimensional grid.

    The body's arguments are the block indices, one per grid dimension.
    `threads` is the block shape [x, y, z]. `smem_bytes` (tile-plan-shared-memory) is the
    shared memory a block needs: every planned shared buffer lies below it. `cluster`
    (tile-cluster) groups the blocks into thread-block clusters of that shape, one extent per grid
    dimension, each dividing its (constant) grid extent: the blocks of a cluster run at the same
    time and may write each other's shared memory (TMA multicast, remote mbarrier arrivals).

    ```mlir
    %n = arith.constant 4 : index
    tile.kernel (%bx) in (%n) threads [128, 1, 1] {
    }
    ```
    """

    name = "tile.kernel"
    grid = var_operand_def(IndexType())
    threads = prop_def(DenseArrayBase)
    smem_bytes = opt_prop_def(IntegerAttr)
    cluster = opt_prop_def(DenseArrayBase)
    launch_reversed = opt_prop_def(DenseArrayBase)  # grid dims whose blocks launch last index first (tile-longest-first)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(self, grid: Sequence[SSAValue], threads: Sequence[int]):
        block = Block(arg_types=[IndexType()] * len(grid))
        block.add_op(YieldOp())
        super().__init__(
            operands=[grid],
            properties={"threads": _i64_array(threads)},
            regions=[Region(block)],
        )

    @property
    def thread_extents(self) -> tuple[int, int, int]:
        x, y, z = self.threads.get_values()
        return x, y, z

    @property
    def num_threads(self) -> int:
        x, y, z = self.thread_extents
        return x * y * z

    @property
    def cluster_shape(self) -> tuple[int, ...] | None:
        """The cluster's extent per grid dimension, or None (no clusters)."""
        return tuple(self.cluster.get_values()) if self.cluster is not None else None

    @property
    def cluster_size(self) -> int:
        return math.prod(self.cluster_shape) if self.cluster is not None else 1

    @property
    def reversed_dims(self) -> tuple[int, ...]:
        """The grid dims along which the hardware's first block runs the last index (a launch order:
        the blocks and what each computes are the same)."""
        return tuple(self.launch_reversed.get_values()) if self.launch_reversed is not None else ()

    def verify_(self) -> None:
        _require(1 <= len(self.grid) <= 3, f"{self.name}: grid must have 1 to 3 dimensions, got {len(self.grid)}")
        _require(
            len(self.body.block.args) == len(self.grid),
            f"{self.name}: the body needs one block index per grid dimension",
        )
        threads = self.threads.get_values()
        _require(len(threads) == 3 and all(t >= 1 for t in threads),
                 f"{self.name}: threads must be three positive extents, got {list(threads)}")
        _require(self.num_threads <= 1024,
                 f"{self.name}: at most 1024 threads per block, got {self.num_threads}")
        if self.smem_bytes is not None:
            self._verify_smem_bytes(self.smem_bytes.value.data)
        if self.cluster is not None:
            self._verify_cluster(self.cluster.get_values())
        dims = self.reversed_dims
        _require(all(0 <= d < len(self.grid) for d in dims) and len(set(dims)) == len(dims),
                 f"{self.name}: launch_reversed needs distinct grid dimensions below {len(self.grid)}, got {list(dims)}")
        _require(not dims or self.cluster is None,
                 f"{self.name}: launch_reversed and clusters do not combine (a cluster's ranks follow the hardware)")

    def _verify_cluster(self, shape) -> None:
        _require(len(shape) == len(self.grid) and all(c >= 1 for c in shape),
                 f"{self.name}: cluster needs one positive extent per grid dimension, got {list(shape)}")
        _require(math.prod(shape) <= 8, f"{self.name}: at most 8 blocks per cluster, got {list(shape)}")
        _require(sum(c > 1 for c in shape) <= 1,  # multicast masks and remote arrivals address every block
                 f"{self.name}: a cluster spans one grid dimension, got {list(shape)}")
        for c, g in zip(shape, self.grid):
            extent = constant_index(g)
            _require(extent is not None and extent % c == 0,
                     f"{self.name}: a cluster extent must divide a constant grid extent, got {c} for "
                     f"{'a run-time extent' if extent is None else extent}")

    def _verify_smem_bytes(self, total: int) -> None:
        from .memory import planned_bytes  # the allocations are defined there

        _require(total >= 0, f"{self.name}: smem_bytes must be >= 0, got {total}")
        for op in self.walk():
            span = planned_bytes(op)
            _require(span is None or span[1] <= total,
                     f"{self.name}: smem_bytes = {total}, but a shared buffer is planned at bytes {span}")

    def print(self, printer: Printer) -> None:
        _print_grid_args(printer, self.body.block.args, self.grid)
        printer.print_string(f" threads [{', '.join(map(str, self.thread_extents))}]")
        _print_body(printer, self.body)
        print_attr_dict(printer, self, exclude=("threads",))

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        args = _parse_index_args(parser)
        parser.parse_keyword("in")
        grid = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        grid = parser.resolve_operands(grid, [IndexType()] * len(grid), parser.pos)
        parser.parse_keyword("threads")
        threads = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
        body = _parse_body(parser, args)
        props, attrs = parse_attr_dict(parser, cls, {})
        op = cls.__new__(cls)
        IRDLOperation.__init__(
            op, operands=[grid], properties={"threads": _i64_array(threads)} | props, regions=[body]
        )
        op.attributes |= attrs
        return op


@irdl_op_definition
class ParallelOp(IRDLOperation):
    """An element-wise loop nest over a tile: `T.Parallel(4, 512)`.

    Iterations are independent; the compiler partitions them over the block's
    threads and vectorizes them.  So the body works on elements (`parallel_body_error`
    says what it may not hold): no whole-tile or block-wide ops, only local buffers
    allocated in it, each fragment element written by one iteration, inner loops with
    the same bounds for every iteration, and no writes to local buffers allocated
    outside (a per-element temporary lives in the body). `layout` (tile-infer-layout) says
    which thread runs which iteration, in which slot.

    ```mlir
    tile.parallel (%i, %j) in [4, 512] {
    }
    ```
    """

    name = "tile.parallel"
    extents = prop_def(DenseArrayBase)
    layout = opt_prop_def(FragmentLayoutAttr)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(self, extents: Sequence[int]):
        block = Block(arg_types=[IndexType()] * len(extents))
        block.add_op(YieldOp())
        super().__init__(properties={"extents": _i64_array(extents)}, regions=[Region(block)])

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.extents.get_values())

    def verify_(self) -> None:
        _require(len(self.shape) >= 1, f"{self.name}: needs at least one extent")
        _require(all(e >= 1 for e in self.shape), f"{self.name}: extents must be positive, got {list(self.shape)}")
        _require(len(self.body.block.args) == len(self.shape),
                 f"{self.name}: the body needs one index per extent")
        _require(in_kernel(self), f"{self.name}: must be inside a tile.kernel")
        if self.layout is not None:
            shape = self.layout.layout.shape
            _require(shape == self.shape, f"{self.name}: a layout of shape {shape} for extents {self.shape}")
        from .parallel_body import parallel_body_error  # it needs the op classes below

        error = parallel_body_error(self)
        _require(error is None, error or "")

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_list(self.body.block.args, printer.print_ssa_value)
        printer.print_string(f") in [{', '.join(map(str, self.shape))}]")
        _print_body(printer, self.body)
        print_attr_dict(printer, self, exclude=("extents",))

    @classmethod
    def parse(cls, parser: Parser) -> ParallelOp:
        args = _parse_index_args(parser)
        parser.parse_keyword("in")
        extents = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
        body = _parse_body(parser, args)
        props, attrs = parse_attr_dict(parser, cls, {})
        op = cls.__new__(cls)
        IRDLOperation.__init__(op, properties={"extents": _i64_array(extents)} | props, regions=[body])
        op.attributes |= attrs
        return op


STAGES_ASKED = "tilec.stages_asked"
"""A `tile.for` attribute: what a T.Pipelined loop's `stage=` asks of its two gemms (attention's
Q K^T and P V): "rotated" (P V a stage after Q K^T: FA3's overlap, which tile-warp-specialize then
applies whatever `tilec.softmax_overlap` says) or "as_written" (one stage: the loop keeps its order)."""


@irdl_op_definition
class ForOp(IRDLOperation):
    """A sequential loop `lb <= k < ub` by `step`; `kind` says how to run it.

    `serial` is a plain loop; `pipelined` (T.Pipelined) lets loads of later
    iterations overlap the compute of earlier ones, with `num_stages` buffers
    and the optional `order` / `stage` per statement of the body; `unroll` and
    `vectorized` are hints for the code generator.

    What the passes record on a pipelined loop they transform (it becomes `serial`):
    `pipelined_stages` S (tile-pipeline: its copies go S - 1 iterations ahead through S-deep
    buffers), `warp_specialized_stages` S (tile-warp-specialize: the consumers' loop, fed
    through S stages by a producer warpgroup), or `not_warp_specialized`, why
    tile-warp-specialize left a candidate loop alone.

    ```mlir
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    tile.for %k = %c0 to %c8 step %c1 {
    } {kind = "pipelined", num_stages = 3 : i64}
    ```
    """

    name = "tile.for"
    lb = operand_def(IndexType())
    ub = operand_def(IndexType())
    step = operand_def(IndexType())
    kind = prop_def(LoopKindAttr | StringAttr, default_value=LoopKindAttr(LoopKind.SERIAL))
    num_stages = opt_prop_def(IntegerAttr)
    order = opt_prop_def(DenseArrayBase)
    stage = opt_prop_def(DenseArrayBase)
    pipelined_stages = opt_prop_def(IntegerAttr)
    warp_specialized_stages = opt_prop_def(IntegerAttr)
    not_warp_specialized = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, lb: SSAValue, ub: SSAValue, step: SSAValue, kind: str = "serial", *,
                 num_stages: int | None = None, order: Sequence[int] | None = None,
                 stage: Sequence[int] | None = None):
        block = Block(arg_types=[IndexType()])
        block.add_op(YieldOp())
        props: dict[str, Attribute] = {"kind": enum_attr(LoopKindAttr, kind)}
        if num_stages is not None:
            props["num_stages"] = _i64(num_stages)
        if order is not None:
            props["order"] = _i64_array(order)
        if stage is not None:
            props["stage"] = _i64_array(stage)
        super().__init__(operands=[lb, ub, step], properties=props, regions=[Region(block)])

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    def verify_(self) -> None:
        require_enum(self, "kind", LoopKindAttr)
        if self.num_stages is not None:
            _require(self.num_stages.value.data >= 0,
                     f"{self.name}: num_stages must be >= 0, got {self.num_stages.value.data}")
        _require(len(self.body.block.args) == 1 and isinstance(self.body.block.args[0].type, IndexType),
                 f"{self.name}: the body takes one index argument")
        self._verify_stages()

    def _verify_stages(self) -> None:
        pipelined, specialized = self.pipelined_stages, self.warp_specialized_stages
        for what, attr, least in (("pipelined_stages", pipelined, 2), ("warp_specialized_stages", specialized, 1)):
            if attr is None:
                continue
            _require(attr.value.data >= least, f"{self.name}: {what} must be >= {least}, got {attr.value.data}")
            _require(self.kind.data == LoopKind.SERIAL,
                     f"{self.name}: a loop with {what} is the serial loop its stages run in, not {self.kind.data}")
        _require(pipelined is None or specialized is None,
                 f"{self.name}: a loop is pipelined (pipelined_stages) or warp-specialized, not both")
        if specialized is not None:
            from .sync import WarpSpecializeOp  # it needs this module

            parent = self.parent_op()
            while parent is not None and not isinstance(parent, WarpSpecializeOp):
                parent = parent.parent_op()
            _require(parent is not None and parent.consumer.block is _top_block(self, parent),
                     f"{self.name}: warp_specialized_stages on a loop outside the consumer region of a "
                     f"tile.warp_specialize")
        _require(specialized is None or self.not_warp_specialized is None,
                 f"{self.name}: a loop is warp-specialized or not")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(" = ")
        printer.print_ssa_value(self.lb)
        printer.print_string(" to ")
        printer.print_ssa_value(self.ub)
        printer.print_string(" step ")
        printer.print_ssa_value(self.step)
        _print_body(printer, self.body)
        print_attr_dict(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        iv = parser.parse_argument(expect_type=False).resolve(IndexType())
        parser.parse_punctuation("=")
        bounds = [parser.parse_unresolved_operand()]
        parser.parse_keyword("to")
        bounds.append(parser.parse_unresolved_operand())
        parser.parse_keyword("step")
        bounds.append(parser.parse_unresolved_operand())
        lb, ub, step = parser.resolve_operands(bounds, [IndexType()] * 3, parser.pos)
        body = _parse_body(parser, [iv])
        props, attrs = parse_attr_dict(parser, cls, {"kind": LoopKindAttr})
        props.setdefault("kind", LoopKindAttr(LoopKind.SERIAL))
        op = cls.__new__(cls)
        IRDLOperation.__init__(op, operands=[lb, ub, step], properties=props, regions=[body])
        op.attributes |= attrs
        return op



@irdl_op_definition
class UseSwizzleOp(IRDLOperation):
    """Rasterizes blocks in panels of `panel_size` for L2 reuse (`T.use_swizzle`).

    ```mlir
    tile.use_swizzle {panel_size = 10 : i64, order = "col"}
    ```
    """

    name = "tile.use_swizzle"
    panel_size = prop_def(IntegerAttr)
    order = prop_def(RasterOrderAttr | StringAttr, default_value=RasterOrderAttr(RasterOrder.ROW))

    def __init__(self, panel_size: int, order: str = "row"):
        super().__init__(properties={"panel_size": _i64(panel_size), "order": enum_attr(RasterOrderAttr, order)})

    def verify_(self) -> None:
        _require(self.panel_size.value.data >= 1, f"{self.name}: panel_size must be >= 1")
        require_enum(self, "order", RasterOrderAttr)

    def print(self, printer: Printer) -> None:
        print_attr_dict(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> UseSwizzleOp:
        props, attrs = parse_attr_dict(parser, cls, {"order": RasterOrderAttr})
        op = cls.create(properties=props)
        op.attributes |= attrs
        return op



@irdl_op_definition
class ThreadIdOp(IRDLOperation):
    """The calling thread's index within the block along `dim` (`T.get_thread_binding`).

    ```mlir
    %tx = tile.thread_id {dim = 0 : i64}
    ```
    """

    name = "tile.thread_id"
    dim = prop_def(IntegerAttr, default_value=_i64(0))
    result = result_def(IndexType())
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, dim: int = 0):
        super().__init__(properties={"dim": _i64(dim)}, result_types=[IndexType()])

    def verify_(self) -> None:
        _require(0 <= self.dim.value.data <= 2, f"{self.name}: dim must be 0, 1 or 2")


@irdl_op_definition
class PrintOp(IRDLOperation):
    """Prints a scalar or a tile with a message (`T.print`).

    ```mlir
    %v = arith.constant 1.0 : f32
    tile.print %v : f32 {msg = "v"}
    ```
    """

    name = "tile.print"
    values = var_operand_def()
    msg = prop_def(StringAttr, default_value=StringAttr(""))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue], msg: str = ""):
        super().__init__(operands=[values], properties={"msg": StringAttr(msg)})


@irdl_op_definition
class DeviceAssertOp(IRDLOperation):
    """Traps with `msg` when `cond` is false (`T.device_assert`).

    ```mlir
    %t = arith.constant true
    tile.device_assert %t {msg = "ok"}
    ```
    """

    name = "tile.device_assert"
    cond = operand_def(i1)
    msg = prop_def(StringAttr, default_value=StringAttr(""))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$cond attr-dict"

    def __init__(self, cond: SSAValue, msg: str = ""):
        super().__init__(operands=[cond], properties={"msg": StringAttr(msg)})
