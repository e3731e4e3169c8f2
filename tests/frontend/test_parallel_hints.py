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


def pipelined_kernel(**schedule):
    @T.prim_func
    def main(A: T.Tensor((256,), T.float32), B: T.Tensor((256,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((64,), T.float32)
            for k in T.Pipelined(4, num_stages=2, **schedule):  # marker: pipelined
                T.copy(A[k * 64], s)
                for i in T.Parallel(64):
                    B[k * 64 + i] = s[i] + 1

    return main


def test_a_hand_schedule_of_t_pipelined_is_reported_at_the_loop():
    """TileLang's order= / stage= / group= (its FA3 examples) name a schedule tilec derives itself:
    reported by name at the loop's line, and the kernel still runs."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = tilec.compile(pipelined_kernel(order=[0, 1], stage=[0, 1], group=[[0], [1]]), out_idx=[1],
                               target="interp")
    hits = [w for w in caught if issubclass(w.category, TilecWarning) and "T.Pipelined(" in str(w.message)]
    assert hits and "order=, stage=, group=" in str(hits[0].message) and "not applied as written" in str(hits[0].message)
    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1) if "# marker: pipelined" in text)
    assert hits[0].filename == __file__ and hits[0].lineno == line
    assert torch.equal(kernel(torch.arange(256.0)), torch.arange(256.0) + 1)


def test_t_pipelined_without_a_hand_schedule_is_silent():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tilec.compile(pipelined_kernel(), out_idx=[1], target="interp")
    assert not [w for w in caught if issubclass(w.category, TilecWarning)]


def test_unpacking_a_non_dict_into_a_loop_is_a_located_error():
    bad = [("num_stages", 2)]

    @T.prim_func
    def main(A: T.Tensor((256,), T.float32), B: T.Tensor((256,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for k in T.Pipelined(4, **bad):  # marker: unpack
                for i in T.Parallel(64):
                    B[k * 64 + i] = A[k * 64 + i]

    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1) if "# marker: unpack" in text)
    with pytest.raises(TilecError, match=r"`\*\*bad` must be a dict with string keys") as info:
        tilec.compile(main, out_idx=[1], target="interp")
    assert f"test_parallel_hints.py:{line}:" in str(info.value)
