"""mbarriers, TMA loads, warp-specialized regions and the wait for asynchronous gemms (sm_90).

    tile.alloc_barrier    8 bytes of shared memory per barrier; thread 0 initializes them, then
                          `fence.mbarrier_init` and a block barrier (before any role split)
    tile.mbarrier_*       mbarrier.arrive / arrive.expect_tx / try_wait.parity on element `index`
    tile.tma_load         cp.async.bulk.tensor from a grid-constant tensor-map parameter of the
                          kernel (one per distinct tensor, box and swizzle; `tilec.tensor_maps`
                          tells the launcher how to encode it), one box per 64-column chunk
    tile.warp_specialize  `scf.if tid >= consumers {tilec.warp_roles}`: the producer warpgroup
                          gives registers back and one of its threads runs the producer region;
                          the consumers take registers and run theirs, where block barriers become
                          a named barrier over the consumer threads
    tile.gemm_wait        wgmma.wait_group with the accumulator's registers tied through it
"""

from __future__ import annotations

import dataclasses
import math
from contextlib import contextmanager

from xdsl.dialects import arith, llvm, memref, scf
from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, IntAttr, IntegerAttr, StringAttr, UnitAttr, i8, i16, i32, i64
from xdsl.ir import Block, Region, SSAValue

from tilec.dialects import nvvm, tile

from . import proxy
from .context import Lowerer
from .copy import barrier
from .memory import Index, View, element_bytes, memref_type, shared_ptr
from .registry import lower_block, uniform

TENSOR_MAP_BYTES = 128
NAMED_CONSUMER_BARRIER = 1  # bar.sync 0 is the block's; the consumers of a split use barrier 1


def _barrier_ptr(L: Lowerer, barrier_value: SSAValue, index: SSAValue | None) -> SSAValue:
    view = L.views[barrier_value]
    return shared_ptr(L, view, [0 if index is None else L.val(index)])


@uniform(tile.AllocBarrierOp)
def _alloc_barrier(L: Lowerer, op: tile.AllocBarrierOp) -> None:
    if op.parent_op() is not L.kernel:
        raise L.error(op, "T.alloc_barrier must be at the top level of the kernel on the CUDA target",
                      hint="allocate barriers before any loop, branch or warp-specialized region")
    count = op.result.type.count
    offset = op.offset.value.data if op.offset is not None else L.bump(8 * count)
    mem = L.emit(memref.ViewOp(L.smem, L.const(offset), [], memref_type(i64, count, 3))).results[0]
    L.views[op.result] = View("shared", mem, (count,), i64, [0], [1], [count])
    first = L.emit(arith.CmpiOp(L.block_tid, L.const(0), "eq")).results[0]
    then = Block()
    L.emit(scf.IfOp(first, [], Region(then)))
    with L.push(then):
        for i in range(count):
            L.emit(nvvm.MBarrierInitSharedOp.create(
                operands=[shared_ptr(L, L.views[op.result], [i]), L.const(op.arrive_count.value.data, i32)]))
        L.emit(nvvm.FenceMbarrierInitOp())
        L.emit(scf.YieldOp())
    if L.kernel.cluster is not None:  # the other blocks of the cluster arrive on them, and load into them
        cluster_sync(L)
    else:
        barrier(L)


def cluster_sync(L: Lowerer) -> None:
    """`barrier.cluster.arrive` + `wait`: every thread of every block of the cluster is here."""
    L.emit(nvvm.ClusterArriveOp())
    L.emit(nvvm.ClusterWaitOp())


