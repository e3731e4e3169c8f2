"""Lower each tile kernel to a thread-level kernel: arith, scf, memref, vector, gpu, nvvm.

Requires: tile-infer-layout (every fragment and parallel loop has a layout);
  tile-plan-shared-memory (shared buffers have offsets; without it the
  lowering packs them one after the other); tile-insert-barriers.
Establishes: the `func.func` holding a `tile.kernel` is replaced by a
  `func.func` with `nvvm.kernel`, whose arguments are one `memref<?xT>` per
  tensor then one i64 per dynamic size (`tilec.sizes` lists them as pairs of
  tensor argument and dimension), plus the module-level dynamic shared memory
  global `@__tilec_smem`; `tilec.smem_bytes` gives the bytes a block needs.
  A kernel with `tile.persistent` loops is `tilec.persistent`: launched with at most one block
  per multiprocessor, a 1-D grid, each block looping over its tiles. A kernel of clusters
  (`tile.kernel {cluster}`) gets `nvvm.cluster_dim` (a compile-time cluster shape: a plain launch),
  block indices that keep a cluster's blocks together under the rasterization, and a cluster
  barrier before it returns; a persistent one, clusters of consecutive blocks of its 1-D launch
  (a grid that is a multiple of the cluster size), each cluster running one cluster tile at a time.
Fails: TilecError at the op the target cannot express yet (T.print,
  fragments indexed other than by their T.Parallel variables, ...).

    func.func @k(%A: !tile.tensor<4096xf16>) { tile.kernel (%bx) in (%c16) ... }
  becomes
    func.func @k(%A: memref<?xf16>) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>} {
      %tid = gpu.thread_id x ...
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import Block, Region

from tilec.dialects import nvvm, tile
from tilec.errors import error_at

from xdsl.context import Context
from xdsl.passes import ModulePass

from .context import SHARED_ALIGN, Lowerer, round_up
from .memory import INDEX, View, element_bytes, memref_type
from .registry import lower_block, uniform
from .sync import cluster_sync, tensor_map_attributes


SMEM = "__tilec_smem"



SMEM_ALIGN = 1024


def kernel_of(f: func.FuncOp) -> tile.KernelOp | None:
    return next((op for op in f.body.block.ops if isinstance(op, tile.KernelOp)), None)


def _smem_global() -> memref.GlobalOp:
    return memref.GlobalOp.get(StringAttr(SMEM), memref_type(i64.__class__(8), 0, 3), UnitAttr(),
                               sym_visibility=StringAttr("public"), alignment=IntegerAttr(SMEM_ALIGN, i64))


def _rasterize(L: Lowerer, bx, by, gx, gy, panel: int):
    """TileLang's row rasterization: blocks walk panels of `panel` rows, alternating direction."""

    def op(cls, a, b):
        return L.emit(cls(L.ssa(a), L.ssa(b))).results[0]

    width = op(arith.MuliOp, gx, panel)
    base = op(arith.AddiOp, bx, op(arith.MuliOp, by, gx))
    total = op(arith.MuliOp, gx, gy)
    panels = op(arith.CeilDivSIOp, total, width)
    index = op(arith.DivUIOp, base, width)
    last = op(arith.SubiOp, panels, 1)
    is_last = L.emit(arith.CmpiOp(index, last, "eq")).results[0]
    tail = op(arith.DivUIOp, op(arith.SubiOp, total, op(arith.MuliOp, index, width)), gx)
    stride = L.emit(arith.SelectOp(is_last, tail, L.const(panel))).results[0]
    within = op(arith.SubiOp, base, op(arith.MuliOp, index, width))
    col = op(arith.DivUIOp, within, stride)
    odd = L.emit(arith.CmpiOp(op(arith.RemUIOp, index, 2), L.const(1), "eq")).results[0]
    flipped = op(arith.SubiOp, op(arith.SubiOp, gx, col), 1)
    new_bx = L.emit(arith.SelectOp(odd, flipped, col)).results[0]
    new_by = op(arith.AddiOp, op(arith.RemUIOp, within, stride), op(arith.MuliOp, index, panel))
    return new_bx, new_by


def _rasterized(L: Lowerer, kernel: tile.KernelOp, ids: list, grid: list | None = None) -> list:
    """The block (or tile) indices `ids` of a 2-D grid in `tile.use_swizzle`'s order."""
    swizzle = next((op for op in kernel.body.block.ops if isinstance(op, tile.UseSwizzleOp)), None)
    if swizzle is None or len(ids) != 2:
        return ids
    gx, gy = grid or (L.val(g) for g in kernel.grid)
    if swizzle.order.data == "row":
        return list(_rasterize(L, *ids, gx, gy, swizzle.panel_size.value.data))
    by, bx = _rasterize(L, ids[1], ids[0], gy, gx, swizzle.panel_size.value.data)
    return [bx, by]


