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
    """C += A @ B on tiles; A and B shared or fragment, C a fragment. On wgmma, `wg_wait` N > 0 leaves
    the newest N groups running past the gemm and -1 leaves this one running (`T.wait_wgmma` completes
    them); 0 completes it here."""


@builtin
def wgmma_gemm(A, B, C, transpose_A=False, transpose_B=False, policy=GemmWarpPolicy.Square, clear_accum=False):
    """TileLang's explicit asynchronous Hopper gemm: `T.gemm` on wgmma (an error where wgmma cannot
    compute it), left running: `T.wait_wgmma` completes it. Until then the program neither reads C
    nor writes A or B. Targets without wgmma's asynchrony (the interpreter) complete it in order."""


@builtin
def wait_wgmma(num_pending=0):
    """Waits until at most `num_pending` groups of the warpgroup's asynchronous wgmmas (`T.wgmma_gemm`,
    `T.gemm(..., wg_wait=-1)`) are still running, the oldest completing first (`wgmma.wait_group`)."""
