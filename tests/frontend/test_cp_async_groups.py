"""TileLang's cp.async group names (`T.ptx_commit_group`, `T.ptx_wait_group`), as minference's
vertical-slash attention uses them around its prefetches: `tile.async_commit` / `tile.async_wait`,
lowered to `cp.async.commit_group` / `cp.async.wait_group n`; no-ops on the interpreter, whose
copies are done when issued. Kernels live in this file (the frontend reads their source)."""

# ruff: noqa: F841

import pytest
import torch

import tilec
import tilec.language as T
from tilec.frontend import build_prim_func


def _line(text: str) -> int:
    return next(i for i, line in enumerate(open(__file__), 1) if text in line and "_line(" not in line)


def prefetch_then_wait(N=64, D=32, pending=0):
    @T.prim_func
    def main(X: T.Tensor((N, D), T.float16), Y: T.Tensor((N, D), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((N, D), T.float16)
            for i, j in T.Parallel(N, D):
                S[i, j] = X[i, j]
            T.ptx_commit_group()
            T.ptx_wait_group(pending)
            for i, j in T.Parallel(N, D):
                Y[i, j] = S[N - 1 - i, j] + 1

    return main


def wait_for_a_run_time_count():
    @T.prim_func
    def main(X: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=32) as bx:
            T.ptx_wait_group(X[0])  # marker: run-time count

    return main


def wait_for_minus_one():
    @T.prim_func
    def main(X: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=32) as bx:
            T.ptx_wait_group(-1)  # marker: negative count

    return main


def test_groups_are_tile_async_ops():
    text = str(build_prim_func(prefetch_then_wait(pending=1)).module)
    assert "tile.async_commit" in text and "tile.async_wait {pending = 1 : i64}" in text


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_groups_keep_the_result(target):
    x = torch.randn(64, 32, dtype=torch.float16)
    y = tilec.compile(prefetch_then_wait(), out_idx=[-1], target=target)(x)
    torch.testing.assert_close(y, x.flip(0) + 1)


def test_groups_lower_to_cp_async_group_instructions():
    kernel = tilec.compile(prefetch_then_wait(pending=1), out_idx=[-1], target="sm_80")
    ptx = " ".join(kernel.get_kernel_source().split())
    assert "cp.async.commit_group;" in ptx and "cp.async.wait_group 1;" in ptx


@pytest.mark.parametrize("factory, marker, message", [
    (wait_for_a_run_time_count, "run-time count", "T.ptx_wait_group takes a compile-time number of groups"),
    (wait_for_minus_one, "negative count", "the number of groups left pending must be >= 0, got -1"),
])
def test_misuse_is_a_located_error(factory, marker, message):
    with pytest.raises(tilec.TilecError) as e:
        build_prim_func(factory())
    assert message in str(e.value)
    assert f"test_cp_async_groups.py:{_line('# marker: ' + marker)}:" in str(e.value), str(e.value)
