"""Element-wise code: tile.parallel vectorization, scf.if masks, rounding and C integer semantics."""

import numpy as np
import pytest
from _interp_util import ADD, bf16, run_text


def test_add_parallel_with_bounds_guard():
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(5000).astype(np.float16) for _ in range(2))
    c = np.zeros(5000, np.float16)
    run_text(ADD, a, b, c)
    np.testing.assert_array_equal(c, a + b)


# A buffer load whose index is out of range on masked-off lanes only, and a global load
# whose index is out of range on active lanes (reads 0).
MASKED = """
func.func @masked(%A: !tile.tensor<8xf32>, %C: !tile.tensor<16xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %s = tile.alloc : !tile.buffer<4xf32, shared>
    %two = arith.constant 2.0 : f32
    tile.fill %s, %two : !tile.buffer<4xf32, shared>, f32
    tile.parallel (%i) in [16] {
      %small = arith.cmpi slt, %i, %c4 : index
      scf.if %small {
        %v = tile.load %s[%i] : !tile.buffer<4xf32, shared> -> f32
        %w = tile.load %A[%i] : !tile.tensor<8xf32> -> f32
        %x = arith.addf %v, %w : f32
        tile.store %x, %C[%i] : f32, !tile.tensor<16xf32>
      } else {
        %j = arith.subi %i, %c4 : index
        %w = tile.load %A[%j] : !tile.tensor<8xf32> -> f32
        tile.store %w, %C[%i] : f32, !tile.tensor<16xf32>
      }
    }
  }
  func.return
}
"""


def test_masked_loads_do_not_fail_out_of_range():
    a = np.arange(1, 9, dtype=np.float32)
    c = np.full(16, -1.0, np.float32)
    run_text(MASKED, a, c)
    expected = np.concatenate([a[:4] + 2, a, np.zeros(4)]).astype(np.float32)
    np.testing.assert_array_equal(c, expected)


BINARY = """
func.func @binary(%A: !tile.tensor<{n}x{t}>, %B: !tile.tensor<{n}x{t}>, %C: !tile.tensor<{n}x{t}>) {{
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {{
    tile.parallel (%i) in [{n}] {{
      %a = tile.load %A[%i] : !tile.tensor<{n}x{t}> -> {t}
      %b = tile.load %B[%i] : !tile.tensor<{n}x{t}> -> {t}
      %c = arith.{op} %a, %b : {t}
      tile.store %c, %C[%i] : {t}, !tile.tensor<{n}x{t}>
    }}
  }}
  func.return
}}
"""


def binary(op, t, a, b):
    c = np.zeros_like(a)
    run_text(BINARY.format(op=op, t=t, n=len(a)), a, b, c)
    return c


def test_f16_add_rounds_in_f16():
    one = np.ones(3, np.float16)
    c = binary("addf", "f16", np.full(3, 2048, np.float16), one)
    assert c.dtype == np.float16 and (c == 2048).all()


def test_bf16_add_rounds_in_bf16():
    c = binary("addf", "bf16", np.full(3, 256, bf16), np.ones(3, bf16))
    assert c.dtype == bf16 and (c.astype(np.float32) == 256).all()
    c = binary("mulf", "bf16", np.full(1, 1.0078125, bf16), np.full(1, 1.0078125, bf16))
    assert c.astype(np.float32)[0] == np.float32(bf16.type(1.0078125**2))


@pytest.mark.parametrize(("op", "expected"), [
    ("divsi", [-3, -3, 3, 3, 0]),
    ("remsi", [-1, 1, -1, 1, 0]),
    ("floordivsi", [-4, -4, 3, 3, 0]),
    ("ceildivsi", [-3, -3, 4, 4, 0]),
])
def test_signed_division_on_negatives(op, expected):
    a = np.array([-7, 7, -7, 7, 0], np.int32)
    b = np.array([2, -2, -2, 2, 3], np.int32)
    np.testing.assert_array_equal(binary(op, "i32", a, b), expected)


def test_unsigned_division_reinterprets_bits():
    a = np.array([-1, 10], np.int32)
    b = np.array([2, 3], np.int32)
    np.testing.assert_array_equal(binary("divui", "i32", a, b), [0x7FFFFFFF, 3])
    np.testing.assert_array_equal(binary("shrui", "i32", a, np.array([28, 1], np.int32)), [15, 5])


def test_integer_add_wraps():
    a = np.array([2**31 - 1], np.int32)
    np.testing.assert_array_equal(binary("addi", "i32", a, np.ones(1, np.int32)), [-(2**31)])


SCALAR = """
func.func @scalar(%x: f16, %out: !tile.tensor<4xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel (%bx) in (%c1) threads [32, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1i = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %e = math.exp %x : f16
    %e32 = arith.extf %e : f16 to f32
    tile.store %e32, %out[%c0] : f32, !tile.tensor<4xf32>
    %m = arith.constant -2.7 : f32
    %t = arith.fptosi %m : f32 to i32
    %tf = arith.sitofp %t : i32 to f32
    tile.store %tf, %out[%c1i] : f32, !tile.tensor<4xf32>
    %ninf = arith.constant 0xFF800000 : f32
    %z = math.exp %ninf : f32
    tile.store %z, %out[%c2] : f32, !tile.tensor<4xf32>
    %h = arith.truncf %m : f32 to bf16
    %hf = arith.extf %h : bf16 to f32
    tile.store %hf, %out[%c3] : f32, !tile.tensor<4xf32>
  }
  func.return
}
"""


def test_scalar_math_and_conversions():
    out = np.zeros(4, np.float32)
    run_text(SCALAR, 1.5, out)
    assert out[0] == np.float32(np.float16(np.exp(np.float32(np.float16(1.5)))))
    assert out[1] == -2.0  # fptosi truncates toward zero
    assert out[2] == 0.0  # exp(-inf), no warning
    assert out[3] == np.float32(bf16.type(-2.7))
