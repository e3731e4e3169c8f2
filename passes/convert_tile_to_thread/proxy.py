"""The generic-to-async proxy fence after a warp-specialized consumer reads a TMA-filled stage.

A shared buffer that the producer of a warp-specialized kernel fills by TMA (the async proxy), a
stage view of it (`buf[s, :, :]`) or the whole tile: when the consumer reads it through the generic proxy (ldmatrix / ld.shared: an mma.sync or SIMT
gemm, a T.copy) and then releases the stage (an mbarrier arrive), the PTX memory model asks for
`fence.proxy.async.shared::cta` between the reads and the release: without it the arrive may
overtake reads still in flight (ptxas does not wait for them: the SASS of TileLang's barrierpipe
example issues SYNCS.ARRIVE with its last LDSMs outstanding) and the producer's next TMA load
overwrites the stage under them. wgmma reads through the async proxy itself and needs no fence.
"""

from __future__ import annotations

from tilec.dialects import nvvm, tile

from .context import Lowerer


def _enclosing_warp_specialize(op) -> tile.WarpSpecializeOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, tile.WarpSpecializeOp):
        parent = parent.parent_op()
    return parent


def _root(value):
    """The allocation a view (`tile.region`, `tile.stage`, nested) is a part of."""
    while isinstance(value.owner, tile.RegionOp | tile.StageOp):
        value = value.owner.source
    return value


def tma_filled(op, value) -> bool:
    """Whether `op` runs in a warp-specialized consumer and `value` is (a view of) a buffer that the
    producer of that kernel fills by TMA."""
    ws = _enclosing_warp_specialize(op)
    if ws is None or not ws.consumer.block.is_ancestor(op):
        return False
    root = _root(value)
    return any(isinstance(p, tile.TmaLoadOp) and _root(p.dst) is root for p in ws.producer.walk())


def fence_generic_reads_of_stages(L: Lowerer, op, *values) -> None:
    """After `op` read `values` through the generic proxy: the fence, where one of them is filled
    by TMA and `op` is in the warp-specialized consumer (its producer refills the buffer once the
    consumer releases it)."""
    if any(tma_filled(op, v) for v in values):
        L.emit(nvvm.FenceProxyOp.create(properties={"kind": nvvm.ProxyKindAttr(nvvm.ProxyKind.ASYNC_SHARED),
                                                    "space": nvvm.SharedSpaceAttr(nvvm.SharedSpace.CTA)}))
