"""The reference kernels, hand-lowered to tile IR: results against numpy, and speed.

The six kernels together must run in well under 10 s; `test_reference_kernels_are_fast`
keeps a generous bound so that a regression to per-element Python loops shows up.
"""

import math
import time

import numpy as np
import pytest
from _interp_util import ADD, parse
from tilec.targets.interp import run

SOFTMAX = """
func.func @softmax(%X: !tile.tensor<64x512xf16>, %Y: !tile.tensor<64x512xf16>) {
  %g = arith.constant 16 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %r = arith.muli %bx, %c4 : index
    %x = tile.alloc : !tile.buffer<4x512xf32, fragment>
    %m = tile.alloc : !tile.buffer<4xf32, fragment>
    %s = tile.alloc : !tile.buffer<4xf32, fragment>
    %xs = tile.region %X[%r, %c0] : !tile.tensor<64x512xf16> -> !tile.tensor<4x512xf16>
    tile.copy %xs, %x : !tile.tensor<4x512xf16>, !tile.buffer<4x512xf32, fragment>
    tile.reduce %x, %m {kind = "max", dim = 1 : i64, clear = true} : !tile.buffer<4x512xf32, fragment>, !tile.buffer<4xf32, fragment>
    tile.parallel (%i, %j) in [4, 512] {
      %v = tile.load %x[%i, %j] : !tile.buffer<4x512xf32, fragment> -> f32
      %mi = tile.load %m[%i] : !tile.buffer<4xf32, fragment> -> f32
      %d = arith.subf %v, %mi : f32
      %e = math.exp %d : f32
      tile.store %e, %x[%i, %j] : f32, !tile.buffer<4x512xf32, fragment>
    }
    tile.reduce %x, %s {kind = "sum", dim = 1 : i64, clear = true} : !tile.buffer<4x512xf32, fragment>, !tile.buffer<4xf32, fragment>
    tile.parallel (%i, %j) in [4, 512] {
      %v = tile.load %x[%i, %j] : !tile.buffer<4x512xf32, fragment> -> f32
      %si = tile.load %s[%i] : !tile.buffer<4xf32, fragment> -> f32
      %q = arith.divf %v, %si : f32
      tile.store %q, %x[%i, %j] : f32, !tile.buffer<4x512xf32, fragment>
    }
    %ys = tile.region %Y[%r, %c0] : !tile.tensor<64x512xf16> -> !tile.tensor<4x512xf16>
    tile.copy %x, %ys : !tile.buffer<4x512xf32, fragment>, !tile.tensor<4x512xf16>
  }
  func.return
}
"""

RMSNORM = """
func.func @rmsnorm(%X: !tile.tensor<32x256xf16>, %Y: !tile.tensor<32x256xf16>) {
  %g = arith.constant 4 : index
  tile.kernel (%bx) in (%g) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %n = arith.constant 256.0 : f32
    %eps = arith.constant 1.0e-6 : f32
    %r = arith.muli %bx, %c8 : index
    %x = tile.alloc : !tile.buffer<8x256xf32, fragment>
    %sq = tile.alloc : !tile.buffer<8x256xf32, fragment>
    %s = tile.alloc : !tile.buffer<8xf32, fragment>
    %xs = tile.region %X[%r, %c0] : !tile.tensor<32x256xf16> -> !tile.tensor<8x256xf16>
    tile.copy %xs, %x : !tile.tensor<8x256xf16>, !tile.buffer<8x256xf32, fragment>
    tile.parallel (%i, %j) in [8, 256] {
      %v = tile.load %x[%i, %j] : !tile.buffer<8x256xf32, fragment> -> f32
      %v2 = arith.mulf %v, %v : f32
      tile.store %v2, %sq[%i, %j] : f32, !tile.buffer<8x256xf32, fragment>
    }
    tile.reduce %sq, %s {kind = "sum", dim = 1 : i64, clear = true} : !tile.buffer<8x256xf32, fragment>, !tile.buffer<8xf32, fragment>
    tile.parallel (%i, %j) in [8, 256] {
      %v = tile.load %x[%i, %j] : !tile.buffer<8x256xf32, fragment> -> f32
      %si = tile.load %s[%i] : !tile.buffer<8xf32, fragment> -> f32
      %mean = arith.divf %si, %n : f32
      %me = arith.addf %mean, %eps : f32
      %rs = math.rsqrt %me : f32
      %o = arith.mulf %v, %rs : f32
      tile.store %o, %x[%i, %j] : f32, !tile.buffer<8x256xf32, fragment>
    }
    %ys = tile.region %Y[%r, %c0] : !tile.tensor<32x256xf16> -> !tile.tensor<8x256xf16>
    tile.copy %x, %ys : !tile.buffer<8x256xf32, fragment>, !tile.tensor<8x256xf16>
  }
  func.return
}
"""