@uniform(tile.MBarrierArriveOp)
def _arrive(L: Lowerer, op: tile.MBarrierArriveOp) -> None:
    """`after_copies`, by how the thread's copies since the last such arrival went (L.stage_copies): all
    by cp.async, the arrival is `cp.async.mbarrier.arrive.noinc`, made once they have landed; some by
    plain stores as well, the thread waits for its cp.async copies (commit, wait_group 0) and arrives,
    the arrival's release covering both; none by cp.async, a plain arrival. (Not the tracked form
    plus an arrival: compute-sanitizer synccheck reports that arrival as "Missing wait", run s15d.)"""
    proxy.fence_before_release(L, op)
    ptr = _barrier_ptr(L, op.barrier, op.index)
    if op.after_copies is not None:
        kinds, L.stage_copies = L.stage_copies, set()
        if kinds == {"async"} and op.cluster is None:
            L.emit(nvvm.CpAsyncMBarrierArriveSharedOp.create(operands=[ptr], properties={"noinc": UnitAttr()}))
            return
        if "async" in kinds:
            L.emit(nvvm.CpAsyncCommitGroupOp())
            L.emit(nvvm.CpAsyncWaitGroupOp.create(properties={"n": IntegerAttr(0, i32)}))
    if op.cluster is None:
        L.emit(nvvm.MBarrierArriveSharedOp.create(operands=[ptr], result_types=[i64]))
        return
    for rank in range(L.kernel.cluster_size):  # the same barrier of every block of the cluster
        remote = L.emit(nvvm.MapaSharedClusterOp.create(operands=[ptr, L.const(rank, i32)],
                                                        result_types=[llvm.LLVMPointerType(IntAttr(7))]))
        L.emit(nvvm.MBarrierArriveClusterOp.create(operands=[remote.results[0], L.const(1, i32)]))


@contextmanager
def _issuer(L: Lowerer):
    """Emits what one thread issues (TMA loads, expect_tx): inline, or under `tid == 0` in a
    producer whose threads all run its region (`all_producer_threads`)."""
    if not L.producer_threads:
        yield
        return
    with _thread_zero(L):
        yield


@uniform(tile.MBarrierExpectTxOp)
def _expect_tx(L: Lowerer, op: tile.MBarrierExpectTxOp) -> None:
    with _issuer(L):
        L.emit(nvvm.MBarrierArriveExpectTxSharedOp.create(
            operands=[_barrier_ptr(L, op.barrier, op.index), L.const(op.bytes.value.data, i32)]))


@uniform(tile.FenceProxyAsyncOp)
def _fence_proxy_async(L: Lowerer, op: tile.FenceProxyAsyncOp) -> None:
    fence_writes(L)


@uniform(tile.MBarrierWaitParityOp)
def _wait(L: Lowerer, op: tile.MBarrierWaitParityOp) -> None:
    """`fence_proxy`: then `fence.proxy.async.shared::cta`, for the phase's cp.async bytes."""
    parity = L.emit(arith.IndexCastOp(L.ssa(L.val(op.parity)), i32)).results[0]
    L.emit(nvvm.MBarrierTryWaitParitySharedOp.create(
        operands=[_barrier_ptr(L, op.barrier, op.index), parity, L.const(0, i32)]))
    if op.fence_proxy is not None:
        fence_writes(L)


# ------------------------------------------------------------------------------------ TMA


def _root_tensor(L: Lowerer, value: SSAValue) -> int:
    while isinstance(value.owner, tile.RegionOp):
        value = value.owner.source
    return L.tensors.index(value)


def tensor_map(L: Lowerer, tensor: int, dtype: str, box: tuple[int, ...], swizzle: int) -> SSAValue:
    """The kernel parameter holding the tensor map of (tensor argument, box, swizzle): a by-value,
    grid-constant `!llvm.ptr` appended to the kernel's arguments on first use."""
    key = (tensor, dtype, tuple(box), swizzle)
    if key not in L.tensor_maps:
        arg = L.blocks[0].insert_arg(llvm.LLVMPointerType(), len(L.blocks[0].args))
        arg.name_hint = f"tmap{len(L.tensor_maps)}"
        L.tensor_maps[key] = arg
    return L.tensor_maps[key]