def _reversed(L: Lowerer, kernel: tile.KernelOp, ids: list, grid: list) -> list:
    """The block (or tile) indices with the dims of `launch_reversed` counted from the last
    (tile-longest-first): `(grid - 1) - id`."""
    ids = list(ids)
    for d in kernel.reversed_dims:
        last = L.emit(arith.SubiOp(L.ssa(grid[d]), L.const(1))).results[0]
        ids[d] = L.emit(arith.SubiOp(last, L.ssa(ids[d]))).results[0]
    return ids


def _clustered(L: Lowerer, kernel: tile.KernelOp, ids: list) -> list:
    """The block indices of a kernel of clusters: the clusters in `tile.use_swizzle`'s order, the
    blocks of one cluster next to each other (index · c + rank along each clustered dim), so that
    the blocks that share a multicast operand stay together whatever the rasterization."""
    shape = kernel.cluster_shape
    quotients = [L.emit(arith.DivUIOp(i, L.const(c))).results[0] if c > 1 else i for i, c in zip(ids, shape)]
    grid = [L.const(tile.constant_index(g) // c) for g, c in zip(kernel.grid, shape)]
    ranks = [L.emit(arith.RemUIOp(i, L.const(c))).results[0] if c > 1 else None for i, c in zip(ids, shape)]
    return _within_cluster(L, _rasterized(L, kernel, quotients, grid), shape, ranks)


@uniform(tile.PersistentOp)
def _persistent(L: Lowerer, op: tile.PersistentOp) -> None:
    """`scf.for %t = blockIdx.x to <tiles> step gridDim.x` (a 1-D launch of at most one block per
    multiprocessor; consumer group g of G: from blockIdx.x + g·gridDim.x, step G·gridDim.x); the
    tile's indices come from %t, x fastest, then use_swizzle's order. A kernel of clusters (its
    launch: clusters of consecutive blocks) loops each cluster over the grid of cluster tiles
    (the grid divided by the cluster's shape) in the same way, from blockIdx.x / c by gridDim.x / c,
    and its blocks take that cluster tile's tiles by rank, as `_clustered` pairs a plain grid's."""
    kernel = L.kernel
    shape = kernel.cluster_shape or (1,) * len(op.grid)
    grid = [L.val(g) if c == 1 else L.const(tile.constant_index(g) // c) for g, c in zip(op.grid, shape)]
    total = grid[0]
    for g in grid[1:]:
        total = L.emit(arith.MuliOp(total, g)).results[0]
    first = L.emit(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X))).results[0]
    blocks = L.emit(gpu.GridDimOp(gpu.DimensionAttr(gpu.DimensionEnum.X))).results[0]
    if kernel.cluster_size > 1:
        first = L.emit(arith.DivUIOp(first, L.const(kernel.cluster_size))).results[0]
        blocks = L.emit(arith.DivUIOp(blocks, L.const(kernel.cluster_size))).results[0]
    start, step = first, blocks
    if op.group_count > 1:  # consumer group g: the block's tiles g, g + G, ... (b + (g + iG)·P)
        start = L.emit(arith.AddiOp(first, L.emit(arith.MuliOp(L.group, blocks)).results[0])).results[0]
        step = L.emit(arith.MuliOp(blocks, L.const(op.group_count))).results[0]
    body = Block(arg_types=[INDEX])
    L.emit(scf.ForOp(start, total, step, [], body))
    with L.push(body):
        t = body.args[0]
        ids, rest = [], t
        for i, g in enumerate(grid):
            last = i == len(grid) - 1
            ids.append(rest if last else L.emit(arith.RemUIOp(rest, g)).results[0])
            if not last:
                rest = L.emit(arith.DivUIOp(rest, g)).results[0]
        ids = _rasterized(L, kernel, _reversed(L, kernel, ids, grid), grid)
        if kernel.cluster_size > 1:
            ids = _within_cluster(L, ids, shape, _rank_indices(L, shape))
        for arg, value in zip(op.tile_indices, ids):
            L.vmap[arg] = value
        done = L.emit(arith.DivUIOp(L.emit(arith.SubiOp(t, first)).results[0], blocks)).results[0]
        L.vmap[op.tiles_before] = done
        outer = L.turn
        L.turn = (done, t, blocks, total, op.group_count)  # for tile.wait_turn / tile.pass_turn
        try:
            lower_block(L, op.body.block)
        finally:
            L.turn = outer
        L.emit(scf.YieldOp())


def _rank_indices(L: Lowerer, shape: tuple[int, ...]) -> list:
    """The block's position in its cluster along each clustered dim (%cluster_ctarank, x fastest;
    None along the others)."""
    out, stride = [], 1
    for c in shape:
        rank = None
        if c > 1:
            rank = L.cluster_rank if stride == 1 else L.emit(arith.DivUIOp(L.cluster_rank, L.const(stride))).results[0]
            if c * stride < math.prod(shape):
                rank = L.emit(arith.RemUIOp(rank, L.const(c))).results[0]
        out.append(rank)
        stride *= c
    return out


def _within_cluster(L: Lowerer, quotients: list, shape: tuple[int, ...], ranks: list) -> list:
    """The block (or tile) index `q · c + r` along each clustered dim: the cluster's index `q`, the
    block's position `r` in it."""
    out = []
    for q, r, c in zip(quotients, ranks, shape):
        if c > 1:
            q = L.emit(arith.AddiOp(L.emit(arith.MuliOp(q, L.const(c))).results[0], r)).results[0]
        out.append(q)
    return out


def _linear_thread_id(L: Lowerer, extents: tuple[int, int, int]):
    """x + y*X + z*X*Y: the order in which the hardware forms warps, which layouts assume."""
    x_extent, y_extent, z_extent = extents
    tid = L.emit(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X))).results[0]
    for dim, extent, stride in ((gpu.DimensionEnum.Y, y_extent, x_extent),
                                (gpu.DimensionEnum.Z, z_extent, x_extent * y_extent)):
        if extent > 1:
            t = L.emit(gpu.ThreadIdOp(gpu.DimensionAttr(dim))).results[0]
            tid = L.emit(arith.AddiOp(tid, L.emit(arith.MuliOp(t, L.const(stride))).results[0])).results[0]
    return tid


