"""User-facing errors of the interpreter: located TilecErrors, never raw numpy exceptions."""

import numpy as np
import pytest
from _interp_util import parse, run_text
from tilec.targets.interp import run
from xdsl.utils.exceptions import VerifyException

from tilec.errors import TilecError

ASSERT = """
func.func @check(%X: !tile.tensor<8xf32>) {
  %c2 = arith.constant 2 : index
  tile.kernel (%bx) in (%c2) threads [32, 1, 1] {
    %zero = arith.constant 0.0 : f32
    tile.parallel (%i) in [8] {
      %x = tile.load %X[%i] : !tile.tensor<8xf32> -> f32
      %ok = arith.cmpf oge, %x, %zero : f32
      tile.device_assert %ok {msg = "x must be non-negative"} loc("k.py":3:5)
    }
  }
  func.return
}
"""


def test_device_assert_failure_is_located():
    x = np.ones(8, np.float32)
    run_text(ASSERT, x)  # passes
    x[5] = -1
    with pytest.raises(TilecError, match=r"k\.py:3:5: error: device assertion failed in block \(0\): "
                                         r"x must be non-negative"):
        run_text(ASSERT, x)


ARGS = """
func.func @args(%A: !tile.tensor<4x8xf16>, %n: i32) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
  }
  func.return
}
"""


@pytest.mark.parametrize(("args", "message"), [
    ((np.zeros((4, 8), np.float32), 1), r"argument 0 of @args: expected dtype float16 \(f16\), got float32"),
    ((np.zeros((4, 9), np.float16), 1), r"argument 0 of @args: expected shape \(4, 8\), got \(4, 9\)"),
    ((np.zeros(32, np.float16), 1), r"argument 0 of @args: expected shape \(4, 8\), got \(32,\)"),
    ((np.zeros((4, 8), np.float16), 1.5), r"argument 1 of @args: expected a scalar of type i32, got 1.5"),
    ((np.zeros((4, 8), np.float16),), r"@args takes 2 arguments, got 1"),
])
def test_argument_mismatch(args, message):
    with pytest.raises(TilecError, match=message):
        run_text(ARGS, *args)


def test_dynamic_dims_bind_from_the_array():
    # `?` does not parse in the tile dialect yet (xDSL's parser yields -2**63, the dialect
    # expects -1), so the parameter types are made dynamic after parsing: the interpreter
    # checks arguments against the function type.
    from tilec.dialects.tile import DYNAMIC, TensorType
    from xdsl.dialects.builtin import Float32Type, FunctionType

    module = parse(COPY_DYN)
    fn = next(op for op in module.walk() if op.name == "func.func")
    dyn = TensorType([DYNAMIC], Float32Type())
    fn.function_type = FunctionType.from_lists([dyn, dyn], [])
    x = np.arange(10, dtype=np.float32)
    y = np.zeros(10, np.float32)
    run(module, [x, y])
    np.testing.assert_array_equal(y, x)
    with pytest.raises(TilecError, match=r"expected shape \(\?\), got \(2, 5\)"):
        run(module, [x.reshape(2, 5), y])


COPY_DYN = """
func.func @copy_dyn(%X: !tile.tensor<10xf32>, %Y: !tile.tensor<10xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
    %n = tile.dim %X {dim = 0 : i64} : !tile.tensor<10xf32>
    tile.parallel (%i) in [16] {
      %ok = arith.cmpi slt, %i, %n : index
      scf.if %ok {
        %x = tile.load %X[%i] : !tile.tensor<10xf32> -> f32
        tile.store %x, %Y[%i] : f32, !tile.tensor<10xf32>
      }
    }
  }
  func.return
}
"""


