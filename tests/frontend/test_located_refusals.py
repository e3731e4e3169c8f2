"""The located errors added with TileLang's names this round (issue 11), each checked for its
message and for the kernel's file:line: named barriers, T.thread_binding, T.atomic_add's
return_prev and its x2/x4 forms, T.Parallel's hints, and the interpreter's T.ws barrier overrun.

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


def _located(error, marker: str) -> None:
    assert f"test_located_refusals.py:{_line(marker)}:" in str(error), str(error)


def sync_count_without_id():
    @T.prim_func
    def main(X: T.Tensor((128,), T.int32)):
        with T.Kernel(1, threads=128) as bx:
            T.sync_threads(arrive_count=64)  # marker: count without id

    return main


def sync_id_out_of_range():
    @T.prim_func
    def main(X: T.Tensor((128,), T.int32)):
        with T.Kernel(1, threads=128) as bx:
            T.sync_threads(16, 128)  # marker: id 16

    return main


def binding_on_a_bad_axis():
    @T.prim_func
    def main(X: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            i = T.thread_binding(0, 128, thread="blockIdx.x")  # marker: bad axis
            X[i] = 1.0

    return main


def atomic_return_prev():
    @T.prim_func
    def main(X: T.Tensor((128,), T.float32), Y: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            T.atomic_addx2(X[0], Y[0], return_prev=True)  # marker: return_prev

    return main


def atomic_x4_of_a_tile():
    @T.prim_func
    def main(X: T.Tensor((128,), T.float32), Y: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            T.atomic_addx4(X, Y)  # marker: x4 of a tile

    return main


def parallel_annotations_not_a_dict():
    @T.prim_func
    def main(A: T.Tensor((128,), T.float32), B: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128, annotations=3):  # marker: annotations
                B[i] = A[i]

    return main


def parallel_prefer_async_not_a_bool():
    @T.prim_func
    def main(A: T.Tensor((128,), T.float32), B: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128, prefer_async=3):  # marker: prefer_async
                B[i] = A[i]

    return main


@pytest.mark.parametrize("make, message, marker", [
    (sync_count_without_id, r"T.sync_threads\(arrive_count=...\) needs the barrier_id", "count without id"),
    (sync_id_out_of_range, r"barrier_id must be in \[0, 16\).*got 16", "id 16"),
    (binding_on_a_bad_axis, "T.thread_binding binds a thread axis", "bad axis"),
    (atomic_return_prev, r"T.atomic_addx2\(return_prev=True\) is not supported yet", "return_prev"),
    (atomic_x4_of_a_tile, "T.atomic_addx4 takes the first of 4 elements", "x4 of a tile"),
    (parallel_annotations_not_a_dict, r"annotations=\.\.\.\) takes a dict, got", "annotations"),
    (parallel_prefer_async_not_a_bool, r"prefer_async=\.\.\.\) takes True or False", "prefer_async"),
], ids=lambda x: getattr(x, "__name__", None))
def test_frontend_refusals_name_the_kernel_line(make, message, marker):
    with pytest.raises(tilec.TilecError, match=message) as e:
        build_prim_func(make())
    _located(e.value, f"# marker: {marker}")


def ws_overrun():
    """The consumer warpgroup's 128 threads each arrive on a barrier that expects 64 arrivals."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            ready = T.alloc_barrier(arrive_count=128)
            done = T.alloc_barrier(arrive_count=64)
            with T.ws(0):
                T.tma_copy(A, A_s, barrier=ready)
                T.barrier_arrive(ready)
            with T.ws(1):
                T.barrier_wait(ready, 0)
                T.copy(A_s, C)
                T.barrier_arrive(done)  # marker: overrun

    return main


def test_a_ws_barrier_overrun_is_a_located_error_on_the_interpreter():
    with pytest.raises(tilec.TilecError, match="arrivals on an mbarrier expecting 64 per phase overrun") as e:
        tilec.compile(ws_overrun(), out_idx=[-1], target="interp")(np.zeros((64, 64), np.float16))
    _located(e.value, "# marker: overrun")


def consumer_barrier_one():
    """A named barrier 1 in a loop tilec warp-specializes: its consumers synchronize on barrier 1."""

    @T.prim_func
    def main(A: T.Tensor((128, 128), T.float16), B: T.Tensor((128, 128), T.float16),
             C: T.Tensor((128, 128), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((128, 64), T.float16)
            b = T.alloc_shared((64, 128), T.float16)
            c = T.alloc_fragment((128, 128), T.float32)
            T.clear(c)
            for k in T.Pipelined(2, num_stages=2):
                T.copy(A[0, k * 64], a)
                T.copy(B[k * 64, 0], b)
                T.gemm(a, b, c)
                T.sync_threads(1, 128)  # marker: barrier one
            T.copy(c, C)

    return main


def test_named_barrier_one_in_a_consumer_region_is_a_located_error():
    with pytest.raises(tilec.TilecError, match="named barrier 1 is one of the consumer warpgroups' own barriers in "
                                               "this warp-specialized kernel \\(1\\)") as e:
        tilec.compile(consumer_barrier_one(), out_idx=[-1], target="sm_90a")
    _located(e.value, "# marker: barrier one")
