"""Whole-tile ops: gemm, reduce, cumsum / cummax, atomics, fill, reshape."""

import numpy as np
import pytest
from _interp_util import run_text

GEMM = """
func.func @gemm(%A: !tile.tensor<32x16xf16>, %B: !tile.tensor<{bshape}xf16>, %C: !tile.tensor<32x24xf32>) {{
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {{
    %c0 = arith.constant 0 : index
    %a = tile.alloc : !tile.buffer<32x16xf16, shared>
    %b = tile.alloc : !tile.buffer<{bshape}xf16, shared>
    %c = tile.alloc : !tile.buffer<32x24xf32, fragment>
    tile.copy %A, %a : !tile.tensor<32x16xf16>, !tile.buffer<32x16xf16, shared>
    tile.copy %B, %b : !tile.tensor<{bshape}xf16>, !tile.buffer<{bshape}xf16, shared>
    tile.copy %C, %c : !tile.tensor<32x24xf32>, !tile.buffer<32x24xf32, fragment>
    tile.gemm %a, %b, %c {{{props}}} : !tile.buffer<32x16xf16, shared>, !tile.buffer<{bshape}xf16, shared>, !tile.buffer<32x24xf32, fragment>
    tile.copy %c, %C : !tile.buffer<32x24xf32, fragment>, !tile.tensor<32x24xf32>
  }}
  func.return
}}
"""


@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("clear", [False, True])
def test_gemm(transpose_b, clear):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((32, 16)).astype(np.float16)
    b = rng.standard_normal((24, 16) if transpose_b else (16, 24)).astype(np.float16)
    c0 = rng.standard_normal((32, 24)).astype(np.float32)
    c = c0.copy()
    props = ", ".join(p for p, on in (("transpose_b = true", transpose_b), ("clear_accum = true", clear)) if on)
    run_text(GEMM.format(bshape="x".join(map(str, b.shape)), props=props), a, b, c)
    ref = a.astype(np.float64) @ (b.T if transpose_b else b).astype(np.float64) + (0 if clear else c0)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


REDUCE = """
func.func @reduce(%X: !tile.tensor<4x6xf32>, %D: !tile.tensor<{dn}xf32>) {{
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {{
    %x = tile.alloc : !tile.buffer<4x6xf32, fragment>
    %d = tile.alloc : !tile.buffer<{dn}xf32, fragment>
    tile.copy %X, %x : !tile.tensor<4x6xf32>, !tile.buffer<4x6xf32, fragment>
    tile.copy %D, %d : !tile.tensor<{dn}xf32>, !tile.buffer<{dn}xf32, fragment>
    tile.reduce %x, %d {{kind = "{kind}", dim = {dim} : i64, clear = {clear}}} : !tile.buffer<4x6xf32, fragment>, !tile.buffer<{dn}xf32, fragment>
    tile.copy %d, %D : !tile.buffer<{dn}xf32, fragment>, !tile.tensor<{dn}xf32>
  }}
  func.return
}}
"""

_REF = {
    "sum": (lambda x, ax: x.sum(ax), np.add),
    "max": (lambda x, ax: x.max(ax), np.maximum),
    "min": (lambda x, ax: x.min(ax), np.minimum),
    "abssum": (lambda x, ax: np.abs(x).sum(ax), np.add),
    "absmax": (lambda x, ax: np.abs(x).max(ax), np.maximum),
}


