"""Property tests: random shapes (tails included) in f16 / bf16 against float64 numpy."""

import numpy as np
from _interp_util import bf16, run_text
from hypothesis import given, settings
from hypothesis import strategies as st

DTYPES = {"f16": np.dtype(np.float16), "bf16": bf16}
EPS = {"f16": 2.0**-11, "bf16": 2.0**-8, "f32": 2.0**-24}
FAST = settings(max_examples=25, deadline=None)

dtypes = st.sampled_from(sorted(DTYPES))
tiles = st.sampled_from([8, 16, 32])


def ceildiv(a, b):
    return -(-a // b)


def randn(seed, shape, dtype):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32).astype(dtype)


COPY = """
func.func @copy(%X: !tile.tensor<{m}x{n}xf32>, %Y: !tile.tensor<{m}x{n}xf32>) {{
  %gx = arith.constant {gx} : index
  %gy = arith.constant {gy} : index
  tile.kernel (%bx, %by) in (%gx, %gy) threads [128, 1, 1] {{
    %bm = arith.constant {bm} : index
    %bn = arith.constant {bn} : index
    %r = arith.muli %by, %bm : index
    %c = arith.muli %bx, %bn : index
    %s = tile.alloc : !tile.buffer<{bm}x{bn}x{t}, shared>
    %x = tile.region %X[%r, %c] : !tile.tensor<{m}x{n}xf32> -> !tile.tensor<{bm}x{bn}xf32>
    tile.copy %x, %s : !tile.tensor<{bm}x{bn}xf32>, !tile.buffer<{bm}x{bn}x{t}, shared>
    %y = tile.region %Y[%r, %c] : !tile.tensor<{m}x{n}xf32> -> !tile.tensor<{bm}x{bn}xf32>
    tile.copy %s, %y : !tile.buffer<{bm}x{bn}x{t}, shared>, !tile.tensor<{bm}x{bn}xf32>
  }}
  func.return
}}
"""


@FAST
@given(m=st.integers(1, 70), n=st.integers(1, 70), bm=tiles, bn=tiles, t=dtypes, seed=st.integers(0, 99))
def test_copy_rounds_through_the_buffer(m, n, bm, bn, t, seed):
    x = randn(seed, (m, n), np.float32) * 100
    y = np.full((m, n), np.nan, np.float32)
    run_text(COPY.format(m=m, n=n, bm=bm, bn=bn, t=t, gx=ceildiv(n, bn), gy=ceildiv(m, bm)), x, y)
    np.testing.assert_allclose(y, x.astype(np.float64), rtol=EPS[t], atol=0)
    np.testing.assert_array_equal(y, x.astype(DTYPES[t]).astype(np.float32))


REDUCE = """
func.func @reduce(%X: !tile.tensor<{m}x{n}x{t}>, %Y: !tile.tensor<{m}x{d}>) {{
  %g = arith.constant {g} : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {{
    %bm = arith.constant {bm} : index
    %c0 = arith.constant 0 : index
    %r = arith.muli %bx, %bm : index
    %x = tile.alloc : !tile.buffer<{bm}x{n}x{t}, fragment>
    %y = tile.alloc : !tile.buffer<{bm}x{d}, fragment>
    %xs = tile.region %X[%r, %c0] : !tile.tensor<{m}x{n}x{t}> -> !tile.tensor<{bm}x{n}x{t}>
    tile.copy %xs, %x : !tile.tensor<{bm}x{n}x{t}>, !tile.buffer<{bm}x{n}x{t}, fragment>
    tile.reduce %x, %y {{kind = "{kind}", dim = 1 : i64, clear = true}} : !tile.buffer<{bm}x{n}x{t}, fragment>, !tile.buffer<{bm}x{d}, fragment>
    %ys = tile.region %Y[%r] : !tile.tensor<{m}x{d}> -> !tile.tensor<{bm}x{d}>
    tile.copy %y, %ys : !tile.buffer<{bm}x{d}, fragment>, !tile.tensor<{bm}x{d}>
  }}
  func.return
}}
"""

_REDUCE_REF = {
    "sum": lambda x: x.sum(1), "max": lambda x: x.max(1), "min": lambda x: x.min(1),
    "abssum": lambda x: np.abs(x).sum(1), "absmax": lambda x: np.abs(x).max(1),
}


@FAST
@given(m=st.integers(1, 70), n=st.integers(1, 64), bm=tiles, t=dtypes, d=st.sampled_from(["f32", "f16", "bf16"]),
       kind=st.sampled_from(sorted(_REDUCE_REF)), seed=st.integers(0, 99))
def test_reduce_rows(m, n, bm, t, d, kind, seed):
    x = randn(seed, (m, n), DTYPES[t])
    y = np.zeros(m, DTYPES.get(d, np.float32))
    run_text(REDUCE.format(m=m, n=n, bm=bm, t=t, d=d, kind=kind, g=ceildiv(m, bm)), x, y)
    ref = _REDUCE_REF[kind](x.astype(np.float64))
    scale = np.abs(x.astype(np.float64)).sum(1) if "sum" in kind else np.abs(ref)
    np.testing.assert_array_less(np.abs(y.astype(np.float64) - ref), EPS[d] * scale + 1e-6)


