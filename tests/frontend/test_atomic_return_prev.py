"""`T.atomic_add(..., return_prev=True)`: the element's old value, as CUDA's `atomicAdd` returns
it, on the interpreter (T.Parallel iterations take turns in order), the simulator (threads take
turns in thread order) and CUDA (`atom.add` whose result is used); tile-wide atomics refuse it
with a located error.

Kernels live in this file (the frontend reads their source with `inspect`).
"""

# ruff: noqa: F841

import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.dialects import print_ir
from tilec.frontend import build_prim_func


def _line(text: str) -> int:
    return next(i for i, line in enumerate(open(__file__), 1) if text in line and "_line(" not in line)


def ticket(n=128):
    """Every iteration takes a ticket from one counter: the tickets are 0..n-1, one each."""

    @T.prim_func
    def main(C: T.Tensor((1,), T.int32), Y: T.Tensor((n,), T.int32)):
        with T.Kernel(1, threads=n) as bx:
            for i in T.Parallel(n):
                Y[i] = T.atomic_add(C[0], 1, return_prev=True)

    return main


def compact(n=256):
    """Thread-level stream compaction (topk_selector's pattern): each thread whose input is
    positive takes a slot in shared memory with an atomic on a shared counter and writes its
    index there; then the count and the slots go out."""

    @T.prim_func
    def main(X: T.Tensor((n,), T.float32), Out: T.Tensor((n,), T.int32), Count: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=n) as bx:
            tx = T.get_thread_binding()
            s_count = T.alloc_shared([1], T.int32)
            s_out = T.alloc_shared([n], T.int32)
            pos = T.alloc_var(T.int32)
            if tx == 0:
                s_count[0] = 0
            s_out[tx] = -1
            T.sync_threads()
            if X[tx] > 0:
                pos = T.atomic_add(s_count[0], 1, return_prev=True)
                s_out[pos] = tx
            T.sync_threads()
            Out[tx] = s_out[tx]
            if tx == 0:
                Count[0] = s_count[0]

    return main


def global_max(n=128):
    """Each thread folds its value into a global maximum and keeps the maximum before it."""

    @T.prim_func
    def main(X: T.Tensor((n,), T.int32), M: T.Tensor((1,), T.int32), Before: T.Tensor((n,), T.int32)):
        with T.Kernel(1, threads=n) as bx:
            tx = T.get_thread_binding()
            Before[tx] = T.atomic_max(M[0], X[tx], return_prev=True)

    return main


def test_interpreter_iterations_take_turns():
    y = tilec.compile(ticket(), out_idx=[-1], target="interp")(np.array([5], np.int32))
    np.testing.assert_array_equal(y, 5 + np.arange(128))


def test_the_tile_ir_carries_the_old_value():
    ir = print_ir(build_prim_func(ticket(), [-1]).module)
    assert 'tile.atomic' in ir and '{kind = "add"} : !tile.tensor<1xi32>, i32 -> i32' in ir, ir


@pytest.mark.parametrize("target", ["sim"])
def test_simulated_threads_compact_with_the_old_values(target):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(256).astype(np.float32)
    out, count = tilec.compile(compact(), out_idx=[-2, -1], target=target)(x)
    k = int((x > 0).sum())
    assert int(count[0]) == k
    assert sorted(out[:k].tolist()) == np.flatnonzero(x > 0).tolist()  # each slot taken once
    assert (out[k:] == -1).all()


def test_simulated_atomic_max_returns_each_threads_old_maximum():
    x = np.array([3, 1, 7, 2] * 32, np.int32)
    m = np.array([0], np.int32)
    before = tilec.compile(global_max(), out_idx=[-1], target="sim")(x, m)
    assert m[0] == 7
    np.testing.assert_array_equal(before, np.concatenate([[0], np.maximum.accumulate(x)[:-1]]))


def test_cuda_keeps_the_atomics_result():
    ptx = tilec.compile(compact(), out_idx=[-2, -1], target="sm_90a").get_kernel_source()
    assert "atom.shared.add.u32" in ptx or "atom.add.shared" in ptx or "atom.shared.add" in ptx, ptx
    ptx = tilec.compile(global_max(), out_idx=[-1], target="sm_90a").get_kernel_source()
    assert "atom.global.max.s32" in ptx or "atom.max" in ptx, ptx


def replicated(into_fragment: bool):
    """32 iterations over 128 threads: each iteration runs on 4 replicas, one of which updates."""

    @T.prim_func
    def to_memory(C: T.Tensor((1,), T.int32), Y: T.Tensor((32,), T.int32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(32):
                Y[i] = T.atomic_add(C[0], 1, return_prev=True) * 2

    @T.prim_func
    def to_fragment(C: T.Tensor((1,), T.int32), Y: T.Tensor((32,), T.int32)):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((32,), T.int32)
            for i in T.Parallel(32):
                f[i] = T.atomic_add(C[0], 1, return_prev=True)  # marker: replicated
            T.copy(f, Y)

    return to_fragment if into_fragment else to_memory


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_replicated_iterations_update_once_and_store_the_leaders_value(target):
    y = tilec.compile(replicated(False), out_idx=[-1], target=target)(np.array([0], np.int32))
    assert sorted(y.tolist()) == list(range(0, 64, 2))


def test_an_old_value_kept_in_replicated_registers_is_a_located_error_on_cuda():
    assert tilec.compile(replicated(True), out_idx=[-1], target="interp")(np.array([0], np.int32)).tolist() \
        == list(range(32))
    with pytest.raises(tilec.TilecError, match=r"return_prev=True\) inside a T.Parallel whose iterations are "
                                               r"replicated") as e:
        tilec.compile(replicated(True), out_idx=[-1], target="sim")
    assert f"test_atomic_return_prev.py:{_line('# marker: replicated')}:" in str(e.value), str(e.value)


def tile_wide_prev():
    @T.prim_func
    def main(X: T.Tensor((128,), T.float32), Y: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            T.atomic_add(X, Y, return_prev=True)  # marker: tile-wide

    return main


def test_a_tile_wide_return_prev_is_a_located_error():
    with pytest.raises(tilec.TilecError, match=r"returns one element's old value") as e:
        build_prim_func(tile_wide_prev())
    assert f"test_atomic_return_prev.py:{_line('# marker: tile-wide')}:" in str(e.value), str(e.value)
