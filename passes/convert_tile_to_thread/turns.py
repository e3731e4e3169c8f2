"""The warpgroups' turns at the tensor cores (dialects/tile/turns.py): named barriers 5 to 5 + W − 1.

    tile.warpgroup_wait_turn {start}  the last warpgroup: bar.arrive 5, 256; then every one: bar.sync 5 + w, 256
    tile.warpgroup_wait_turn          bar.sync 5 + w, 256
    tile.warpgroup_pass_turn          bar.arrive 5 + (w + 1) mod W, 256
    tile.warpgroup_pass_turn {final}  the same, but not the last warpgroup

Each barrier joins two warpgroups (256 threads): the one waiting on it, the one arriving. w is
warp-uniform (the block's thread id over 128), so are the branches. The warp-specialized split
that holds the turns is marked for the simulator (`tilec.consumer_groups` = (W, 128)): each
warpgroup there runs on its own, as it does on the GPU, rather than in lockstep with the others.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseArrayBase, i32, i64
from xdsl.ir import Block, Region, SSAValue

from tilec.dialects import nvvm, tile
from tilec.dialects.tile.turns import WARPGROUP

from .context import Lowerer
from .registry import uniform
from .sync import TURN_BARRIERS, named_barrier

PAIR = 2 * WARPGROUP  # the threads of one named barrier: the waiting warpgroup and the arriving one


def _warpgroups(L: Lowerer) -> int:
    assert L.threads % WARPGROUP == 0 and L.group is None, "turns need one consumer group of whole warpgroups"
    return L.threads // WARPGROUP


def _warpgroup(L: Lowerer) -> SSAValue:
    return L.emit(arith.DivUIOp(L.block_tid, L.const(WARPGROUP))).results[0]


def _mark_split(L: Lowerer) -> None:
    """`tilec.consumer_groups` = (W, 128) on the enclosing warp-role split (for the simulator)."""
    for block in reversed(L.blocks):
        owner = block.parent_op()
        if isinstance(owner, scf.IfOp) and "tilec.warp_roles" in owner.attributes:
            owner.attributes["tilec.consumer_groups"] = DenseArrayBase.from_list(i64, [_warpgroups(L), WARPGROUP])
            return
    raise AssertionError("a warpgroup turn outside the consumer region")


def _arrive(L: Lowerer, bar: SSAValue | int) -> None:
    ident = L.const(bar, i32) if isinstance(bar, int) else L.emit(arith.IndexCastOp(bar, i32)).results[0]
    L.emit(nvvm.BarrierArriveOp.create(operands=[ident, L.const(PAIR, i32)]))


def _if(L: Lowerer, cond: SSAValue, body) -> None:
    then = Block()
    L.emit(scf.IfOp(cond, [], Region(then)))
    with L.push(then):
        body()
        L.emit(scf.YieldOp())


@uniform(tile.WarpgroupWaitTurnOp)
def _wait_turn(L: Lowerer, op: tile.WarpgroupWaitTurnOp) -> None:
    _mark_split(L)
    count = _warpgroups(L)
    w = _warpgroup(L)
    if op.start is not None:
        last = L.emit(arith.CmpiOp(w, L.const(count - 1), "eq")).results[0]
        _if(L, last, lambda: _arrive(L, TURN_BARRIERS))
    named_barrier(L, PAIR, L.ssa(L.add(w, TURN_BARRIERS)))


@uniform(tile.WarpgroupPassTurnOp)
def _pass_turn(L: Lowerer, op: tile.WarpgroupPassTurnOp) -> None:
    _mark_split(L)
    count = _warpgroups(L)
    w = _warpgroup(L)
    following = L.emit(arith.AddiOp(w, L.const(1))).results[0]
    if count & (count - 1) == 0:
        following = L.ssa(L.rem(following, count))
    else:
        following = L.emit(arith.RemUIOp(following, L.const(count))).results[0]
    bar = L.ssa(L.add(following, TURN_BARRIERS))
    if op.final is None:
        _arrive(L, bar)
        return
    not_last = L.emit(arith.CmpiOp(w, L.const(count - 1), "ne")).results[0]
    _if(L, not_last, lambda: _arrive(L, bar))
