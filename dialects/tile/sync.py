"""Synchronization and asynchronous ops of the `tile` dialect: block barriers, mbarriers (arrays of
them, one per pipeline stage), TMA loads completing on an mbarrier, warp-specialized regions
and the wait for asynchronous gemms, and the tile loop of a persistent kernel.

A warp-specialized kernel (what `tile-warp-specialize` makes of a `T.Pipelined` gemm loop on
sm_90a, or what `T.ws` writes by hand) looks like:

```mlir
%full = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier<3>
tile.warp_specialize producer {
  // producer: one thread waits for a free stage, expects its bytes, issues the TMA loads
  tile.mbarrier_expect_tx %full[%s] {bytes = 16384 : i64} : !tile.mbarrier<3>
  tile.tma_load %a, %stage, %full[%s] : !tile.tensor<256x64xf16>, !tile.buffer<64x64xf16, shared>, !tile.mbarrier<3>
} consumer {
  // consumers: wait for the stage, compute, release it
  tile.mbarrier_wait_parity %full[%s], %p : !tile.mbarrier<3>
} {producer_threads = 128 : i64}
```
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType, IntegerAttr, UnitAttr, i64
from xdsl.ir import Block, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator, RecursiveMemoryEffect, SingleBlockImplicitTerminator

from .syntax import parse_attr_dict, print_attr_dict
from .structure import KernelOp, YieldOp, enclosing, enclosing_kernel, _parse_body, _parse_index_args, _print_body, _print_grid_args
from .types import BufferType, MBarrierType, TensorType, _i64, _require, tile_type

_INDEX = IndexType()


def multicast_bands(rows: int, chunks: int, blocks: int) -> int | None:
    """How a multicast load of `chunks` 64-column chunks of `rows` rows divides among the `blocks`
    of a cluster: 1 (whole chunks each), `blocks` (each chunk in row bands starting at a 128-byte
    swizzle atom, 8 rows), or None (it does not divide)."""
    if chunks % blocks == 0:
        return 1
    if rows % (8 * blocks) == 0:
        return blocks
    return None


def _check_clustered(op, what: str) -> KernelOp | None:
    """`what` (a multicast load, a cluster-wide arrival) needs a kernel of clusters (returned)."""
    kernel = enclosing_kernel(op)
    _require(kernel is None or kernel.cluster_size > 1,
             f"{op.name}: {what} needs a tile.kernel with a cluster of two or more blocks")
    return kernel


def tma_chunks(dst: SSAValue) -> int:
    """The 64-column chunks a TMA load into `dst` (a shared tile or a stage of one) issues, one box each."""
    from .memory import AllocOp, StageOp

    alloc = dst.owner.source.owner if isinstance(dst.owner, StageOp) else dst.owner
    cols = tile_type(dst).shape[-1]
    return cols // ((alloc.chunk_columns if isinstance(alloc, AllocOp) else 0) or cols)
REGISTER_COUNTS = range(24, 257, 8)


def launch_registers(threads: int) -> int:
    """The registers each thread of a block of `threads` starts with (ptxas: the 65536 of a
    multiprocessor over the threads, at most 255, in steps of 8). setmaxnreg moves registers within
    the block's `threads * launch_registers(threads)`, no more: CUTLASS's 40 + 2 x 232 fill 384 x 168."""
    return min(65536 // threads, 255) // 8 * 8
"""setmaxnreg's register counts: 24 to 256 in steps of 8."""


def _squeezed(shape) -> tuple[int, ...]:
    return tuple(n for n in shape if n != 1)


def _check_index(op: IRDLOperation, barrier: SSAValue, index: SSAValue | None) -> None:
    count = barrier.type.count
    _require(index is not None or count == 1,
             f"{op.name}: an array of {count} mbarriers needs an index ({barrier.name_hint or 'barrier'}[i])")


