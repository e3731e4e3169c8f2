"""What the CUDA target cannot compile yet is a located TilecError, checked without a GPU.

Each kernel marks its offending line with `# ERR`; the error must name this file and that
line, say what is wrong, and carry no traceback.
"""

import inspect

import pytest

import tilec
import tilec.language as T
from tilec import TilecError
from tilec.frontend import build_prim_func
from tilec.compiler.lower import lower_to_thread
from tilec.target import resolve_target


def _marked_line(fn) -> int:
    lines, first = inspect.getsourcelines(fn)
    return next(first + i for i, line in enumerate(lines) if "# ERR" in line)


def _lower(prim):
    lower_to_thread(build_prim_func(prim), resolve_target("sm_90a"), {})


def print_in_kernel():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            T.copy(A, x)
            T.print(x, msg="x")  # ERR

    return main


def tile_op_inside_parallel():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64,), T.float32)
            for i in T.Parallel(64):
                T.fill(s, 0.0)  # ERR

    return main


def shared_buffer_inside_parallel():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                s = T.alloc_shared((4,), T.float32)  # ERR
                A[i] = s[0]

    return main


def too_much_shared_memory():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:  # ERR
            a = T.alloc_shared((256, 256), T.float32)
            b = T.alloc_shared((256, 256), T.float32)
            T.fill(a, 0.0)
            T.fill(b, 1.0)
            T.copy(a[0, 0:64], A[0])
            T.copy(b[0, 0:64], A[0])

    return main


def grid_chosen_by_a_condition():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32)):
        with T.Kernel(T.if_then_else(N > 1024, 8, 4), threads=128) as bx:  # ERR
            for i in T.Parallel(128):
                if bx * 128 + i < N:
                    A[bx * 128 + i] = 0.0

    return main


CASES = [
    (print_in_kernel, "T.print is not supported by the CUDA target yet"),
    (tile_op_inside_parallel, "cannot be used inside T.Parallel"),
    (shared_buffer_inside_parallel, "shared buffers cannot be allocated inside T.Parallel"),
    (too_much_shared_memory, "shared memory"),
    (grid_chosen_by_a_condition, "the grid size computed by arith.select cannot be evaluated at launch"),
]


@pytest.mark.parametrize("make,fragment", CASES, ids=[c[0].__name__ for c in CASES])
def test_cuda_target_error_is_located(make, fragment):
    with pytest.raises(TilecError) as info:
        _lower(make())
    text = str(info.value)
    assert fragment in text, text
    assert f"test_cuda_diagnostics.py:{_marked_line(make)}:" in text.splitlines()[0], text
    assert "Traceback" not in text and "internal compiler error" not in text


def fragment_indexed_by_a_computed_index():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            T.copy(A, x)
            for i in T.Parallel(64):
                B[i] = x[63 - i]

    return main


def test_a_fragment_at_a_computed_index_runs_on_both_targets():
    """Once refused by the CUDA target; tile-infer-layout now reads it through shared memory."""
    import torch

    for target in ("interp", "sim"):
        a, b = torch.randn(64), torch.zeros(64)
        tilec.compile(fragment_indexed_by_a_computed_index(), target=target)(a, b)
        assert torch.equal(b, a.flip(0)), target


def shared_index_past_the_end():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64,), T.float32)
            T.copy(A, s)
            for i in T.Parallel(64):
                B[i] = s[i + 1]  # ERR

    return main


def failing_device_assert():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                T.device_assert(A[i] < 100.0, "too large")  # ERR

    return main


@pytest.mark.parametrize("make,fragment,inputs", [
    (shared_index_past_the_end, "outside shared memory", lambda torch: [torch.randn(64)]),
    (failing_device_assert, "device assertion failed", lambda torch: [torch.full((64,), 1000.0)]),
], ids=["out_of_range", "device_assert"])
def test_simulator_errors_are_located(make, fragment, inputs):
    """What memcheck or a trap would report on the GPU, the simulator reports at the kernel's line."""
    import torch

    kernel = tilec.compile(make(), target="sim")
    with pytest.raises(TilecError) as info:
        kernel(*inputs(torch), *([torch.zeros(64)] if make is shared_index_past_the_end else []))
    text = str(info.value)
    assert fragment in text, text
    assert f"test_cuda_diagnostics.py:{_marked_line(make)}:" in text.splitlines()[0], text
