"""The eager call's hot path (issue 8, item 4): the body is probed once per function and
compile-time arguments, so a warm call reads no source and costs what the compiled kernel's
call costs; every check of a cold call still holds on a warm one."""

import inspect
import os
import sys
import timeit

import numpy as np
import pytest
import torch

import tilec
import tilec.language as T
from tilec import TilecError, runtime

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_add():
    @tilec.jit(target="interp")
    def add(A, B, block: int = 128):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B: T.Tensor((N,), T.float32)
        C = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
        return C

    return add


@pytest.fixture
def no_source(monkeypatch):
    """After this, reading any kernel's source (or probing an eager body) fails the test."""
    import tilec.frontend

    def refuse(*args, **kwargs):
        raise AssertionError("a warm eager call read the kernel's source")

    def arm():
        monkeypatch.setattr(inspect, "getsourcelines", refuse)
        monkeypatch.setattr(tilec.frontend, "probe_eager", refuse)

    return arm


def test_a_warm_eager_call_reads_no_source(no_source):
    add = make_add()
    a, b = torch.randn(300), torch.randn(300)
    torch.testing.assert_close(add(a, b), a + b)
    no_source()
    for _ in range(3):
        torch.testing.assert_close(add(a, b), a + b)
    torch.testing.assert_close(add(a, B=b), a + b)  # by keyword: the slower binding, still no source
    torch.testing.assert_close(add(a.numpy(), b.numpy()), (a + b).numpy())  # numpy arrays of the same shape


def test_new_sizes_probe_the_body_once_per_specialization(monkeypatch):
    import tilec.frontend

    probes = []
    real = tilec.frontend.probe_eager
    monkeypatch.setattr(tilec.frontend, "probe_eager", lambda fn, spec: probes.append(dict(spec)) or real(fn, spec))
    add = make_add()
    for n in (100, 200, 300, 200):
        a, b = torch.randn(n), torch.randn(n)
        torch.testing.assert_close(add(a, b), a + b)
    assert probes == [{"block": 128}]  # new N: a new kernel, the same plan
    a = torch.randn(50)
    torch.testing.assert_close(add(a, a, block=64), a + a)
    assert probes == [{"block": 128}, {"block": 64}]
    assert len(add._kernels) == 4


def test_warm_calls_keep_every_check(no_source):
    add = make_add()
    a = torch.randn(300)
    add(a, a)
    no_source()
    with pytest.raises(TilecError, match=r"argument 0 \(`A`\) must be float32, got float16"):
        add(a.half(), a.half())  # same shapes, other dtype: the kernel's own check
    with pytest.raises(TilecError, match="size N is 300 from an earlier tensor but 200 from `B`"):
        add(a, torch.randn(200))
    with pytest.raises(TilecError, match="tensor `A` must have 1 dimensions, got shape"):
        add(torch.randn(3, 100), torch.randn(3, 100))
    with pytest.raises(TilecError, match="argument `A` must be a tensor, got list"):
        add([1.0] * 300, a)
    with pytest.raises(TilecError, match="size N would be 0"):
        add(torch.randn(0), torch.randn(0))
    with pytest.raises(TilecError, match="bad call of add: missing a required argument: 'B'"):
        add(a)
    with pytest.raises(TilecError, match="bad call of add"):
        add(a, a, 128, 4)


def test_body_order_of_the_annotations_is_kept_on_the_warm_path():
    @tilec.jit(target="interp")
    def sub(A, B):
        N = T.const("N")
        M = T.const("M")
        B: T.Tensor((M,), T.float32)  # annotated first: the kernel's parameter 0
        A: T.Tensor((N,), T.float32)
        C = T.empty((N,), T.float32)
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                C[i] = A[i] - B[i % M]
        return C

    a, b = torch.randn(64), torch.randn(16)
    want = a - b.repeat(4)
    for _ in range(3):
        torch.testing.assert_close(sub(a, b), want)


def test_a_warm_eager_call_costs_what_the_compiled_call_costs(monkeypatch):
    add = make_add()
    a = torch.randn(256)
    add(a, a)
    compiled = add.compile(N=256)
    monkeypatch.setattr(runtime, "launch", lambda kernel, args: None)  # the dispatch alone

    def us(fn):
        return min(timeit.repeat(fn, number=200, repeat=5)) / 200 * 1e6

    eager_us, compiled_us = us(lambda: add(a, a)), us(lambda: compiled(a, a))
    # Parsing the body again costs about 1 ms a call; the warm path adds a shape lookup (~2 us).
    assert eager_us < compiled_us + 25, (eager_us, compiled_us)


def test_launch_overhead_bench_runs_on_the_cpu():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import launch_overhead

    a, b = torch.randn(1000).half(), torch.randn(1000).half()
    rows = launch_overhead.tilec_rows(a, b, target="interp", loaders=("auto",))
    assert [name for name, _ in rows] == ["tilec compiled (auto)", "tilec eager (auto)"]
    assert all(launch_overhead.per_call_us(call, calls=2) > 0 for _, call in rows)
    assert np.isfinite([launch_overhead.per_call_us(rows[1][1], calls=2)]).all()


def test_compile_with_a_calls_arguments_builds_that_calls_kernel():
    """TileLang's `kernel = f.compile(*args)` (sparse MLA's `return_kernel=True`): the kernel the
    call with these arguments runs, built and not run; keywords alone stay explicit sizes."""
    add = make_add()
    a, b = torch.randn(384), torch.randn(384)
    kernel = add.compile(a, b, block=64)
    assert kernel is add.get_kernel(a, b, block=64) and kernel is add.compile(N=384, block=64)
    torch.testing.assert_close(kernel(a, b), a + b)
