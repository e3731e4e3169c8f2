"""Warp-specialize a `T.Pipelined` wgmma loop: a producer warpgroup streams its tiles in with TMA.

Requires: tile-legalize-bounds; tile-select-mma (the loop's gemms have `mma = "wgmma"` and
  their shared operands the `swizzle` / `chunk` the TMA boxes take); runs instead of tile-pipeline
  for the loop it transforms (tile-pipeline leaves "serial" loops alone) and before
  tile-infer-layout, tile-plan-shared-memory and tile-insert-barriers.
Establishes: in a kernel whose body holds one top-level `tile.for` of kind "pipelined" with
  S stages whose staged copies (global regions into shared tiles only the loop uses, see
  loop_stages) TMA can read, at least one of them, every op of the body but the allocations
  moves into the consumer region of a `tile.warp_specialize` (the kernel's own threads), and the
  copies become `tile.tma_load`s into S-deep buffers, issued by a producer warpgroup that waits
  for a free stage (`empty`) and announces its bytes (`full`). Decided per copy (`per_copy`, pass
  config `tilec.per_copy_tma`, on by default; off: a loop with such a copy is left to tile-pipeline): one that
  TMA cannot take (a stride of no 16-byte multiple, a tensor at a run-time address, a tile no TMA
  box fills) stays a `tile.copy {async}` (cp.async) into its stage, the reason in
  `tilec.not_tma`; then every producer thread runs the producer region
  (`all_producer_threads`), arrives on `full` once its copies have landed (`after_copies`: the
  stage's barrier counts 128 more arrivals), and the consumers fence the copies' bytes for the
  async proxy after their wait (`fence_proxy`) before the wgmmas read them. A shared tile the
  loop's gemms read that a copy fills once before the loop (attention's Q) is loaded by the
  producer before its loop, on its own barrier (`loaded`), which the consumers wait for where the
  copy was. Each consumer
  iteration waits for its stage; a loop whose one gemm is all that touches its accumulator runs
  it asynchronously (`in_flight = 1`: one group stays in flight across iterations), releases
  the stage of the iteration before and waits after the loop (`tile.gemm_wait`); a loop with
  more gemms or other uses of their results (attention: Q K^T, the softmax, P V) waits for each
  gemm (`in_flight = 0`) and releases its own stage at the end of the iteration.
  The loop becomes "serial" with `warp_specialized_stages = S`.
  Operand rings (`operand_rings`, `softmax_overlap`): when the staged tiles feed different gemms
  (attention's K for Q K^T, V for P V), each gemm's tiles get a full/empty ring of their own; the
  producer fills them in the gemms' order, the consumers wait for a ring right before its first
  gemm and release it right after its last (`operand_rings`). `softmax_overlap` then rotates the
  loop (softmax_overlap.py: the softmax of block j under P V of block j - 1).
  Persistent (`persistent`): each role loops over the block's tiles in a `tile.persistent`, the
  ring continuing from tile to tile (at `tiles before * trips`, or, when the trip count depends on
  the block indices as causal attention's does, at a per-thread count of the positions used:
  `produced` / `consumed`; only when persistence is asked for). Tiles loaded once per block
  (attention's Q) are loaded again for each tile, on `loaded`, once the consumers have released
  the tile before's on `loaded_free`. Ping-pong (`pingpong`, a kernel of one warpgroup): two
  consumer groups (`consumer_groups = 2`), each the kernel's 128 threads with its own shared
  tiles (consumer_groups.py), take alternate tiles; the producer streams their stages in tile
  order, so one group's gemms run while the other stores its tile (CUTLASS's ping-pong kernel).
Fails: never; a kernel that does not fit (see `_plan`) is left for tile-pipeline, with the
  reason in the loop's `not_warp_specialized` property when a loop was a candidate.

    tile.for %k ... { tile.copy %a(k), %A_s ; tile.copy %b(k), %B_s ; tile.gemm %A_s, %B_s, %C }
  becomes
    %full = tile.alloc_barrier {arrive_count = 1} : !tile.mbarrier<S>
    %empty = tile.alloc_barrier {arrive_count = <consumer warps>} : !tile.mbarrier<S>
    tile.warp_specialize producer {
      tile.for %k { wait %empty[s], ph ^ 1 ; expect_tx %full[s] ; tma_load %a(k), stage s, %full[s] ; ... }
    } consumer {
      tile.for %k { wait %full[s], ph ; tile.gemm stage s ... {in_flight = 1} ; arrive %empty[s - 1] }
      tile.gemm_wait %C
    }
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tilec.dialects import tile
from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, UnitAttr, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from .analysis import constant_value, surely_runs
from .consumer_groups import give_each_group
from .loop_stages import (INDEX, Builder, StagedCopy, clone_slice, fitting_stages, preloaded_copy, pure, staged_copy,
                          top_level, unstaged_shared_bytes, use_stage_views, writes_global)
from .softmax_overlap import NOT_APPLIED as NOT_OVERLAP
from .softmax_overlap import overlap_softmax, unfit
from .target_facts import shared_limit
from .tma_regions import tma_region_refusal

__all__ = ["TileWarpSpecializePass", "arrive_per_warp", "operand_rings", "tma_box"]

NOT_TMA = "tilec.not_tma"  # on a producer's cp.async copy: why TMA cannot take it
NOT_RINGS = "tilec.not_operand_rings"  # why a two-gemm loop (attention) keeps one ring for all its staged tiles

PRODUCER_THREADS = 128
WARPGROUP = 128
PRODUCER_REGS, CONSUMER_REGS = 40, 232  # CUTLASS's split for one producer and two consumer warpgroups
COPYING_PRODUCER_REGS = 48  # a producer whose threads copy with cp.async (register_split)
LEAN_PRODUCER_REGS = 32  # FlashAttention-3's producer beside three consumer warpgroups (which get 160)
REGISTER_FILE = 65536  # 32-bit registers per multiprocessor (sm_90)


def register_split(consumer_threads: int, copying: bool = False) -> tuple[int, int]:
    """setmaxnreg for (the producer, each consumer thread) within the block's registers
    (`launch_registers`): CUTLASS's 40 and 232 where they fit; else the producer keeps 32
    (FlashAttention-3's split: its TMA issue loop needs 9 registers in our SASS) and the consumers take
    what is left in steps of 8 (three consumer warpgroups: 160). `copying` (the producer's threads copy
    with cp.async, whose addresses take registers: 40 spilled in the SASS of a 128x256 gemm): the
    producer keeps at least 48, the consumers take up to 232 of the rest, the producer what they leave,
    up to 64 (two consumer warpgroups: 56 and 224; one: 64 and 232; three: 56 and 152). A split over
    the block's registers would leave the consumers' setmaxnreg.inc waiting forever (the GPU hung on
    48 + 2 x 232 over 384 x 168, run s14b)."""
    threads = consumer_threads + PRODUCER_THREADS
    pool = threads * tile.launch_registers(threads)
    if copying:
        consumer = min(CONSUMER_REGS, (pool - PRODUCER_THREADS * COPYING_PRODUCER_REGS) // consumer_threads // 8 * 8)
        return min(64, (pool - consumer_threads * consumer) // PRODUCER_THREADS // 8 * 8), consumer
    if (pool - PRODUCER_THREADS * PRODUCER_REGS) // consumer_threads >= CONSUMER_REGS:
        return PRODUCER_REGS, CONSUMER_REGS
    fits = (pool - PRODUCER_THREADS * LEAN_PRODUCER_REGS) // consumer_threads
    return LEAN_PRODUCER_REGS, fits // 8 * 8


def consumer_registers(consumer_threads: int) -> int:
    """setmaxnreg for each consumer thread (see `register_split`)."""
    return register_split(consumer_threads)[1]


_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1, "i32": 4, "f8E4M3FN": 1, "f8E5M2": 1}


def _element_bytes(typ) -> int:
    return _BYTES.get(str(typ), 0)


def tma_box(alloc: tile.AllocOp) -> tuple[int, int] | None:
    """The TMA box (rows, columns) that fills the shared tile of `alloc` (each 64-column chunk is
    its own box when the tile is chunked), or None when TMA cannot fill it: a 2-D tile of 16-bit
    or 32-bit elements whose rows (or chunks) are 16 to 128 bytes, within its swizzle span."""
    typ = alloc.result.type
    esize = _element_bytes(typ.element_type)
    if typ.rank != 2 or not esize:
        return None
    rows, cols = typ.shape
    width = alloc.chunk_columns or cols
    span = alloc.swizzle_bytes
    inner = width * esize
    if rows > 256 or width > 256 or inner % 16 or (span and inner > span) or (not span and inner > 128):
        return None
    return rows, width


def _static_tma_source(copy: tile.CopyOp) -> str | None:
    """Why TMA cannot read this copy's source (None: it can): see `tma_region_refusal`."""
    return tma_region_refusal(copy.src, copy.dst.type.shape)


@dataclass
class _Plan:
    loop: tile.ForOp
    copies: list[StagedCopy]
    stages: int
    preloads: list[tile.CopyOp]  # copies before the loop into tiles its gemms read: TMA, once
    rings: list[list[StagedCopy]] | None = None  # operand rings (`operand_rings`): the copies of each
    not_tma: dict[tile.CopyOp, str] = field(default_factory=dict)  # staged copies TMA cannot take: why


@dataclass
class _Ring:
    """One full/empty mbarrier pair over the stages, for the staged copies it carries (`by_threads`:
    some of them by the producer's threads, cp.async)."""

    copies: list[StagedCopy]
    full: SSAValue
    empty: SSAValue
    by_threads: bool = False


def operand_rings(loop: tile.ForOp, copies: list[StagedCopy]) -> list[list[StagedCopy]] | None:
    """The staged copies of `loop` by the gemm that reads them (FA3's pipeline_k / pipeline_v),
    in the gemms' order, when they feed different gemms; None when one ring is all there can be:
    a tile that something other than a top-level wgmma of the loop reads, or one gemm."""
    body = loop.body.block
    gemms = [op for op in body.ops if isinstance(op, tile.GemmOp)]
    groups: dict[int, list[StagedCopy]] = {}
    for c in copies:
        readers = [use.operation for use in c.alloc.result.uses if use.operation is not c.op]
        if not readers or any(r not in gemms for r in readers):
            return None
        groups.setdefault(min(gemms.index(r) for r in readers), []).append(c)
    if len(groups) < 2:
        return None
    return [groups[k] for k in sorted(groups)]


def _top_loops(kernel: tile.KernelOp) -> list[tile.ForOp]:
    return [op for op in kernel.body.block.ops if isinstance(op, tile.ForOp) and op.kind.data == tile.LoopKind.PIPELINED]


def _decline(loop: tile.ForOp | None, why: str) -> None:
    if loop is not None:
        loop.not_warp_specialized = StringAttr(why)


def _plan(kernel: tile.KernelOp, limit: int, persistent: bool = False, groups: int = 1,
          counted: bool = False, per_copy: bool = False) -> _Plan | None:
    loops = _top_loops(kernel)
    loop = loops[0] if len(loops) == 1 else None
    if loop is None:
        return None
    x, y, z = kernel.thread_extents
    if y != 1 or z != 1 or x % 128:
        _decline(loop, "the block is not a whole number of warpgroups in one dimension")
        return None
    if any(isinstance(op, tile.ForOp) and op.kind.data == tile.LoopKind.PIPELINED for op in loop.walk() if op is not loop):
        _decline(loop, "a pipelined loop inside it")
        return None
    if any(isinstance(op, tile.WarpSpecializeOp | tile.TmaLoadOp | tile.AllocBarrierOp) for op in kernel.walk()):
        _decline(loop, "the kernel synchronizes with mbarriers of its own")
        return None
    body = kernel.body.block
    if any(isinstance(v.owner, Operation) and v.owner.parent_block() is body and not _stays(v.owner, body)
           for v in (loop.lb, loop.ub, loop.step)):
        _decline(loop, "its bounds are computed by the block's threads (e.g. from a load), which the producer "
                       "does not run")
        return None
    if writes_global(loop):
        _decline(loop, "the loop writes global memory")
        return None
    gemms = [op for op in loop.walk() if isinstance(op, tile.GemmOp)]
    if not gemms or any(g.mma_kind != tile.MmaKind.WGMMA for g in gemms):
        _decline(loop, "not every gemm of the loop is a wgmma")
        return None
    copies = [c for op in loop.body.block.ops if isinstance(op, tile.CopyOp) if (c := staged_copy(op, loop))]
    if not copies:
        _decline(loop, "no copies into shared tiles to stage")
        return None
    not_tma = {}  # decided per copy: the producer's threads copy what TMA cannot take (cp.async)
    for c in copies:
        why = _static_tma_source(c.op) or (None if tma_box(c.alloc) is not None else "a tile TMA cannot fill")
        if why is not None:
            not_tma[c.op] = why
    if len(not_tma) == len(copies) or (not_tma and not per_copy):
        c = next(c for c in copies if c.op in not_tma)
        what = "any of its copies" if len(not_tma) == len(copies) else "every copy"
        hint = "" if len(not_tma) == len(copies) else "; tilec.per_copy_tma=True copies it by the producer's threads"
        _decline(loop, f"TMA cannot take {what} ({c.op.src.name_hint or 'a copy'}: {not_tma[c.op]}{hint})")
        return None
    staged = {c.alloc.result for c in copies}
    preloads: list[tile.CopyOp] = []
    for g in gemms:  # the wgmmas run on while the next iteration starts: only TMA may fill what they read
        for operand in (g.a, g.b):
            if operand.type.scope != "shared" or _root(operand) in staged:
                continue
            copy = preloaded_copy(_root(operand), loop)
            if copy is None or _static_tma_source(copy) is not None or tma_box(copy.dst.owner) is None:
                _decline(loop, "a gemm operand is written by the block's threads inside the loop, where the "
                               "asynchronous wgmma of the iteration before may still read it")
                return None
            if copy not in preloads:
                preloads.append(copy)
    stages = max(1, loop.num_stages.value.data if loop.num_stages is not None else 1)
    if persistent and persistent_fits(kernel, loop, counted) and (groups == 1 or not preloads):  # the epilogue's tiles get bytes of their own
        limit -= _epilogue_bytes(kernel, loop) * groups
        limit -= (groups - 1) * unstaged_shared_bytes(kernel, copies)  # ping-pong: each further group's own tiles
    stages = fitting_stages(kernel, copies, stages, limit)
    if stages is None:
        _decline(loop, "even one stage of its tiles does not fit the shared memory")
        return None
    return _Plan(loop, copies, stages, preloads, not_tma=not_tma)


def _root(value: SSAValue) -> SSAValue:
    while isinstance(value.owner, tile.RegionOp | tile.ReshapeOp | tile.StageOp):
        value = value.owner.source
    return value


def _stage_and_phase(b: Builder, loop: tile.ForOp, iv: SSAValue, stages: int,
                     base: SSAValue | None = None) -> tuple[SSAValue, SSAValue, SSAValue]:
    """(iteration number, its stage, the parity of its stage's round) inside `loop`; `base`: the
    ring positions used before the loop started (the earlier tiles of a persistent kernel)."""
    i = iv
    if constant_value(loop.lb) != 0:
        i = b.binary(arith.SubiOp, i, loop.lb)
    if constant_value(loop.step) != 1:
        i = b.binary(arith.DivUIOp, i, loop.step)
    position = b.binary(arith.AddiOp, i, base) if base is not None else i
    stage = b.binary(arith.RemUIOp, position, stages)
    phase = b.binary(arith.RemUIOp, b.binary(arith.DivUIOp, position, stages), 2)
    return i, stage, phase


def _preamble(plan: _Plan, body: Block, loaded: SSAValue) -> list[Operation]:
    """The producer's loads before its loop: each preloaded tile by TMA, all on `loaded`."""
    b, done = Builder(), {}
    nbytes = sum(math.prod(c.dst.type.shape) * _element_bytes(c.dst.type.element_type) for c in plan.preloads)
    b.ops.append(tile.MBarrierExpectTxOp(loaded, nbytes))
    for copy in plan.preloads:
        load = tile.TmaLoadOp(clone_slice(copy.src, body, None, None, b, done), copy.dst, loaded)
        load.location = copy.location
        b.ops.append(load)
    return b.ops


def _await_preloads(plan: _Plan, loaded: SSAValue, tiles_before: SSAValue | None = None) -> None:
    """In the consumers, the first preloaded copy becomes the wait for all of them; the rest go.
    `tiles_before` (a persistent tile's): the wait for this tile's round of `loaded`."""
    first = plan.preloads[0]
    b = Builder()
    parity = b.index(0) if tiles_before is None else b.binary(arith.RemUIOp, tiles_before, 2)
    b.ops.append(tile.MBarrierWaitParityOp(loaded, parity))
    for op in b.ops:
        op.location = first.location
    Rewriter.insert_op(b.ops, InsertPoint.before(first))
    for copy in plan.preloads:
        source = copy.src.owner
        Rewriter.erase_op(copy)
        if isinstance(source, tile.RegionOp) and not source.result.uses:  # its address: the producer's now
            Rewriter.erase_op(source)


def _producer(plan: _Plan, buffers: dict, rings: list[_Ring], base: SSAValue | None) -> tile.ForOp:
    """The producer's loop: per iteration and ring (in the gemms' order: K, then V), wait for the
    ring's free stage, announce its bytes and issue its TMA loads."""
    loop, stages = plan.loop, plan.stages
    body = loop.body.block
    new_body = Block(arg_types=[loop.induction_var.type])
    iv = new_body.args[0]
    b = Builder()
    _, stage, phase = _stage_and_phase(b, loop, iv, stages, base)
    free = b.binary(arith.XOrIOp, phase, 1)
    done: dict[Operation, Operation] = {}
    for ring in rings:
        b.ops.append(tile.MBarrierWaitParityOp(ring.empty, free, stage))
        loads = [c for c in ring.copies if c.op not in plan.not_tma]
        nbytes = sum(math.prod(c.alloc.result.type.shape) * _element_bytes(c.alloc.result.type.element_type)
                     for c in loads)
        if loads:
            b.ops.append(tile.MBarrierExpectTxOp(ring.full, nbytes, stage))
        for c in ring.copies:
            src = clone_slice(c.op.src, body, loop.induction_var, iv, b, done)
            view = b.add(tile.StageOp(buffers[c.alloc], stage))
            if c.op in plan.not_tma:  # the producer's threads, cp.async; the reason stays in the IR
                load = tile.CopyOp(src, view, is_async=True)
                load.attributes[NOT_TMA] = StringAttr(plan.not_tma[c.op])
            else:
                load = tile.TmaLoadOp(src, view, ring.full, stage)
            load.location = c.op.location
            b.ops.append(load)
        if ring.by_threads:  # each producer thread, once its copies have landed
            b.ops.append(tile.MBarrierArriveOp(ring.full, stage, after_copies=True))
    b.ops.append(tile.YieldOp())
    new_body.add_ops(b.ops)
    producer_loop = tile.ForOp.create(operands=[loop.lb, loop.ub, loop.step], regions=[Region(new_body)],
                                      properties={"kind": tile.LoopKindAttr(tile.LoopKind.SERIAL)})  # no terminator added
    producer_loop.location = loop.location
    return producer_loop


def arrive_per_warp(b: Builder, empty: SSAValue, stage: SSAValue, cluster: bool = False) -> None:
    """Lane 0 of each consumer warp arrives on `empty[stage]`: `wgmma.wait_group` is warp-aligned,
    so when lane 0 is past it its whole warp is done reading the stage (8 arrivals for 256
    consumer threads instead of 256 shared-memory atomics); `cluster` (tile-cluster's releases):
    on the barrier of every block of the cluster."""
    lane = b.binary(arith.RemUIOp, b.add(tile.ThreadIdOp()), 32)
    first = b.add(arith.CmpiOp(lane, b.index(0), "eq"))
    arrive = tile.MBarrierArriveOp(empty, stage)
    if cluster:
        arrive.attributes["cluster"] = UnitAttr()
    b.ops.append(scf.IfOp(first, [], Region(Block([arrive, scf.YieldOp()]))))


def _consume(plan: _Plan, buffers: dict, rings: list[_Ring], ring: tuple | None) -> None:
    """The loop in place for the consumers: wait, read stage views, release the previous stage.
    `ring` (persistent kernels): the ring positions before the loop and the loop's trip count;
    the stage of the loop's last iteration is released after the final wait, for the next tile.
    Several `rings` (operand rings): each is waited for right before the first gemm that reads
    its stage and released right after the last one (each gemm is waited for, in_flight = 0)."""
    loop, stages = plan.loop, plan.stages
    body = loop.body.block
    head = Builder()
    i, stage, phase = _stage_and_phase(head, loop, loop.induction_var, stages, ring[0] if ring else None)
    waits = [tile.MBarrierWaitParityOp(r.full, phase, stage) for r in rings]  # moved below with several rings
    for r, wait in zip(rings, waits):
        if r.by_threads:  # cp.async bytes (the generic proxy) before the wgmmas read them (the async proxy)
            wait.attributes["fence_proxy"] = UnitAttr()
    head.ops += waits
    views = {alloc: head.add(tile.StageOp(new, stage)) for alloc, new in buffers.items()}
    Rewriter.insert_op(head.ops, InsertPoint.at_start(body))
    use_stage_views(plan.copies, buffers, views, body)
    gemms = [op for op in body.walk() if isinstance(op, tile.GemmOp)]
    overlap = len(gemms) == 1 and stages > 1 and _gemm_alone(gemms[0], body)
    for g in gemms:  # one group in flight across iterations, or each gemm waited for (attention's S is read next)
        g.in_flight = IntegerAttr(1 if overlap else 0, i64)
    if len(rings) > 1:
        assert not overlap
        _wait_and_release_each(body, rings, waits, views, stage)
    tail = Builder()
    if overlap:  # the previous iteration's gemms are done once this one's are issued (one group in flight)
        started = tail.add(arith.CmpiOp(i, tail.index(0), "ugt"))
        release = Builder()
        previous = release.binary(arith.RemUIOp, release.binary(arith.AddiOp, stage, stages - 1), stages)
        arrive_per_warp(release, rings[0].empty, previous)
        release.ops.append(scf.YieldOp())
        tail.ops.append(scf.IfOp(started, [], Region(Block(release.ops))))
    elif len(rings) == 1:  # every gemm of this iteration has been waited for: its stage is free
        arrive_per_warp(tail, rings[0].empty, stage)
    Rewriter.insert_op(tail.ops, InsertPoint.before(body.last_op))
    for c in dict.fromkeys(g.c for g in gemms):
        _drop_zero_fill(loop, c, [g for g in gemms if g.c is c])
    if not overlap:
        _mark(loop, stages)
        return
    after = Builder()
    after.ops.append(tile.GemmWaitOp(gemms[0].c, 0))  # the last iteration's group is still running
    if ring is not None:  # all of this tile's wgmmas are done: its last stage is free
        base, trips = ring
        last = after.binary(arith.SubiOp, after.binary(arith.AddiOp, base, trips), 1)
        arrive_per_warp(after, rings[0].empty, after.binary(arith.RemUIOp, last, stages))
    Rewriter.insert_op(after.ops, InsertPoint.after(loop))
    _mark(loop, stages)


def _wait_and_release_each(body: Block, rings: list[_Ring], waits: list, views: dict, stage: SSAValue) -> None:
    """Each ring's wait before the first top-level op that reads one of its stage views, its
    release (lane 0 of each warp) after the last one (a gemm waited for: its reads are done)."""
    ops = list(body.ops)
    for ring in rings:
        readers = sorted({ops.index(top_level(use.operation, body)) for c in ring.copies
                          for use in views[c.alloc].uses})
        wait = waits[rings.index(ring)]
        wait.detach()
        wait.location = ring.copies[0].op.location
        Rewriter.insert_op(wait, InsertPoint.before(ops[readers[0]]))
        release = Builder()
        arrive_per_warp(release, ring.empty, stage)
        Rewriter.insert_op(release.ops, InsertPoint.after(ops[readers[-1]]))


def _mark(loop: tile.ForOp, stages: int) -> None:
    loop.kind = tile.LoopKindAttr(tile.LoopKind.SERIAL)
    loop.warp_specialized_stages = IntegerAttr(stages, i64)


def _gemm_alone(gemm: tile.GemmOp, body: Block) -> bool:
    """Whether nothing in the loop but the gemm touches its accumulator (and its A is shared): then
    its wgmmas may still run while the next iteration starts, up to that iteration's gemm."""
    if gemm.a.type.scope != "shared":
        return False
    return all(op is gemm for op in body.walk() if any(v is gemm.c for v in op.operands))


_KERNEL_LEVEL = (tile.AllocOp, tile.YieldOp, tile.UseSwizzleOp, tile.AnnotateLayoutOp)


def _stays(op: Operation, body: Block) -> bool:
    """Whether `op` stays at the kernel level, before the split: allocations, annotations, and the
    pure index arithmetic of values both roles may need (the producer's addresses)."""
    if isinstance(op, _KERNEL_LEVEL):
        return True
    if not pure(op) or isinstance(op, tile.RegionOp):
        return False
    return all(not isinstance(v.owner, Operation) or v.owner.parent_block() is not body or _stays(v.owner, body)
               for v in op.operands)


def _touches(op: Operation, value: SSAValue) -> bool:
    return any(v is value for inner in op.walk() for v in inner.operands)


def _drop_zero_fill(loop: tile.ForOp, c: SSAValue, gemms: list[tile.GemmOp]) -> None:
    """`tile.fill c, 0.0` before the loop (only ops that leave c alone between), whose one gemm into c is the first op of the loop
    to touch c: the fill goes, and that gemm starts from D = A·B in the first iteration
    (`zero_on_entry`). Zeros that ptxas would move into the accumulator registers between the
    wgmmas would make it insert a warpgroup.arrive (C7519) in every iteration."""
    prev = loop.prev_op
    while prev is not None and not isinstance(prev, tile.FillOp) and not _touches(prev, c):
        prev = prev.prev_op  # ops between the fill and the loop that leave c alone (a bias copy)
    if len(gemms) != 1 or not isinstance(prev, tile.FillOp) or prev.dst is not c or not surely_runs(loop):
        return
    value = prev.value.owner
    if not (isinstance(value, arith.ConstantOp) and getattr(value.value, "value", None) is not None
            and value.value.value.data == 0.0):
        return
    gemm = gemms[0]
    first_use = next(op for op in loop.body.walk() if any(v is c for v in op.operands))
    if first_use is not gemm or gemm.parent_op() is not loop or gemm.clear_accum.value.data:
        return
    Rewriter.erase_op(prev)
    gemm.zero_on_entry = UnitAttr()


def _depends_on(value: SSAValue, args: set, body: Block) -> bool:
    """Whether `value`, computed at the kernel's top level (`body`), depends on one of `args`."""
    if value in args:
        return True
    op = value.owner
    if not isinstance(op, Operation) or op.parent_block() is not body:
        return False
    return any(_depends_on(v, args, body) for v in op.operands)


def _epilogue_bytes(kernel: tile.KernelOp, loop: tile.ForOp) -> int:
    """The shared tiles tile-stage-epilogue will add for the results the loop's gemms store."""
    from .tile_stage_epilogue import staged_bytes

    accs = {g.c for g in loop.walk() if isinstance(g, tile.GemmOp)}
    return sum(staged_bytes(op.dst.type.shape, op.dst.type.element_type, persistent=True)
               for op in kernel.body.block.ops
               if isinstance(op, tile.CopyOp) and op.src in accs and isinstance(op.dst.type, tile.TensorType))


def persistent_fits(kernel: tile.KernelOp, loop: tile.ForOp, counted: bool = False) -> bool:
    """Whether the kernel can run persistently: every tile runs the loop at least once, so that
    the ring of stages continues from tile to tile, at `tiles before * trips` when the bounds do
    not depend on the block indices; with `counted` (persistence asked for), also when they do, at
    a count of the positions used (`_counted`: tiles of different lengths, which the static order
    of a persistent kernel balances worse than the hardware's block dispatch: causal attention
    measured 8-14 % slower so, run s8c)."""
    return surely_runs(loop) and (counted or not _counted(kernel, loop))


def _counted(kernel: tile.KernelOp, loop: tile.ForOp) -> bool:
    """Whether the loop's trip count depends on the block indices (causal attention): the tiles of
    a persistent kernel then count the ring positions they used in a per-thread variable."""
    args, body = set(kernel.body.block.args), kernel.body.block
    return any(_depends_on(v, args, body) for v in (loop.lb, loop.ub, loop.step))


def _trips(b: Builder, loop: tile.ForOp) -> SSAValue:
    span = b.binary(arith.SubiOp, loop.ub, loop.lb)
    if constant_value(loop.step) == 1:
        return span
    return b.binary(arith.DivUIOp, b.binary(arith.AddiOp, b.binary(arith.SubiOp, span, 1), loop.step), loop.step)


def _tile_loop(kernel: tile.KernelOp, loop: tile.ForOp, groups: int = 1,
               counter: SSAValue | None = None) -> tuple[tile.PersistentOp, Builder, tuple, list[Operation]]:
    """A `tile.persistent` over the kernel's grid (its tiles shared among `groups` consumer
    groups), the start of its body: the ring positions of the tiles before and the loop's trip
    count, and the ops that end its body. `counter` (a local i32 of one element, when the trip
    count differs between tiles): the positions used so far, read at the start of each tile and
    advanced by its trips at the end."""
    shell = tile.PersistentOp(list(kernel.grid), groups)
    shell.location = loop.location
    b = Builder()
    trips = _trips(b, loop)
    if counter is None:
        return shell, b, (b.binary(arith.MuliOp, shell.tiles_before, trips), trips), []
    zero = b.index(0)
    base = b.add(arith.IndexCastOp(b.add(tile.LoadOp(counter, [zero])), INDEX))
    end = Builder()
    after = end.add(arith.IndexCastOp(end.binary(arith.AddiOp, base, trips), i32))
    end.ops.append(tile.StoreOp(after, counter, [end.index(0)]))
    return shell, b, (base, trips), end.ops


def _zero_counter(counter: SSAValue) -> list[Operation]:
    b = Builder()
    b.ops.append(tile.StoreOp(b.add(arith.ConstantOp(IntegerAttr(0, i32))), counter, [b.index(0)]))
    return b.ops


def _wait_free(free: SSAValue, tiles_before: SSAValue) -> list[Operation]:
    """The producer's wait, before it loads a persistent tile's preloaded tiles (attention's Q),
    until the consumers are done with the tile before's (`free`: one round per tile)."""
    b = Builder()
    parity = b.binary(arith.XOrIOp, b.binary(arith.RemUIOp, tiles_before, 2), 1)
    b.ops.append(tile.MBarrierWaitParityOp(free, parity))
    return b.ops


def _await_tile_preloads(plan: _Plan, loaded: SSAValue, free: SSAValue, tiles_before: SSAValue) -> None:
    """In the consumers of a persistent tile: the wait for this tile's preloads (`_await_preloads`),
    and their release once the loop is done with them."""
    _await_preloads(plan, loaded, tiles_before)
    release = Builder()
    arrive_per_warp(release, free, None)
    Rewriter.insert_op(release.ops, InsertPoint.after(plan.loop))


def _fill_tile_loop(kernel: tile.KernelOp, shell: tile.PersistentOp, head: Builder, ops: list[Operation]) -> None:
    """`head` and `ops` become the body of `shell`; the kernel-level values they use that depend on
    the block indices are recomputed inside from the tile's indices."""
    body = kernel.body.block
    block = shell.body.block
    Rewriter.insert_op([*head.ops, *ops], InsertPoint.before(block.last_op))
    args = dict(zip(kernel.body.block.args, shell.tile_indices))
    local: dict[SSAValue, SSAValue] = dict(args)
    clones: list[Operation] = []

    def localized(value: SSAValue) -> SSAValue:
        if value in local:
            return local[value]
        op = value.owner
        mapper = {v: localized(v) for v in op.operands if _depends_on(v, set(args), body)}
        clone = op.clone(value_mapper=mapper)
        clones.append(clone)
        for old, new in zip(op.results, clone.results):
            local[old] = new
        return local[value]

    for op in list(block.walk()):
        for i, v in enumerate(op.operands):
            if _depends_on(v, set(args), body):
                op.operands[i] = localized(v)
    if clones:
        Rewriter.insert_op(clones, InsertPoint.at_start(block))


def _drop_unused_block_math(kernel: tile.KernelOp) -> None:
    body = kernel.body.block
    args = set(body.args)
    for op in reversed(list(body.ops)):
        if pure(op) and all(not r.uses for r in op.results) and any(_depends_on(v, args, body) for v in op.operands):
            Rewriter.erase_op(op)


def warp_specialize(kernel: tile.KernelOp, plan: _Plan, persistent: bool = False, groups: int = 1) -> None:
    """The split of `kernel` (see the module's docstring); `persistent`: each role runs its part
    for every tile the block owns, in a `tile.persistent` loop, so that the producer streams in
    the next tile's stages while the consumers store this tile's result; `groups` > 1 (persistent
    only): that many consumer groups take turns on the tiles (ping-pong)."""
    assert groups == 1 or persistent
    body = kernel.body.block
    buffers: dict[tile.AllocOp, SSAValue] = {}
    for c in plan.copies:
        if c.alloc in buffers:
            continue
        typ = c.alloc.result.type
        new = tile.AllocOp(tile.BufferType((plan.stages, *typ.shape), typ.element_type, "shared"))
        new.properties |= c.alloc.properties  # its shared layout (swizzle, chunk)
        new.attributes |= c.alloc.attributes
        new.result.name_hint = c.alloc.result.name_hint
        new.location = c.alloc.location
        Rewriter.insert_op(new, InsertPoint.before(c.alloc))
        buffers[c.alloc] = new.result
    barriers, rings = [], []
    for copies in plan.rings or [plan.copies]:
        by_threads = any(c.op in plan.not_tma for c in copies)
        loads = any(c.op not in plan.not_tma for c in copies)
        # the TMA issuer's arrive.expect_tx, and each producer thread's arrival after its copies
        full = tile.AllocBarrierOp(int(loads) + PRODUCER_THREADS * by_threads, plan.stages)
        empty = tile.AllocBarrierOp(kernel.num_threads // 32, plan.stages)  # lane 0 of every consumer warp arrives
        hint = copies[0].alloc.result.name_hint
        suffix = f"_{hint.removesuffix('_s')}" if plan.rings and hint else ""  # full_K, full_V
        full.result.name_hint, empty.result.name_hint = f"full{suffix}", f"empty{suffix}"
        barriers += [full, empty]
        rings.append(_Ring(copies, full.result, empty.result, by_threads))
    loaded = tile.AllocBarrierOp(1, 1) if plan.preloads else None
    preamble = []
    if loaded is not None:
        loaded.result.name_hint = "loaded"
        barriers.append(loaded)
        preamble = _preamble(plan, body, loaded.result)  # before the sources move to the consumers
    free = None
    if loaded is not None and persistent:  # the preloaded tiles are loaded again for each tile
        free = tile.AllocBarrierOp(kernel.num_threads // 32, 1)  # lane 0 of every consumer warp arrives
        free.result.name_hint = "loaded_free"
        barriers.append(free)
    counters = []
    if persistent and _counted(kernel, plan.loop):
        for role in ("produced", "consumed"):
            counter = tile.AllocOp(tile.BufferType((1,), i32, "local"))
            counter.result.name_hint = role
            counter.location = kernel.location
            counters.append(counter)
        Rewriter.insert_op(counters, InsertPoint.at_start(body))
    consumer = Block()
    for op in [op for op in body.ops if not _stays(op, body)]:  # in order, into the consumer region
        op.detach()
        consumer.add_op(op)
    if persistent:
        produced, consumed = (c.result for c in counters) if counters else (None, None)
        p_shell, p_head, p_ring, p_end = _tile_loop(kernel, plan.loop, counter=produced)
        c_shell, c_head, c_ring, c_end = _tile_loop(kernel, plan.loop, groups, counter=consumed)
        # before the consumers' loop loses its copies
        producer_loop = _producer(plan, buffers, rings, p_ring[0])
        if free is not None:
            preamble = _wait_free(free.result, p_shell.tiles_before) + preamble
            _await_tile_preloads(plan, loaded.result, free.result, c_shell.tiles_before)
        _consume(plan, buffers, rings, c_ring)
        if groups > 1:  # the groups' main loops take turns (see tile.wait_turn)
            wait, turn = tile.WaitTurnOp(), tile.PassTurnOp()
            wait.location = turn.location = plan.loop.location
            Rewriter.insert_op(wait, InsertPoint.before(plan.loop))
            Rewriter.insert_op(turn, InsertPoint.after(plan.loop))
        moved = list(consumer.ops)
        for op in moved:
            op.detach()
        _fill_tile_loop(kernel, p_shell, p_head, [*preamble, producer_loop, *p_end])
        _fill_tile_loop(kernel, c_shell, c_head, [*moved, *c_end])
        producer = Block([*(_zero_counter(produced) if produced else []), p_shell])
        if consumed is not None:
            for op in _zero_counter(consumed):
                consumer.add_op(op)
        consumer.add_op(c_shell)
    else:
        producer = Block([*preamble, _producer(plan, buffers, rings, None)])
        if loaded is not None:
            _await_preloads(plan, loaded.result)
        _consume(plan, buffers, rings, None)
    split = register_split(kernel.num_threads * groups, bool(plan.not_tma))
    ws = tile.WarpSpecializeOp(producer, consumer, PRODUCER_THREADS, *split, groups,
                               all_producer_threads=bool(plan.not_tma))
    ws.location = plan.loop.location
    for bar in barriers:
        bar.location = kernel.location
    new_ops = [*barriers, ws]
    if isinstance(body.last_op, tile.YieldOp):
        Rewriter.insert_op(new_ops, InsertPoint.before(body.last_op))
    else:
        body.add_ops(new_ops)
    if persistent:
        _drop_unused_block_math(kernel)
    if groups > 1:
        ring = set(buffers.values())
        for alloc in [op for op in body.ops if isinstance(op, tile.AllocOp) and op.result.type.scope == "shared"
                      and op.result not in ring and op.result.uses]:
            assert all(tile.consumer_split(use.operation) is ws for use in alloc.result.uses)
            give_each_group(ws, alloc)


@dataclass(frozen=True)
class TileWarpSpecializePass(ModulePass):
    """Warp-specialize a T.Pipelined wgmma loop: a producer warpgroup streams its tiles in with TMA."""

    name = "tile-warp-specialize"

    limit: int = 0
    """Bytes of shared memory a block may use (0: the target's): the stages are cut to fit it."""

    target: str = "sm_90a"
    """The target whose facts the pass reads (target_facts.py)."""

    persistent: bool | None = False
    """Make the kernels it splits persistent (pass config `tilec.persistent`): one block per
    multiprocessor loops over the tiles, the next tile's loads overlapping this one's epilogue.
    None (the compiler's pipeline when the config is not given): the kernels whose loop holds one
    gemm (a GEMM, not attention's two), measured faster so on the H200 (bench/NOTES.md, run s6f).
    Attention persistent (True) measured +5-7 % at S=1024, even at S=8192 and 5-14 % slower causal
    (run s8c: the static round robin of tiles of different lengths), so not by default."""

    pingpong: bool = False
    """Run a persistent kernel of one warpgroup as two consumer groups on alternate tiles (pass
    config `tilec.pingpong`, which implies `tilec.persistent`)."""

    operand_rings: bool = False
    """Give the staged copies that feed different gemms a full/empty ring each (pass config
    `tilec.operand_rings`; FA3's pipeline_k / pipeline_v): attention's Q K^T waits for K only,
    K's stage goes back once S is computed, V's once P V is done."""

    per_copy: bool = True
    """Decide TMA or cp.async per copy (pass config `tilec.per_copy_tma`): a loop with a copy that TMA
    cannot take is warp-specialized all the same, the producer's threads copying it (off: the loop is
    left whole to tile-pipeline's cp.async stages). On the H200 6-30 % faster than those stages
    (4096x4100x4096, 4100x4096x4100 f16; bench/NOTES.md, session 15)."""

    softmax_overlap: bool = False
    """FlashAttention-3's intra-warpgroup overlap (pass config `tilec.softmax_overlap`, implies
    `operand_rings`; softmax_overlap.py): the consumer loop rotated so that the softmax of block j
    runs under P V of block j - 1."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            # (named barriers of the kernel's own would meet the groups' barriers 1-2 and turns 5-6)
            named = any(isinstance(b, tile.BarrierOp) and b.barrier_id is not None for b in kernel.walk())
            groups = 2 if self.pingpong and kernel.num_threads == WARPGROUP and not named else 1
            loops = _top_loops(kernel)
            gemms = sum(isinstance(g, tile.GemmOp) for g in loops[0].walk()) if len(loops) == 1 else 0
            wanted = (self.persistent if self.persistent is not None else gemms == 1) or groups > 1  # ping-pong too
            # tiles of different lengths only when persistence is asked for, and for one consumer group (each
            # group's count of ring positions would miss the other group's tiles)
            counted = self.persistent is True and groups == 1
            plan = _plan(kernel, shared_limit(self.target, self.limit), wanted, groups, counted, self.per_copy)
            if plan is None:
                continue
            candidate = gemms > 1  # attention's two gemms (plan.loop is the one top-level loop)
            # T.Pipelined(stage=...) of the two gemms, where given, decides (the frontend's STAGES_ASKED)
            asked = plan.loop.attributes.get(tile.STAGES_ASKED)
            overlap = self.softmax_overlap if asked is None else asked.data == "rotated"
            # a loop the rotation would not fit keeps one ring (rings alone measured slower: D=64 attention,
            # 192x128 tiles on three warpgroups, 2492 vs 2364 us on the H200, run s7d)
            unfitting = overlap and candidate and unfit(plan.loop, kernel.num_threads,
                                                        consumer_registers(kernel.num_threads))
            if self.operand_rings or (overlap and not unfitting):
                plan.rings = operand_rings(plan.loop, plan.copies)
                if plan.rings is None and candidate:
                    plan.loop.attributes[NOT_RINGS] = StringAttr(
                        "the staged tiles do not each feed one top-level gemm of the loop (one ring for all)")
            # a tile loaded once per block (attention's Q) is reloaded per tile for one consumer group only
            persistent = wanted and (groups == 1 or not plan.preloads) and persistent_fits(kernel, plan.loop, counted)
            warp_specialize(kernel, plan, persistent, groups if persistent else 1)
            if asked is not None and asked.data == "as_written" and candidate:
                plan.loop.attributes[NOT_OVERLAP] = StringAttr("T.Pipelined(stage=...) keeps the two gemms in one stage")
            if overlap and candidate:
                if unfitting and not plan.rings:
                    plan.loop.attributes[NOT_OVERLAP] = StringAttr(unfitting)
                elif not plan.rings:
                    plan.loop.attributes[NOT_OVERLAP] = StringAttr("no operand rings (see tilec.not_operand_rings)")
                else:
                    overlap_softmax(plan.loop)