def tensor_map_attributes(L: Lowerer) -> tuple[list, list]:
    """(arg attributes of the tensor-map parameters, the `tilec.tensor_maps` descriptions)."""
    arg_attrs, described = [], []
    for (tensor, dtype, box, swizzle) in L.tensor_maps:
        arg_attrs.append(DictionaryAttr({"llvm.byval": llvm.LLVMArrayType(IntAttr(TENSOR_MAP_BYTES), i8),
                                         "nvvm.grid_constant": UnitAttr()}))
        described.append(DictionaryAttr({"tensor": IntegerAttr(tensor, i64), "dtype": StringAttr(dtype),
                                         "box": DenseArrayBase.from_list(i64, list(box)),
                                         "swizzle": IntegerAttr(swizzle, i64)}))
    return arg_attrs, described


def _row_dim(shape: tuple[int, ...], rows: int) -> int:
    """The dim of a TMA source region that the tile's rows run along: the last one before the
    innermost with their extent (the others are unit dims of a higher-rank tensor)."""
    return next((d for d in range(len(shape) - 2, -1, -1) if shape[d] == rows), len(shape) - 2)


@uniform(tile.TmaLoadOp)
def _tma_load(L: Lowerer, op: tile.TmaLoadOp) -> None:
    """One box per 64-column chunk of the tile, over the source tensor's own dims (a region
    [1, rows, 1, cols] of a rank-4 tensor is the box {cols, 1, rows, 1}, innermost first).

    `{multicast}` over a cluster of c blocks: box q (chunk by chunk; each chunk cut into c row
    bands when the chunks do not divide among the blocks) is issued by the block of rank q mod c
    with a CTA mask of every block: it lands in each block's tile and completes on each block's
    barrier, at the same shared-memory offsets."""
    src, dst = L.views[op.src], as_2d(L, op, L.views[op.dst])
    rows, cols = dst.shape
    width = whole_chunks(L, op, dst)
    chunks = cols // width
    blocks = L.kernel.cluster_size if op.multicast is not None else 1
    bands = tile.multicast_bands(rows, chunks, blocks)  # (the verifier checked that it divides)
    height = rows // bands
    tmap, row_dim = _tma_map(L, op.src, dst, height)
    bar = _barrier_ptr(L, op.barrier, op.index)
    plain = dataclasses.replace(dst, swizzle=0, chunk=0, offsets=[0] * len(dst.shape))  # (box_start places the box;
    # TMA swizzles its bytes itself)
    mask = L.const((1 << blocks) - 1, i16) if blocks > 1 else None
    with _issuer(L):
        for j in range(chunks):
            for band in range(bands):
                # chunk j: all rows of columns [j*w, (j+1)*w); its band: rows [band*h, (band+1)*h)
                start = box_start(L, op, dst, band * height, j * width, height, width)
                origin = list(src.offsets)
                origin[row_dim] = L.add(origin[row_dim], band * height)
                origin[-1] = L.add(origin[-1], j * width)
                if blocks == 1:
                    _tma_box(L, plain, start, origin, tmap, bar, None)
                    continue
                mine = L.emit(arith.CmpiOp(L.cluster_rank, L.const((j * bands + band) % blocks), "eq")).results[0]
                then = Block()
                L.emit(scf.IfOp(mine, [], Region(then)))
                with L.push(then):
                    _tma_box(L, plain, start, origin, tmap, bar, mask)
                    L.emit(scf.YieldOp())


def _tma_map(L: Lowerer, region: SSAValue, tile_view: View, height: int) -> tuple[SSAValue, int]:
    """The tensor map of a TMA copy between the global `region` and a shared tile (its view):
    boxes of `height` rows and one chunk's columns over the region's tensor dims; and the dim the
    rows run along."""
    rows, cols = tile_view.shape
    row_dim = _row_dim(region.type.shape, rows)
    box = [1] * len(L.views[region].offsets)
    box[row_dim], box[-1] = height, tile_view.chunk or cols
    return tensor_map(L, _root_tensor(L, region), str(tile_view.element_type), tuple(box), tile_view.swizzle), row_dim


