"""Whole-tile work under a branch on the thread index is refused for the CUDA target at the op
(passes/thread_branches.py): tilec spreads it over every thread of the block, so it would be
partly computed (deepseek_mhc's example_mhc_pre: `if T.get_thread_binding() < 32:`)."""

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
                T.copy(X, x)  # ERR
                T.copy(x, Y)

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


def test_whole_tile_work_in_a_thread_branch_is_a_located_error():
    with pytest.raises(tilec.TilecError) as info:
        tilec.compile(copy_in_a_thread_branch(), target="sm_90a")
    text = str(info.value)
    assert "T.copy inside a branch on the thread index" in text, text
    assert f"test_thread_branches.py:{_marked_line(copy_in_a_thread_branch)}:" in text.splitlines()[0], text
    assert "T.ws" in info.value.hint


def test_per_thread_code_in_a_thread_branch_still_runs():
    x, y = torch.randn(64), torch.zeros(64)
    tilec.compile(one_thread_writes(), target="sim")(x, y)
    assert y[0] == x[0] + 1 and not y[1:].any()