GEMM = """
func.func @gemm(%A: !tile.tensor<{m}x{k}x{t}>, %B: !tile.tensor<{k}x{n}x{t}>, %C: !tile.tensor<{m}x{n}xf32>) {{
  %gx = arith.constant {gx} : index
  %gy = arith.constant {gy} : index
  tile.kernel (%bx, %by) in (%gx, %gy) threads [128, 1, 1] {{
    %bm = arith.constant {bm} : index
    %bn = arith.constant {bn} : index
    %bk = arith.constant {bk} : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %kt = arith.constant {kt} : index
    %r = arith.muli %by, %bm : index
    %c = arith.muli %bx, %bn : index
    %as = tile.alloc : !tile.buffer<{bm}x{bk}x{t}, shared>
    %bs = tile.alloc : !tile.buffer<{bk}x{bn}x{t}, shared>
    %acc = tile.alloc : !tile.buffer<{bm}x{bn}xf32, fragment>
    %zero = arith.constant 0.0 : f32
    tile.fill %acc, %zero : !tile.buffer<{bm}x{bn}xf32, fragment>, f32
    tile.for %ko = %c0 to %kt step %c1 {{
      %kk = arith.muli %ko, %bk : index
      %a = tile.region %A[%r, %kk] : !tile.tensor<{m}x{k}x{t}> -> !tile.tensor<{bm}x{bk}x{t}>
      tile.copy %a, %as : !tile.tensor<{bm}x{bk}x{t}>, !tile.buffer<{bm}x{bk}x{t}, shared>
      %b = tile.region %B[%kk, %c] : !tile.tensor<{k}x{n}x{t}> -> !tile.tensor<{bk}x{bn}x{t}>
      tile.copy %b, %bs : !tile.tensor<{bk}x{bn}x{t}>, !tile.buffer<{bk}x{bn}x{t}, shared>
      tile.gemm %as, %bs, %acc : !tile.buffer<{bm}x{bk}x{t}, shared>, !tile.buffer<{bk}x{bn}x{t}, shared>, !tile.buffer<{bm}x{bn}xf32, fragment>
    }} {{kind = "pipelined", num_stages = 2 : i64}}
    %cs = tile.region %C[%r, %c] : !tile.tensor<{m}x{n}xf32> -> !tile.tensor<{bm}x{bn}xf32>
    tile.copy %acc, %cs : !tile.buffer<{bm}x{bn}xf32, fragment>, !tile.tensor<{bm}x{bn}xf32>
  }}
  func.return
}}
"""


@FAST
@given(m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(1, 70), bm=tiles, bn=tiles, bk=tiles,
       t=dtypes, seed=st.integers(0, 99))
def test_tiled_gemm(m, n, k, bm, bn, bk, t, seed):
    a, b = randn(seed, (m, k), DTYPES[t]), randn(seed + 1, (k, n), DTYPES[t])
    c = np.full((m, n), np.nan, np.float32)
    text = GEMM.format(m=m, n=n, k=k, bm=bm, bn=bn, bk=bk, t=t, gx=ceildiv(n, bn), gy=ceildiv(m, bm),
                       kt=ceildiv(k, bk))
    run_text(text, a, b, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_less(np.abs(c - a64 @ b64), 1e-5 * (np.abs(a64) @ np.abs(b64)) + 1e-6)


SCAN = """
func.func @scan(%X: !tile.tensor<{m}x{n}x{t}>, %Y: !tile.tensor<{m}x{n}xf32>) {{
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {{
    %x = tile.alloc : !tile.buffer<{m}x{n}x{t}, shared>
    %y = tile.alloc : !tile.buffer<{m}x{n}xf32, shared>
    tile.copy %X, %x : !tile.tensor<{m}x{n}x{t}>, !tile.buffer<{m}x{n}x{t}, shared>
    tile.{op} %x, %y {{dim = {dim} : i64, reverse = {rev}}} : !tile.buffer<{m}x{n}x{t}, shared>, !tile.buffer<{m}x{n}xf32, shared>
    tile.copy %y, %Y : !tile.buffer<{m}x{n}xf32, shared>, !tile.tensor<{m}x{n}xf32>
  }}
  func.return
}}
"""


@FAST
@given(m=st.integers(1, 40), n=st.integers(1, 40), dim=st.integers(0, 1), reverse=st.booleans(),
       op=st.sampled_from(["cumsum", "cummax"]), t=dtypes, seed=st.integers(0, 99))
def test_scans(m, n, dim, reverse, op, t, seed):
    x = randn(seed, (m, n), DTYPES[t])
    y = np.zeros((m, n), np.float32)
    run_text(SCAN.format(m=m, n=n, t=t, op=op, dim=dim, rev=str(reverse).lower()), x, y)
    scan = np.cumsum if op == "cumsum" else np.maximum.accumulate
    x64 = np.flip(x.astype(np.float64), dim) if reverse else x.astype(np.float64)
    ref, bound = scan(x64, axis=dim), np.cumsum(np.abs(x64), axis=dim)
    if reverse:
        ref, bound = np.flip(ref, dim), np.flip(bound, dim)
    np.testing.assert_array_less(np.abs(y - ref), 1e-6 * bound + 1e-7)
