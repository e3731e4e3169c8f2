"""Tile matrix multiply: `T.gemm`."""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, UnitAttr, i1, i64

import tilec.language as T
from tilec.dialects import tile

from ..values import Scalar, TileRef
from .operands import describe_, require_kernel, static_int, tile_operand
from .registry import handles


@handles("gemm")
def gemm(v, A, B, C, transpose_A, transpose_B, policy, clear_accum, k_pack, wg_wait):
    require_kernel(v, "T.gemm", whole_tiles=True)
    for what, flag in (("transpose_A", transpose_A), ("transpose_B", transpose_B), ("k_pack", k_pack)):
        if isinstance(v.rvalue(flag), Scalar | TileRef):
            raise v.b.error(f"T.gemm's {what} must be a compile-time value, got {describe_(v.rvalue(flag))}",
                            hint="the operands' layout is chosen when the kernel is compiled: pass a Python value")
    a = tile_operand(v, A, "T.gemm operand A", ("shared", "fragment"), stages=True)
    b = tile_operand(v, B, "T.gemm operand B", ("shared", "fragment"), stages=True)
    c = tile_operand(v, C, "T.gemm accumulator C", ("fragment",))
    for what, x in (("A", a), ("B", b), ("C", c)):
        if len(x.type.shape) != 2:
            raise v.b.error(f"T.gemm operand {what} must be 2-D, got shape {x.type.shape}")
    (m, k) = a.type.shape[::-1] if transpose_A else a.type.shape
    (kb, n) = b.type.shape[::-1] if transpose_B else b.type.shape
    if k != kb:
        raise v.b.error(f"T.gemm K differs: A {a.type.shape} gives K={k}, B {b.type.shape} gives K={kb}",
                        hint="check transpose_A / transpose_B")
    if c.type.shape != (m, n):
        raise v.b.error(f"T.gemm C must be {(m, n)} for A {a.type.shape} and B {b.type.shape}, got {c.type.shape}")
    policy = policy.ir_name if isinstance(policy, T.GemmWarpPolicy) else str(policy).lower()
    clear = v.condition(clear_accum, "T.gemm's clear_accum")
    if isinstance(clear, Scalar):  # decided at run time (`clear_accum=(k == 0)` in a loop): C zeroed where it holds
        with v.b.under(v.b.to_ssa(clear, i1)):
            v.b.emit(tile.FillOp(c, v.b.to_ssa(0, c.type.element_type)))
        clear = False
    if isinstance(v.rvalue(wg_wait), bool):
        raise v.b.error("T.gemm's wg_wait is a count of wgmma groups left running (-1: no wait), not True / False")
    wait = static_int(v, v.rvalue(wg_wait), "T.gemm's wg_wait")
    if wait < -1:
        raise v.b.error(f"T.gemm's wg_wait must be -1 (no wait: T.wait_wgmma waits) or a count of wgmma groups "
                        f"left running (>= 0), got {wait}")
    op = v.b.emit(tile.GemmOp(a, b, c, transpose_a=bool(transpose_A), transpose_b=bool(transpose_B),
                              clear_accum=bool(clear), policy=policy, k_pack=int(k_pack)))
    if wait:  # the program's own completion of a wgmma (TileLang's): the default 0 waits for it right here
        op.wg_wait = IntegerAttr(wait, i64)
    return op


@handles("wgmma_gemm")
def wgmma_gemm(v, A, B, C, transpose_A, transpose_B, policy, clear_accum):
    """A wgmma left running (no wait: `T.wait_wgmma` completes it); tile-select-mma refuses it where wgmma
    cannot run it."""
    op = gemm(v, A, B, C, transpose_A, transpose_B, policy, clear_accum, 1, -1)
    op.wgmma_only = UnitAttr()


@handles("wait_wgmma")
def wait_wgmma(v, num_pending):
    """wgmma.wait_group: tile-select-mma ties the accumulators of the asynchronous wgmmas that can be running."""
    require_kernel(v, "T.wait_wgmma", whole_tiles=True)
    pending = static_int(v, v.rvalue(num_pending), "T.wait_wgmma's count")
    if pending < 0:
        raise v.b.error(f"T.wait_wgmma's count is the number of wgmma groups left running (>= 0), got {pending}")
    v.b.emit(tile.GemmWaitOp((), pending))
