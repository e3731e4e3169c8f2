"""`tile.gemm` dispatch: register operands are staged through shared memory, then the
kind tile-select-mma chose (wgmma, mma.sync) or the SIMT fallback lowers it.
"""

from __future__ import annotations


from xdsl.dialects.builtin import (
    StringAttr,
)

from tilec.dialects import tile

from .context import Lowerer
from .copy import barrier, scratch_view, transfer
from .gemm_mma import lower_gemm_mma
from .gemm_simt import lower_gemm_simt
from .gemm_wgmma import lower_gemm_wgmma
from .registry import uniform


@uniform(tile.GemmOp)
def lower_gemm(L: Lowerer, op: tile.GemmOp) -> None:
    a, b, c = L.views[op.a], L.views[op.b], L.views[op.c]
    m, n, k = op.mnk()
    for name, v in (("A", a), ("B", b)):
        if v.kind == "fragment":  # stage register operands through shared memory
            tmp = scratch_view(L, v.shape, v.element_type)
            transfer(L, v.layout, v.shape, v, tmp)
            barrier(L)
            if name == "A":
                a = tmp
            else:
                b = tmp
    if c.kind != "fragment":
        raise L.error(op, "T.gemm on the CUDA target needs a fragment accumulator")
    if op.attributes.get("mma") == StringAttr("wgmma"):
        lower_gemm_wgmma(L, op, a, b, c)
        return
    if "mma" in op.attributes:
        lower_gemm_mma(L, op, a, b, c)
        return
    lower_gemm_simt(L, op, a, b, c)
