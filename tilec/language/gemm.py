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
