"""TileLang's frontend semantics that its own examples rely on (issue 11, item 4), checked on the
interpreter against numpy: each kernel here is written as a TileLang user writes it.

Kernels live in this file (the frontend reads their source with `inspect`).
"""

# ruff: noqa: F841

import numpy as np
import pytest

import tilec
import tilec.language as T


# --------------------------------------------------------------------------- #
# Loop variables are scoped to their loop
# --------------------------------------------------------------------------- #


@tilec.jit(out_idx=[-1], target="interp")
def shadowing_loops(N, G=4, BS=8):
    @T.prim_func
    def main(Idx: T.Tensor((N,), T.int32), A: T.Tensor((64, BS), T.float32), Out: T.Tensor((N, G, BS), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            acc = T.alloc_fragment((G, BS), T.float32)
            for i in T.serial(N):
                row = Idx[i]
                for i, j in T.Parallel(G, BS):  # shadows the outer `i` inside this loop only
                    acc[i, j] = A[row, j] * (i + 1)
                for j in T.Parallel(BS):
                    acc[0, j] += i  # the outer `i` again
                T.copy(acc, Out[i, :, :])

    return main


def test_an_inner_loop_variable_shadows_the_outer_one_inside_its_loop_only():
    idx = np.array([3, 0, 5], np.int32)
    a = np.random.default_rng(0).standard_normal((64, 8)).astype(np.float32)
    out = shadowing_loops(3)(idx, a)
    want = np.stack([a[r][None, :] * np.arange(1, 5, dtype=np.float32)[:, None] for r in idx])
    want[:, 0, :] += np.arange(3, dtype=np.float32)[:, None]
    np.testing.assert_allclose(out, want, rtol=1e-6)