@pytest.mark.parametrize("kind", sorted(_REF))
@pytest.mark.parametrize("clear", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_reduce(kind, clear, dim):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    dn = 6 if dim == 0 else 4
    d0 = rng.standard_normal(dn).astype(np.float32) * 3
    d = d0.copy()
    run_text(REDUCE.format(kind=kind, dim=dim, dn=dn, clear=str(clear).lower()), x, d)
    reduce, combine = _REF[kind]
    ref = reduce(x, dim) if clear else combine(d0, reduce(x, dim))
    np.testing.assert_allclose(d, ref, rtol=1e-6)


SCAN = """
func.func @scan(%X: !tile.tensor<3x5xf32>, %Y: !tile.tensor<3x5xf32>) {{
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [128, 1, 1] {{
    %x = tile.alloc : !tile.buffer<3x5xf32, fragment>
    tile.copy %X, %x : !tile.tensor<3x5xf32>, !tile.buffer<3x5xf32, fragment>
    tile.{op} %x, %x {{dim = {dim} : i64{rev}}} : !tile.buffer<3x5xf32, fragment>, !tile.buffer<3x5xf32, fragment>
    tile.copy %x, %Y : !tile.buffer<3x5xf32, fragment>, !tile.tensor<3x5xf32>
  }}
  func.return
}}
"""


@pytest.mark.parametrize("op", ["cumsum", "cummax"])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans_in_place(op, dim, reverse):
    x = np.random.default_rng(4).standard_normal((3, 5)).astype(np.float32)
    y = np.zeros_like(x)
    run_text(SCAN.format(op=op, dim=dim, rev=", reverse = true" if reverse else ""), x, y)
    scan = np.cumsum if op == "cumsum" else np.maximum.accumulate
    ref = np.flip(scan(np.flip(x, dim), axis=dim), dim) if reverse else scan(x, axis=dim)
    np.testing.assert_allclose(y, ref, rtol=1e-6)


# 64 lanes add into 4 bins (colliding indices), over 3 blocks; bins past the end are dropped.
ATOMIC = """
func.func @histogram(%X: !tile.tensor<64xf32>, %H: !tile.tensor<4xf32>, %M: !tile.tensor<4xf32>) {
  %c3 = arith.constant 3 : index
  tile.kernel (%bx) in (%c3) threads [64, 1, 1] {
    %c5 = arith.constant 5 : index
    tile.parallel (%i) in [64] {
      %bin = arith.remui %i, %c5 : index
      %x = tile.load %X[%i] : !tile.tensor<64xf32> -> f32
      tile.atomic %H[%bin], %x {kind = "add"} : !tile.tensor<4xf32>, f32
      tile.atomic %M[%bin], %x {kind = "max"} : !tile.tensor<4xf32>, f32
    }
  }
  func.return
}
"""


def test_atomic_with_colliding_indices():
    x = np.arange(64, dtype=np.float32)
    h = np.zeros(4, np.float32)
    m = np.full(4, -1.0, np.float32)
    run_text(ATOMIC, x, h, m)
    bins = np.arange(64) % 5
    np.testing.assert_array_equal(h, [3 * x[bins == k].sum() for k in range(4)])
    np.testing.assert_array_equal(m, [x[bins == k].max() for k in range(4)])


ATOMIC_TILE = """
func.func @atomic_tile(%O: !tile.tensor<10x10xf32>) {
  %c2 = arith.constant 2 : index
  tile.kernel (%bx) in (%c2) threads [64, 1, 1] {
    %c6 = arith.constant 6 : index
    %c0 = arith.constant 0 : index
    %row = arith.muli %bx, %c6 : index
    %one = arith.constant 1.0 : f32
    %t = tile.alloc : !tile.buffer<8x8xf32, fragment>
    tile.fill %t, %one : !tile.buffer<8x8xf32, fragment>, f32
    %o = tile.region %O[%row, %c0] : !tile.tensor<10x10xf32> -> !tile.tensor<8x8xf32>
    tile.atomic %o[], %t {kind = "add"} : !tile.tensor<8x8xf32>, !tile.buffer<8x8xf32, fragment>
  }
  func.return
}
"""


def test_atomic_tile_form_drops_the_tail():
    o = np.zeros((10, 10), np.float32)
    run_text(ATOMIC_TILE, o)
    ref = np.zeros((10, 10), np.float32)
    ref[0:8, 0:8] += 1
    ref[6:10, 0:8] += 1
    np.testing.assert_array_equal(o, ref)


RESHAPE = """
func.func @reshape(%X: !tile.tensor<4x8xf32>, %Y: !tile.tensor<32xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [64, 1, 1] {
    %s = tile.alloc : !tile.buffer<4x8xf32, shared>
    tile.copy %X, %s : !tile.tensor<4x8xf32>, !tile.buffer<4x8xf32, shared>
    %v = tile.reshape %s : !tile.buffer<4x8xf32, shared> -> !tile.buffer<32xf32, shared>
    %two = arith.constant 2.0 : f32
    tile.parallel (%i) in [32] {
      %x = tile.load %v[%i] : !tile.buffer<32xf32, shared> -> f32
      %y = arith.mulf %x, %two : f32
      tile.store %y, %v[%i] : f32, !tile.buffer<32xf32, shared>
    }
    %o = tile.reshape %Y : !tile.tensor<32xf32> -> !tile.tensor<4x8xf32>
    tile.copy %s, %o : !tile.buffer<4x8xf32, shared>, !tile.tensor<4x8xf32>
  }
  func.return
}
"""


def test_reshape_aliases_its_source():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    y = np.zeros(32, np.float32)
    run_text(RESHAPE, x, y)
    np.testing.assert_array_equal(y, 2 * x.ravel())


# A serial loop inside T.Parallel with a per-lane accumulator (T.alloc_var inside the loop
# nest), and a copy that converts f32 -> i32 truncating toward zero.
ROW_SUM = """
func.func @row_sum(%X: !tile.tensor<4x5xf32>, %Y: !tile.tensor<4xi32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [64, 1, 1] {
    %c0 = arith.constant 0 : index
    %c5 = arith.constant 5 : index
    %f = tile.alloc : !tile.buffer<4xf32, fragment>
    tile.parallel (%i) in [4] {
      %acc = tile.alloc : !tile.buffer<1xf32, local>
      tile.for %k = %c0 to %c5 step %c1 {
        %a = tile.load %acc[%c0] : !tile.buffer<1xf32, local> -> f32
        %x = tile.load %X[%i, %k] : !tile.tensor<4x5xf32> -> f32
        %s = arith.addf %a, %x : f32
        tile.store %s, %acc[%c0] : f32, !tile.buffer<1xf32, local>
      }
      %r = tile.load %acc[%c0] : !tile.buffer<1xf32, local> -> f32
      tile.store %r, %f[%i] : f32, !tile.buffer<4xf32, fragment>
    }
    tile.copy %f, %Y : !tile.buffer<4xf32, fragment>, !tile.tensor<4xi32>
  }
  func.return
}
"""


def test_serial_loop_in_parallel_with_private_accumulator():
    x = np.array([[0.5, 0.5, 0.5, 0.5, 0.4], [-0.5] * 5, [1, 2, 3, 4, 5], [0] * 5], np.float32)
    y = np.zeros(4, np.int32)
    run_text(ROW_SUM, x, y)
    np.testing.assert_array_equal(y, [2, -2, 15, 0])
