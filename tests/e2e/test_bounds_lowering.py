"""Accesses tile-legalize-bounds proves in bounds are lowered without predicates; the others keep them.

The thread-level IR of a tile copy whose regions provably stay inside the tensor has no bounds
compare; the same kernel on a shape that does not divide by the tile keeps the compares
(and the simulator checks both compute the right thing).
"""

import re

import numpy as np
import pytest

import tilec
import tilec.language as T


def copy_rows(m, n, bm=4):
    @T.prim_func
    def main(A: T.Tensor((m, n), T.float16), B: T.Tensor((m, n), T.float16)):
        with T.Kernel(T.ceildiv(m, bm), threads=128) as bx:
            x = T.alloc_fragment((bm, n), T.float32)
            T.copy(A[bx * bm, 0], x)
            T.copy(x, B[bx * bm, 0])

    return main


def _bounds_compares(thread_ir: str) -> int:
    return len(re.findall(r"arith\.cmpi (slt|ult|sgt|ugt|sle|ule)", thread_ir))


@pytest.mark.parametrize("m,proven", [(64, True), (66, False)])
def test_predicates_only_where_unproven(m, proven):
    kernel = tilec.compile(copy_rows(m, 256), out_idx=[1], target="sim")
    compares = _bounds_compares(kernel.get_ir("thread"))
    assert (compares == 0) == proven, f"{compares} bounds compares for m={m}"
    a = np.random.default_rng(m).standard_normal((m, 256)).astype(np.float16)
    assert np.array_equal(np.asarray(kernel(a)), a)
