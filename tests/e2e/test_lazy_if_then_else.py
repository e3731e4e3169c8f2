"""`T.if_then_else(c, a, b)` evaluates only the side `c` selects, as TVM's intrinsic does (a C
`?:`): `T.if_then_else(i < n, A[idx[i]], 0)` must not read `idx` past its n entries. Where a side
reads a shared or local buffer the frontend builds an `scf.if` yielding the value; register-only
sides stay a select. Checked on the interpreter, the simulator (which reports any shared read
outside the buffer) and in the PTX.

Kernels live in this file (the frontend reads their source with `inspect`).
"""

# ruff: noqa: F841

import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.dialects import print_ir
from tilec.frontend import build_prim_func

N_IDX, WIDTH = 8, 64


def gather():
    """Out[i] = A[idx[i]] for the first n lanes, -1 after: `idx` (shared) has only N_IDX entries."""

    @T.prim_func
    def main(A: T.Tensor((256,), T.float32), Idx: T.Tensor((N_IDX,), T.int32), N: T.Tensor((1,), T.int32),
             Out: T.Tensor((WIDTH,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            idx = T.alloc_shared((N_IDX,), T.int32)
            n = T.alloc_var(T.int32)
            n = N[0]
            for i in T.Parallel(N_IDX):
                idx[i] = Idx[i]
            for i in T.Parallel(WIDTH):
                Out[i] = T.if_then_else(i < n, A[idx[i]], -1.0)

    return main


def scalar_gather():
    """The same in one thread's serial loop, on a local buffer."""

    @T.prim_func
    def main(A: T.Tensor((256,), T.float32), Idx: T.Tensor((N_IDX,), T.int32), N: T.Tensor((1,), T.int32),
             Out: T.Tensor((WIDTH,), T.float32)):
        with T.Kernel(1, threads=1) as bx:
            idx = T.alloc_local((N_IDX,), T.int32)
            for i in T.serial(N_IDX):
                idx[i] = Idx[i]
            for i in T.serial(WIDTH):
                Out[i] = T.if_then_else(i < N[0], A[idx[i]], -1.0)

    return main


@T.macro
def _nth(buf, i):
    return buf[i]


def gather_through_a_macro():
    """The shared read behind a macro: what the side reads is not known until it is built."""

    @T.prim_func
    def main(A: T.Tensor((256,), T.float32), Idx: T.Tensor((N_IDX,), T.int32), N: T.Tensor((1,), T.int32),
             Out: T.Tensor((WIDTH,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            idx = T.alloc_shared((N_IDX,), T.int32)
            for i in T.Parallel(N_IDX):
                idx[i] = Idx[i]
            for i in T.Parallel(WIDTH):
                Out[i] = T.if_then_else(i < N[0], A[_nth(idx, i)], -1.0)

    return main


@T.macro
def _whole(buf):
    return buf


def select_of_a_buffer():
    @T.prim_func
    def main(N: T.Tensor((1,), T.int32), Out: T.Tensor((WIDTH,), T.int32)):
        with T.Kernel(1, threads=64) as bx:
            idx = T.alloc_shared((N_IDX,), T.int32)
            for i in T.Parallel(WIDTH):
                Out[i] = T.if_then_else(i < N[0], _whole(idx), 0)  # ERR

    return main


def register_select():
    @T.prim_func
    def main(X: T.Tensor((WIDTH,), T.float32), Out: T.Tensor((WIDTH,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((WIDTH,), T.float32)
            T.copy(X, x)
            for i in T.Parallel(WIDTH):
                Out[i] = T.if_then_else(x[i] > 0, x[i], 0.0)

    return main


def _run(make, target):
    a = np.random.default_rng().standard_normal(256).astype(np.float32)
    idx = np.array([5, 200, 7, 9, 100, 3, 255, 0], np.int32)
    out = np.zeros(WIDTH, np.float32)
    tilec.compile(make(), target=target)(a, idx, np.array([6], np.int32), out)
    want = np.full(WIDTH, -1.0, np.float32)
    want[:6] = a[idx[:6]]
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("make", [gather, scalar_gather, gather_through_a_macro])
@pytest.mark.parametrize("target", ["interp", "sim"])
def test_only_the_selected_side_is_read(make, target):
    _run(make, target)


def test_a_side_reading_shared_memory_is_a_branch_and_a_register_side_a_select():
    lazy = print_ir(build_prim_func(gather()).module)
    assert "scf.if" in lazy and "-> (f32)" in lazy and "arith.select" not in lazy
    eager = print_ir(build_prim_func(register_select()).module)
    assert "arith.select" in eager and "scf.if" not in eager


def test_the_guarded_read_assembles_for_sm90a():
    ptx = tilec.compile(gather(), target="sm_90a").get_kernel_source()
    assert "ld.shared" in ptx and "ld.global" in ptx


@pytest.mark.gpu
@pytest.mark.parametrize("make", [gather, scalar_gather])
def test_only_the_selected_side_is_read_on_the_gpu(make):
    import torch

    a = torch.randn(256, device="cuda")
    idx = torch.tensor([5, 200, 7, 9, 100, 3, 255, 0], dtype=torch.int32, device="cuda")
    out = torch.zeros(WIDTH, device="cuda")
    tilec.compile(make(), target="cuda")(a, idx, torch.tensor([6], dtype=torch.int32, device="cuda"), out)
    want = torch.full((WIDTH,), -1.0)
    want[:6] = a.cpu()[idx.cpu()[:6].long()]
    assert torch.equal(out.cpu(), want)


def test_a_side_that_is_not_a_scalar_is_a_located_error():
    import inspect

    lines, first = inspect.getsourcelines(select_of_a_buffer)
    line = first + next(k for k, text in enumerate(lines) if "# ERR" in text)
    with pytest.raises(tilec.TilecError, match="T.if_then_else selects between scalars, got") as e:
        build_prim_func(select_of_a_buffer())
    assert f"test_lazy_if_then_else.py:{line}:" in str(e.value).splitlines()[0]
