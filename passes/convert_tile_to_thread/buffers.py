"""Buffers and views: `tile.alloc` (shared, fragment, local storage), `tile.region`,
`tile.reshape` and `tile.stage` become `View`s of memory; no code moves data here.
"""

from __future__ import annotations

import math

from xdsl.dialects import memref
from xdsl.ir import SSAValue

from tilec.dialects import tile

from tilec.passes.analysis import constant_value
from tilec.passes.tile_infer_layout import layout_of

from .context import Lowerer, SlotMap
from .lanes import tile_mult
from .memory import View, memref_type
from .registry import uniform


def lower_alloc(L: Lowerer, op: tile.AllocOp) -> None:
    typ = op.result.type
    count = typ.num_elements()
    strides, acc = [], 1
    for n in reversed(typ.shape):
        strides.insert(0, acc)
        acc *= n
    if typ.scope == "shared":
        offset_bytes = L.bump(op.nbytes) if op.offset is None else op.offset.value.data
        mem = L.emit(memref.ViewOp(L.smem, L.const(offset_bytes), [], memref_type(typ.element_type, count, 3)))
        chunk = op.chunk_columns
        if chunk:  # columns in chunks of `chunk`: rows of one chunk are `chunk` apart (wgmma N-major operands)
            strides[-2] = chunk
        L.views[op.result] = View("shared", mem.results[0], typ.shape, typ.element_type, [0] * typ.rank,
                                  strides, list(typ.shape), swizzle=op.swizzle_bytes, chunk=chunk)
    elif typ.scope == "fragment":
        layout = layout_of(op)
        if layout is None:
            raise L.error(op, "fragment without a layout: run tile-infer-layout first")
        L.views[op.result] = View("fragment", L.alloca(typ.element_type, layout.num_slots), typ.shape,
                                  typ.element_type, layout=layout)
    else:
        L.views[op.result] = View("local", L.alloca(typ.element_type, count), typ.shape, typ.element_type,
                                  [0] * typ.rank, strides, list(typ.shape))


@uniform(tile.RegionOp)
def _region(L: Lowerer, op: tile.RegionOp) -> None:
    src = L.views[op.source]
    if src.kind == "fragment":
        raise L.error(op, "regions of fragments are not supported by the CUDA target yet",
                      hint="copy the whole fragment, or use a shared buffer")
    offsets = [L.val(o) for o in op.offsets]
    offsets = [constant_value(o) if constant_value(t) is not None else o for o, t in zip(offsets, op.offsets)]
    for t, o in zip(op.offsets, offsets):
        if isinstance(o, SSAValue) and o not in L.mults:
            L.mults[o] = tile_mult(L, t, SlotMap(L.vmap))
    L.views[op.result] = src.window(offsets, op.result.type.shape, L, op.in_bounds is not None)


@uniform(tile.ReshapeOp)
def _reshape(L: Lowerer, op: tile.ReshapeOp) -> None:
    src = L.views[op.source]
    shape = op.result.type.shape
    if src.kind == "fragment" and src.layout is not None and src.shape == op.source.type.shape:
        layout = src.layout.reshaped(shape)  # the same registers (tile-infer-layout checked their accesses)
        if layout is None:
            raise L.error(op, f"T.reshape of a fragment in layout {src.layout} to {shape}: the layout does not split "
                              "into that shape")
        L.views[op.result] = View("fragment", src.mem, shape, src.element_type, layout=layout)
        return
    if src.kind == "fragment":
        raise L.error(op, "T.reshape of a fragment without a layout, or of a region of one, is not supported by the "
                          "CUDA target", hint="reshape the whole fragment (tile-infer-layout gives it its layout)")
    if src.chunk or any(o != 0 for o in src.offsets) or src.shape != op.source.type.shape:
        raise L.error(op, "T.reshape of regions is not supported by the CUDA target yet")
    strides, acc = [], 1
    for n in reversed(shape):
        strides.insert(0, acc)
        acc *= n
    L.views[op.result] = View(src.kind, src.mem, shape, src.element_type, [0] * len(shape), strides,
                              list(shape), src.in_bounds, swizzle=src.swizzle, base=src.base)


@uniform(tile.StageOp)
def _stage(L: Lowerer, op: tile.StageOp) -> None:
    """Stage i of a multi-buffered shared tile: the same memory from element i * (stage size)."""
    src = L.views[op.source]
    if any(o != 0 for o in src.offsets):
        raise L.error(op, "tile.stage of a region is not supported")
    stage = L.val(op.index)
    const = constant_value(op.index)
    stage = const if const is not None else stage
    size = math.prod(src.shape[1:])
    L.views[op.result] = View(src.kind, src.mem, tuple(src.shape[1:]), src.element_type, [0] * (len(src.shape) - 1),
                              src.strides[1:], list(src.shape[1:]), src.in_bounds, swizzle=src.swizzle,
                              base=L.add(src.base, L.mul(stage, size)), chunk=src.chunk)
