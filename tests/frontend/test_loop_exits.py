"""`break` and `continue` in run-time loops (T.serial, range, T.unroll): the loop keeps running
its iterations but does nothing after a `break`, and skips the rest of the body after a
`continue`, on the interpreter, the simulator and CUDA; loops that cannot be left early refuse
with a located error. Also unsigned constants (`T.cast(0xFFFFFFFF, T.uint32)`), which
TileLang's topk_selector uses beside its `break`.

Kernels live in this file (the frontend reads their source with `inspect`).
"""

# ruff: noqa: F841

import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.frontend import build_prim_func


def _line(text: str) -> int:
    return next(i for i, line in enumerate(open(__file__), 1) if text in line and "_line(" not in line)


def first_negative(n=64):
    """Per row: the index of the first negative element (n if none), and the sum before it,
    skipping zeros (which count as `continue`)."""

    @T.prim_func
    def main(X: T.Tensor((8, n), T.int32), First: T.Tensor((8,), T.int32), Sum: T.Tensor((8,), T.int32)):
        with T.Kernel(8, threads=32) as bx:
            first = T.alloc_var(T.int32)
            total = T.alloc_var(T.int32)
            first = n
            total = 0
            for k in T.serial(n):
                x = X[bx, k]
                if x < 0:
                    first = k
                    break
                if x == 0:
                    continue
                total = total + 1
            First[bx] = first
            Sum[bx] = total

    return main


def _data():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, (8, 64)).astype(np.int32)
    for r, c in enumerate([5, 0, 63, 17, 40, 2, 30, 11]):
        if r != 7:
            x[r, c] = -1
    return x


def _expected(x):
    first, total = [], []
    for row in x:
        neg = np.flatnonzero(row < 0)
        f = int(neg[0]) if len(neg) else len(row)
        first.append(f)
        total.append(int((row[:f] != 0).sum()))
    return np.array(first), np.array(total)


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_break_and_continue(target):
    x = _data()
    first, total = tilec.compile(first_negative(), out_idx=[-2, -1], target=target)(x)
    want_first, want_total = _expected(x)
    np.testing.assert_array_equal(first, want_first)
    np.testing.assert_array_equal(total, want_total)


def test_break_builds_for_sm_90a():
    ptx = tilec.compile(first_negative(), out_idx=[-2, -1], target="sm_90a").get_kernel_source()
    assert ".entry" in ptx


def thread_break(n=128):
    """Each thread counts down its own bound and breaks at its own iteration (divergent exits)."""

    @T.prim_func
    def main(B: T.Tensor((n,), T.int32), Y: T.Tensor((n,), T.int32)):
        with T.Kernel(1, threads=n) as bx:
            tx = T.get_thread_binding()
            count = T.alloc_var(T.int32)
            count = 0
            for k in range(16):
                if k >= B[tx]:
                    break
                count = count + 2
            Y[tx] = count

    return main


def test_threads_break_at_their_own_iteration_on_the_simulator():
    b = (np.arange(128) % 20).astype(np.int32)
    y = tilec.compile(thread_break(), out_idx=[-1], target="sim")(b)
    np.testing.assert_array_equal(y, 2 * np.minimum(b, 16))


def break_in_parallel():
    @T.prim_func
    def main(X: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                if X[i] < 0:
                    break  # marker: parallel
                X[i] = 1.0

    return main


def break_in_pipelined():
    @T.prim_func
    def main(X: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for k in T.Pipelined(4, num_stages=2):
                if k == 2:
                    continue  # marker: pipelined

    return main


def break_in_unrolled_python_loop():
    @T.prim_func
    def main(X: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for c in [1, 2, 3]:
                break  # marker: python loop

    return main


def break_in_serial_inside_parallel():
    @T.prim_func
    def main(X: T.Tensor((128, 4), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                for k in T.serial(4):
                    if X[i, k] < 0:
                        break  # marker: serial in parallel

    return main


@pytest.mark.parametrize("make, message, marker", [
    (break_in_parallel, "`break` in a T.Parallel loop is not supported", "parallel"),
    (break_in_pipelined, "`continue` in a T.Pipelined loop is not supported", "pipelined"),
    (break_in_unrolled_python_loop, "`break` leaves only a run-time loop", "python loop"),
    (break_in_serial_inside_parallel, "`break` in a loop inside T.Parallel is not supported", "serial in parallel"),
], ids=lambda x: getattr(x, "__name__", None))
def test_loops_that_cannot_be_left_early_refuse_with_the_line(make, message, marker):
    with pytest.raises(tilec.TilecError, match=message) as e:
        build_prim_func(make())
    assert f"test_loop_exits.py:{_line(f'# marker: {marker}')}:" in str(e.value), str(e.value)


def unsigned_mask():
    @T.prim_func
    def main(X: T.Tensor((128,), T.float32), Y: T.Tensor((128,), T.uint32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                bits = T.reinterpret(X[i], T.uint32)
                Y[i] = T.if_then_else(X[i] < 0, ~bits & T.cast(0xFFFFFFFF, T.uint32),
                                      bits | T.cast(0x80000000, T.uint32))

    return main


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_unsigned_constants_beyond_the_signed_range(target):
    x = np.linspace(-3, 3, 128).astype(np.float32)
    y = tilec.compile(unsigned_mask(), out_idx=[-1], target=target)(x)
    bits = x.view(np.uint32)
    np.testing.assert_array_equal(y, np.where(x < 0, ~bits, bits | np.uint32(0x80000000)))
