"""TileLang language names inside kernels (issue 11, items 3, 4): built and run on the interpreter."""

import warnings

import numpy as np
import pytest
import torch

import tilec
import tilec.language as T
from tilec.errors import TilecError, TilecWarning


def _run(prim, *arrays):
    kernel = tilec.compile(prim, target="interp")
    kernel(*arrays)
    return arrays


def test_floordiv_floormod_follow_the_divisor_sign():
    @T.prim_func
    def main(A: T.Tensor((8,), T.int32), Q: T.Tensor((8,), T.int32), R: T.Tensor((8,), T.int32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(8):
                Q[i] = T.floordiv(A[i], 3)
                R[i] = T.floormod(A[i], 3)

    a = np.arange(-4, 4, dtype=np.int32)
    _, q, r = _run(main, a, np.zeros(8, np.int32), np.zeros(8, np.int32))
    assert (q == a // 3).all() and (r == a % 3).all()


def test_clamp_cast_and_reinterpret():
    @T.prim_func
    def main(X: T.Tensor((4,), T.float32), C: T.Tensor((4,), T.float32), B: T.Tensor((4,), T.uint32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(4):
                C[i] = T.clamp(X[i], -1.0, 1.0) + T.Cast(T.float32, 1)
                B[i] = T.reinterpret(X[i], "uint32")

    x = np.array([-3.0, -0.5, 0.25, 7.0], np.float32)
    _, c, b = _run(main, x, np.zeros(4, np.float32), np.zeros(4, np.uint32))
    assert np.allclose(c, np.clip(x, -1, 1) + 1)
    assert (b == x.view(np.uint32)).all()


def test_reinterpret_between_widths_is_a_located_error():
    @T.prim_func
    def main(X: T.Tensor((4,), T.float32), B: T.Tensor((4,), T.uint16)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(4):
                B[i] = T.reinterpret(X[i], T.uint16)

    with pytest.raises(TilecError, match="float32 has 32 bits but uint16 has 16"):
        tilec.compile(main, target="interp")


def test_a_storage_only_dtype_is_a_located_error_naming_it():
    @T.prim_func
    def main(X: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            buf = T.alloc_shared((4,), T.float4_e2m1fn)

    with pytest.raises(TilecError, match="dtype float4_e2m1fn cannot be computed with by tilec") as e:
        tilec.compile(main, target="interp")
    assert e.value.loc is not None


def test_uint32_tensors_and_tfloat32_as_float32():
    @T.prim_func
    def main(X: T.Tensor((4,), T.uint32), Y: T.Tensor((4,), T.uint32), F: T.Tensor((4,), T.tfloat32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(4):
                Y[i] = X[3 - i]
                F[i] = F[i] * 2.0

    x, y, f = np.array([0, 1, 2, 2**32 - 1], np.uint32), np.zeros(4, np.uint32), np.ones(4, np.float32)
    _run(main, x, y, f)
    assert (y == x[::-1]).all() and (f == 2).all()


def test_register_hints_hold_or_are_reported():
    @T.prim_func
    def quiet(X: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            T.disable_warp_group_reg_alloc()
            X[0] = 1.0

    @T.prim_func
    def asks(X: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            T.set_max_nreg(240, 1)
            X[0] = 1.0

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tilec.compile(quiet, target="interp")
    with pytest.warns(TilecWarning, match=r"T.set_max_nreg\(240\) is not applied"):
        tilec.compile(asks, target="interp")


def test_eager_statements_before_the_annotations_run_at_compile_time():
    @tilec.jit
    def blocks(A, block: int = 4):
        M, N = T.const("M, N")
        dtype = T.float
        shape = [M, N]
        A: T.Tensor(shape, dtype)
        S = T.empty((T.ceildiv(M, block), N), dtype)
        assert N % 2 == 0, "N must be even"
        with T.Kernel(T.ceildiv(M, block), threads=32) as bx:
            for j in T.Parallel(N):
                S[bx, j] = A[bx * block, j] * 2.0
        return S

    a = torch.randn(8, 6)
    out = blocks(a)
    assert torch.allclose(out, a[::4] * 2)
    assert blocks.get_kernel_source(a) == blocks.compile(M=8, N=6).get_kernel_source()
    with pytest.raises(TilecError, match="N must be even"):
        blocks(torch.randn(8, 5))


def test_region_slice_whose_start_is_loaded_at_run_time():
    @T.prim_func
    def main(X: T.Tensor((64,), T.float32), Starts: T.Tensor((4,), T.int32), Y: T.Tensor((4, 8), T.float32)):
        with T.Kernel(4, threads=32) as bx:
            buf = T.alloc_shared((8,), T.float32)
            T.copy(X[Starts[bx]:Starts[bx] + 8], buf)
            start = Starts[bx]
            T.copy(X[start:start + 8], buf)
            T.copy(buf, Y[bx, :])

    x = np.arange(64, dtype=np.float32)
    starts = np.array([0, 5, 17, 56], np.int32)
    _, _, y = _run(main, x, starts, np.zeros((4, 8), np.float32))
    assert (y == np.stack([x[s:s + 8] for s in starts])).all()