# C = A @ B (+ bias, then gelu when EPILOGUE is spliced in), 64x64x32 tiles, 16 blocks.
GEMM = """
func.func @gemm(%A: !tile.tensor<256x128xf16>, %B: !tile.tensor<128x256xf16>, %bias: !tile.tensor<256xf32>, %C: !tile.tensor<256x256xf16>) {
  %c4 = arith.constant 4 : index
  tile.kernel (%bx, %by) in (%c4, %c4) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %r = arith.muli %by, %c64 : index
    %c = arith.muli %bx, %c64 : index
    %as = tile.alloc : !tile.buffer<64x32xf16, shared>
    %bs = tile.alloc : !tile.buffer<32x64xf16, shared>
    %acc = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %zero = arith.constant 0.0 : f32
    tile.fill %acc, %zero : !tile.buffer<64x64xf32, fragment>, f32
    tile.for %ko = %c0 to %c4 step %c1 {
      %k = arith.muli %ko, %c32 : index
      %a = tile.region %A[%r, %k] : !tile.tensor<256x128xf16> -> !tile.tensor<64x32xf16>
      tile.copy %a, %as : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>
      %b = tile.region %B[%k, %c] : !tile.tensor<128x256xf16> -> !tile.tensor<32x64xf16>
      tile.copy %b, %bs : !tile.tensor<32x64xf16>, !tile.buffer<32x64xf16, shared>
      tile.gemm %as, %bs, %acc : !tile.buffer<64x32xf16, shared>, !tile.buffer<32x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    } {kind = "pipelined", num_stages = 3 : i64}
    EPILOGUE
    %cs = tile.region %C[%r, %c] : !tile.tensor<256x256xf16> -> !tile.tensor<64x64xf16>
    tile.copy %acc, %cs : !tile.buffer<64x64xf32, fragment>, !tile.tensor<64x64xf16>
  }
  func.return
}
"""

BIAS_GELU = """
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %rsqrt2 = arith.constant 0.70710678118654752 : f32
    tile.parallel (%i, %j) in [64, 64] {
      %v = tile.load %acc[%i, %j] : !tile.buffer<64x64xf32, fragment> -> f32
      %col = arith.addi %c, %j : index
      %bj = tile.load %bias[%col] : !tile.tensor<256xf32> -> f32
      %x = arith.addf %v, %bj : f32
      %xs = arith.mulf %x, %rsqrt2 : f32
      %e = math.erf %xs : f32
      %e1 = arith.addf %e, %one : f32
      %hx = arith.mulf %x, %half : f32
      %g = arith.mulf %hx, %e1 : f32
      tile.store %g, %acc[%i, %j] : f32, !tile.buffer<64x64xf32, fragment>
    }
"""

