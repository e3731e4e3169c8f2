"""Whole-tile work under a branch on the thread index (passes/thread_branches.py): TileLang runs
the branch's sides at once on the threads each selects (deepseek_mhc's example_mhc_pre:
`if T.get_thread_binding() < 32:` ... `else:` on 96 threads); tilec runs each side that some
thread takes on the whole block, one after the other, which computes the same where the sides do
not wait for each other. Branches whose sides do (a producer and a consumer on mbarriers), or
whose code uses the thread index, stay located errors."""

# ruff: noqa: F841

import inspect

import pytest
import torch

import tilec
import tilec.language as T


def copy_in_a_thread_branch():
    @T.prim_func
    def main(X: T.Tensor((64,), T.float32), Y: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=96) as bx:
            x = T.alloc_fragment((64,), T.float32)
            if T.get_thread_binding() >= 32:
                T.copy(X, x)
                T.copy(x, Y)

    return main


def two_sides(threads=96, split=32):
    """The shape of example_mhc_pre: a reduction on one side, a pipelined loop on the other."""

    @T.prim_func
    def main(X: T.Tensor((8, 256), T.float32), R: T.Tensor((8,), T.float32), Y: T.Tensor((256,), T.float32),
             Z: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=threads) as bx:
            x = T.alloc_fragment((8, 256), T.float32)
            T.copy(X, x)
            mixed = T.alloc_shared((8,), T.float32)
            for r in T.Parallel(8):
                mixed[r] = x[r, 0] * 0.5
            if T.get_thread_binding() < split:
                rows = T.alloc_fragment((8,), T.float32)
                T.reduce_sum(x, rows, dim=1)
                for r in T.Parallel(8):
                    R[r] = rows[r] + mixed[r]
            else:
                acc = T.alloc_fragment((64,), T.float32)
                for k in T.Pipelined(4, num_stages=2):
                    xs = T.alloc_shared((8, 64), T.float32)
                    T.copy(X[0, k * 64], xs)
                    T.clear(acc)
                    for r in T.serial(8):
                        for j in T.Parallel(64):
                            acc[j] += xs[r, j] * mixed[r]
                    T.copy(acc, Y[k * 64])
                for j in T.Parallel(4):
                    Z[j] = mixed[j]

    def ref(x):
        mixed = x[:, 0] * 0.5
        return x.sum(1) + mixed, (x * mixed[:, None]).sum(0), mixed[:4]

    return main, ref


