"""`tile.gemm` dispatch: register operands are staged through shared memory (except wgmma's
register A, which the RS form reads in place), then the kind tile-select-mma chose (wgmma,
mma.sync) or the SIMT fallback lowers it (a non-wgmma gemm of TMA-filled stage views in a
warp-specialized consumer makes the consumer's releases fence first: `proxy.py`).
"""

from __future__ import annotations

import importlib
import math


from tilec.dialects import tile

from .context import SHARED_ALIGN, Lowerer, round_up
from .memory import element_bytes
from .copy import barrier, scratch_view, transfer
from .registry import uniform

_BY_KIND = {tile.MmaKind.WGMMA: "gemm_wgmma", tile.MmaKind.M16N8K16: "gemm_mma", None: "gemm_simt"}
"""The module lowering each `mma` kind tile-select-mma chooses (None: it chose none), with its
`lower_<module>`: imported at the first gemm of that kind (an sm_90a build compiles neither
mma.sync's nor the SIMT lowering's source)."""


def _lowering(kind):
    name = _BY_KIND[kind]
    return getattr(importlib.import_module(f".{name}", __package__), f"lower_{name}")


@uniform(tile.GemmOp)
def lower_gemm(L: Lowerer, op: tile.GemmOp) -> None:
    a, b, c = L.views[op.a], L.views[op.b], L.views[op.c]
    if c.kind != "fragment":
        raise L.error(op, "T.gemm on the CUDA target needs a fragment accumulator")
    staged, at = False, 0
    operands = []
    wgmma = op.mma_kind == tile.MmaKind.WGMMA
    if op.wgmma_only is not None and not wgmma:  # (tile-select-mma says why where it runs)
        raise L.error(op, "T.wgmma_gemm: this build does not compute the gemm on wgmma (tensor cores are off: "
                          "the pass config tilec.enable_mma is False, or the target has none)",
                      hint="use T.gemm, which takes mma.sync or the SIMT cores where wgmma cannot run the gemm")
    for v in (a, b):
        if v.kind == "fragment" and not (wgmma and v is a):  # wgmma reads a register A itself (RS)
            # stage register operands through shared memory, A and B apart
            tmp = scratch_view(L, v.shape, v.element_type, at)
            at = round_up(at + math.prod(v.shape) * element_bytes(v.element_type), SHARED_ALIGN)
            transfer(L, v.layout, v.shape, v, tmp)
            v, staged = tmp, True
        operands.append(v)
    if staged:
        barrier(L)
    a, b = operands
    _lowering(op.mma_kind)(L, op, a, b, c)
    if staged:
        barrier(L)  # the exchange area is free again only once every thread has read its operands
