"""tile.copy and tile.region: tails of a global tensor are read as 0 and never written."""

import numpy as np
from _interp_util import run_text

COPY_TAILS = """
func.func @copy_tails(%A: !tile.tensor<100x70xf32>, %B: !tile.tensor<100x70xf32>) {
  %c2 = arith.constant 2 : index
  tile.kernel (%bx, %by) in (%c2, %c2) threads [128, 1, 1] {
    %c64 = arith.constant 64 : index
    %row = arith.muli %by, %c64 : index
    %col = arith.muli %bx, %c64 : index
    %s = tile.alloc : !tile.buffer<64x64xf32, shared>
    %a = tile.region %A[%row, %col] : !tile.tensor<100x70xf32> -> !tile.tensor<64x64xf32>
    tile.copy %a, %s : !tile.tensor<64x64xf32>, !tile.buffer<64x64xf32, shared>
    %one = arith.constant 1.0 : f32
    tile.parallel (%i, %j) in [64, 64] {
      %v = tile.load %s[%i, %j] : !tile.buffer<64x64xf32, shared> -> f32
      %w = arith.addf %v, %one : f32
      tile.store %w, %s[%i, %j] : f32, !tile.buffer<64x64xf32, shared>
    }
    %b = tile.region %B[%row, %col] : !tile.tensor<100x70xf32> -> !tile.tensor<64x64xf32>
    tile.copy %s, %b : !tile.buffer<64x64xf32, shared>, !tile.tensor<64x64xf32>
  }
  func.return
}
"""


def test_copy_tails_read_zero_and_drop_writes():
    a = np.random.default_rng(0).standard_normal((100, 70)).astype(np.float32)
    b = np.full((100, 70), -7.0, np.float32)
    run_text(COPY_TAILS, a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_copy_tails_out_of_range_is_zero():
    # Every block's tile reaches past (100, 70) except block (0, 0): the padding read as 0.
    text = COPY_TAILS.replace("tile.copy %s, %b", "%z = tile.region %B[%row, %col] : !tile.tensor<100x70xf32> -> !tile.tensor<64x64xf32>\n    tile.copy %s, %z")
    a = np.ones((100, 70), np.float32)
    b = np.zeros((100, 70), np.float32)
    run_text(text, a, b)
    assert (b == 2).all()
