"""TileLang's raw per-thread cp.async: `tile.cp_async` and `tile.cp_async_arrive`.

Each thread that runs a `tile.cp_async` issues one `cp.async` of its own (16 bytes: `.cg`, else
`.ca`): the shared address is that of the destination element under the buffer's layout (its
XOR swizzle, its column chunks: `MemoryAccess.flat`), the global one that of the source element.
A cp.async writes one contiguous, aligned run, so the lowering proves, by the multiples it knows
of the indices (tile-level `known_multiple`, as the tile IR computes them from the thread index
and the loop variables) and of the strides, that both runs start on a multiple of their size
(`MemoryAccess.vectorizable`; under a swizzle, which moves whole 16-byte chunks, that keeps the
run in one chunk). What it cannot prove is a located error: a misaligned cp.async faults.

    tile.cp_async %A[%r, %c], %s[%r, %c] {elements = 8}
  becomes (in-bounds source, 128-byte swizzled %s)
    "nvvm.cp.async.shared.global"(%dst, %src) <{size = 16, modifier = cg}>
"""

from __future__ import annotations

import dataclasses
import math

from tilec.dialects import nvvm, tile
from tilec.passes.analysis import known_multiple
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, UnitAttr, i32
from xdsl.ir import SSAValue

from .context import Lowerer
from .memory import Index, View, global_ptr, shared_ptr
from .registry import uniform
from .sync import _barrier_ptr


def _index(L: Lowerer, value: SSAValue) -> Index:
    """The thread-level value of tile index `value`, known to be the multiple the tile IR proves
    of it (its arithmetic was cloned op by op, which records no multiples)."""
    lowered = L.val(value)
    proven, known = known_multiple(value), L.mult(lowered)
    if known:  # (0: the value is 0, a multiple of everything)
        L.mults[lowered] = math.lcm(known, proven) if proven else 0
    return lowered


def _layout_name(view: View) -> str:
    if view.swizzle:
        return f"its {view.swizzle}-byte swizzle" + (f" in chunks of {view.chunk} columns" if view.chunk else "")
    return "row-major"


def _check_aligned(L: Lowerer, op: tile.CpAsyncOp, view: View, index: list[Index], what: str) -> None:
    """A located error unless `op`'s run at `index` of `view` is provably one aligned vector."""
    n, nbytes = op.elements.value.data, op.nbytes
    if L.vectorizable(view, index, n):
        return
    if what == "dst":
        where, rows = f"the shared destination ({_layout_name(view)})", "the buffer's rows"
    else:
        where, rows = "the global source", "the tensor's rows (of a T.dynamic size: every call's)"
    raise L.error(op, f"T.ptx_cp_async: cannot prove that {where} starts on a {nbytes}-byte boundary: a cp.async "
                      f"of {n} elements moves one aligned, contiguous run of {nbytes} bytes",
                  hint=f"write the innermost index as a multiple of {n} the compiler sees (e.g. `(tid % 8) * {n}`), "
                       f"with {rows} a multiple of {n} elements")


@uniform(tile.CpAsyncOp)
def _cp_async(L: Lowerer, op: tile.CpAsyncOp) -> None:
    src, dst = L.views[op.src], L.views[op.dst]
    if op.in_bounds is not None:
        src = dataclasses.replace(src, in_bounds=True)
    si = [_index(L, i) for i in op.src_indices]
    di = [_index(L, i) for i in op.dst_indices]
    _check_aligned(L, op, dst, di, "dst")
    _check_aligned(L, op, src, si, "src")
    nbytes = op.nbytes
    # reads only where the whole run is inside the tensor (vectorizable: a run outside it starts outside)
    cond = L.in_bounds(src, si)
    if op.predicate is not None:
        pred = L.val(op.predicate)
        cond = pred if cond is None else L.emit(arith.AndIOp(cond, pred)).results[0]
    addr, size = L.flat(src, si), None
    if cond is not None:  # cp-size 0: the run is zero-filled, nothing read (the address kept inside the tensor)
        size = L.emit(arith.SelectOp(cond, L.const(nbytes, i32), L.const(0, i32))).results[0]
        addr = L.emit(arith.SelectOp(cond, L.ssa(addr), L.const(0))).results[0]
    modifier = nvvm.LoadCacheModifier.CG if nbytes == 16 else nvvm.LoadCacheModifier.CA
    L.emit(nvvm.CpAsyncOp.create(
        operands=[shared_ptr(L, dst, di), global_ptr(L, src, addr), *([size] if size is not None else [])],
        properties={"size": IntegerAttr(nbytes, i32), "modifier": nvvm.LoadCacheModifierAttr(modifier)}))


@uniform(tile.CpAsyncArriveOp)
def _cp_async_arrive(L: Lowerer, op: tile.CpAsyncArriveOp) -> None:
    L.emit(nvvm.CpAsyncMBarrierArriveSharedOp.create(operands=[_barrier_ptr(L, op.barrier, op.index)],
                                                      properties={"noinc": UnitAttr()}))