def as_2d(L: Lowerer, op, view: View) -> View:
    """A shared tile view of rank > 2 whose leading dims are 1 (`K_s[s, :, 0:64]`, a region of a
    pipeline stage) as the 2-D view of its rows and columns, from the same element."""
    if len(view.shape) == 2:
        return view
    if any(n != 1 for n in view.shape[:-2]):
        raise L.error(op, f"a TMA copy of a {'x'.join(map(str, view.shape))} shared region: TMA boxes here are "
                          "2-D (rows and columns of one tile)", hint="copy one 2-D tile (or stage) at a time")
    base = view.base
    for offset, stride in zip(view.offsets[:-2], view.strides[:-2]):
        base = L.add(base, L.mul(offset, stride))
    return dataclasses.replace(view, shape=tuple(view.shape[-2:]), offsets=list(view.offsets[-2:]),
                               strides=list(view.strides[-2:]), dims=list(view.dims[-2:]), base=base)


def whole_chunks(L: Lowerer, op, view: View) -> int:
    """The columns of one TMA box of a shared tile view: its 128-byte chunk (a wide swizzled tile), or
    its width. A region that is not whole chunks is a located error (its boxes would not cover it)."""
    rows, cols = view.shape
    width = view.chunk or cols
    if cols % width:
        raise L.error(op, f"a TMA copy of {cols} columns of a shared tile laid out in {width}-column chunks: TMA "
                          "moves whole chunks", hint=f"copy a multiple of {width} columns, from a chunk's start")
    return width


def box_start(L: Lowerer, op, view: View, row: int, col: int, height: int, width: int) -> Index:
    """The element (from the tile memory's start) where the box of `height` rows and `width` columns
    at (row, col) of a shared tile `view` begins: a whole tile, a pipeline stage, or a region of one
    (`T.tma_copy(.., S[:, 64:128])`), whose offsets place the box. TMA moves a box as one dense run
    of bytes from a 128-byte aligned address (a swizzled one from its pattern's repeat, 8x the swizzle
    width, and swizzles it by that address, as the tile's layout does): a region whose box is not one
    run of the layout, or not so aligned, is a located error."""
    if view.chunk:  # columns in chunks of `chunk` (each chunk's rows `chunk` apart): a box is one chunk's rows
        dense = width == view.chunk and L.mult(L.add(view.offsets[-1], col)) % view.chunk == 0
    else:  # row-major: a box of several rows is dense when they are whole rows of the tile
        dense = height == 1 or (view.strides[-2] == width and L.mult(L.add(view.offsets[-1], col)) % width == 0)
    if not dense:
        tile_shape = "x".join(map(str, view.dims))
        if view.chunk:
            raise L.error(op, f"a TMA box of {height}x{width} elements at this region of a {tile_shape} shared tile "
                              f"stored in {view.chunk}-column chunks is not one run of its layout",
                          hint=f"copy whole chunks: {view.chunk} columns from a multiple of {view.chunk}")
        raise L.error(op, f"a TMA box of {height}x{width} elements at this region of a {tile_shape} shared tile is "
                          "not one run of its layout: the tile is stored row by row (no wgmma reads it in 128-byte "
                          "column chunks), and TMA moves a box's rows as one run",
                      hint="copy whole rows of the shared tile, or give each part of the columns a shared tile of "
                           "its own")
    start = L.flat(dataclasses.replace(view, swizzle=0), [row, col])
    nbytes = element_bytes(view.element_type)
    align = 8 * view.swizzle if view.swizzle else 128  # (a swizzled box starts on its pattern's repeat)
    if L.mult(start) * nbytes % align:
        raise L.error(op, f"a TMA box at this region of a {'x'.join(map(str, view.dims))} shared tile starts "
                          f"{L.mult(start) * nbytes % align} bytes into a {align}-byte block (as far as tilec can "
                          f"tell): TMA needs {align}-byte aligned shared addresses here"
                          + (f" (the {view.swizzle}-byte swizzle repeats every {align} bytes)" if view.swizzle else ""),
                      hint=f"start the region at a row (and column chunk) whose byte offset is a multiple of {align}")
    return start


def _box_at(L: Lowerer, plain: View, start, origin: list) -> tuple[SSAValue, list[SSAValue]]:
    """The shared address of a box starting at element `start` of an unswizzled tile view, and the
    box's tensor coordinates (`origin`, outermost first) as TMA takes them: i32, innermost first."""
    ptr = shared_ptr(L, dataclasses.replace(plain, base=start), [0, 0])
    return ptr, [L.emit(arith.IndexCastOp(L.ssa(o), i32)).results[0] for o in reversed(origin)]


