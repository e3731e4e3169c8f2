"""Layout annotations: `T.use_swizzle`, `T.annotate_layout`, `tilec.layout.make_swizzled_layout`."""

from __future__ import annotations

from tilec.dialects import tile

from tilec.language.program import Symbol

from ..values import SwizzleLayout, TileRef
from .operands import describe_, require_kernel, static_int
from .registry import handles, handles_each


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
        if not isinstance(layout, SwizzleLayout):
            from ..custom_layout import CustomLayout  # loaded by T.Layout, which makes one

            if isinstance(layout, CustomLayout):
                _annotate_custom(v, buf, layout)
                continue
        if not isinstance(buf, TileRef) or not isinstance(layout, SwizzleLayout):
            raise v.b.error("T.annotate_layout: each entry must be buffer: make_swizzled_layout(buffer)")
        if layout.nbytes:  # 0: make_swizzled_layout of a row no swizzle fits, which stays unswizzled
            v.b.emit(tile.AnnotateLayoutOp(buf.ssa, tile.SwizzleLayoutAttr(layout.nbytes)))


def _annotate_custom(v, buf, layout) -> None:
    if not isinstance(buf, TileRef) or buf.scope != "global":
        raise v.b.error(f"T.annotate_layout: a custom T.Layout is supported for global tensors, not {describe_(buf)}",
                        hint="shared buffers take tilec.layout.make_swizzled_layout(buffer)")
    shape = tuple(Symbol("?") if d == tile.DYNAMIC else d for d in buf.shape)
    if len(shape) != len(layout.shape) or any(isinstance(a, int) and a != b for a, b in zip(layout.shape, shape)):
        raise v.b.error(f"T.annotate_layout: {layout!r} is for shape {list(layout.shape)}, but {buf} has shape "
                        f"{list(buf.shape)}")
    used = [u.operation for u in buf.ssa.uses if not isinstance(u.operation, tile.DimOp)]
    if used or buf.ssa in v.custom_layouts:
        raise v.b.error(f"T.annotate_layout: {buf} is already used in this kernel; annotate its layout before "
                        "its first use", hint="put T.annotate_layout first in the kernel body")
    v.custom_layouts[buf.ssa] = layout


@handles("Layout")
def layout(v, shape, forward_fn):
    from ..custom_layout import make_layout  # custom_layout.py loads with the first T.Layout

    return make_layout(v, shape, forward_fn)


def _check_swizzled(v, name: str, buffer) -> None:
    if not isinstance(buffer, TileRef) or buffer.scope != "shared":
        raise v.b.error(f"{name} needs a shared buffer, got {describe_(buffer)}")


@handles("make_swizzled_layout")
def make_swizzled_layout(v, buffer, k_major, allow_pad, swizzle_bytes):
    _check_swizzled(v, "make_swizzled_layout", buffer)
    for name, flag in (("k_major", k_major), ("allow_pad", allow_pad)):
        if not isinstance(flag, bool):
            hint = f"name the swizzle as swizzle_bytes={flag}" if name == "k_major" and flag in (32, 64, 128) else \
                "pass True or False"
            raise v.b.error(f"make_swizzled_layout: {name} is TileLang's flag (a bool), got {flag!r}", hint=hint)
    if swizzle_bytes is None:  # TileLang's choice: the widest swizzle the row is a multiple of
        row = 0 if buffer.shape[-1] == tile.DYNAMIC else buffer.shape[-1] * tile.element_bytes(buffer.type.element_type)
        swizzle_bytes = next((n for n in (128, 64, 32) if row and row % n == 0), 0)
    elif swizzle_bytes not in (32, 64, 128):
        raise v.b.error(f"make_swizzled_layout: swizzle_bytes must be 32, 64 or 128, got {swizzle_bytes!r}")
    return SwizzleLayout(buffer, int(swizzle_bytes))


@handles_each({"make_full_bank_swizzled_layout": 128, "make_half_bank_swizzled_layout": 64,
               "make_quarter_bank_swizzled_layout": 32})
def _bank_swizzled_layout(name: str, nbytes: int):
    def build(v, buffer):
        _check_swizzled(v, name, buffer)
        return SwizzleLayout(buffer, nbytes)

    return build
