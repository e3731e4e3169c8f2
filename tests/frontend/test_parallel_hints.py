"""T.Parallel(prefer_async=, annotations=) (issue 11, item 4): accepted, and reported by name as
not applied when they ask for something; a wrong kind of value is a located error."""

import warnings

import pytest
import torch

import tilec
import tilec.language as T
from tilec import TilecError
from tilec.errors import TilecWarning


def copy_kernel(prefer_async=True, annotations=None):
    @T.prim_func
    def main(A: T.Tensor((128,), T.float32), B: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((128,), T.float32)
            for i in T.Parallel(128, prefer_async=prefer_async, annotations=annotations):
                s[i] = A[i]
            for i in T.Parallel(128):
                B[i] = s[i] * 2

    return main


def _warnings(prim):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = tilec.compile(prim, out_idx=[1], target="interp")
    return kernel, [str(w.message) for w in caught if issubclass(w.category, TilecWarning)]


def test_hints_that_ask_for_something_are_reported_and_the_kernel_runs():
    kernel, msgs = _warnings(copy_kernel(True, {"parallel_async_without_async_commit_wait": True}))
    assert any("prefer_async=True) is not applied" in m for m in msgs)
    assert any("'parallel_async_without_async_commit_wait'" in m and "not applied" in m for m in msgs)
    assert torch.equal(kernel(torch.arange(128.0)), torch.arange(128.0) * 2)


def test_hints_at_their_defaults_are_silent():
    _, msgs = _warnings(copy_kernel(False, {}))
    assert not msgs


def test_a_non_bool_prefer_async_is_a_located_error():
    with pytest.raises(TilecError, match=r"prefer_async=\.\.\.\) takes True or False") as e:
        tilec.compile(copy_kernel(3), out_idx=[1], target="interp")
    line = next(i for i, text in enumerate(open(__file__), 1) if "for i in T.Parallel(128, prefer_async=" in text)
    assert f"test_parallel_hints.py:{line}:" in str(e.value)
