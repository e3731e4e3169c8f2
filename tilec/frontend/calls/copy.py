"""Data movement and initialization: `T.copy`, `T.tma_copy`, `T.fill`, `T.clear`; the cp.async groups
(`T.ptx_commit_group`, `T.ptx_wait_group`)."""

from __future__ import annotations

from tilec.dialects import tile

from ..values import Access, TileRef
from ..warp_specialize import nbytes, tma_arrival
from .operands import describe_, explicit_shape, region, require_kernel, stage_view, static_int
from .registry import handles
from .sync import barrier_ref


@handles("copy")
def copy(v, src, dst, **_):
    require_kernel(v, "T.copy", whole_tiles=True)
    if v.custom_layouts:  # custom_layout.py loads with the first T.Layout
        from ..custom_layout import copy_elementwise, laid_out

        if laid_out(v, src) is not None or laid_out(v, dst) is not None:
            copy_elementwise(v, src, dst)
            return
    src_shape, dst_shape = explicit_shape(v, src), explicit_shape(v, dst)
    if src_shape is None and dst_shape is None:
        raise v.b.error("T.copy between two single elements: neither side gives the region's shape",
                        hint="give one side as a buffer or a slice")
    s = region(v, src, dst_shape, "T.copy source")
    d = region(v, dst, src_shape, "T.copy destination")
    ss, ds = s.type.shape, d.type.shape
    if tile.squeezed(ss) != tile.squeezed(ds):
        raise v.b.error(f"T.copy shapes differ: src {ss} vs dst {ds}", hint="make both sides the same shape")
    v.b.emit(tile.CopyOp(s, d))


@handles("tma_copy")
def tma_copy(v, src, dst, barrier):
    if barrier is None or v.ws is None:
        copy(v, src, dst)  # lockstep code: a copy (tile-select-copy picks TMA where it can)
        return
    require_kernel(v, "T.tma_copy", whole_tiles=True)
    if v.ws.role not in ("producer", "threads"):
        raise v.b.error("T.tma_copy(..., barrier=b) is issued by the T.ws producer warpgroup, not the consumer")
    barrier = barrier_ref(v, barrier, "barrier= of T.tma_copy")
    target = stage_view(v, dst)
    if target is None:
        target = region(v, dst, explicit_shape(v, src), "T.tma_copy destination")
    s = region(v, src, tuple(target.type.shape), "T.tma_copy source")
    if s.type.scope != "global" or target.type.scope != "shared":
        raise v.b.error("T.tma_copy copies a global region into a shared tile")
    ss, ds = tuple(s.type.shape), tuple(target.type.shape)
    if tile.squeezed(ss) != tile.squeezed(ds) or (ss and ds and ss[-1] != ds[-1]):
        raise v.b.error(f"T.tma_copy shapes differ: src {ss} vs dst {ds}",
                        hint="the region must have the tile's shape once unit dims are dropped, with the same "
                             "innermost extent")
    if tile.built_from_pointer(s):
        raise v.b.error("T.tma_copy cannot read a tensor of T.make_tensor: TMA needs a host-side descriptor of "
                        "the tensor, and its address is only known in the kernel",
                        hint="use T.copy (cp.async), or pass the tensor itself as a kernel parameter")
    if v.ws.role == "threads":
        from .. import thread_roles

        thread_roles.tma_copy(v, barrier, s, target)
        return
    v.b.emit(tile.MBarrierExpectTxOp(barrier.ssa, nbytes(target.type), barrier.index))
    v.b.emit(tile.TmaLoadOp(s, target, barrier.ssa, barrier.index))
    tma_arrival(v, barrier.ssa, barrier.index)


@handles("fill")
def fill(v, buffer, value):
    require_kernel(v, "T.fill", whole_tiles=True)
    one = (1,) if isinstance(buffer, Access) and buffer.is_point else None  # T.fill(buf[i], x): that element
    dst = region(v, buffer, one, "T.fill destination")
    value = v.rvalue(value)
    if isinstance(value, TileRef | Access):
        raise v.b.error(f"T.fill needs a scalar value, got {describe_(value)}")
    v.b.emit(tile.FillOp(dst, v.b.to_ssa(value, dst.type.element_type)))


@handles("clear")
def clear(v, buffer):
    fill(v, buffer, 0)


@handles("ptx_commit_group")
def ptx_commit_group(v):
    require_kernel(v, "T.ptx_commit_group", whole_tiles=True)
    v.b.emit(tile.AsyncCommitOp())


@handles("ptx_wait_group")
def ptx_wait_group(v, num):
    require_kernel(v, "T.ptx_wait_group", whole_tiles=True)
    if isinstance(num, bool) or not isinstance(v.rvalue(num), int) and not _folded(v, num):
        raise v.b.error(f"T.ptx_wait_group takes a compile-time number of groups, got {describe_(num)}",
                        hint="cp.async.wait_group encodes the count in the instruction: pass an int")
    pending = static_int(v, v.rvalue(num), "T.ptx_wait_group's count")
    if pending < 0:
        raise v.b.error(f"T.ptx_wait_group: the number of groups left pending must be >= 0, got {pending}")
    v.b.emit(tile.AsyncWaitOp(pending))


def _folded(v, value) -> bool:
    from ..values import Scalar

    value = v.rvalue(value)
    return isinstance(value, Scalar) and value.ssa in v.b.constants
