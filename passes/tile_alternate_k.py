"""Run a persistent gemm's reduction loop backwards on alternate rounds, for the L2's sake.

Requires: tile-warp-specialize (a persistent `tile.warp_specialize`: a `tile.persistent` loop in
  each role, the producer's `tile.for` issuing the stage loads, the consumers' `tile.for` with
  `warp_specialized_stages`); runs before tile-infer-layout.
Establishes: in the producer, the loads of the tiles a block runs in odd rounds (`tiles before`
  odd) take the loop's iterations last to first: their regions read the loop index k as
  `lb + last - k` (`last` = the last iteration's index), while the ring's stages and phases still
  count forward, so the consumers, unchanged, read stage after stage whatever was loaded into it.
  The producer's loop says so in `tilec.alternate_k`. Applied only where the order of the
  consumers' iterations cannot matter but for rounding: their loop holds nothing but the ring's
  waits, releases and stage views, index arithmetic, and gemms that accumulate (none clears its
  accumulator in the loop, none reads another's); the sum is then reassociated, as another tile
  shape or split would reassociate it, and where the loop's bounds are compile-time constants.
  Pass config `tilec.alternate_k` (on by default; False keeps every round's k order forwards).
Fails: never; a persistent loop left alone says why in `tilec.not_alternated` on the consumers'
  loop.

Why: block b of P runs the tiles b, b + P, b + 2P, ...: round r is the P tiles r·P to r·P + P - 1
of the grid's order, and under `T.use_swizzle`'s panels two rounds in a row share operand tiles
(the same rows of A). A round ends on the last k-tiles of its operands; run backwards, the next one
starts on those, still in L2, where run forwards it would start on the first ones, long evicted.
At 8192^3 with 128x256 tiles (128 blocks, panel 10) an LRU model of a 50 MB L2 reads 1.29 GB of
DRAM forwards and 1.09 GB alternating (tools/l2_model.py); on an H100 ncu read 1.32 and 1.22 GB,
and the kernel ran 0.4-0.6 % faster sustained (bench/NOTES.md, session 19).

    tile.persistent (%x, %y, %n) in (%gx, %gy) {
      tile.for %k = %c0 to %c128 step %c1 { ... tile.tma_load (region %A[%y * 128, %k * 64]) ... }
  becomes
    tile.persistent (%x, %y, %n) in (%gx, %gy) {
      %odd = <%n is odd>
      tile.for %k = %c0 to %c128 step %c1 {
        %kk = arith.select %odd, (%c127 - %k), %k
        ... tile.tma_load (region %A[%y * 128, %kk * 64]) ...
      } {tilec.alternate_k}
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.dialects import tile
from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from .analysis import constant_value
from .loop_stages import Builder, clone_slice, pure

__all__ = ["ALTERNATED", "NOT_ALTERNATED", "TileAlternateKPass", "order_free"]

ALTERNATED = "tilec.alternate_k"
NOT_ALTERNATED = "tilec.not_alternated"

# what a consumers' loop may hold besides gemms and index arithmetic: the ring's protocol
_RING = (tile.MBarrierWaitParityOp, tile.MBarrierArriveOp, tile.StageOp, tile.YieldOp, scf.YieldOp, tile.ThreadIdOp)


def order_free(loop: tile.ForOp) -> str | None:
    """None when the order of `loop`'s iterations cannot change its result but for rounding (see
    the module's docstring); else why it can."""
    gemms = []
    for op in loop.body.block.walk():
        if isinstance(op, tile.GemmOp):
            gemms.append(op)
        elif isinstance(op, scf.IfOp):
            continue  # (its ops are walked: a condition on the index decides only ring ops)
        elif not (isinstance(op, _RING) or pure(op)):
            return f"the loop holds {op.name}: only gemms that accumulate may run in either order"
    if not gemms:
        return "the loop holds no gemm"
    accumulators = {g.c for g in gemms}
    for g in gemms:
        if g.clear_accum.value.data:
            return "a gemm clears its accumulator in the loop: the last iteration's product alone remains"
        if g.a in accumulators or g.b in accumulators:
            return "a gemm reads another gemm's accumulator: the iterations depend on each other"
    return None


