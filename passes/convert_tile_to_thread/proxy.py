"""The generic-to-async proxy fence after a warp-specialized consumer reads a TMA-filled stage.

A shared buffer that the producer of a warp-specialized kernel fills by TMA (the async proxy), a
stage view of it (`buf[s, :, :]`) or the whole tile: when the consumer reads it through the
generic proxy (ldmatrix / ld.shared: an mma.sync or SIMT gemm, a T.copy, an element load, a
reduction) and then releases the stage (an mbarrier arrive), the PTX memory model asks for
`fence.proxy.async.shared::cta` between the reads and the release, which the lowering of every
consumer arrive emits when the consumer has such readers: without it the arrive may
overtake reads still in flight (ptxas does not wait for them: the SASS of TileLang's barrierpipe
example issues SYNCS.ARRIVE with its last LDSMs outstanding) and the producer's next TMA load
overwrites the stage under them. wgmma reads through the async proxy itself and needs no fence.
"""

from __future__ import annotations

from tilec.dialects import nvvm, tile

from .context import Lowerer


_VIEWS = (tile.RegionOp, tile.StageOp, tile.ReshapeOp)


def _root(value):
    """The allocation a view (`tile.region`, `tile.stage`, `tile.reshape`, nested) is a part of."""
    while isinstance(value.owner, _VIEWS):
        value = value.owner.source
    return value


def reads_tma_buffers_generically(ws: tile.WarpSpecializeOp) -> bool:
    """Whether the consumer region reads a buffer that the producer fills by TMA other than by
    wgmma (whose operands the async proxy reads): an mma.sync or SIMT gemm, a copy, an element
    load, a reduction, a T.Parallel body."""
    filled = {_root(p.dst) for p in ws.producer.walk() if isinstance(p, tile.TmaLoadOp)}
    if not filled:
        return False
    for op in ws.consumer.walk():
        if isinstance(op, _VIEWS) or (isinstance(op, tile.GemmOp) and op.mma_kind == tile.MmaKind.WGMMA):
            continue
        if any(_root(v) in filled for v in op.operands):
            return True
    return False


def fence_before_release(L: Lowerer, arrive: tile.MBarrierArriveOp) -> None:
    """Before a consumer's arrive (the release of what it read): the fence, where the consumer
    reads TMA-filled buffers through the generic proxy (the producer refills them once released)."""
    ws = tile.enclosing(arrive, tile.WarpSpecializeOp)
    if ws is None or not ws.consumer.block.is_ancestor(arrive) or not reads_tma_buffers_generically(ws):
        return
    L.emit(nvvm.FenceProxyOp.create(properties={"kind": nvvm.ProxyKindAttr(nvvm.ProxyKind.ASYNC_SHARED),
                                                "space": nvvm.SharedSpaceAttr(nvvm.SharedSpace.CTA)}))
