"""Property tests through the whole CPU path: Python kernel → frontend → tile IR → interpreter.

Random shapes that do not divide by the tile (tails read as zero and are never written),
float16 and bfloat16 data, checked against float64 numpy references.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as T
from kernel_cases import copy_tiles, gemm_tiles, reduce_rows

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
sizes = st.integers(1, 70)
tiles = st.sampled_from([8, 16, 32])
dtypes = st.sampled_from(sorted(DTYPES))


def _rand(*shape, dtype: str) -> torch.Tensor:
    return torch.randn(*shape).to(DTYPES[dtype])


def _close(out: torch.Tensor, ref: np.ndarray, tol: float) -> None:
    out = out.double().numpy()
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    assert np.allclose(out, ref, atol=tol * scale, rtol=tol), np.abs(out - ref).max()


@settings(max_examples=20, deadline=None)
@given(m=sizes, n=sizes, bm=tiles, bn=tiles, dtype=dtypes)
def test_copy_round_trips_with_tails(m, n, bm, bn, dtype):
    a = _rand(m, n, dtype=dtype)
    out = tilec.compile(copy_tiles(m, n, bm, bn, dtype), out_idx=[1], target="interp")(a)
    assert torch.equal(out, a)


@settings(max_examples=20, deadline=None)
@given(m=sizes, n=sizes, bm=tiles, kind=st.sampled_from(["sum", "max", "absmax"]), dtype=dtypes)
def test_row_reductions(m, n, bm, kind, dtype):
    x = _rand(m, n, dtype=dtype)
    out = tilec.compile(reduce_rows(m, n, bm, kind, dtype), out_idx=[1], target="interp")(x)
    xd = x.double().numpy()
    ref = {"sum": xd.sum(1), "max": xd.max(1), "absmax": np.abs(xd).max(1)}[kind]
    _close(out, ref, 1e-3)


@settings(max_examples=20, deadline=None)
@given(m=sizes, n=sizes, k=sizes, bm=tiles, bn=tiles, bk=tiles, dtype=dtypes)
def test_gemm_with_tails(m, n, k, bm, bn, bk, dtype):
    a, b = _rand(m, k, dtype=dtype), _rand(k, n, dtype=dtype)
    out = tilec.compile(gemm_tiles(m, n, k, bm, bn, bk, dtype, threads=64), out_idx=[2], target="interp")(a, b)
    _close(out, a.double().numpy() @ b.double().numpy(), 1e-3)


def cumsum(m, n, reverse, dtype):
    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), Y: T.Tensor((m, n), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((m, n), T.float32)
            T.copy(X, x)
            T.cumsum(x, dim=1, reverse=reverse)
            T.copy(x, Y)

    return main


@settings(max_examples=20, deadline=None)
@given(m=st.integers(1, 16), n=sizes, reverse=st.booleans(), dtype=dtypes)
def test_cumsum(m, n, reverse, dtype):
    x = _rand(m, n, dtype=dtype)
    out = tilec.compile(cumsum(m, n, reverse, dtype), out_idx=[1], target="interp")(x)
    xd = x.double().numpy()
    ref = np.flip(np.cumsum(np.flip(xd, 1), 1), 1) if reverse else np.cumsum(xd, 1)
    _close(out, ref, 1e-4)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_elementwise_rounds_like_the_dtype(dtype):
    """Half-precision results round after each operation, as they do on the GPU."""

    @T.prim_func
    def main(A: T.Tensor((4,), dtype), B: T.Tensor((4,), dtype)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(4):
                B[i] = A[i] + A[i] * A[i]

    a = torch.tensor([2048.0, 1.0 / 3, 255.0, -7.5]).to(DTYPES[dtype])
    out = tilec.compile(main, out_idx=[1], target="interp")(a)
    assert torch.equal(out, a + a * a)