# Flash attention, seq 128, dim 64, 64x64 tiles, grid (2 query tiles, 4 heads).
FLASH = """
func.func @flash(%Q: !tile.tensor<4x128x64xf16>, %K: !tile.tensor<4x128x64xf16>, %V: !tile.tensor<4x128x64xf16>, %O: !tile.tensor<4x128x64xf16>) {
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  tile.kernel (%bx, %bh) in (%c2, %c4) threads [128, 1, 1] {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %scale = arith.constant 0.125 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %zero = arith.constant 0.0 : f32
    %q0 = arith.muli %bx, %c64 : index
    %qs = tile.alloc : !tile.buffer<64x64xf16, shared>
    %ks = tile.alloc : !tile.buffer<64x64xf16, shared>
    %vs = tile.alloc : !tile.buffer<64x64xf16, shared>
    %ps = tile.alloc : !tile.buffer<64x64xf16, shared>
    %s = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %o = tile.alloc : !tile.buffer<64x64xf32, fragment>
    %m = tile.alloc : !tile.buffer<64xf32, fragment>
    %mp = tile.alloc : !tile.buffer<64xf32, fragment>
    %l = tile.alloc : !tile.buffer<64xf32, fragment>
    %rs = tile.alloc : !tile.buffer<64xf32, fragment>
    %q = tile.region %Q[%bh, %q0, %c0] : !tile.tensor<4x128x64xf16> -> !tile.tensor<1x64x64xf16>
    tile.copy %q, %qs : !tile.tensor<1x64x64xf16>, !tile.buffer<64x64xf16, shared>
    tile.fill %o, %zero : !tile.buffer<64x64xf32, fragment>, f32
    tile.fill %m, %ninf : !tile.buffer<64xf32, fragment>, f32
    tile.fill %l, %zero : !tile.buffer<64xf32, fragment>, f32
    tile.for %kt = %c0 to %c2 step %c1 {
      %k0 = arith.muli %kt, %c64 : index
      %k = tile.region %K[%bh, %k0, %c0] : !tile.tensor<4x128x64xf16> -> !tile.tensor<1x64x64xf16>
      tile.copy %k, %ks : !tile.tensor<1x64x64xf16>, !tile.buffer<64x64xf16, shared>
      %v = tile.region %V[%bh, %k0, %c0] : !tile.tensor<4x128x64xf16> -> !tile.tensor<1x64x64xf16>
      tile.copy %v, %vs : !tile.tensor<1x64x64xf16>, !tile.buffer<64x64xf16, shared>
      tile.gemm %qs, %ks, %s {transpose_b = true, clear_accum = true} : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
      tile.copy %m, %mp : !tile.buffer<64xf32, fragment>, !tile.buffer<64xf32, fragment>
      tile.parallel (%i, %j) in [64, 64] {
        %x = tile.load %s[%i, %j] : !tile.buffer<64x64xf32, fragment> -> f32
        %y = arith.mulf %x, %scale : f32
        tile.store %y, %s[%i, %j] : f32, !tile.buffer<64x64xf32, fragment>
      }
      tile.reduce %s, %m {kind = "max", dim = 1 : i64, clear = false} : !tile.buffer<64x64xf32, fragment>, !tile.buffer<64xf32, fragment>
      tile.parallel (%i, %j) in [64, 64] {
        %x = tile.load %s[%i, %j] : !tile.buffer<64x64xf32, fragment> -> f32
        %mi = tile.load %m[%i] : !tile.buffer<64xf32, fragment> -> f32
        %d = arith.subf %x, %mi : f32
        %p = math.exp %d : f32
        tile.store %p, %s[%i, %j] : f32, !tile.buffer<64x64xf32, fragment>
      }
      tile.reduce %s, %rs {kind = "sum", dim = 1 : i64, clear = true} : !tile.buffer<64x64xf32, fragment>, !tile.buffer<64xf32, fragment>
      tile.parallel (%i, %j) in [64, 64] {
        %mo = tile.load %mp[%i] : !tile.buffer<64xf32, fragment> -> f32
        %mi = tile.load %m[%i] : !tile.buffer<64xf32, fragment> -> f32
        %d = arith.subf %mo, %mi : f32
        %f = math.exp %d : f32
        %a = tile.load %o[%i, %j] : !tile.buffer<64x64xf32, fragment> -> f32
        %af = arith.mulf %a, %f : f32
        tile.store %af, %o[%i, %j] : f32, !tile.buffer<64x64xf32, fragment>
      }
      tile.parallel (%i) in [64] {
        %mo = tile.load %mp[%i] : !tile.buffer<64xf32, fragment> -> f32
        %mi = tile.load %m[%i] : !tile.buffer<64xf32, fragment> -> f32
        %d = arith.subf %mo, %mi : f32
        %f = math.exp %d : f32
        %li = tile.load %l[%i] : !tile.buffer<64xf32, fragment> -> f32
        %r = tile.load %rs[%i] : !tile.buffer<64xf32, fragment> -> f32
        %lf = arith.mulf %li, %f : f32
        %ln = arith.addf %lf, %r : f32
        tile.store %ln, %l[%i] : f32, !tile.buffer<64xf32, fragment>
      }
      tile.copy %s, %ps : !tile.buffer<64x64xf32, fragment>, !tile.buffer<64x64xf16, shared>
      tile.gemm %ps, %vs, %o : !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf16, shared>, !tile.buffer<64x64xf32, fragment>
    }
    tile.parallel (%i, %j) in [64, 64] {
      %a = tile.load %o[%i, %j] : !tile.buffer<64x64xf32, fragment> -> f32
      %li = tile.load %l[%i] : !tile.buffer<64xf32, fragment> -> f32
      %y = arith.divf %a, %li : f32
      tile.store %y, %o[%i, %j] : f32, !tile.buffer<64x64xf32, fragment>
    }
    %out = tile.region %O[%bh, %q0, %c0] : !tile.tensor<4x128x64xf16> -> !tile.tensor<1x64x64xf16>
    tile.copy %o, %out : !tile.buffer<64x64xf32, fragment>, !tile.tensor<1x64x64xf16>
  }
  func.return
}
"""