def test_thread_index_inside_parallel_is_located():
    """The interpreter runs the thread index as lanes of the block's threads, which T.Parallel's
    own lanes cannot meet (tests/targets/interp/test_interp_threads.py)."""
    text = """
func.func @tid(%X: !tile.tensor<8xi32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
    %t = tile.thread_id {dim = 0 : i64}
    tile.parallel (%i) in [8] {
      %s = arith.addi %t, %i : index loc("t.py":7:9)
      %v = arith.index_cast %s : index to i32
      tile.store %v, %X[%i] : i32, !tile.tensor<8xi32>
    }
  }
  func.return
}
"""
    with pytest.raises(TilecError, match=r"t\.py:7:9: error: the thread index \(T.get_thread_binding\) inside "
                                         r"T.Parallel is not supported by the interpreter"):
        run_text(text, np.zeros(8, np.int32))


def test_buffer_index_out_of_range_is_located():
    text = """
func.func @oob(%X: !tile.tensor<8xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
    %s = tile.alloc : !tile.buffer<4xf32, shared>
    tile.parallel (%i) in [8] {
      %v = tile.load %s[%i] : !tile.buffer<4xf32, shared> -> f32 loc("o.py":4:2)
      tile.store %v, %X[%i] : f32, !tile.tensor<8xf32>
    }
  }
  func.return
}
"""
    with pytest.raises(TilecError, match=r"o\.py:4:2: error: tile.load reads out of range: index 4 of dim 0 "
                                         r"is outside a buffer of shape \(4,\)"):
        run_text(text, np.zeros(8, np.float32))


def test_buffer_write_out_of_range_is_reported_as_a_write():
    text = """
func.func @oob(%X: !tile.tensor<8xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
    %c4 = arith.constant 4 : index
    %s = tile.alloc : !tile.buffer<8xf32, shared>
    tile.parallel (%i) in [8] {
      %v = tile.load %X[%i] : !tile.tensor<8xf32> -> f32
      %j = arith.addi %i, %c4 : index
      tile.store %v, %s[%j] : f32, !tile.buffer<8xf32, shared> loc("w.py":6:3)
    }
  }
  func.return
}
"""
    with pytest.raises(TilecError, match=r"w\.py:6:3: error: tile.store writes out of range: index 8 of dim 0 "
                                         r"is outside a buffer of shape \(8,\)"):
        run_text(text, np.zeros(8, np.float32))


def test_which_function():
    with pytest.raises(TilecError, match="no function @nope"):
        run_text(ARGS, np.zeros((4, 8), np.float16), 1, func_name="nope")


def test_tile_op_inside_a_parallel_is_refused_by_the_verifier():
    # A whole-tile op in a per-element loop is a language error (every target refuses it), so
    # it never reaches the interpreter's own check for tile ops under a per-element condition.
    text = """
func.func @bad(%X: !tile.tensor<8xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    tile.parallel (%i) in [8] {
      %low = arith.cmpi slt, %i, %c4 : index
      scf.if %low {
        tile.fill %X, %zero : !tile.tensor<8xf32>, f32 loc("f.py":9:8)
      }
    }
  }
  func.return
}
"""
    with pytest.raises(VerifyException, match=r"T.fill / T.clear \(tile.fill\) works on whole tiles and cannot be "
                                              r"inside a tile.parallel"):
        parse(text)


def test_loop_bounds_that_vary_per_element_are_refused_by_the_verifier():
    # A language rule (the CUDA lowering runs one range per vector of elements), so the
    # interpreter's own "differs between the elements" check is not reached for loops.
    text = """
func.func @bad(%X: !tile.tensor<8xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
    %c0 = arith.constant 0 : index
    tile.parallel (%i) in [8] {
      tile.for %k = %c0 to %i step %c1 {
      } loc("l.py":2:3)
    }
  }
  func.return
}
"""
    with pytest.raises(VerifyException, match=r"tile.parallel: the bounds of a tile.for inside it differ between "
                                              r"its iterations"):
        parse(text)


def test_unsupported_op():
    text = """
func.func @bad(%X: !tile.tensor<8xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
    %v = arith.constant 2 : i32
    %p = math.ctpop %v : i32 loc("u.py":5:1)
  }
  func.return
}
"""
    with pytest.raises(TilecError, match=r"u\.py:5:1: error: math.ctpop is not supported by the interpreter"):
        run_text(text, np.zeros(8, np.float32))