def _shells(ws: tile.WarpSpecializeOp) -> tuple[tile.PersistentOp, tile.PersistentOp] | None:
    found = []
    for region in (ws.producer, ws.consumer):
        found.append(next((op for op in region.block.ops if isinstance(op, tile.PersistentOp)), None))
    return None if None in found else (found[0], found[1])


def _loads(loop: tile.ForOp) -> list[Operation]:
    return [op for op in loop.body.block.ops if isinstance(op, tile.TmaLoadOp)
            or (isinstance(op, tile.CopyOp) and isinstance(op.src.type, tile.TensorType))]


def _mirror(loop: tile.ForOp) -> int | None:
    """`lb + last`, where `last` = lb + (trips - 1)·step is the loop's last index (None: bounds
    known only at run time): `mirror - k` takes the iterations last to first."""
    lb, ub, step = (constant_value(v) for v in (loop.lb, loop.ub, loop.step))
    if None in (lb, ub, step) or ub <= lb:
        return None
    return lb + lb + (-(-(ub - lb) // step) - 1) * step


def alternate(producer: tile.PersistentOp, loop: tile.ForOp, mirror: int) -> None:
    """The rewrite of the producer's `loop` (see the module's docstring)."""
    head = Builder()
    odd = head.add(arith.CmpiOp(head.binary(arith.RemUIOp, producer.tiles_before, 2), head.index(0), "ne"))
    mirror = head.index(mirror)
    for op in head.ops:
        op.location = loop.location
    Rewriter.insert_op(head.ops, InsertPoint.before(loop))
    body = loop.body.block
    iv = loop.induction_var
    b = Builder()
    kk = b.add(arith.SelectOp(odd, b.binary(arith.SubiOp, mirror, iv), iv))
    for op in b.ops:
        op.location = loop.location
    Rewriter.insert_op(b.ops, InsertPoint.at_start(body))
    done: dict[Operation, Operation] = {}
    for load in _loads(loop):  # each load's source recomputed from kk, right before it
        address = Builder()
        load.operands[0] = clone_slice(load.operands[0], body, iv, kk, address, done)  # (src, for both ops)
        Rewriter.insert_op(address.ops, InsertPoint.before(load))
    for op in reversed(list(body.ops)):  # the forward addresses the loads no longer read
        if pure(op) and op not in b.ops and all(not r.uses for r in op.results):
            Rewriter.erase_op(op)
    loop.attributes[ALTERNATED] = UnitAttr()


@dataclass(frozen=True)
class TileAlternateKPass(ModulePass):
    """Run a persistent gemm's reduction loop backwards on alternate rounds, for the L2's sake."""

    name = "tile-alternate-k"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [o for o in op.walk() if isinstance(o, tile.WarpSpecializeOp)]:
            shells = _shells(ws)
            if shells is None:
                continue  # (not persistent: a block runs one tile, there are no rounds)
            producer, consumer = shells
            p_loops = [o for o in producer.body.block.ops if isinstance(o, tile.ForOp) and _loads(o)]
            c_loops = [o for o in consumer.body.block.ops
                       if isinstance(o, tile.ForOp) and o.warp_specialized_stages is not None]
            if len(p_loops) != 1 or len(c_loops) != 1:
                for loop in c_loops:
                    loop.attributes[NOT_ALTERNATED] = StringAttr("the roles hold more than one loop each")
                continue
            why = order_free(c_loops[0])
            mirror = _mirror(p_loops[0])
            if why is None and mirror is None:
                why = "the loop's bounds are known only at run time"  # (a persistent loop's are not, so far)
            if why is not None:
                c_loops[0].attributes[NOT_ALTERNATED] = StringAttr(why)
                continue
            alternate(producer, p_loops[0], mirror)
