"""Tile matrix multiply."""

from __future__ import annotations

import enum

from ._builtin import builtin


class GemmWarpPolicy(enum.IntEnum):
    """How the warps of a block split the MxN tile of a `T.gemm`."""

    Square = 0
    FullRow = 1
    FullCol = 2

    @property
    def ir_name(self) -> str:
        return {0: "square", 1: "full_row", 2: "full_col"}[self.value]


@builtin
def gemm(A, B, C, transpose_A=False, transpose_B=False, policy=GemmWarpPolicy.Square,
         clear_accum=False, k_pack=1, wg_wait=0):
    """C += A @ B on tiles; A and B shared or fragment, C a fragment."""


@builtin
def wgmma_gemm(A, B, C, transpose_A=False, transpose_B=False, policy=GemmWarpPolicy.Square, clear_accum=False):
    """TileLang's explicit asynchronous Hopper gemm, awaited by `T.wait_wgmma`. tilec's gemms complete
    in program order (the compiler issues wgmma on sm_90a where it can and waits for it where the
    result is used), so this is `T.gemm` with the same operands."""


@builtin
def wait_wgmma(num_pending=0):
    """TileLang's wait for asynchronous `T.wgmma_gemm`s. tilec's gemms are already complete where the
    program reads their results, so there is nothing to wait for: reported as not applied."""
