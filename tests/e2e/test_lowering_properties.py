"""The CUDA lowering against the interpreter on random shapes, tiles and thread counts.

Each example builds one kernel, runs it on the interpreter (the tile-level oracle) and on the
thread-level simulator (the CUDA passes and lowering), and compares. Shapes do not divide by
the tiles, so predicated tails, replicated layouts and partial warps all get exercised.
"""

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilec

from kernel_cases import copy_tiles, gemm_tiles, reduce_rows

threads = st.sampled_from([32, 64, 128])
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same(prim, out_idx, inputs, tol=1e-5):
    oracle = tilec.compile(prim, out_idx=out_idx, target="interp")(*inputs)
    lowered = tilec.compile(prim, out_idx=out_idx, target="sim")(*inputs)
    assert torch.allclose(lowered.double(), oracle.double(), atol=tol, rtol=tol), (lowered - oracle).abs().max()


@SETTINGS
@given(m=st.integers(1, 40), n=st.integers(1, 40), bm=st.sampled_from([8, 16]), bn=st.sampled_from([8, 16, 32]),
       dtype=st.sampled_from(["float16", "bfloat16"]))
def test_tiled_copy(m, n, bm, bn, dtype):
    a = torch.randn(m, n).to(getattr(torch, dtype))
    _same(copy_tiles(m, n, bm, bn, dtype), [1], [a], 0)


@SETTINGS
@given(m=st.integers(1, 40), n=st.integers(1, 96), bm=st.sampled_from([4, 8, 16]),
       kind=st.sampled_from(["sum", "max", "absmax"]))
def test_row_reduction(m, n, bm, kind):
    x = torch.randn(m, n).half()
    _same(reduce_rows(m, n, bm, kind, "float16"), [1], [x], 1e-4)


@SETTINGS
@given(m=st.integers(1, 48), n=st.integers(1, 48), k=st.integers(1, 48), bm=st.sampled_from([16, 32]),
       bn=st.sampled_from([16, 32]), bk=st.sampled_from([8, 16]), t=threads)
def test_simt_gemm(m, n, k, bm, bn, bk, t):
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    _same(gemm_tiles(m, n, k, bm, bn, bk, "float16", threads=t), [2], [a, b], 1e-4)


@SETTINGS
@given(m=st.integers(1, 64), n=st.integers(1, 64), k=st.integers(1, 64), bm=st.sampled_from([16, 32, 64]),
       bn=st.sampled_from([16, 32, 64]), bk=st.sampled_from([16, 32]), t=threads, bt=st.booleans(),
       dtype=st.sampled_from(["float16", "bfloat16"]))
def test_tensor_core_gemm(m, n, k, bm, bn, bk, t, bt, dtype):
    a = torch.randn(m, k).to(getattr(torch, dtype))
    b = torch.randn(*((n, k) if bt else (k, n))).to(getattr(torch, dtype))
    prim = gemm_tiles(m, n, k, bm, bn, bk, dtype, transpose_b=bt, threads=t)
    oracle = tilec.compile(prim, out_idx=[2], target="interp")(a, b)
    lowered = tilec.compile(prim, out_idx=[2], target="sim", pass_configs={"tilec.enable_mma": True})(a, b)
    assert torch.allclose(lowered, oracle, atol=1e-3, rtol=1e-3), (lowered - oracle).abs().max()