def lower_kernel_func(f: func.FuncOp, module: ModuleOp, stmatrix: bool = True) -> func.FuncOp:
    kernel = kernel_of(f)
    tensors = list(f.body.block.args)  # the kernel's parameters: tensors, and scalars passed by value
    scalars = {t for t in tensors if not isinstance(t.type, tile.TensorType)}
    pre = []
    for op in f.body.block.ops:
        if op is kernel:
            break
        pre.append(op)
    dims = [op for op in pre if isinstance(op, tile.DimOp)]
    sizes = [(tensors.index(d.source), d.dim.value.data) for d in dims]
    arg_types = [t.type if t in scalars else memref_type(t.type.element_type, None) for t in tensors]
    entry = Block(arg_types=arg_types + [i64] * len(sizes))
    for arg, t in zip(entry.args, tensors):
        arg.name_hint = t.name_hint
    L = Lowerer(kernel, entry)
    L.matrix_stores = stmatrix
    L.tensors = tensors
    L.tid = L.block_tid = _linear_thread_id(L, kernel.thread_extents)
    split = next((op for op in kernel.walk() if isinstance(op, tile.WarpSpecializeOp)), None)
    if split is not None and split.groups > 1:  # ping-pong: each consumer group numbers its threads from 0
        L.group = L.emit(arith.DivUIOp(L.block_tid, L.const(L.threads))).results[0]
        L.tid = L.emit(arith.RemUIOp(L.block_tid, L.const(L.threads))).results[0]
        L.group_scratch = L.emit(arith.ConstantOp(IntegerAttr(0, INDEX)))  # set once the exchange area is known
    L.smem = L.emit(memref.GetGlobalOp(SMEM, memref_type(i64.__class__(8), 0, 3))).results[0]
    if kernel.cluster is not None:
        rank = L.emit(nvvm.SREG_OPS["cluster.ctarank"]()).results[0]
        L.cluster_rank = L.emit(arith.IndexCastOp(rank, INDEX)).results[0]
    for arg, t in zip(entry.args, tensors):
        if t in scalars:
            L.vmap[t] = arg
    for d, (ti, axis) in zip(dims, sizes):
        value = L.emit(arith.IndexCastOp(entry.args[len(tensors) + sizes.index((ti, axis))], INDEX)).results[0]
        L.sizes[(tensors[ti], axis)] = value
        L.vmap[d.result] = value
        L.mults[value] = tile.size_multiple(tensors[ti], axis)  # (a build for aligned sizes: their multiple)
    for op in pre:
        if isinstance(op, tile.DimOp):
            continue
        if op.regions or not op.name.startswith(("arith.", "math.")):
            raise error_at(op, f"{op.name} before T.Kernel is not supported by the CUDA target")
        L.emit(op.clone(value_mapper=L.vmap))
    for arg, t in zip(entry.args, tensors):
        if t in scalars:
            continue
        typ = t.type
        shape = [L.sizes.get((t, a), n) if n == tile.DYNAMIC else n for a, n in enumerate(typ.shape)]
        strides, acc = [], 1
        for n in reversed(shape):
            strides.insert(0, acc)
            acc = L.mul(acc, n)
        L.views[t] = View("global", arg, tuple(typ.shape), typ.element_type, [0] * len(shape), strides, shape,
                          in_bounds=False)
    persistent = any(isinstance(op, tile.PersistentOp) for op in kernel.walk())
    if not persistent:  # (a persistent kernel's block indices are its tile loops' business)
        block_ids = [L.emit(gpu.BlockIdOp(gpu.DimensionAttr(d))).results[0]
                     for d in (gpu.DimensionEnum.X, gpu.DimensionEnum.Y, gpu.DimensionEnum.Z)[:len(kernel.grid)]]
        order = _clustered if kernel.cluster is not None else _rasterized
        block_ids = _reversed(L, kernel, block_ids, [L.val(g) for g in kernel.grid])
        for arg, value in zip(kernel.body.block.args, order(L, kernel, block_ids)):
            L.vmap[arg] = value
    L.planned = kernel.smem_bytes.value.data if kernel.smem_bytes is not None else None
    L.scratch_base = round_up(L.planned if L.planned is not None else _unplanned_bytes(kernel), SHARED_ALIGN)
    lower_block(L, kernel.body.block)
    if kernel.cluster is not None:  # no block leaves while another may still write its shared memory
        cluster_sync(L)
    L.emit(func.ReturnOp())
    map_attrs, maps = tensor_map_attributes(L)  # parameters appended while lowering TMA loads
    arg_types = [a.type for a in entry.args]
    arg_attrs = [DictionaryAttr({})] * (len(arg_types) - len(map_attrs)) + map_attrs
    new = func.FuncOp(f.sym_name.data, FunctionType.from_lists(arg_types, []), Region(entry),
                      arg_attrs=ArrayAttr(arg_attrs) if map_attrs else None)
    new.attributes["nvvm.kernel"] = UnitAttr()
    extents = list(kernel.thread_extents)
    if split is not None:  # the producer warpgroup comes after the kernel's own threads (each group's)
        extents[0] = extents[0] * split.groups + split.producer_threads.value.data
        new.attributes["nvvm.minctasm"] = IntegerAttr(1, i32)  # a register budget at entry: setmaxnreg applies
    new.attributes["nvvm.maxntid"] = DenseArrayBase.from_list(i32, extents)
    new.attributes["tilec.sizes"] = DenseArrayBase.from_list(i64, [x for pair in sizes for x in pair])
    if maps:
        new.attributes["tilec.tensor_maps"] = ArrayAttr(maps)
    if kernel.cluster is not None:
        shape = [kernel.cluster_size] if persistent else list(kernel.cluster_shape)  # (a persistent launch is 1-D)
        new.attributes["nvvm.cluster_dim"] = DenseArrayBase.from_list(i32, [*shape, 1, 1][:3])
    if persistent:  # the launch: at most one block per multiprocessor
        new.attributes["tilec.persistent"] = UnitAttr()
    scratch = L.scratch_bytes
    if L.group_scratch is not None:  # one exchange buffer per consumer group
        stride = round_up(scratch, SHARED_ALIGN)
        L.group_scratch.properties["value"] = IntegerAttr(stride, INDEX)
        scratch = stride * split.groups
    new.attributes["tilec.smem_bytes"] = IntegerAttr(L.scratch_base + scratch, i64)
    new.location = f.location
    return new


