"""Layout annotations: `T.use_swizzle`, `T.annotate_layout`, `tilec.layout.make_swizzled_layout`."""

from __future__ import annotations

from tilec.dialects import tile

from ..values import SwizzleLayout, TileRef
from .operands import describe_, require_kernel, static_int
from .registry import handles


@handles("use_swizzle")
def use_swizzle(v, panel_size, order, enable):
    require_kernel(v, "T.use_swizzle", whole_tiles=True)
    if enable:
        v.b.emit(tile.UseSwizzleOp(static_int(v, panel_size, "panel_size"), str(order)))


@handles("annotate_layout")
def annotate_layout(v, layout_map):
    require_kernel(v, "T.annotate_layout", whole_tiles=True)
    if not isinstance(layout_map, dict):
        raise v.b.error("T.annotate_layout takes a dict {buffer: layout}")
    for buf, layout in layout_map.items():
        if not isinstance(buf, TileRef) or not isinstance(layout, SwizzleLayout):
            raise v.b.error("T.annotate_layout: each entry must be buffer: make_swizzled_layout(buffer)")
        v.b.emit(tile.AnnotateLayoutOp(buf.ssa, tile.SwizzleLayoutAttr(layout.nbytes)))


@handles("make_swizzled_layout")
def make_swizzled_layout(v, buffer, swizzle_bytes):
    if swizzle_bytes not in (32, 64, 128):
        raise v.b.error(f"make_swizzled_layout: swizzle_bytes must be 32, 64 or 128, got {swizzle_bytes!r}")
    if not isinstance(buffer, TileRef) or buffer.scope != "shared":
        raise v.b.error(f"make_swizzled_layout needs a shared buffer, got {describe_(buffer)}")
    return SwizzleLayout(buffer, int(swizzle_bytes))
