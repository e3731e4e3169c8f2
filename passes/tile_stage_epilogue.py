"""Store a warp-specialized gemm's result through shared memory: coalesced 16-byte stores.

Requires: tile-warp-specialize; runs before tile-infer-layout and tile-plan-shared-memory.
Establishes: in the consumer region of a `tile.warp_specialize` (or its `tile.persistent` loop), a top-level `tile.copy` of a
  wgmma accumulator fragment into a global region (2-D, or of more dims of which all but two are 1,
  as attention's `Out[bz, rows, by, :]`) becomes a copy into a new shared tile of the
  destination's element type (128-byte swizzle: the fragment's rows land in different banks)
  and a copy of that tile into the region. The fragment's layout gives each thread pairs of a
  row (4-byte stores, scattered over 8 rows per warp); the shared tile is then read 16 bytes a
  thread and stored row-contiguous, a warp writing 512 bytes at a time. The planner may give
  the tile the bytes of the pipeline stages, which the loop has finished with. Under a ping-pong
  split (`consumer_groups` > 1) each group gets a tile of its own (consumer_groups.py).
Fails: never; a copy whose tile would not fit the target's shared memory stays direct.

    tile.copy %C_f, %c : !tile.buffer<128x256xf32, fragment>, !tile.tensor<128x256xf16>
  becomes
    %C_s = tile.alloc {swizzle = 128 : i64} : !tile.buffer<128x256xf16, shared>
    tile.copy %C_f, %C_s
    tile.copy %C_s, %c
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilec.dialects import tile
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from .consumer_groups import give_each_group
from .target_facts import shared_limit

__all__ = ["TileStageEpiloguePass"]

_BYTES = {"f16": 2, "bf16": 2, "f32": 4}


def _accumulators(region_block) -> set:
    return {op.c for op in region_block.walk() if isinstance(op, tile.GemmOp) and op.mma_kind == tile.MmaKind.WGMMA}


CHUNK_BYTES = 32 * 1024
"""A persistent kernel's result goes out in column chunks of at most this many bytes: its shared
tile has bytes of its own (the producer fills the next tile's stages meanwhile), and a smaller one
leaves room for one more stage (128x256 f16: 4 stages of 48 KB and a 32 KB chunk fit 227 KB,
a whole 64 KB tile only 3 stages)."""


def chunk_columns(shape, element_type) -> int:
    """Columns per chunk of a persistent kernel's staged result of `shape` (all of them when the
    tile is small or no chunk of whole 128-byte rows divides it)."""
    esize = _BYTES.get(str(element_type))
    rows, cols = shape
    if esize is None or rows * cols * esize <= CHUNK_BYTES:
        return cols
    best = cols
    for width in range(64 // esize, cols, 64 // esize):  # whole 128-byte swizzle rows
        if cols % width == 0 and rows * width * esize <= CHUNK_BYTES:
            best = width
    return best


def staged_bytes(shape, element_type, persistent: bool) -> int:
    """Bytes of the shared tile a staged result of `shape` gets."""
    esize = _BYTES.get(str(element_type), 4)
    shape = _matrix(shape)
    if shape is None:
        return 0  # (not staged)
    cols = chunk_columns(shape, element_type) if persistent else shape[1]
    return shape[0] * cols * esize


def _matrix(shape) -> tuple[int, int] | None:
    """The rows and columns of a destination of `shape`: 2-D, or more dims of which all but two are 1
    (attention's `Out[bz, rows, by, :]`); None for any other."""
    kept = tuple(shape) if len(shape) == 2 else tile.squeezed(shape)
    return kept if len(kept) == 2 else None


def _stage(copy: tile.CopyOp, limit: int, ws: tile.WarpSpecializeOp, persistent: bool = False) -> None:
    src, dst = copy.src.type, copy.dst.type
    esize = _BYTES.get(str(dst.element_type))
    shape = _matrix(dst.shape)
    if esize is None or src.rank != 2 or tuple(src.shape) != shape:
        return
    cols = chunk_columns(shape, dst.element_type) if persistent else shape[1]
    if dst.rank != 2 and cols != shape[1]:
        return  # (the chunks' windows index a 2-D destination)
    if shape[0] * cols * esize * ws.groups > limit // 2:  # leave room: the planner must still fit the kernel
        return
    row_bytes = cols * esize
    alloc = tile.AllocOp(tile.BufferType((shape[0], cols), dst.element_type, "shared"))
    alloc.result.name_hint = f"{copy.src.name_hint or 'acc'}_out"
    if row_bytes % 128 == 0:
        alloc.swizzle = IntegerAttr(128, i64)
    alloc.location = copy.location
    if cols == shape[1]:
        into = tile.CopyOp(copy.src, alloc.result)
        out = tile.CopyOp(alloc.result, copy.dst)
        into.location = out.location = copy.location
        ops = [into, out]
    else:
        ops = []
        zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
        ops.append(zero)
        for first in range(0, dst.shape[1], cols):
            at = arith.ConstantOp(IntegerAttr(first, IndexType()))
            part = tile.BufferType((dst.shape[0], cols), src.element_type, src.scope)
            piece = tile.RegionOp(copy.src, [zero.result, at.result], part)
            window = tile.RegionOp(copy.dst, [zero.result, at.result], tile.TensorType((dst.shape[0], cols), dst.element_type))
            ops += [at, piece, tile.CopyOp(piece.result, alloc.result), window, tile.CopyOp(alloc.result, window.result)]
        for op in ops:
            op.location = copy.location
    kernel = copy.parent_op()
    while not isinstance(kernel, tile.KernelOp):
        kernel = kernel.parent_op()
    first = kernel.body.block.first_op
    Rewriter.insert_op(alloc, InsertPoint.before(first))  # allocations live at the kernel's top level
    Rewriter.replace_op(copy, ops)
    if ws.groups > 1:  # ping-pong: each consumer group stores its own tile
        give_each_group(ws, alloc)


@dataclass(frozen=True)
class TileStageEpiloguePass(ModulePass):
    """Store a warp-specialized gemm's result through shared memory: coalesced 16-byte stores."""

    name = "tile-stage-epilogue"

    limit: int = 0
    """Bytes of shared memory a block may use (0: the target's)."""

    target: str = "sm_90a"
    """The target whose facts the pass reads (target_facts.py)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [w for w in op.walk() if isinstance(w, tile.WarpSpecializeOp)]:
            block = ws.consumer_tile  # (a persistent kernel's: the consumers' work for each tile)
            accs = _accumulators(block)
            for copy in [c for c in block.ops if isinstance(c, tile.CopyOp)]:
                if copy.src in accs and isinstance(copy.dst.type, tile.TensorType):
                    _stage(copy, shared_limit(self.target, self.limit), ws, persistent=block is not ws.consumer.block)
