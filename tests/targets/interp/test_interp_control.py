"""Control flow: scalar loops with T.alloc_var, scf.if (uniform and per-lane, with results),
scf.for with loop-carried values, T.print."""

import numpy as np
from _interp_util import run_text

# Scalar context: acc = sum of X over a serial loop; odd blocks take the else branch.
SCALAR_LOOP = """
func.func @scalar_loop(%X: !tile.tensor<6xi32>, %Y: !tile.tensor<2xi32>) {
  %c2 = arith.constant 2 : index
  tile.kernel (%bx) in (%c2) threads [32, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    %acc = tile.alloc : !tile.buffer<1xi32, local>
    tile.for %k = %c0 to %c6 step %c1 {
      %a = tile.load %acc[%c0] : !tile.buffer<1xi32, local> -> i32
      %x = tile.load %X[%k] : !tile.tensor<6xi32> -> i32
      %s = arith.addi %a, %x : i32
      tile.store %s, %acc[%c0] : i32, !tile.buffer<1xi32, local>
    }
    %r = tile.load %acc[%c0] : !tile.buffer<1xi32, local> -> i32
    %even = arith.cmpi eq, %bx, %c0 : index
    scf.if %even {
      tile.store %r, %Y[%bx] : i32, !tile.tensor<2xi32>
    } else {
      %neg = arith.subi %r, %r : i32
      %n = arith.subi %neg, %r : i32
      tile.store %n, %Y[%bx] : i32, !tile.tensor<2xi32>
    }
  }
  func.return
}
"""


def test_scalar_loop_and_uniform_branch():
    x = np.arange(6, dtype=np.int32)
    y = np.zeros(2, np.int32)
    run_text(SCALAR_LOOP, x, y)
    np.testing.assert_array_equal(y, [15, -15])


# Per-lane scf.if with a result (relu), and a nested per-lane if inside it.
RELU = """
func.func @relu(%X: !tile.tensor<8xf32>, %Y: !tile.tensor<8xf32>, %Z: !tile.tensor<8xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
    %zero = arith.constant 0.0 : f32
    %c4 = arith.constant 4 : index
    tile.parallel (%i) in [8] {
      %x = tile.load %X[%i] : !tile.tensor<8xf32> -> f32
      %pos = arith.cmpf ogt, %x, %zero : f32
      %r = scf.if %pos -> (f32) {
        %low = arith.cmpi slt, %i, %c4 : index
        scf.if %low {
          tile.store %x, %Z[%i] : f32, !tile.tensor<8xf32>
        }
        scf.yield %x : f32
      } else {
        scf.yield %zero : f32
      }
      tile.store %r, %Y[%i] : f32, !tile.tensor<8xf32>
    }
  }
  func.return
}
"""


def test_per_lane_if_with_results_and_nesting():
    x = np.array([1, -2, 3, -4, 5, -6, 7, -8], np.float32)
    y = np.full(8, 9.0, np.float32)
    z = np.full(8, 9.0, np.float32)
    run_text(RELU, x, y, z)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    np.testing.assert_array_equal(z, [1, 9, 3, 9, 9, 9, 9, 9])


SCF_FOR = """
func.func @power(%Y: !tile.tensor<4xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
    %c0 = arith.constant 0 : index
    %c10 = arith.constant 10 : index
    %one = arith.constant 1.0 : f32
    %two = arith.constant 2.0 : f32
    tile.parallel (%i) in [4] {
      %p = scf.for %k = %c0 to %c10 step %c1 iter_args(%acc = %one) -> (f32) {
        %n = arith.mulf %acc, %two : f32
        scf.yield %n : f32
      }
      tile.store %p, %Y[%i] : f32, !tile.tensor<4xf32>
    }
  }
  func.return
}
"""


def test_scf_for_with_iter_args():
    y = np.zeros(4, np.float32)
    run_text(SCF_FOR, y)
    np.testing.assert_array_equal(y, 1024)


PRINT = """
func.func @show(%X: !tile.tensor<3xf32>) {
  %c2 = arith.constant 2 : index
  tile.kernel (%bx) in (%c2) threads [32, 1, 1] {
    %c0 = arith.constant 0 : index
    %x = tile.load %X[%c0] : !tile.tensor<3xf32> -> f32
    tile.print %x : f32 {msg = "first"}
    tile.print %X : !tile.tensor<3xf32> {msg = "all"}
    tile.barrier
  }
  func.return
}
"""


def test_print_prefixes_the_block(capsys):
    run_text(PRINT, np.array([1.5, 2, 3], np.float32))
    out = capsys.readouterr().out.splitlines()
    assert out == ["[block 0] first 1.5", "[block 0] all [1.5 2.  3. ]",
                   "[block 1] first 1.5", "[block 1] all [1.5 2.  3. ]"]
