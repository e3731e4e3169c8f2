"""Store a warp-specialized gemm's result through shared memory: by TMA, or coalesced 16-byte stores.

Requires: tile-warp-specialize; runs before tile-infer-layout and tile-plan-shared-memory.
Establishes: in the consumer region of a `tile.warp_specialize` (or its `tile.persistent` loop), a top-level `tile.copy` of a
  wgmma accumulator fragment into a global region (2-D, or of more dims of which all but two are 1,
  as attention's `Out[bz, rows, by, :]`) becomes a copy into a new shared tile of the
  destination's element type (128-byte swizzle: the fragment's rows land in different banks)
  and a store of that tile into the region. The fragment's layout gives each thread pairs of a
  row (4-byte stores, scattered over 8 rows per warp); from shared memory the tile goes out
  row-contiguous:
  - by TMA (`tile.tma_store`, one box per 128-byte column chunk, issued by one thread) where TMA
    can write the region (a tensor whose strides are static multiples of 16 bytes, rows of whole
    128-byte boxes, at most 256 rows); a `tile.tma_store_wait` before the tile is written again
    (the next tile or chunk of a persistent kernel) and `{final}` at the end of the consumers;
  - otherwise (or with `tma_store=False`, `tilec.tma_store`) by a `tile.copy` the threads run in
    16-byte stores, a warp writing 512 bytes at a time; where TMA could not, the copy says why
    (`not_tma_store = "a stride of 600 bytes (TMA needs multiples of 16)"`).
  The planner may give the tile the bytes of the pipeline stages, which the loop has finished
  with. Under a ping-pong split (`consumer_groups` > 1) each group gets a tile of its own
  (consumer_groups.py).
Fails: never; a copy whose tile would not fit the target's shared memory stays direct.

    tile.copy %C_f, %c : !tile.buffer<128x256xf32, fragment>, !tile.tensor<128x256xf16>
  becomes
    %C_s = tile.alloc {swizzle = 128 : i64, chunk = 64 : i64} : !tile.buffer<128x256xf16, shared>
    tile.copy %C_f, %C_s
    tile.tma_store %C_s, %c
    ...
    tile.tma_store_wait %C_s {final}   (the consumers' last op)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilec.dialects import tile
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass
from xdsl.ir import Operation
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator

from .consumer_groups import give_each_group
from .target_facts import shared_limit
from .tma_regions import tma_region_refusal

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


def _stage(copy: tile.CopyOp, limit: int, ws: tile.WarpSpecializeOp, persistent: bool = False,
           tma_store: bool = True) -> tile.AllocOp | None:
    """Stage `copy` through a new shared tile (returned; None where it stays direct). With
    `tma_store`, where TMA can write the destination, the tile goes out by `tile.tma_store`."""
    src, dst = copy.src.type, copy.dst.type
    esize = _BYTES.get(str(dst.element_type))
    shape = _matrix(dst.shape)
    if esize is None or src.rank != 2 or tuple(src.shape) != shape:
        return None
    cols = chunk_columns(shape, dst.element_type) if persistent else shape[1]
    if dst.rank != 2 and cols != shape[1]:
        return None  # (the chunks' windows index a 2-D destination)
    if shape[0] * cols * esize * ws.groups > limit // 2:  # leave room: the planner must still fit the kernel
        return None
    row_bytes = cols * esize
    alloc = tile.AllocOp(tile.BufferType((shape[0], cols), dst.element_type, "shared"))
    alloc.result.name_hint = f"{copy.src.name_hint or 'acc'}_out"
    if row_bytes % 128 == 0:
        alloc.swizzle = IntegerAttr(128, i64)
    refusal = tma_store_refusal(copy.dst, shape, cols, esize) if tma_store else None
    tma = tma_store and refusal is None
    if tma and cols * esize > 128:  # TMA's boxes: 128-byte rows, one box per chunk of them
        alloc.chunk = IntegerAttr(128 // esize, i64)
    alloc.location = copy.location

    def out(tile_value, region) -> list[Operation]:
        if tma:
            return [tile.TmaStoreOp(tile_value, region)]
        stores = tile.CopyOp(tile_value, region)
        if refusal is not None:  # say why in the IR
            stores.attributes["not_tma_store"] = StringAttr(refusal)
        return [stores]

    def into(value) -> list[Operation]:
        # a TMA store of the tile (this tile's other chunk, the previous tile's) must have read it
        waits = [tile.TmaStoreWaitOp(alloc.result)] if tma and persistent else []
        return [*waits, tile.CopyOp(value, alloc.result)]

    if cols == shape[1]:
        ops = [*into(copy.src), *out(alloc.result, copy.dst)]
    else:
        ops = []
        zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
        ops.append(zero)
        for first in range(0, dst.shape[1], cols):
            at = arith.ConstantOp(IntegerAttr(first, IndexType()))
            part = tile.BufferType((dst.shape[0], cols), src.element_type, src.scope)
            piece = tile.RegionOp(copy.src, [zero.result, at.result], part)
            window = tile.RegionOp(copy.dst, [zero.result, at.result], tile.TensorType((dst.shape[0], cols), dst.element_type))
            ops += [at, piece, *into(piece.result), window, *out(alloc.result, window.result)]
    for op in ops:
        op.location = copy.location
    kernel = tile.enclosing_kernel(copy)
    first = kernel.body.block.first_op
    Rewriter.insert_op(alloc, InsertPoint.before(first))  # allocations live at the kernel's top level
    Rewriter.replace_op(copy, ops)
    if tma:  # the consumers' last store must have read the tile before the block ends
        final = tile.TmaStoreWaitOp(alloc.result, final=True)
        final.location = copy.location
        block = ws.consumer.block
        last = block.last_op
        if last is not None and last.has_trait(IsTerminator):
            Rewriter.insert_op(final, InsertPoint.before(last))
        else:
            Rewriter.insert_op(final, InsertPoint.at_end(block))
    if ws.groups > 1:  # ping-pong: each consumer group stores its own tile
        give_each_group(ws, alloc)
    return alloc


def tma_store_refusal(region, shape: tuple[int, int], cols: int, esize: int) -> str | None:
    """Why TMA cannot store a staged tile of `shape` (in chunks of `cols` columns) into `region`
    (None: it can): a region TMA can address (`tma_region_refusal`), rows of whole 128-byte
    boxes, at most 256 rows (a box's extent)."""
    if shape[0] > 256:
        return f"{shape[0]} rows (a TMA box has at most 256)"
    if (cols * esize) % 128:
        return f"rows of {cols * esize} bytes (TMA stores whole 128-byte boxes)"
    return tma_region_refusal(region, shape)


@dataclass(frozen=True)
class TileStageEpiloguePass(ModulePass):
    """Store a warp-specialized gemm's result through shared memory: by TMA, or 16-byte stores."""

    name = "tile-stage-epilogue"

    limit: int = 0
    """Bytes of shared memory a block may use (0: the target's)."""

    target: str = "sm_90a"
    """The target whose facts the pass reads (target_facts.py)."""

    tma_store: bool = True
    """Store a staged result by TMA where it can write the destination (`tilec.tma_store`);
    otherwise, and where it cannot, by 16-byte stores of the consumer threads."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [w for w in op.walk() if isinstance(w, tile.WarpSpecializeOp)]:
            block = ws.consumer_tile  # (a persistent kernel's: the consumers' work for each tile)
            accs = _accumulators(block)
            for copy in [c for c in block.ops if isinstance(c, tile.CopyOp)]:
                if copy.src in accs and isinstance(copy.dst.type, tile.TensorType):
                    _stage(copy, shared_limit(self.target, self.limit), ws, persistent=block is not ws.consumer.block,
                           tma_store=self.tma_store)