def producer_and_consumer():
    @T.prim_func
    def main(X: T.Tensor((128, 64), T.float16), Y: T.Tensor((128, 64), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            xs = T.alloc_shared((128, 64), T.float16)
            ready = T.alloc_barrier(arrive_count=128)
            if T.get_thread_binding() >= 128:
                T.tma_copy(X[0:128, 0:64], xs, barrier=ready)
                T.barrier_arrive(ready)
            else:
                T.barrier_wait(ready, 0)
                T.copy(xs, Y)

    return main


def thread_index_inside():
    @T.prim_func
    def main(X: T.Tensor((64,), T.float32), Y: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=96) as bx:
            tx = T.get_thread_binding()
            x = T.alloc_fragment((64,), T.float32)
            if tx < 32:
                T.copy(X, x)  # ERR
                Y[tx] = x[0]

    return main


def negated_condition():
    """`not (tid < 32)`: the frontend's `xori c, true` (an i1 true is -1 in the IR) takes 64 threads."""

    @T.prim_func
    def main(X: T.Tensor((64,), T.float32), Y: T.Tensor((64,), T.float32), Z: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=96) as bx:
            x = T.alloc_fragment((64,), T.float32)
            if not (T.get_thread_binding() < 32):
                T.copy(X, x)
                T.copy(x, Y)
            else:
                for i in T.Parallel(64):
                    Z[i] = X[i] * 2

    return main


def per_thread_variable():
    @T.prim_func
    def main(X: T.Tensor((64,), T.float32), Y: T.Tensor((96,), T.int32)):
        with T.Kernel(1, threads=96) as bx:
            x = T.alloc_fragment((64,), T.float32)
            v = T.alloc_var(T.int32)
            v = 0
            if T.get_thread_binding() < 32:
                T.copy(X, x)  # ERR
                v = 1
            else:
                T.fill(x, 0.0)
                v = 2
            for i in T.Parallel(64):
                Y[i] = v

    return main


def inside_a_role():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float16), D: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            a_s = T.alloc_shared((64, 64), T.float16)
            full = T.alloc_barrier(arrive_count=128)
            with T.ws(0):
                T.tma_copy(A[0:64, 0:64], a_s, barrier=full)
                T.barrier_arrive(full)
            with T.ws(1):
                T.barrier_wait(full, 0)
                if T.get_thread_binding() < 128:  # TileLang: none of warpgroup 1's threads 128-255
                    T.copy(a_s, C)  # ERR
                else:
                    T.copy(a_s, D)

    return main


def one_thread_writes():
    @T.prim_func
    def main(X: T.Tensor((64,), T.float32), Y: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            if T.get_thread_binding() == 0:
                Y[0] = X[0] + 1.0

    return main


def _marked_line(make) -> int:
    lines, first = inspect.getsourcelines(make)
    return first + next(k for k, line in enumerate(lines) if "# ERR" in line)


@pytest.mark.parametrize("target", ["sim", "sm_90a"])
def test_a_side_of_whole_tile_work_runs_on_the_whole_block(target):
    kernel = tilec.compile(copy_in_a_thread_branch(), target=target)
    assert "scf.if" not in kernel.get_ir("tile-opt").split("tile.kernel")[1]
    if target == "sim":
        x, y = torch.randn(64), torch.zeros(64)
        kernel(x, y)
        torch.testing.assert_close(y, x)


def _run_two_sides(split: int, target: str, device: str) -> None:
    main, ref = two_sides(split=split)
    x = torch.randn(8, 256)
    r, y, z = torch.zeros(8), torch.full((256,), 7.0), torch.full((4,), 7.0)
    outs = [t.to(device) for t in (r, y, z)]
    tilec.compile(main, target=target)(x.to(device), *outs)
    r, y, z = (t.cpu() for t in outs)
    want_r, want_y, want_z = ref(x)
    torch.testing.assert_close(r, want_r)
    if split < 96:
        torch.testing.assert_close(y, want_y, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(z, want_z)
    else:  # threads=96: every thread takes the first side, and the else never runs
        assert (y == 7).all() and (z == 7).all()


@pytest.mark.parametrize("split", [32, 128], ids=["both-sides", "no-thread-takes-else"])
def test_both_sides_run_one_after_the_other(split):
    _run_two_sides(split, "sim", "cpu")


def test_a_negated_condition_runs_both_sides():
    x, y, z = torch.randn(64), torch.zeros(64), torch.zeros(64)
    tilec.compile(negated_condition(), target="sim")(x, y, z)
    torch.testing.assert_close(y, x)
    torch.testing.assert_close(z, x * 2)


def test_a_producer_and_a_consumer_side_are_warp_specialized_roles():
    """Sides at warpgroups 0 and 1 that meet at mbarriers are TileLang's hand-written warp
    specialization: built as T.ws roles (tests/frontend/test_thread_branch_roles.py), not run one
    after the other (each would wait for the other forever)."""
    x, y = torch.randn(128, 64).half(), torch.zeros(128, 64).half()
    tilec.compile(producer_and_consumer(), target="sim")(x, y)
    torch.testing.assert_close(y, x)


@pytest.mark.parametrize("make, why", [(thread_index_inside, "holds a store indexed by (or of) the thread index"),
                                       (per_thread_variable, "holds a store to per-thread state"),
                                       (inside_a_role, "inside a warp-specialized role")],
                         ids=["thread-index", "per-thread-variable", "inside-a-role"])
def test_sides_that_need_their_threads_are_a_located_error(make, why):
    with pytest.raises(tilec.TilecError) as info:
        tilec.compile(make(), target="sm_90a")
    text = str(info.value)
    assert "inside a branch on the thread index" in text and why in text, text
    assert f"test_thread_branches.py:{_marked_line(make)}:" in text.splitlines()[0], text
    assert "T.ws" in info.value.hint


def test_per_thread_code_in_a_thread_branch_still_runs():
    x, y = torch.randn(64), torch.zeros(64)
    tilec.compile(one_thread_writes(), target="sim")(x, y)
    assert y[0] == x[0] + 1 and not y[1:].any()


@pytest.mark.gpu
@pytest.mark.parametrize("split", [32, 128], ids=["both-sides", "no-thread-takes-else"])
def test_both_sides_on_the_gpu(split):
    _run_two_sides(split, "cuda", "cuda")