@irdl_op_definition
class FenceProxyAsyncOp(IRDLOperation):
    """The running thread's generic-proxy writes to shared memory so far are ordered before the
    asynchronous proxy's accesses (wgmma operand reads, TMA stores) that follow it, with the
    synchronization after it (`fence.proxy.async.shared::cta`; TileLang's `T.fence_proxy_async()`).

    ```mlir
    tile.fence_proxy_async
    ```
    """

    name = "tile.fence_proxy_async"
    assembly_format = "attr-dict"


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """All threads of the block wait here (`T.sync_threads`); inside the consumer region of a
    warp-specialized kernel, the consumer threads only. With `barrier_id` (and `thread_count`),
    a named barrier: the `thread_count` threads (default: the block's) that reach barrier
    `barrier_id` wait for each other (`T.sync_threads(id, count)`, PTX `bar.sync id, count`).

    ```mlir
    tile.barrier
    tile.barrier {barrier_id = 3 : i64, thread_count = 256 : i64}
    ```
    """

    name = "tile.barrier"
    barrier_id = opt_prop_def(IntegerAttr)
    thread_count = opt_prop_def(IntegerAttr)
    unaligned = opt_prop_def(UnitAttr)
    """The threads meet here from different code (warpgroup roles): PTX's unaligned `barrier.sync`
    (`bar.sync` promises that every thread blocking in one round runs the same instruction)."""
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, barrier_id: int | None = None, thread_count: int | None = None, unaligned: bool = False):
        props = {}
        if barrier_id is not None:
            props["barrier_id"] = _i64(barrier_id)
        if thread_count is not None:
            props["thread_count"] = _i64(thread_count)
        if unaligned:
            props["unaligned"] = UnitAttr()
        super().__init__(properties=props)

    def verify_(self) -> None:
        _require(self.thread_count is None or self.barrier_id is not None,
                 f"{self.name}: thread_count needs a barrier_id")
        _require(self.unaligned is None or self.barrier_id is not None,
                 f"{self.name}: unaligned needs a barrier_id (a named barrier)")
        _require(self.barrier_id is None or 0 <= self.barrier_id.value.data < 16,
                 f"{self.name}: barrier_id must be in [0, 16)")
        _require(self.thread_count is None or (self.thread_count.value.data > 0 and self.thread_count.value.data % 32 == 0),
                 f"{self.name}: thread_count must be a positive multiple of 32 (whole warps)")


@irdl_op_definition
class AllocBarrierOp(IRDLOperation):
    """Allocates `count` mbarriers (the result type's) expecting `arrive_count` arrivals per phase.

    ```mlir
    %b = tile.alloc_barrier {arrive_count = 128 : i64} : !tile.mbarrier
    %stages = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier<4>
    ```
    """

    name = "tile.alloc_barrier"
    arrive_count = prop_def(IntegerAttr)
    offset = opt_prop_def(IntegerAttr)  # bytes into shared memory (tile-plan-shared-memory)
    result = result_def(MBarrierType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, arrive_count: int, count: int = 1):
        super().__init__(properties={"arrive_count": _i64(arrive_count)}, result_types=[MBarrierType(count)])

    def verify_(self) -> None:
        _require(1 <= self.arrive_count.value.data < 1 << 20,
                 f"{self.name}: arrive_count must be in [1, 2^20), got {self.arrive_count.value.data}")


@irdl_op_definition
class MBarrierArriveOp(IRDLOperation):
    """Arrives on an mbarrier (element `index` of an array).

    ```mlir
    %b = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier
    tile.mbarrier_arrive %b : !tile.mbarrier
    ```
    """

    name = "tile.mbarrier_arrive"
    barrier = operand_def(MBarrierType)
    index = opt_operand_def(_INDEX)
    cluster = opt_attr_def(UnitAttr)
    """Arrive on this barrier of every block of the kernel's cluster (tile-cluster: a stage that
    the blocks fill for each other is free once every block's consumers released it)."""
    after_copies = opt_attr_def(UnitAttr)
    """The thread's `tile.copy {async}`s issued so far are part of this arrival: the phase cannot
    complete before they have landed (`cp.async.mbarrier.arrive.noinc`, the arrival made once they
    have; where some went as plain stores, a wait for the copies and then the arrival). A
    warp-specialized producer's cp.async copies complete on their stage's `full` barrier so."""
    assembly_format = "$barrier (`[` $index^ `]`)? attr-dict `:` type($barrier)"

    def __init__(self, barrier: SSAValue, index: SSAValue | None = None, after_copies: bool = False):
        super().__init__(operands=[barrier, [] if index is None else [index]],
                         attributes={"after_copies": UnitAttr()} if after_copies else {})

    def verify_(self) -> None:
        _check_index(self, self.barrier, self.index)
        if self.cluster is not None:
            _check_clustered(self, "a cluster-wide arrival")
        _require(self.cluster is None or self.after_copies is None,
                 f"{self.name}: an arrival after the thread's copies is on its own block's barrier only")


