"""The SIMT gemm: fused multiply-adds over the accumulator's layout, a loop over K carrying
the accumulators.
"""

from __future__ import annotations


from xdsl.dialects import arith, scf
from xdsl.dialects import math as mathd
from xdsl.ir import Block

from tilec.dialects import tile
from tilec.dialects.arith_utils import is_float

from .context import Lowerer
from .memory import INDEX, View


def lower_gemm_simt(L: Lowerer, op: tile.GemmOp, a: View, b: View, c: View) -> None:
    """C += A @ B with FMAs: each thread owns the micro-tile of C its fragment layout gives it."""
    m, n, k = op.mnk()
    lc = c.layout
    acc_type = c.element_type
    rows: dict[int, object] = {}
    cols: dict[int, object] = {}
    cells = []
    for s in range(lc.num_slots):
        i, j = L.layout_index(lc, s)
        rows.setdefault(_key(i), i)
        cols.setdefault(_key(j), j)
        cells.append((s, _key(i), _key(j)))
    acc = {s: L.frag_load(c, s) for s, _, _ in cells}
    if op.clear_accum.value.data:
        zero = L.const(0, acc_type)
        acc = {s: zero for s in acc}

    def step(kk) -> None:
        av = {r: L.convert(L.load(a, [kk, i] if op.trans_a else [i, kk]), acc_type) for r, i in rows.items()}
        bv = {q: L.convert(L.load(b, [j, kk] if op.trans_b else [kk, j]), acc_type) for q, j in cols.items()}
        for s, r, q in cells:
            if is_float(acc_type):
                acc[s] = L.emit(mathd.FmaOp(av[r], bv[q], acc[s])).results[0]
            else:
                prod = L.emit(arith.MuliOp(av[r], bv[q])).results[0]
                acc[s] = L.emit(arith.AddiOp(acc[s], prod)).results[0]

    if k <= 16:
        for kk in range(k):
            step(kk)
    else:  # a loop over K carrying the accumulators, unrolled by the backend
        slots = list(acc)
        body = Block(arg_types=[INDEX] + [acc_type] * len(slots))
        loop = L.emit(scf.ForOp(L.const(0), L.const(k), L.const(1), [acc[s] for s in slots], body))
        with L.push(body):
            acc = dict(zip(slots, body.args[1:]))
            step(body.args[0])
            L.emit(scf.YieldOp(*[acc[s] for s in slots]))
        acc = dict(zip(slots, loop.results))
    for s, v in acc.items():
        L.frag_store(c, s, v)


def _key(x) -> object:
    return ("c", x) if isinstance(x, int) else ("v", id(x))