def _unplanned_bytes(kernel: tile.KernelOp) -> int:

    total = 0
    for op in kernel.walk():
        if isinstance(op, tile.AllocBarrierOp):
            total = round_up(total, SHARED_ALIGN) + 8 * op.result.type.count
        if isinstance(op, tile.AllocOp) and op.result.type.scope == "shared":
            typ = op.result.type
            total = round_up(total, SHARED_ALIGN) + typ.num_elements() * element_bytes(typ.element_type)
    return total


@dataclass(frozen=True)
class ConvertTileToThreadPass(ModulePass):
    """Lower each tile kernel to a thread-level kernel: arith, scf, memref, vector, gpu, nvvm."""

    name = "convert-tile-to-thread"

    stmatrix: bool = True
    """Consumer code of warp-specialized kernels stores 16-bit accumulator fragments into shared
    memory by `stmatrix` where their layout allows (stmatrix.py; pass config `tilec.stmatrix`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = [f for f in op.ops if isinstance(f, func.FuncOp) and kernel_of(f) is not None]
        if not funcs:
            return
        if not any(isinstance(g, memref.GlobalOp) and g.sym_name.data == SMEM for g in op.ops):
            op.body.block.insert_op_before(_smem_global(), op.body.block.first_op)
        for f in funcs:
            new = lower_kernel_func(f, op, stmatrix=self.stmatrix)
            op.body.block.insert_op_after(new, f)
            op.body.block.erase_op(f)