def _rand(seed, *shape, dtype=np.float16):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _softmax():
    x, y = _rand(0, 64, 512), np.zeros((64, 512), np.float16)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    return SOFTMAX, [x, y], y, e / e.sum(1, keepdims=True)


def _rmsnorm():
    x, y = _rand(1, 32, 256), np.zeros((32, 256), np.float16)
    x64 = x.astype(np.float64)
    return RMSNORM, [x, y], y, x64 / np.sqrt((x64**2).mean(1, keepdims=True) + 1e-6)


def _gemm(epilogue):
    a, b, bias = _rand(2, 256, 128), _rand(3, 128, 256), _rand(4, 256, dtype=np.float32)
    c = np.zeros((256, 256), np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if epilogue:
        x = ref + bias
        ref = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    return GEMM.replace("EPILOGUE", BIAS_GELU if epilogue else ""), [a, b, bias, c], c, ref


def _flash():
    q, k, v = (_rand(s, 4, 128, 64) for s in (5, 6, 7))
    o = np.zeros((4, 128, 64), np.float16)
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float64), k.astype(np.float64)) * 0.125
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = np.einsum("hqk,hkd->hqd", p / p.sum(-1, keepdims=True), v.astype(np.float64))
    return FLASH, [q, k, v, o], o, ref


def _add():
    a, b = _rand(8, 5000), _rand(9, 5000)
    c = np.zeros(5000, np.float16)
    return ADD, [a, b, c], c, a.astype(np.float64) + b.astype(np.float64)


KERNELS = {
    "add": _add, "softmax": _softmax, "rmsnorm": _rmsnorm, "gemm": lambda: _gemm(False),
    "gemm_bias_gelu": lambda: _gemm(True), "flash_attention": _flash,
}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_reference_kernel(name):
    text, args, out, ref = KERNELS[name]()
    run(parse(text), args)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=1e-2)


def test_reference_kernels_are_fast():
    cases = [KERNELS[name]() for name in sorted(KERNELS)]
    modules = [parse(text) for text, *_ in cases]
    start = time.perf_counter()
    for module, (_, args, _, _) in zip(modules, cases):
        run(module, args)
    elapsed = time.perf_counter() - start
    assert elapsed < 5.0, f"the six reference kernels took {elapsed:.2f} s"
