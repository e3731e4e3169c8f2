"""tile-longest-first: blocks whose loops run longer launch first (causal attention's order).

The pass only marks the kernel (`launch_reversed`); the lowering numbers the blocks from the
last. What each block computes must not change: a kernel whose block bx loops bx + 1 times and
writes its bx and its trip count is simulated with the order reversed and as the hardware
gives it, and both must match.

Kernels live in this file (the frontend reads their source with `inspect`).
"""

import numpy as np
import pytest

import tilec
import tilec.language as T


def triangle(blocks=6, width=32):
    """Block bx adds bx + 1 rows of X: row sums of a triangle, one row block per bx."""

    @T.prim_func
    def main(X: T.Tensor((blocks, width), T.float32), Out: T.Tensor((blocks, width), T.float32)):
        with T.Kernel(blocks, threads=width) as bx:
            acc = T.alloc_fragment([width], T.float32)
            T.fill(acc, 0)
            for k in T.serial(bx + 1):
                for j in T.Parallel(width):
                    acc[j] += X[k, j] + bx * 0
            for j in T.Parallel(width):
                Out[bx, j] = acc[j] + bx * 1000
    return main


@pytest.mark.parametrize("longest_first", [True, False], ids=["reversed", "hardware"])
def test_the_order_changes_no_result(longest_first):
    blocks, width = 6, 32
    x = np.random.default_rng(3).standard_normal((blocks, width)).astype(np.float32)
    kernel = tilec.compile(triangle(blocks, width), out_idx=[1], target="sim",
                           pass_configs={"tilec.longest_first": longest_first})
    assert ("launch_reversed = array<i64: 0>" in kernel.get_ir("tile-opt")) == longest_first
    thread_ir = kernel.get_ir("thread")
    out = np.asarray(kernel(x))
    ref = np.cumsum(x, axis=0) + 1000 * np.arange(blocks, dtype=np.float32)[:, None]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert "gpu.block_id" in thread_ir