def _tma_box(L: Lowerer, plain: View, start, origin: list, tmap, bar, mask) -> None:
    ptr, coords = _box_at(L, plain, start, origin)
    L.emit(nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp.create(
        operands=[ptr, tmap, *coords, bar, *([mask] if mask is not None else [])],
        properties={"operandSegmentSizes": DenseArrayBase.from_list(i32, [1, 1, len(coords), 1,
                                                                          int(mask is not None), 0])}))


@uniform(tile.TmaStoreOp)
def _tma_store(L: Lowerer, op: tile.TmaStoreOp) -> None:
    """The threads' fence of their writes to the tile for the async proxy, a barrier over them,
    then thread 0 issues one box per 128-byte column chunk (`cp.async.bulk.tensor.global.shared::cta
    .bulk_group`, over the region's tensor dims as `tile.tma_load`'s boxes) and commits them as one
    bulk group. TMA does not write the part of a box outside the tensor."""
    src, dst = as_2d(L, op, L.views[op.src]), L.views[op.dst]
    rows, cols = src.shape
    width = whole_chunks(L, op, src)
    tmap, _ = _tma_map(L, op.dst, src, rows)
    fence_writes(L)
    barrier(L)
    plain = dataclasses.replace(src, swizzle=0, chunk=0, offsets=[0] * len(src.shape))  # (TMA unswizzles the bytes)
    with _thread_zero(L):
        for j in range(cols // width):  # chunk j: all rows of columns [j*w, (j+1)*w)
            origin = list(dst.offsets)
            origin[-1] = L.add(origin[-1], j * width)
            ptr, coords = _box_at(L, plain, box_start(L, op, src, 0, j * width, rows, width), origin)
            L.emit(nvvm.CpAsyncBulkTensorSharedCTAToGlobalOp.create(operands=[tmap, ptr, *coords]))
        L.emit(nvvm.CpAsyncBulkCommitGroupOp())


@uniform(tile.TmaStoreWaitOp)
def _tma_store_wait(L: Lowerer, op: tile.TmaStoreWaitOp) -> None:
    """Thread 0 (the stores' issuer) waits until its bulk groups have read shared memory
    (`cp.async.bulk.wait_group.read 0`); then, but for `{final}`, a barrier over the threads."""
    with _thread_zero(L):
        wait_reads(L)
    if op.final is None:
        barrier(L)


def fence_writes(L: Lowerer) -> None:
    """`fence.proxy.async.shared::cta`: this thread's shared-memory writes, before a TMA store reads them."""
    L.emit(nvvm.FenceProxyOp.create(properties={"kind": nvvm.ProxyKindAttr(nvvm.ProxyKind.ASYNC_SHARED),
                                                "space": nvvm.SharedSpaceAttr(nvvm.SharedSpace.CTA)}))


def wait_reads(L: Lowerer) -> None:
    """`cp.async.bulk.wait_group.read 0`: this thread's TMA stores have read shared memory."""
    L.emit(nvvm.CpAsyncBulkWaitGroupOp.create(properties={"group": IntegerAttr(0, i32), "read": UnitAttr()}))


@contextmanager
def _thread_zero(L: Lowerer):
    """Emits the body of `scf.if tid == 0` (thread 0 of the consumer group, or of the block)."""
    first = L.emit(arith.CmpiOp(L.tid, L.const(0), "eq")).results[0]
    body = Block()
    L.emit(scf.IfOp(first, [], Region(body)))
    with L.push(body):
        yield
        L.emit(scf.YieldOp())


def tma_box_bytes(view: View) -> int:
    return math.prod(view.shape) * element_bytes(view.element_type)


# ------------------------------------------------------------------------ warp specialization


@uniform(tile.WarpSpecializeOp)
def _warp_specialize(L: Lowerer, op: tile.WarpSpecializeOp) -> None:
    consumers = L.threads * op.groups
    reserved, L.reserved_barriers = L.reserved_barriers, range(NAMED_CONSUMER_BARRIER, NAMED_CONSUMER_BARRIER + op.groups)
    try:
        _split_roles(L, op, consumers)
    finally:
        L.reserved_barriers = reserved


def _split_roles(L: Lowerer, op: tile.WarpSpecializeOp, consumers: int) -> None:
    is_producer = L.emit(arith.CmpiOp(L.block_tid, L.const(consumers), "uge")).results[0]
    producer, consumer = Block(), Block()
    split = L.emit(scf.IfOp(is_producer, [], Region(producer), Region(consumer)))
    split.attributes["tilec.warp_roles"] = UnitAttr()
    if op.groups > 1:  # (G, T): the simulator runs each group of T consumer threads on its own
        split.attributes["tilec.consumer_groups"] = DenseArrayBase.from_list(i64, [op.groups, L.threads])
    with L.push(producer):
        if op.producer_regs is not None:
            L.emit(_setmaxnreg(op.producer_regs.value.data, nvvm.SetMaxRegisterAction.DECREASE))
        if op.all_producer_threads is not None:
            with _producer_threads(L, consumers, op.producer_threads.value.data):
                lower_block(L, op.producer.block)
                # no thread leaves with copies in flight (CUTLASS's producer_tail waits likewise)
                L.emit(nvvm.CpAsyncCommitGroupOp())
                L.emit(nvvm.CpAsyncWaitGroupOp.create(properties={"n": IntegerAttr(0, i32)}))
        else:
            first = L.emit(arith.CmpiOp(L.block_tid, L.const(consumers), "eq")).results[0]
            one = Block()
            L.emit(scf.IfOp(first, [], Region(one)))
            with L.push(one):
                lower_block(L, op.producer.block)
                L.emit(scf.YieldOp())
        L.emit(scf.YieldOp())
    with L.push(consumer):
        if op.consumer_regs is not None:
            L.emit(_setmaxnreg(op.consumer_regs.value.data, nvvm.SetMaxRegisterAction.INCREASE))
        outer = L.barrier_threads, L.barrier_id, L.scratch_shift
        L.barrier_threads = L.threads  # a group's threads (all consumers when there is one group)
        if op.groups > 1:  # group g: named barrier 1 + g, its own exchange buffer
            L.barrier_id = L.add(L.group, NAMED_CONSUMER_BARRIER)
            L.scratch_shift = L.mul(L.group, L.group_scratch.results[0])
        try:
            lower_block(L, op.consumer.block)
        finally:
            L.barrier_threads, L.barrier_id, L.scratch_shift = outer
        L.emit(scf.YieldOp())


@uniform(tile.SetMaxNRegOp)
def _set_max_nreg(L: Lowerer, op: tile.SetMaxNRegOp) -> None:
    action = nvvm.SetMaxRegisterAction.INCREASE if op.increase is not None else nvvm.SetMaxRegisterAction.DECREASE
    L.emit(_setmaxnreg(op.count.value.data, action))


@contextmanager
def _producer_threads(L: Lowerer, consumers: int, threads: int):
    """Inside: the producer's threads are the block's threads, numbered from 0 after the consumers'
    (their copies spread over them), with thread coordinates of their own."""
    saved = L.tid, L.threads, L.coords, L.coord_anchor, L.producer_threads
    tid = L._at_entry(arith.SubiOp(L.block_tid, L.const(consumers)))  # (negative in the consumers: unused there)
    L.tid, L.threads, L.coords, L.coord_anchor, L.producer_threads = tid, threads, {}, None, True
    try:
        yield
    finally:
        L.tid, L.threads, L.coords, L.coord_anchor, L.producer_threads = saved


def _setmaxnreg(count: int, action) -> nvvm.SetMaxRegisterOp:
    return nvvm.SetMaxRegisterOp.create(properties={"regCount": IntegerAttr(count, i32),
                                                    "action": nvvm.SetMaxRegisterActionAttr(action)})


def named_barrier(L: Lowerer, threads: int, bar: Index | None = None, unaligned: bool = False) -> None:
    """`bar.sync id, threads`: `bar` (a user's named barrier, or a group's turn), else the consumer
    threads of a warp-specialized kernel (id 1), or of one consumer group (id 1 + g). `unaligned`:
    `barrier.sync`, where the threads that meet reach it from different code."""
    ident = bar if bar is not None else L.barrier_id
    ident = L.const(ident, i32) if isinstance(ident, int) else L.emit(arith.IndexCastOp(ident, i32)).results[0]
    props = {"operandSegmentSizes": DenseArrayBase.from_list(i32, [1, 1])}
    if unaligned:
        props["unaligned"] = UnitAttr()
    L.emit(nvvm.BarrierOp.create(operands=[ident, L.const(threads, i32)], properties=props))


TURN_BARRIERS = 5
"""Named barriers 5 to 5 + G − 1 pass the turn between G consumer groups (1 to 4: each group's own)."""


def _turn_barrier(L: Lowerer, n) -> SSAValue:
    """The named barrier (an index) of the turn of the block's tile number `n`."""
    groups = L.turn[4]
    return L.ssa(L.add(L.rem(n, groups) if groups & (groups - 1) == 0 else
                       L.emit(arith.RemUIOp(n, L.const(groups))).results[0], TURN_BARRIERS))


@uniform(tile.WaitTurnOp)
def _wait_turn(L: Lowerer, op: tile.WaitTurnOp) -> None:
    """`bar.sync 5 + n mod G, 2T` unless this is the block's first tile (n = 0): the group of tile
    n − 1 arrives on it in `tile.pass_turn`."""
    n = L.turn[0]
    later = L.emit(arith.CmpiOp(n, L.const(0), "ugt")).results[0]
    then = Block()
    L.emit(scf.IfOp(later, [], Region(then)))
    with L.push(then):
        named_barrier(L, 2 * L.threads, _turn_barrier(L, n))
        L.emit(scf.YieldOp())


@uniform(tile.PassTurnOp)
def _pass_turn(L: Lowerer, op: tile.PassTurnOp) -> None:
    """`bar.arrive 5 + (n + 1) mod G, 2T` when the block has a tile after this one."""
    n, t, blocks, total, _ = L.turn
    following = L.emit(arith.CmpiOp(L.emit(arith.AddiOp(t, blocks)).results[0], total, "ult")).results[0]
    then = Block()
    L.emit(scf.IfOp(following, [], Region(then)))
    with L.push(then):
        bar = L.emit(arith.IndexCastOp(_turn_barrier(L, L.add(n, 1)), i32)).results[0]
        L.emit(nvvm.BarrierArriveOp.create(operands=[bar, L.const(2 * L.threads, i32)]))
        L.emit(scf.YieldOp())


@uniform(tile.ConsumerGroupOp)
def _consumer_group(L: Lowerer, op: tile.ConsumerGroupOp) -> None:
    L.vmap[op.result] = L.group if L.group is not None else L.const(0)


@uniform(tile.GemmWaitOp)
def _gemm_wait(L: Lowerer, op: tile.GemmWaitOp) -> None:
    """`wgmma.wait_group`, every accumulator's registers passing through it: their values are read after it.
    The program's wait in a kernel without wgmmas (a target without them, or its gemms on mma.sync)
    has nothing to wait for: nothing."""
    if not op.cs and not any(isinstance(g, tile.GemmOp) and g.mma_kind == tile.MmaKind.WGMMA
                             for g in tile.enclosing_kernel(op).walk()):
        return
    slots = [(L.views[c], s) for c in op.cs for s in range(L.views[c].layout.num_slots)]
    values = [L.frag_load(c, s) for c, s in slots]
    wait = L.emit(nvvm.WgmmaWaitGroupSyncOp.create(operands=values, result_types=[v.type for v in values],
                                                   properties={"group": IntegerAttr(op.pending.value.data, i64)}))
    for (c, s), v in zip(slots, wait.results):
        L.frag_store(c, s, v)
