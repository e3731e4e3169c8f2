"""Software-pipeline `T.Pipelined` loops: multi-buffered shared tiles filled by async copies.

Requires: tile-legalize-bounds (regions carry `in_bounds`); runs before tile-plan-shared-memory
  (which sizes the multi-buffered allocations) and tile-insert-barriers (which leaves the
  async copies to the loop's own waits).
Establishes: in every `tile.for` of kind "pipelined" with `num_stages` S >= 2, each copy from
  global memory into a shared buffer that only this loop uses (and that the loop writes only
  with that copy, before any read) becomes an async copy into stage `(i + S - 1) % S` of an
  S-deep buffer (`tile.copy {async}`), issued S - 1 iterations ahead; the loop reads stage
  `i % S`. The loop becomes "serial" with `pipelined_stages = S`.
Fails: never; a loop without such copies, or one that writes global memory (a prefetch
  could read a tensor before the writes of the iterations in between), stays as it is.

    %A_s = tile.alloc : !tile.buffer<128x32xf16, shared>
    tile.for %k = %c0 to %n step %c1 {
      %a = tile.region %A[%m, %k32] ...
      tile.copy %a, %A_s
      tile.gemm %A_s, %B_s, %C
    } {kind = "pipelined", num_stages = 3}
  becomes
    %A_s = tile.alloc : !tile.buffer<3x128x32xf16, shared>
    tile.barrier                              // the stages may reuse bytes read before the loop
    (for s in 0, 1: if s < n { tile.copy %a(s), stage s {async} }; tile.async_commit)
    tile.for %k = %c0 to %n step %c1 {
      tile.async_wait {pending = 1}          // this thread's copies of iteration k are done
      tile.barrier                            // everyone's are; everyone finished iteration k-1
      if k + 2 < n { tile.copy %a(k + 2), stage (k + 2) % 3 {async} }
      tile.async_commit
      %A_k = tile.stage %A_s[k % 3]
      tile.gemm %A_k, ...
    } {pipelined_stages = 3}
    tile.async_wait {pending = 0}
    tile.barrier                              // an outer loop may run the prologue again

The copy issued in iteration k overwrites the stage read in iteration k - 1, which the
barrier at the top of iteration k has closed; the data of iteration k was committed S - 1
groups before the wait that lets at most S - 2 groups stay pending.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.dialects import tile
from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from .analysis import constant_value
from .loop_stages import (
    Builder,
    StagedCopy,
    clone_slice,
    fitting_stages,
    staged_copy,
    use_stage_views,
    writes_global,
)
from .target_facts import shared_limit

__all__ = ["TilePipelinePass"]


def _issue(copies: list[StagedCopy], buffers: dict, body: Block, iv: SSAValue, k: SSAValue, stage: SSAValue,
           guard: SSAValue) -> scf.IfOp:
    """`if guard { the copies of iteration k, async, into stage }`."""
    b, done = Builder(), {}
    for c in copies:
        src = clone_slice(c.op.src, body, iv, k, b, done)
        view = b.add(tile.StageOp(buffers[c.alloc], stage))
        b.ops.append(tile.CopyOp(src, view, is_async=True))
    b.ops.append(scf.YieldOp())
    return scf.IfOp(guard, [], Region(Block(b.ops)))


def _pipeline(loop: tile.ForOp, stages: int, limit: int) -> bool:
    body = loop.body.block
    iv = loop.induction_var
    if writes_global(loop):
        return False
    copies = [c for op in list(body.ops) if isinstance(op, tile.CopyOp)
              if (c := staged_copy(op, loop)) is not None]
    if not copies:
        return False
    kernel = tile.enclosing_kernel(loop)
    stages = fitting_stages(kernel, copies, stages, limit) or 1
    if stages < 2:  # the loop's own buffers fit, their copies in flight would not
        return False

    # multi-buffered allocations, in place of the single ones
    buffers: dict[tile.AllocOp, SSAValue] = {}
    for c in copies:
        if c.alloc in buffers:
            continue
        typ = c.alloc.result.type
        new = tile.AllocOp(tile.BufferType((stages, *typ.shape), typ.element_type, "shared"))
        new.properties |= c.alloc.properties  # its shared layout (swizzle, chunk)
        new.attributes |= c.alloc.attributes
        new.result.name_hint = c.alloc.result.name_hint
        Rewriter.insert_op(new, InsertPoint.before(c.alloc))
        buffers[c.alloc] = new.result

    lb, ub, step = loop.lb, loop.ub, loop.step
    lb_c, step_c = constant_value(lb), constant_value(step)

    # prologue: iterations 0 .. S-2 into stages 0 .. S-2, after a barrier: the stages may share
    # bytes with buffers read before the loop, and tile-insert-barriers leaves async writes alone
    pre = Builder()
    pre.ops.append(tile.BarrierOp())
    for s in range(stages - 1):
        k = lb if s == 0 else pre.binary(arith.AddiOp, lb, pre.binary(arith.MuliOp, step, s))
        guard = pre.add(arith.CmpiOp(k, ub, "slt"))
        pre.ops.append(_issue(copies, buffers, body, iv, k, pre.index(s), guard))
        pre.ops.append(tile.AsyncCommitOp())
    Rewriter.insert_op(pre.ops, InsertPoint.before(loop))

    # the loop's header: which stage, wait, barrier, the copies S-1 iterations ahead
    head = Builder()
    i = iv
    if lb_c != 0:
        i = head.binary(arith.SubiOp, i, lb)
    if step_c != 1:
        i = head.binary(arith.DivUIOp, i, step)
    stage = head.binary(arith.RemUIOp, i, stages)
    ahead = head.binary(arith.RemUIOp, head.binary(arith.AddiOp, i, stages - 1), stages)
    head.ops.append(tile.AsyncWaitOp(stages - 2))
    head.ops.append(tile.BarrierOp())
    distance = head.index((stages - 1) * step_c) if step_c is not None else \
        head.binary(arith.MuliOp, step, stages - 1)
    k_ahead = head.binary(arith.AddiOp, iv, distance)
    guard = head.add(arith.CmpiOp(k_ahead, ub, "slt"))
    head.ops.append(_issue(copies, buffers, body, iv, k_ahead, ahead, guard))
    head.ops.append(tile.AsyncCommitOp())
    views = {alloc: head.add(tile.StageOp(new, stage)) for alloc, new in buffers.items()}
    Rewriter.insert_op(head.ops, InsertPoint.at_start(body))

    use_stage_views(copies, buffers, views, body)

    # nothing in flight after the loop, and every thread done reading its stages before anything
    # after it (or the next prologue, when an outer loop runs this one again) writes them
    Rewriter.insert_op([tile.AsyncWaitOp(0), tile.BarrierOp()], InsertPoint.after(loop))
    loop.kind = tile.LoopKindAttr(tile.LoopKind.SERIAL)
    loop.pipelined_stages = IntegerAttr(stages, i64)
    return True


@dataclass(frozen=True)
class TilePipelinePass(ModulePass):
    name = "tile-pipeline"

    limit: int = 0
    """Bytes of shared memory a block may use (0: the target's): fewer stages where `num_stages` would not fit."""

    target: str = "sm_90a"
    """The target whose facts the pass reads (target_facts.py)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = [loop for loop in op.walk() if isinstance(loop, tile.ForOp) and loop.kind.data == tile.LoopKind.PIPELINED]
        for loop in loops:
            stages = loop.num_stages.value.data if loop.num_stages is not None else 0
            if stages >= 2:
                _pipeline(loop, stages, shared_limit(self.target, self.limit))

