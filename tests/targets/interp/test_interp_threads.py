"""Per-thread code on the interpreter (targets/interp/threads.py): the thread index is the block's
threads side by side, as lanes; what the lanes cannot run per thread is a located error."""

import numpy as np
import pytest
from _interp_util import run_text

from tilec.errors import TilecError

# Each thread of a [8, 4, 1] block writes its x and y index at its linear position.
THREAD_INDEX = """
func.func @tid(%X: !tile.tensor<32xi32>, %Y: !tile.tensor<32xi32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [8, 4, 1] {
    %x = tile.thread_id {dim = 0 : i64}
    %y = tile.thread_id {dim = 1 : i64}
    %c8 = arith.constant 8 : index
    %row = arith.muli %y, %c8 : index
    %at = arith.addi %row, %x : index
    %xv = arith.index_cast %x : index to i32
    %yv = arith.index_cast %y : index to i32
    tile.store %xv, %X[%at] : i32, !tile.tensor<32xi32>
    tile.store %yv, %Y[%at] : i32, !tile.tensor<32xi32>
  }
  func.return
}
"""


def test_each_thread_runs_its_own_code():
    x, y = run_text(THREAD_INDEX, np.zeros(32, np.int32), np.zeros(32, np.int32))
    np.testing.assert_array_equal(x, np.tile(np.arange(8), 4))
    np.testing.assert_array_equal(y, np.repeat(np.arange(4), 8))


# Threads below 12 copy an element through a branch; then each thread's raw cp.async copies 4
# elements of its row (threads of odd index: predicate false, zeros), rows past the tensor's end
# reading as zeros.
BRANCH_AND_COPY = """
func.func @branch(%X: !tile.tensor<12x8xf16>, %Y: !tile.tensor<32xf16>, %Z: !tile.tensor<16x8xf16>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
    %t = tile.thread_id {dim = 0 : i64}
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c12 = arith.constant 12 : index
    %s = tile.alloc : !tile.buffer<16x8xf16, shared>
    %low = arith.cmpi ult, %t, %c12 : index
    scf.if %low {
      %v = tile.load %X[%t, %c0] : !tile.tensor<12x8xf16> -> f16
      tile.store %v, %Y[%t] : f16, !tile.tensor<32xf16>
    }
    %row = arith.divui %t, %c2 : index
    %q = arith.remui %t, %c2 : index
    %col = arith.muli %q, %c4 : index
    %even = arith.cmpi eq, %q, %c0 : index
    tile.cp_async %X[%row, %col], %s[%row, %col] if %even {elements = 4 : i64} : !tile.tensor<12x8xf16>, !tile.buffer<16x8xf16, shared>
    tile.copy %s, %Z : !tile.buffer<16x8xf16, shared>, !tile.tensor<16x8xf16>
  }
  func.return
}
"""


def test_branches_and_raw_copies_per_thread():
    x = np.arange(96, dtype=np.float16).reshape(12, 8) + 1
    _, y, z = run_text(BRANCH_AND_COPY, x, np.zeros(32, np.float16), np.full((16, 8), -1, np.float16))
    np.testing.assert_array_equal(y[:12], x[:, 0])
    assert not y[12:].any()
    want = np.zeros((16, 8), np.float16)
    want[:12, :4] = x[:, :4]
    np.testing.assert_array_equal(z, want)


def _refused(body: str) -> str:
    return f"""
func.func @refused(%X: !tile.tensor<32xi32>) {{
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {{
    %t = tile.thread_id {{dim = 0 : i64}}
    %c0 = arith.constant 0 : index
    %v = tile.alloc : !tile.buffer<1xi32, local>
{body}
  }}
  func.return
}}
"""


@pytest.mark.parametrize("body, message", [
    ("""    %ti = arith.index_cast %t : index to i32
    tile.store %ti, %v[%c0] : i32, !tile.buffer<1xi32, local> loc("t.py":9:5)""",
     "a value of the thread index (T.get_thread_binding) stored in a local buffer or fragment"),
    ("""    %c4 = arith.constant 4 : index
    %low = arith.cmpi ult, %t, %c4 : index
    scf.if %low {
      %one = arith.constant 1 : i32
      tile.store %one, %v[%c0] : i32, !tile.buffer<1xi32, local> loc("t.py":9:5)
    }""", "a store to a local buffer or fragment under a branch on the thread index"),
    ("""    %c1b = arith.constant 1 : index
    tile.for %i = %c0 to %t step %c1b {
    } loc("t.py":9:5)""", "a loop whose bounds depend on the thread index"),
    ("""    %c4 = arith.constant 4 : index
    %low = arith.cmpi ult, %t, %c4 : index
    scf.if %low {
      tile.parallel (%i) in [4] {
      } loc("t.py":9:5)
    }""", "T.Parallel under a branch on the thread index"),
], ids=["local_store", "store_under_branch", "loop_bound", "parallel_under_branch"])
def test_what_the_lanes_cannot_run_per_thread_is_located(body, message):
    with pytest.raises(TilecError, match=r"t\.py:9:5: error: ") as e:
        run_text(_refused(body), np.zeros(32, np.int32))
    assert message in str(e.value) and "target='sim'" in str(e.value)
