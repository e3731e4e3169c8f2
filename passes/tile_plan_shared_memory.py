"""Give every shared buffer a byte offset; buffers never alive together share bytes.

Requires: static shapes on shared buffers (the verifier guarantees them);
  runs after any pass that changes shared buffers (multi-buffering).
Establishes: each shared `tile.alloc` has its `offset` property (bytes), a multiple
  of its `alignment` (128, or 8x the swizzle width when swizzled: 1024 for 128 bytes);
  buffers whose live ranges overlap get disjoint bytes; each `tile.kernel` has
  `smem_bytes` (the total, above every buffer).
  Sizes are the buffers' types as they are now (multi-buffered stages must be
  in the types already); each `tile.alloc_barrier` gets its `offset` too (8 bytes per mbarrier,
  alive for the whole kernel).
Fails: TilecError at the kernel when the total exceeds `limit` bytes (the limit
  of `target`, named in the message), listing every shared buffer.

A live range is the program-order interval from a buffer's first use to its
last, counting uses through `tile.region` / `tile.reshape` / `tile.stage` views (not
`tile.annotate_layout`); a use inside a `tile.for` / `tile.parallel` / `tile.persistent` that
does not hold the alloc covers the whole loop, and one inside a `tile.warp_specialize {user_roles}`
(the program's own roles, concurrent) the whole of it, even where the alloc stands inside a role.  Placement is first-fit, largest
buffer first.

    %A_s = tile.alloc : !tile.buffer<128x32xf16, shared>
    %B_s = tile.alloc : !tile.buffer<32x128xf16, shared>
  becomes
    %A_s = tile.alloc {offset = 0 : i64} : !tile.buffer<128x32xf16, shared>
    %B_s = tile.alloc {offset = 8192 : i64} : !tile.buffer<32x128xf16, shared>
    tile.kernel ... {smem_bytes = 16384 : i64}
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.dialects import tile
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tilec.errors import error_at
from .target_facts import shared_limit


@dataclass
class _Buffer:
    alloc: tile.AllocOp | tile.AllocBarrierOp
    nbytes: int
    align: int
    start: int
    end: int
    offset: int = 0

    def overlaps_in_time(self, other: _Buffer) -> bool:
        return self.start <= other.end and other.start <= self.end

    def describe(self) -> str:
        typ = self.alloc.result.type
        if isinstance(typ, tile.MBarrierType):
            return f"{self.alloc.result.name_hint or '<unnamed>'}: {typ.count} mbarriers ({self.nbytes} bytes)"
        shape = "x".join(map(str, typ.shape))
        name = self.alloc.result.name_hint or "<unnamed>"
        return f"{name}: {shape}x{typ.element_type} ({self.nbytes} bytes)"


def _views(value: SSAValue):
    """`value` and every region / reshape result derived from it."""
    yield value
    for use in value.uses:
        if isinstance(use.operation, tile.RegionOp | tile.ReshapeOp | tile.StageOp):
            yield from _views(use.operation.result)


def _span(op: Operation, order: dict[Operation, int]) -> tuple[int, int]:
    """The program-order interval of `op` with everything nested in it."""
    last = op
    while (
        last.regions and last.regions[-1].blocks and last.regions[-1].blocks[-1].last_op
    ):
        last = last.regions[-1].blocks[-1].last_op
    return order[op], order[last]


def _use_interval(user: Operation, alloc: tile.AllocOp, order) -> tuple[int, int]:
    """Where a use keeps the buffer alive: the outermost loop around it not holding the alloc, or
    the program's own warpgroup roles around it (which run at once: program order is not time)."""
    where = user
    parent = user.parent_op()
    while parent is not None:
        loop = isinstance(parent, tile.ForOp | tile.ParallelOp | tile.PersistentOp) and not parent.is_ancestor(alloc)
        roles = isinstance(parent, tile.WarpSpecializeOp) and parent.user_roles is not None  # (the alloc's own too)
        if loop or roles:
            where = parent
        parent = parent.parent_op()
    return _span(where, order)


def _collect(kernel: tile.KernelOp) -> list[_Buffer]:
    order = {op: i for i, op in enumerate(kernel.walk())}
    buffers = []
    for op in kernel.walk():
        if not isinstance(op, tile.AllocOp) or op.result.type.scope != "shared":
            continue
        intervals = [
            _use_interval(use.operation, op, order)
            for view in _views(op.result)
            for use in view.uses
            if not isinstance(
                use.operation, tile.RegionOp | tile.ReshapeOp | tile.StageOp | tile.AnnotateLayoutOp
            )
        ] or [(order[op], order[op])]
        start, end = min(i[0] for i in intervals), max(i[1] for i in intervals)
        buffers.append(_Buffer(op, op.nbytes, op.alignment, start, end))
    for op in kernel.walk():  # mbarriers: 8 bytes each, alive for the whole kernel
        if isinstance(op, tile.AllocBarrierOp):
            buffers.append(_Buffer(op, 8 * op.result.type.count, 8, 0, len(order)))
    return buffers


def _round_up(n: int, align: int) -> int:
    return -(-n // align) * align


def place(buffers: list[_Buffer]) -> int:
    """First-fit placement, largest first; returns the total bytes used."""
    placed: list[_Buffer] = []
    for buf in sorted(buffers, key=lambda b: (-b.nbytes, b.start)):
        busy = sorted(
            (b.offset, b.offset + b.nbytes) for b in placed if b.overlaps_in_time(buf)
        )
        offset = 0
        for lo, hi in busy:
            if offset + buf.nbytes <= lo:
                break
            offset = max(offset, _round_up(hi, buf.align))
        buf.offset = offset
        placed.append(buf)
    return max((b.offset + b.nbytes for b in buffers), default=0)


def shared_memory_bytes(kernel: tile.KernelOp) -> tuple[int, str]:
    """Bytes of shared memory `kernel` needs as this pass would place it, and its buffers in words.

    Leaves the IR alone: the interpreter uses it to refuse what no GPU target could run.
    """
    buffers = _collect(kernel)
    return place(buffers), "; ".join(b.describe() for b in buffers)


@dataclass(frozen=True)
class TilePlanSharedMemoryPass(ModulePass):
    """Give every shared buffer a byte offset; buffers never alive together share bytes."""

    name = "tile-plan-shared-memory"

    limit: int = 0
    """Bytes of shared memory one block may use (0: the target's)."""

    target: str = "sm_90a"
    """The target whose facts the pass reads (target_facts.py), named in the error (e.g. sm_80)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.walk():
            if isinstance(kernel, tile.KernelOp):
                self.plan_kernel(kernel)

    def plan_kernel(self, kernel: tile.KernelOp) -> None:
        buffers = _collect(kernel)
        total = place(buffers)
        limit = shared_limit(self.target, self.limit)
        if total > limit:
            listing = "; ".join(b.describe() for b in buffers)
            raise error_at(
                kernel,
                f"tile.kernel needs {total} bytes of shared memory, but a block may use "
                f"at most {limit} bytes on {self.target}; "
                f"shared buffers: {listing}",
                hint="use smaller tiles (block_M / block_N / block_K) or fewer pipeline "
                "stages, or keep some buffers in fragments",
            )
        for buf in buffers:
            buf.alloc.offset = IntegerAttr(buf.offset, i64)
        kernel.smem_bytes = IntegerAttr(total, i64)
