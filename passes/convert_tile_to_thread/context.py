"""The lowering context: `Lowerer` owns the insertion point, the map from tile-level values to
thread-level ones, index arithmetic that folds Python ints (unrolled code carries constants,
not constant ops), the thread coordinates of layout modes and the kernel's shared-memory
budget. Memory access comes from `memory.MemoryAccess`.

Index values are `int | SSAValue`; `mult(x)` is a number x is known to be a multiple of,
which decides whether a group of accesses can be one vector.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

from tilec.dialects import append_op, arith_utils, fast_ops, nvvm, tile
from tilec.dialects.arith_utils import is_float
from tilec.dialects.tile.layout import Layout, Mode
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tilec.errors import error_at

from ..softmax_overlap import ROTATED
from .memory import INDEX, Index, MemoryAccess, View


class SlotMap(dict):
    """Values of one unrolled instance (a slot of a parallel loop); misses fall back to the uniform map."""

    def __init__(self, uniform: dict):
        super().__init__()
        self.uniform = uniform

    def get(self, key, default=None):
        if key in self:
            return self[key]
        return self.uniform.get(key, default)


SHARED_ALIGN = 128
"""Bytes: shared buffers placed by the lowering start on this boundary (the planner's own)."""


def round_up(n: int, align: int) -> int:
    return (n + align - 1) // align * align


class Lowerer(MemoryAccess):
    """Emits thread-level ops for one `tile.kernel`."""

    def __init__(self, kernel: tile.KernelOp, block: Block):
        self.kernel = kernel
        self.threads = kernel.num_threads
        self.blocks: list[Block] = [block]
        self.vmap: dict = {}
        self.views: dict[SSAValue, View] = {}
        self.mults: dict[SSAValue, int] = {}
        self.bounds: dict[SSAValue, tuple[int, int]] = {}  # index values known to lie in [lo, hi]
        self.consts: dict[tuple, SSAValue] = {}
        self.coords: dict[tuple[int, int], SSAValue] = {}  # (stride, size) of a thread mode → coordinate
        # warp-uniform coordinates read from lane 0 (_warp_uniform), but not in a kernel with a loop the softmax
        # overlap rotated: there the lane's own measured 4 % faster on the H200 (D=128 attention, run s7b)
        self.warp_uniform = not any(isinstance(op, tile.ForOp) and ROTATED in op.attributes for op in kernel.walk())
        self.location = kernel.location
        # set by the kernel ABI (convert.py) before the body is lowered:
        self.tid: SSAValue | None = None  # the linear thread id, x + y*X + z*X*Y
        self.coord_anchor: Operation | None = None  # the last thread-coordinate op after `tid`
        self.smem: SSAValue | None = None  # the dynamic shared memory, memref<0xi8, 3>
        self.sizes: dict[tuple[SSAValue, int], SSAValue] = {}  # (tensor, dim) → its run-time size
        self.planned: int | None = None  # bytes tile-plan-shared-memory laid out (None: not run)
        self.bump_offset = 0  # next free byte for shared buffers without a planned offset
        self.scratch_base = 0  # where the exchange buffer of reductions, scans and conversions starts
        self.scratch_bytes = 0  # the largest exchange buffer any op needed
        self.tensors: list[SSAValue] = []  # the kernel's tensor arguments (tile level), in order
        self.tensor_maps: dict[tuple, SSAValue] = {}  # (tensor, dtype, box, swizzle) → its kernel parameter
        self.barrier_threads: int | None = None  # inside a warp-specialized region: the threads a barrier spans
        self.producer_threads = False  # inside a producer region all of whose threads run it (its copies)
        self.stage_copies: set[str] = set()  # how transfer_async wrote since the last `after_copies` arrival:
        #                                      "async" (cp.async), "plain" (loads and stores); sync.py's _arrive
        self.matrix_stores = True  # there: 16-bit fragments into shared memory by stmatrix (stmatrix.py)
        self.matrix_sink = None  # inside such a T.Parallel: the stmatrix.MatrixStores its stores go to
        # ping-pong (a tile.warp_specialize of consumer_groups G > 1), set by the kernel ABI: each
        # group's threads see `tid` from 0 (tid = block_tid mod threads) and `group` is theirs
        self.block_tid: SSAValue | None = None  # the thread's id in the whole block
        self.group: SSAValue | None = None  # block_tid / threads
        self.group_scratch: Operation | None = None  # the constant: bytes between two groups' exchange buffers
        self.barrier_id: Index = 1  # the named barrier of the consumer threads (bar.sync 0 is the block's)
        self.reserved_barriers: range = range(0)  # inside a warp-specialized region: the consumer groups' barriers
        self.cluster_rank: SSAValue | None = None  # a kernel of clusters: the block's rank in its cluster
        self.scratch_shift: Index = 0  # inside a consumer group: where its exchange buffer starts (bytes)
        # inside a tile.persistent of consumer groups: (tiles before, tile, gridDim.x, tiles, groups)
        self.turn: tuple | None = None

    # -- emission ---------------------------------------------------------------
    def emit(self, op: Operation) -> Operation:
        op.location = self.location
        append_op(self.blocks[-1], op)
        return op

    @contextmanager
    def push(self, block: Block):
        """Emits into `block` inside the `with`."""
        self.blocks.append(block)
        try:
            yield block
        finally:
            self.blocks.pop()

    def error(self, op: Operation, msg: str, hint: str | None = None):
        return error_at(op, msg, hint=hint)

    def val(self, value: SSAValue, slot: dict | None = None) -> SSAValue:
        mapping = slot if slot is not None else self.vmap
        found = mapping.get(value)
        if found is None:
            raise AssertionError(f"value {value} used before it was lowered")
        return found

    # -- constants and index arithmetic -------------------------------------------
    def const(self, value, typ: Attribute = INDEX) -> SSAValue:
        key = (value, typ, id(self.blocks[0]))
        if key in self.consts:
            return self.consts[key]
        attr = FloatAttr(float(value), typ) if is_float(typ) else IntegerAttr(int(value), typ)
        op = fast_ops.constant(attr, typ)
        op.location = self.location
        entry = self.blocks[0]
        first = entry.first_op
        if first is None:
            entry.add_op(op)
        else:
            entry.insert_op_before(op, first)
        self.consts[key] = op.result
        if isinstance(typ, IndexType):
            self.mults[op.result] = int(value)
        return op.result

    def ssa(self, x: Index) -> SSAValue:
        return self.const(x) if isinstance(x, int) else x

    def mult(self, x: Index) -> int:
        return abs(x) if isinstance(x, int) else self.mults.get(x, 1)

    def bound(self, x) -> tuple[int, int] | None:
        """[lo, hi] of an index value when known (constants; thread coordinates and the sums and
        products of known ones): lets a slot's range guard fold where it is decided for every thread."""
        if isinstance(x, int):
            return x, x
        found = self.bounds.get(x)
        if found is None and isinstance(x.owner, arith.ConstantOp) and isinstance(x.owner.value, IntegerAttr):
            v = x.owner.value.value.data
            return v, v
        return found

    def _index_op(self, op: Operation, m: int) -> SSAValue:
        r = self.emit(op).results[0]
        self.mults[r] = m
        return r

    def add(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0:
            return b
        if b == 0:
            return a
        r = self._index_op(fast_ops.binary(arith.AddiOp, self.ssa(a), self.ssa(b)),
                           math.gcd(self.mult(a), self.mult(b)))
        ba, bb = self.bound(a), self.bound(b)
        if ba is not None and bb is not None:
            self.bounds[r] = (ba[0] + bb[0], ba[1] + bb[1])
        return r

    def mul(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if a == 1:
            return b
        if b == 1:
            return a
        if a == 0 or b == 0:
            return 0
        r = self._index_op(fast_ops.binary(arith.MuliOp, self.ssa(a), self.ssa(b)), self.mult(a) * self.mult(b))
        ba, bb = self.bound(a), self.bound(b)
        if ba is not None and bb is not None:
            ends = [x * y for x in ba for y in bb]
            self.bounds[r] = (min(ends), max(ends))
        return r

    def div(self, a: Index, b: int) -> Index:
        """a // b for a non-negative index and a power of two b."""
        if isinstance(a, int):
            return a // b
        if b == 1:
            return a
        return self._index_op(fast_ops.binary(arith.DivUIOp, a, self.const(b)),
                              max(1, self.mult(a) // b) if self.mult(a) % b == 0 else 1)

    def rem(self, a: Index, b: int) -> Index:
        """a % b for a non-negative index and a power of two b."""
        if isinstance(a, int):
            return a % b
        if b == 1:
            return 0
        if self.mult(a) % b == 0:
            return 0
        return self._index_op(fast_ops.binary(arith.RemUIOp, a, self.const(b)), math.gcd(self.mult(a), b))

    def thread_id(self) -> SSAValue:
        assert self.tid is not None
        return self.tid

    def coord(self, mode: Mode) -> Index:
        """The calling thread's coordinate along thread mode `mode`."""
        if mode.size == 1:
            return 0
        key = (mode.stride, mode.size)
        if key not in self.coords:
            t = self.thread_id()
            if mode.stride > 1:
                t = self._at_entry(fast_ops.binary(arith.DivUIOp, t, self.const(mode.stride)))
            if self.warp_uniform and mode.stride % 32 == 0 and self.threads % 32 == 0:
                t = self._warp_uniform(t)
            if mode.stride * mode.size < self.threads:
                t = self._at_entry(fast_ops.binary(arith.RemUIOp, t, self.const(mode.size)))
            self.bounds[t] = (0, mode.size - 1)
            self.coords[key] = t
        return self.coords[key]

    def _warp_uniform(self, t: SSAValue) -> SSAValue:
        """`t`, the same in every lane of a warp, as lane 0's (`shfl.sync.idx` from lane 0): ptxas then
        knows it is warp-uniform and keeps what is computed from it (the warpgroup's wgmma descriptors,
        a warp's row offsets) in uniform registers, CUTLASS's `canonical_warp_group_idx`. Computed at
        the kernel's entry, where every lane of a full warp is there."""
        word = self._at_entry(arith.IndexCastOp(t, i32))
        lane0 = self._at_entry(nvvm.ShflSyncOp.build(
            operands=[self.const(-1, i32), word, self.const(0, i32), self.const(0x1F, i32)],
            result_types=[i32], properties={"kind": nvvm.ShflKindAttr(nvvm.ShflKind.IDX)}))
        return self._at_entry(arith.IndexCastOp(lane0, INDEX))

    def _at_entry(self, op: Operation) -> SSAValue:
        """Thread coordinates are computed once, right after the thread id."""
        op.location = self.location
        anchor = self.tid.owner
        anchor.parent_block().insert_op_after(op, self.coord_anchor or anchor)
        self.coord_anchor = op
        self.mults[op.results[0]] = 1
        return op.results[0]

    def layout_index(self, layout: Layout, slot: int) -> list[Index]:
        """Logical index (per dim) of `slot` of `layout` for the calling thread."""
        index = []
        for const, thread_modes in layout.index_parts(slot):
            value: Index = const
            for mode, weight in thread_modes:
                value = self.add(value, self.mul(self.coord(mode), weight))
            index.append(value)
        return index

    def replica_leader(self, layout: Layout) -> SSAValue | None:
        """A condition true on one thread of each replica group (None: no replication)."""
        cond = None
        for mode in layout.rep:
            c = self.coord(mode)
            if isinstance(c, int):
                continue
            eq = self.emit(arith.CmpiOp(c, self.const(0), "eq")).results[0]
            cond = eq if cond is None else self.emit(arith.AndIOp(cond, eq)).results[0]
        return cond

    # -- conversions ----------------------------------------------------------------
    def convert(self, value: SSAValue, typ: Attribute) -> SSAValue:
        return arith_utils.convert(value, typ, self.emit, self.const)

    def bump(self, nbytes: int) -> int:
        """`nbytes` of shared memory for a buffer tile-plan-shared-memory did not place."""
        offset = round_up(self.bump_offset, SHARED_ALIGN)
        self.bump_offset = offset + nbytes
        return offset
