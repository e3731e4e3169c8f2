"""`tile.copy` and `tile.fill`: elements moved between any two kinds of storage, the threads
following a layout; slots that differ only in the innermost (vector) mode form a group whose
accesses become one vector access when the addresses are consecutive and aligned; cp.async
for asynchronous global-to-shared copies; staged copies between overlapping regions; the global
views of `tile.make_tensor` (tensors at run-time addresses, which copies read).
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import (
    IntegerAttr,
    i32,
)
from xdsl.ir import Block, Region, SSAValue

from tilec.dialects import nvvm, tile

from tilec.dialects.tile.layout import Layout, Mode
from tilec.passes.layouts import default_layout

from .context import Lowerer
from .memory import View, element_bytes, global_ptr, memref_type, pointer_memref, shared_ptr
from .registry import uniform
from .stmatrix import store_fragment


def vector_mode(layout: Layout):
    """The innermost mode of the last dim when it is a slot mode: its slots form vector groups."""
    last = layout.dims[-1][-1]
    return last if last.kind == "s" and last.size > 1 else None


def slot_groups(layout: Layout, max_width: int = 16) -> list[list[int]]:
    """The slots of `layout`, grouped so that a group's slots are consecutive in the last dim."""
    mode = vector_mode(layout)
    if mode is None:
        return [[s] for s in range(layout.num_slots)]
    width = mode.size
    while width > max_width:
        width //= 2
    groups: dict[int, list[int]] = {}
    for s in range(layout.num_slots):
        coord = (s // mode.stride) % mode.size
        key = s - coord * mode.stride + (coord // width) * (10**9)
        groups.setdefault(key, []).append(s)
    return [sorted(g, key=lambda s: (s // mode.stride) % mode.size) for g in groups.values()]


def squeeze_map(src_shape, dst_shape, index: list) -> list:
    """`index` into `src_shape` mapped to `dst_shape` (the shapes agree without unit dims)."""
    vals = [i for i, n in zip(index, src_shape) if n != 1]
    out = []
    for n in dst_shape:
        out.append(vals.pop(0) if n != 1 else 0)
    return out


def read_group(L: Lowerer, view: View, index: list, slots: list[int], iter_layout: Layout) -> list[SSAValue]:
    """The elements at `index` (lane 0) and the following lanes of a group."""
    if view.kind == "fragment":
        if view.layout is None or not view.layout.same_threads(iter_layout):
            raise AssertionError("fragment read with a foreign layout")
        return [L.frag_load(view, iter_layout.translate_slot(view.layout, s)) for s in slots]
    width = len(slots)
    if _walks_last_dim(view, width) and L.vectorizable(view, index, width):
        vec = L.load(view, index, width)
        return [L.extract(vec, k) for k in range(width)]
    return [L.load(view, lane_index(L, view, index, k)) for k in range(width)]


def write_group(L: Lowerer, view: View, index: list, slots: list[int], values: list[SSAValue],
           leader: SSAValue | None, iter_layout: Layout) -> None:
    if view.kind == "fragment":
        for s, v in zip(slots, values):
            L.frag_store(view, iter_layout.translate_slot(view.layout, s), v)
        return
    values = [L.convert(v, view.element_type) for v in values]
    width = len(values)
    if _walks_last_dim(view, width) and L.vectorizable(view, index, width):
        L.store(view, index, L.pack(values), leader)
        return
    for k, v in enumerate(values):
        L.store(view, lane_index(L, view, index, k), v, leader)


def _walks_last_dim(view: View, width: int) -> bool:
    """Whether the lanes of a group step along the view's last dim (not a trailing unit dim that
    the iteration space squeezed away, e.g. `Y[0:4, 0]`)."""
    return width == 1 or (bool(view.shape) and view.shape[-1] != 1)


def lane_index(L: Lowerer, view: View, index: list, k: int) -> list:
    """The view index of lane `k` of a group whose lane 0 is at `index`: the lanes step along the
    iteration's last dim, which is the view's last dim of extent > 1 (squeeze_map keeps order)."""
    if k == 0:
        return index
    dim = max((d for d, n in enumerate(view.shape) if n != 1), default=len(index) - 1)
    return index[:dim] + [L.add(index[dim], k)] + index[dim + 1:]


def transfer(L: Lowerer, layout: Layout, shape, src: View | None, dst: View, value: SSAValue | None = None):
    """dst[i] = src[i] (or `value`) for every element, the threads following `layout` over `shape`."""
    leader = L.replica_leader(layout) if dst.kind != "fragment" else None
    for group in slot_groups(layout):
        index = L.layout_index(layout, group[0])
        if value is not None:
            values = [value] * len(group)
        else:
            values = read_group(L, src, squeeze_map(shape, src.shape, index), group, layout)
        write_group(L, dst, squeeze_map(shape, dst.shape, index), group, values, leader, layout)


def transfer_staged(L: Lowerer, layout: Layout, shape, src: View, dst: View) -> None:
    """dst[i] = src[i] when the two may overlap (regions of one buffer): every thread reads all
    its elements, a barrier, then every thread writes them, so no element is overwritten before
    it is read (T.copy is synchronous in meaning)."""
    leader = L.replica_leader(layout) if dst.kind != "fragment" else None
    loaded = []
    for group in slot_groups(layout):
        index = L.layout_index(layout, group[0])
        loaded.append((group, index, read_group(L, src, squeeze_map(shape, src.shape, index), group, layout)))
    barrier(L)
    for group, index, values in loaded:
        write_group(L, dst, squeeze_map(shape, dst.shape, index), group, values, leader, layout)


def may_overlap(src: View, dst: View) -> bool:
    """Whether two views of memory may share an element: the same buffer, and windows that are
    not disjoint along some dim by their constant offsets."""
    if src.kind not in ("shared", "global") or src.mem is not dst.mem:
        return False
    if src.base != dst.base and isinstance(src.base, int) and isinstance(dst.base, int):
        size = math.prod(src.shape)
        if src.base + size <= dst.base or dst.base + math.prod(dst.shape) <= src.base:
            return False
    if not len(src.offsets) == len(dst.offsets) == len(src.shape) == len(dst.shape):
        return True  # a region that dropped unit dims: its extent per root dim is not at hand
    for a, b, na, nb in zip(src.offsets, dst.offsets, src.shape, dst.shape):
        if isinstance(a, int) and isinstance(b, int) and (a + na <= b or b + nb <= a):
            return False
    return True


def transfer_async(L: Lowerer, layout: Layout, shape, src: View, dst: View) -> None:
    """dst[i] = src[i] with `cp.async` (global to shared, 4/8/16 bytes a thread, zero-filled past
    the tensor's end); a group that is no aligned 16-byte vector goes as halves that are (rows of
    a tensor whose row stride is a multiple of 8 bytes only: 8-byte copies), and what is not even
    a 4-byte vector by plain loads and stores, which the async copies' wait orders just as well."""
    leader = L.replica_leader(layout)
    esize = element_bytes(dst.element_type)
    pending = list(slot_groups(layout))
    while pending:
        group = pending.pop(0)
        index = L.layout_index(layout, group[0])
        si, di = squeeze_map(shape, src.shape, index), squeeze_map(shape, dst.shape, index)
        width = len(group)
        nbytes = width * esize
        if nbytes not in (4, 8, 16) or not (_walks_last_dim(src, width) and _walks_last_dim(dst, width) and
                                            L.vectorizable(src, si, width) and L.vectorizable(dst, di, width)):
            if nbytes in (8, 16) and width % 2 == 0:
                pending[:0] = [group[:width // 2], group[width // 2:]]
                continue
            write_group(L, dst, di, group, read_group(L, src, si, group, layout), leader, layout)
            L.stage_copies.add("plain")
            continue
        cond = L.in_bounds(src, si)
        size = None
        addr = L.flat(src, si)
        if cond is not None:
            size = L.emit(arith.SelectOp(cond, L.const(nbytes, i32), L.const(0, i32))).results[0]
            addr = L.emit(arith.SelectOp(cond, L.ssa(addr), L.const(0))).results[0]  # nothing is read at size 0
        copy = nvvm.CpAsyncOp.create(
            operands=[shared_ptr(L, dst, di), global_ptr(L, src, addr), *([size] if size is not None else [])],
            properties={"size": IntegerAttr(nbytes, i32),
                        "modifier": nvvm.LoadCacheModifierAttr(nvvm.LoadCacheModifier.CG if nbytes == 16 else
                                                               nvvm.LoadCacheModifier.CA)})
        if leader is not None:
            then = Block()
            L.emit(scf.IfOp(leader, [], Region(then)))
            with L.push(then):
                L.emit(copy)
                L.emit(scf.YieldOp())
        else:
            L.emit(copy)
        L.stage_copies.add("async")


def memory_layout(L: Lowerer, shape, *views: View) -> Layout:
    """A coalesced layout for moving a tile between memories."""
    widest = max(element_bytes(v.element_type) for v in views)
    return default_layout(tuple(shape), L.threads, max(1, 16 // widest))


def copy_layout(L: Lowerer, shape, src: View, dst: View) -> Layout:
    """memory_layout with the widest vector both ends take: rows of a tensor whose stride is a
    multiple of 8 bytes only go as 8-byte vectors of consecutive lanes (a warp's access one
    contiguous run), not as 16-byte groups split in halves that leave every other 8 bytes of a
    row to the next instruction (twice the sectors, run s15b). Each group is still checked where
    it is lowered; this only picks the layout."""
    widest = max(element_bytes(v.element_type) for v in (src, dst))
    vec = max(1, 16 // widest)
    while vec > 1 and not all(_takes(L, v, vec) for v in (src, dst)):
        vec //= 2
    return default_layout(tuple(shape), L.threads, vec)


def _takes(L: Lowerer, view: View, vec: int) -> bool:
    """Whether a vector of `vec` elements at a column that is a multiple of `vec`, in any row of
    the view, is an aligned vector access (views other than memory take any)."""
    if view.kind not in ("global", "shared"):
        return True
    probe = [0 if n == 1 else 1 for n in view.shape[:-1]] + [vec]
    return len(probe) == len(view.strides) and L.vectorizable(view, probe, vec)


def scratch_view(L: Lowerer, shape, element_type, at: int = 0) -> View:
    """A shared-memory buffer for data exchange between threads, `at` bytes into the exchange
    area (which every op reuses: an op that needs two buffers at once places them apart)."""
    count = math.prod(shape)
    nbytes = count * element_bytes(element_type)
    L.scratch_bytes = max(L.scratch_bytes, at + nbytes)
    offset = L.ssa(L.add(L.scratch_shift, L.scratch_base + at))  # (each consumer group has its own)
    mem = L.emit(memref.ViewOp(L.smem, offset, [], memref_type(element_type, count, 3))).results[0]
    strides, acc = [], 1
    for n in reversed(shape):
        strides.insert(0, acc)
        acc *= n
    return View("shared", mem, tuple(shape), element_type, [0] * len(shape), strides, list(shape))


def barrier(L: Lowerer) -> None:
    """A barrier over the threads that run this code: the block, or the consumer threads of a
    warp-specialized region (a named barrier: bar.sync 0 would wait for the producer too)."""
    if L.barrier_threads is None:
        L.emit(gpu.BarrierOp())
        return
    from .sync import named_barrier

    named_barrier(L, L.barrier_threads)


@uniform(tile.CopyOp)
def lower_copy(L: Lowerer, op: tile.CopyOp) -> None:
    src, dst = L.views[op.src], L.views[op.dst]
    if op.is_async and src.kind == "global" and dst.kind == "shared":
        transfer_async(L, copy_layout(L, dst.shape, src, dst), dst.shape, src, dst)
    elif dst.kind == "fragment" and src.kind == "fragment" and not src.layout.same_threads(dst.layout):
        tmp = scratch_view(L, src.shape, src.element_type)
        transfer(L, src.layout, src.shape, src, tmp)
        barrier(L)
        transfer(L, dst.layout, dst.shape, tmp, dst)
        barrier(L)
    elif dst.kind == "fragment":
        transfer(L, dst.layout, dst.shape, src, dst)
    elif src.kind == "fragment" and dst.kind == "local":  # every thread needs every element
        tmp = scratch_view(L, src.shape, src.element_type)
        transfer(L, src.layout, src.shape, src, tmp)
        barrier(L)
        transfer(L, local_layout(dst.shape), dst.shape, tmp, dst)
        barrier(L)
    elif src.kind == "fragment":
        if not store_fragment(L, src, dst, slot_groups(src.layout), lambda g: [L.frag_load(src, s) for s in g]):
            transfer(L, src.layout, src.shape, src, dst)
    elif may_overlap(src, dst):
        transfer_staged(L, copy_layout(L, dst.shape, src, dst), dst.shape, src, dst)
    elif src.kind == "local" or dst.kind == "local":
        transfer(L, local_layout(dst.shape), dst.shape, src, dst)
    else:
        transfer(L, copy_layout(L, dst.shape, src, dst), dst.shape, src, dst)


def local_layout(shape) -> Layout:
    """Every element in one thread's slots, row-major: how each thread walks a local (per-thread) tile."""
    dims, stride = [], 1
    for n in reversed(shape):
        dims.insert(0, (Mode(n, "s", stride),))
        stride *= n
    return Layout(tuple(dims), ())


@uniform(tile.FillOp)
def lower_fill(L: Lowerer, op: tile.FillOp) -> None:
    dst = L.views[op.dst]
    value = L.convert(L.val(op.value), dst.element_type)
    if dst.kind == "fragment":
        for s in range(dst.layout.num_slots):
            L.frag_store(dst, s, value)
        return
    layout = memory_layout(L, dst.shape, dst) if dst.kind != "local" else local_layout(dst.shape)
    transfer(L, layout, dst.shape, None, dst, value)


@uniform(tile.MakeTensorOp)
def _make_tensor(L: Lowerer, op: tile.MakeTensorOp) -> None:
    """A tensor at a run-time address: a flat global view over `llvm.inttoptr` of the address,
    row-major. (Here because copies are what read such tensors: no kernel argument describes one,
    so no TMA descriptor can, and its copies stay plain or cp.async loads.)"""
    typ = op.result.type
    shape = [L.val(d) if isinstance(d, SSAValue) else d for d in op.dims]
    for axis, d in enumerate(shape):
        if isinstance(d, SSAValue):
            L.sizes[(op.result, axis)] = d
    strides, acc = [], 1
    for n in reversed(shape):
        strides.insert(0, acc)
        acc = L.mul(acc, n)
    mem = pointer_memref(L, L.val(op.address), typ.element_type)
    L.views[op.result] = View("global", mem, tuple(typ.shape), typ.element_type, [0] * len(shape), strides, shape,
                              in_bounds=False)
