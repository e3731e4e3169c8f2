"""Shared tiles of their own for each consumer group of a `tile.warp_specialize` (the ping-pong
schedule: the groups run the kernel's program on different tiles at once, so every shared tile
that program uses but the ring of stages needs one copy per group).

    %C_s = tile.alloc : !tile.buffer<128x128xf16, shared>           (used in the consumer region)
  becomes
    %C_s = tile.alloc : !tile.buffer<2x128x128xf16, shared>
    tile.warp_specialize producer {...} consumer {
      %g = tile.consumer_group
      %C_s.g = tile.stage %C_s[%g] : ... -> !tile.buffer<128x128xf16, shared>
      ...                                                          (uses of %C_s take %C_s.g)
    }
"""

from __future__ import annotations

from tilec.dialects import tile
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

__all__ = ["consumer_group", "give_each_group"]


def consumer_group(ws: tile.WarpSpecializeOp) -> SSAValue:
    """The `tile.consumer_group` at the start of `ws`'s consumer region (made on first use)."""
    block = ws.consumer.block
    first = block.first_op
    if isinstance(first, tile.ConsumerGroupOp):
        return first.result
    op = tile.ConsumerGroupOp()
    op.location = ws.location
    if first is None:
        block.add_op(op)
    else:
        Rewriter.insert_op(op, InsertPoint.before(first))
    return op.result


def give_each_group(ws: tile.WarpSpecializeOp, alloc: tile.AllocOp) -> None:
    """`alloc` (a shared tile at the kernel's top level that only `ws`'s consumers use) becomes one
    tile per consumer group; each group's uses read and write its own."""
    typ = alloc.result.type
    grouped = tile.AllocOp(tile.BufferType((ws.groups, *typ.shape), typ.element_type, "shared"))
    grouped.properties |= alloc.properties  # its shared layout (swizzle, chunk)
    grouped.attributes |= alloc.attributes
    grouped.result.name_hint = alloc.result.name_hint
    grouped.location = alloc.location
    Rewriter.insert_op(grouped, InsertPoint.before(alloc))
    group = consumer_group(ws)
    view = tile.StageOp(grouped.result, group)
    view.location = alloc.location
    view.result.name_hint = f"{alloc.result.name_hint or 'tile'}_g"
    Rewriter.insert_op(view, InsertPoint.after(group.owner))
    alloc.result.replace_all_uses_with(view.result)
    Rewriter.erase_op(alloc)