@irdl_op_definition
class MBarrierWaitParityOp(IRDLOperation):
    """Waits until the mbarrier's phase with `parity` has completed (a fresh barrier: parity 1
    passes at once, parity 0 waits for the first phase).

    ```mlir
    %b = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier
    %p = arith.constant 0 : index
    tile.mbarrier_wait_parity %b, %p : !tile.mbarrier
    ```
    """

    name = "tile.mbarrier_wait_parity"
    barrier = operand_def(MBarrierType)
    index = opt_operand_def(_INDEX)
    parity = operand_def(_INDEX)
    fence_proxy = opt_attr_def(UnitAttr)
    """The phase also completes threads' writes (a producer's cp.async copies, the generic proxy):
    after the wait, `fence.proxy.async.shared::cta` orders them before the async proxy's reads
    (wgmma, a TMA store) of this thread."""
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = "$barrier (`[` $index^ `]`)? `,` $parity attr-dict `:` type($barrier)"

    def __init__(self, barrier: SSAValue, parity: SSAValue, index: SSAValue | None = None):
        super().__init__(operands=[barrier, [] if index is None else [index], parity])

    def verify_(self) -> None:
        _check_index(self, self.barrier, self.index)


@irdl_op_definition
class MBarrierExpectTxOp(IRDLOperation):
    """One thread announces `bytes` of asynchronous copies into the mbarrier's current phase and
    arrives (`mbarrier.arrive.expect_tx`); the phase completes when they have landed.

    ```mlir
    %b = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier
    tile.mbarrier_expect_tx %b {bytes = 8192 : i64} : !tile.mbarrier
    ```
    """

    name = "tile.mbarrier_expect_tx"
    barrier = operand_def(MBarrierType)
    index = opt_operand_def(_INDEX)
    bytes = prop_def(IntegerAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$barrier (`[` $index^ `]`)? attr-dict `:` type($barrier)"

    def __init__(self, barrier: SSAValue, nbytes: int, index: SSAValue | None = None):
        super().__init__(operands=[barrier, [] if index is None else [index]], properties={"bytes": _i64(nbytes)})

    def verify_(self) -> None:
        _check_index(self, self.barrier, self.index)
        _require(0 < self.bytes.value.data < 1 << 20, f"{self.name}: bytes must be in (0, 2^20)")


def _check_tma_copy(op: IRDLOperation, src: SSAValue, dst: SSAValue, load: bool) -> None:
    """A TMA copy from `src` to `dst`, a global region and a shared tile (`load`: in that order):
    one element type, and one shape once unit dims are dropped, with the same innermost extent."""
    s, d = tile_type(src), tile_type(dst)
    shared, role = (d, "destination") if load else (s, "source")
    _require(shared.scope == "shared", f"{op.name}: the {role} must be a shared tile, got {shared}")
    _require(s.element_type == d.element_type, f"{op.name}: TMA does not convert: {s.element_type} to {d.element_type}")
    names = ("region", "tile") if load else ("tile", "region")
    _require(_squeezed(s.shape) == _squeezed(d.shape) and (s.rank == 0 or d.rank == 0 or s.shape[-1] == d.shape[-1]),
             f"{op.name}: the {names[0]} {s.shape} and the {names[1]} {d.shape} must have one shape (unit dims "
             f"aside, the same innermost extent)")


@irdl_op_definition
class TmaLoadOp(IRDLOperation):
    """A global region into a shared tile by the tensor memory accelerator (`T.tma_copy`): issued by
    one thread, asynchronous, its bytes completing on the mbarrier. The region of a tensor of any
    rank (up to 5) has the tile's shape once unit dims are dropped (`[1, 128, 1, 64]` of a
    [batch, seq, heads, dim] tensor into a 128x64 tile), with the same innermost extent. The region may reach past the
    tensor: that part of the tile is zero-filled. The shared tile's swizzle and chunking (from
    tile-select-mma) are the TMA box's layout.

    ```mlir
    %b = tile.alloc_barrier {arrive_count = 1 : i64} : !tile.mbarrier
    tile.tma_load %a, %s, %b : !tile.tensor<64x64xf16>, !tile.buffer<64x64xf16, shared>, !tile.mbarrier
    ```
    """

    name = "tile.tma_load"
    src = operand_def(TensorType)
    dst = operand_def(BufferType)
    barrier = operand_def(MBarrierType)
    index = opt_operand_def(_INDEX)
    multicast = opt_attr_def(UnitAttr)
    """The blocks of the kernel's cluster load the same region (tile-cluster): each issues its
    share of the boxes, multicast into the tile and onto the barrier of every block."""
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = ("$src `,` $dst `,` $barrier (`[` $index^ `]`)? attr-dict `:` type($src) `,` type($dst) `,` "
                       "type($barrier)")

    def __init__(self, src: SSAValue, dst: SSAValue, barrier: SSAValue, index: SSAValue | None = None):
        super().__init__(operands=[src, dst, barrier, [] if index is None else [index]])

    def verify_(self) -> None:
        _check_index(self, self.barrier, self.index)
        if self.multicast is not None:
            kernel = _check_clustered(self, "a multicast load")
            rows = tile_type(self.dst).shape[-2] if tile_type(self.dst).rank >= 2 else 1
            _require(kernel is None or multicast_bands(rows, tma_chunks(self.dst), kernel.cluster_size) is not None,
                     f"{self.name}: a multicast load must divide among the cluster's blocks by chunk or by row "
                     f"bands of 8-row multiples")
        _check_tma_copy(self, self.src, self.dst, load=True)


@irdl_op_definition
class TmaStoreOp(IRDLOperation):
    """A shared tile into a global region by the tensor memory accelerator, the reverse of
    `tile.tma_load`: the threads that wrote the tile fence their writes for the async proxy
    (`fence.proxy.async.shared::cta`) and meet at a barrier, then one thread issues one box per
    64-column chunk and commits them as a bulk group. The store is asynchronous: the tile must not
    be written again, nor the block end, before a `tile.tma_store_wait` on it. The part of the
    region that lies outside the tensor is not written. The region has the tile's shape once
    unit dims are dropped, with the same innermost extent (`[1, 128, 1, 64]` of a
    [batch, seq, heads, dim] tensor from a 128x64 tile).

    ```mlir
    tile.tma_store %C_s, %c : !tile.buffer<128x256xf16, shared>, !tile.tensor<128x256xf16>
    ```
    """

    name = "tile.tma_store"
    src = operand_def(BufferType)
    dst = operand_def(TensorType)
    assembly_format = "$src `,` $dst attr-dict `:` type($src) `,` type($dst)"

    def __init__(self, src: SSAValue, dst: SSAValue):
        super().__init__(operands=[src, dst])

    def verify_(self) -> None:
        _check_tma_copy(self, self.src, self.dst, load=False)


@irdl_op_definition
class TmaStoreWaitOp(IRDLOperation):
    """The thread that issued the `tile.tma_store`s of `tile` waits until they have read it
    (`cp.async.bulk.wait_group.read 0`); then the threads meet at a barrier, so that none
    writes the tile before. `{final}`: at the end of the threads' work, where nothing writes
    the tile again (no barrier; the block may not end before the stores have read it).

    ```mlir
    tile.tma_store_wait %C_s : !tile.buffer<128x256xf16, shared>
    ```
    """

    name = "tile.tma_store_wait"
    tile = operand_def(BufferType)
    final = opt_prop_def(UnitAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$tile attr-dict `:` type($tile)"

    def __init__(self, tile_value: SSAValue, final: bool = False):
        super().__init__(operands=[tile_value], properties={"final": UnitAttr()} if final else {})

    def verify_(self) -> None:
        _require(tile_type(self.tile).scope == "shared",
                 f"{self.name}: the tile must be a shared tile, got {tile_type(self.tile)}")


@irdl_op_definition
class WarpSpecializeOp(IRDLOperation):
    """Runs `producer` on `producer_threads` extra threads (a warpgroup after the kernel's own) and
    `consumer` on the kernel's threads, concurrently; they meet only at mbarriers. The producer
    gives registers back (`producer_regs`), the consumers take them (`consumer_regs`).

    ```mlir
    tile.warp_specialize producer {
      tile.barrier
    } consumer {
      tile.barrier
    } {producer_threads = 128 : i64, producer_regs = 40 : i64, consumer_regs = 232 : i64}
    ```
    """

    name = "tile.warp_specialize"
    producer_threads = prop_def(IntegerAttr)
    producer_regs = opt_prop_def(IntegerAttr)
    consumer_regs = opt_prop_def(IntegerAttr)
    all_producer_threads = opt_prop_def(UnitAttr)
    """Every producer thread runs the producer region (absent: its first thread alone), as its
    `tile.copy {async}`s (cp.async, global to shared) need: the copies spread over the producer's
    threads, each thread arrives on the stage's barrier after its copies (`after_copies`), and the
    first thread alone announces bytes and issues the TMA loads."""
    user_roles = opt_prop_def(UnitAttr)
    """The roles are the program's own (TileLang's `T.ws` blocks, or a branch on the thread index):
    they run at once, ordered only by the program's barriers, which tilec does not read; so no
    shared buffer one of them uses shares bytes with another (tile-plan-shared-memory). Absent
    (tilec's own producer and consumers): program order is the protocol's, and the consumers'
    epilogue may reuse the stages' bytes, every load into them having landed."""
    consumer_groups = opt_prop_def(IntegerAttr)
    """Copies of the consumer region that run at once (absent: 1), group g on its own copy of the
    kernel's threads (g·T to g·T + T − 1 of the block, T = the kernel's threads), each with its own
    barriers and exchange buffer; `tile.consumer_group` is g. The ping-pong schedule: the groups
    take turns on the tiles of a `tile.persistent` loop, one's epilogue under another's gemms."""
    producer = region_def("single_block")
    consumer = region_def("single_block")
    traits = traits_def(NoTerminator(), RecursiveMemoryEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "`producer` $producer `consumer` $consumer attr-dict"

    def __init__(self, producer: Block, consumer: Block, producer_threads: int = 128,
                 producer_regs: int | None = None, consumer_regs: int | None = None, consumer_groups: int = 1,
                 all_producer_threads: bool = False, user_roles: bool = False):
        props = {"producer_threads": _i64(producer_threads)}
        if user_roles:
            props["user_roles"] = UnitAttr()
        if all_producer_threads:
            props["all_producer_threads"] = UnitAttr()
        if consumer_groups != 1:
            props["consumer_groups"] = _i64(consumer_groups)
        if producer_regs is not None:
            props["producer_regs"] = _i64(producer_regs)
        if consumer_regs is not None:
            props["consumer_regs"] = _i64(consumer_regs)
        super().__init__(properties=props, regions=[Region(producer), Region(consumer)])

    def verify_(self) -> None:
        _require(self.producer_threads.value.data % 128 == 0 and self.producer_threads.value.data >= 0,
                 f"{self.name}: producer_threads must be whole warpgroups (a multiple of 128)")
        _require(self.producer_threads.value.data or not self.producer.block.ops,
                 f"{self.name}: a producer region needs producer threads (producer_threads = 0: an empty region, "
                 f"every warpgroup a consumer group)")
        for what in ("producer_regs", "consumer_regs"):
            value = getattr(self, what)
            _require(value is None or value.value.data in REGISTER_COUNTS,
                     f"{self.name}: {what} must be a multiple of 8 in [24, 256]")
        _require(1 <= self.groups <= 4, f"{self.name}: consumer_groups must be 1 to 4")
        kernel = enclosing_kernel(self)
        if kernel is not None and self.producer_regs is not None and self.consumer_regs is not None:
            producers, consumers = self.producer_threads.value.data, kernel.num_threads * self.groups
            wanted = producers * self.producer_regs.value.data + consumers * self.consumer_regs.value.data
            pool = (producers + consumers) * launch_registers(producers + consumers)
            _require(wanted <= pool,
                     f"{self.name}: setmaxnreg asks for {wanted} registers ({producers} x "
                     f"{self.producer_regs.value.data} + {consumers} x {self.consumer_regs.value.data}), more than "
                     f"the block's {pool}: the consumers' setmaxnreg.inc would wait forever")
        if self.all_producer_threads is None:
            _require(not any(op.name in ("tile.copy", "tile.cp_async") for op in self.producer.walk()),
                     f"{self.name}: a producer region that copies (tile.copy, tile.cp_async) needs "
                     f"all_producer_threads: its first thread alone runs it otherwise")

    @property
    def groups(self) -> int:
        return self.consumer_groups.value.data if self.consumer_groups is not None else 1

    @property
    def consumer_tile(self) -> Block:
        """The consumers' work for one tile: the consumer region's block, or the body of the
        `tile.persistent` loop it holds (a persistent kernel)."""
        block = self.consumer.block
        tiles = next((op for op in block.ops if isinstance(op, PersistentOp)), None)
        return tiles.body.block if tiles is not None else block


@irdl_op_definition
class ConsumerGroupOp(IRDLOperation):
    """The index of the consumer group running this code (0 to `consumer_groups` − 1), inside the
    consumer region of a `tile.warp_specialize`.

    ```mlir
    tile.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumer {
      %g = tile.consumer_group
    } {producer_threads = 128 : i64, consumer_groups = 2 : i64}
    ```
    """

    name = "tile.consumer_group"
    result = result_def(IndexType())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[_INDEX])

    def verify_(self) -> None:
        _require(consumer_split(self) is not None,
                 f"{self.name} must be inside the consumer region of a tile.warp_specialize")


@irdl_op_definition
class SetMaxNRegOp(IRDLOperation):
    """The calling warpgroup's threads take (`increase`) or give back registers until each has
    `count` (`setmaxnreg.inc` / `.dec`), inside a role of a `tile.warp_specialize` whose roles ask
    for their own counts (TileLang's `T.set_max_nreg` in a hand-written role).

    ```mlir
    tile.warp_specialize producer {
      tile.set_max_nreg {count = 40 : i64}
    } consumer {
      tile.set_max_nreg {count = 232 : i64, increase}
    } {producer_threads = 128 : i64, all_producer_threads}
    ```
    """

    name = "tile.set_max_nreg"
    count = prop_def(IntegerAttr)
    increase = opt_prop_def(UnitAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, count: int, increase: bool):
        super().__init__(properties={"count": _i64(count), **({"increase": UnitAttr()} if increase else {})})

    def verify_(self) -> None:
        _require(self.count.value.data in REGISTER_COUNTS,
                 f"{self.name}: count must be a multiple of 8 in [24, 256], got {self.count.value.data}")
        _require(enclosing(self, WarpSpecializeOp) is not None,
                 f"{self.name} must be inside a role of a tile.warp_specialize")


class _TurnOp(IRDLOperation):
    def verify_(self) -> None:
        parent = enclosing(self, PersistentOp)
        _require(parent is not None and parent.group_count > 1,
                 f"{self.name} must be inside the tile.persistent loop of consumer groups (groups > 1)")


@irdl_op_definition
class WaitTurnOp(_TurnOp):
    """Inside the tile loop of consumer groups: wait until the block's previous tile (another
    group's) has passed the turn (`tile.pass_turn`); the block's first tile does not wait. The
    ping-pong schedule: the groups' main loops run one after the other, so each group reads its
    stages of the shared ring only after the group before has seen the previous round complete
    (mbarrier parities tell two rounds apart, not three).

    ```mlir
    tile.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumer {
      tile.persistent (%tx, %n) in (%gx) {
        tile.wait_turn
      } {groups = 2 : i64}
    } {producer_threads = 128 : i64, consumer_groups = 2 : i64}
    ```
    """

    name = "tile.wait_turn"
    assembly_format = "attr-dict"


@irdl_op_definition
class PassTurnOp(_TurnOp):
    """Inside the tile loop of consumer groups: let the block's next tile (another group's) take
    its turn (see `tile.wait_turn`); nothing when this is the block's last tile.

    ```mlir
    tile.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumer {
      tile.persistent (%tx, %n) in (%gx) {
        tile.pass_turn
      } {groups = 2 : i64}
    } {producer_threads = 128 : i64, consumer_groups = 2 : i64}
    ```
    """

    name = "tile.pass_turn"
    assembly_format = "attr-dict"


def consumer_split(op) -> WarpSpecializeOp | None:
    """The `tile.warp_specialize` whose consumer region holds `op` (None: not in one)."""
    region = op.parent_region()
    while region is not None:
        parent = region.parent_op()
        if isinstance(parent, WarpSpecializeOp):
            return parent if region is parent.consumer else None
        region = parent.parent_region() if parent is not None else None
    return None


@irdl_op_definition
class GemmWaitOp(IRDLOperation):
    """Waits until at most `pending` of the warpgroup's asynchronous wgmma groups are still running
    (`wgmma.wait_group`): after it, the others' results are in their accumulators `cs` (tied through
    the wait) and the shared tiles they read may be overwritten. The program's own wait (TileLang's
    `T.wait_wgmma`) is built without accumulators; tile-select-mma gives it those of the program's
    asynchronous wgmmas (`wg_wait`) that can be running there.

    ```mlir
    tile.gemm_wait %c {pending = 0 : i64} : !tile.buffer<64x64xf32, fragment>
    tile.gemm_wait {pending = 1 : i64}
    ```
    """

    name = "tile.gemm_wait"
    cs = var_operand_def(BufferType)
    pending = prop_def(IntegerAttr, default_value=IntegerAttr(0, i64))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$cs attr-dict (`:` type($cs)^)?"

    def __init__(self, cs: SSAValue | Sequence[SSAValue] = (), pending: int = 0):
        cs = [cs] if isinstance(cs, SSAValue) else list(cs)
        super().__init__(operands=[cs], properties={"pending": _i64(pending)})

    def verify_(self) -> None:
        _require(self.pending.value.data >= 0, f"{self.name}: pending must be >= 0")
        for c in self.cs:
            _require(tile_type(c).scope == "fragment", f"{self.name}: an accumulator is a fragment, got {c.type}")


@irdl_op_definition
class PersistentOp(IRDLOperation):
    """The tiles of the kernel's grid that this block runs, one after another (a persistent kernel,
    made by tile-warp-specialize): the kernel launches at most one block per multiprocessor, and
    block b of P runs the tiles b, b + P, b + 2P, ... of the grid in its order (x fastest, after
    `tile.use_swizzle`'s rasterization). The body's arguments are the tile's indices, one per grid
    dimension (they replace the kernel's block indices), and how many tiles this block ran
    before this one. With `groups` = G (in the consumer region of a `tile.warp_specialize` of G
    consumer groups), group g runs the block's tiles g, g + G, g + 2G, ... of that sequence: the
    tiles b + (g + iG)·P, and the count is g + iG (the block's tiles before, all groups').

    ```mlir
    tile.persistent (%tx, %ty, %n) in (%gx, %gy) {
    }
    tile.warp_specialize producer {
      %p = arith.constant 0 : index
    } consumer {
      tile.persistent (%ux, %m) in (%gx) {
      } {groups = 2 : i64}
    } {producer_threads = 128 : i64, consumer_groups = 2 : i64}
    ```
    """

    name = "tile.persistent"
    grid = var_operand_def(IndexType())
    groups = opt_prop_def(IntegerAttr)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(self, grid: Sequence[SSAValue], groups: int = 1):
        block = Block(arg_types=[_INDEX] * (len(grid) + 1))
        block.add_op(YieldOp())
        props = {"groups": _i64(groups)} if groups != 1 else {}
        super().__init__(operands=[grid], properties=props, regions=[Region(block)])

    @property
    def group_count(self) -> int:
        return self.groups.value.data if self.groups is not None else 1

    @property
    def tile_indices(self) -> tuple[SSAValue, ...]:
        return self.body.block.args[:-1]

    @property
    def tiles_before(self) -> SSAValue:
        return self.body.block.args[-1]

    def verify_(self) -> None:
        _require(1 <= len(self.grid) <= 3, f"{self.name}: the grid must have 1 to 3 dimensions")
        _require(len(self.body.block.args) == len(self.grid) + 1,
                 f"{self.name}: the body needs one tile index per grid dimension and the count of tiles before")
        if self.group_count != 1:
            split = consumer_split(self)
            _require(split is not None and split.groups == self.group_count,
                     f"{self.name}: groups = {self.group_count} needs the consumer region of a tile.warp_specialize "
                     f"with as many consumer groups")

    def print(self, printer: Printer) -> None:
        _print_grid_args(printer, self.body.block.args, self.grid)
        _print_body(printer, self.body)
        print_attr_dict(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> PersistentOp:
        args = _parse_index_args(parser)
        parser.parse_keyword("in")
        grid = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        grid = parser.resolve_operands(grid, [_INDEX] * len(grid), parser.pos)
        body = _parse_body(parser, args)
        props, attrs = parse_attr_dict(parser, cls, {})
        op = cls.__new__(cls)
        IRDLOperation.__init__(op, operands=[grid], properties=props, regions=[body])
        op.attributes |= attrs
        return op
