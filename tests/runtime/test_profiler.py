"""tilec.profiler on the CPU: do_bench's modes and the Profiler over the interpreter target."""

import time

import pytest

import tilec
import tilec.language as T
from tilec import TilecError
from tilec.profiler import Profiler, TensorSupplyType, do_bench

torch = pytest.importorskip("torch")


@tilec.jit(target="interp")
def add(A, B, block: int = 256):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B: T.Tensor((N,), T.float32)
    C = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return C


@tilec.jit(target="interp")
def add_dynamic(A, B, block: int = 256):
    N = T.dynamic("N")
    A: T.Tensor((N,), T.float32)
    B: T.Tensor((N,), T.float32)
    C = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for i in T.Parallel(block):
            if bx * block + i < N:
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return C


def test_do_bench_cpu_modes():
    def sleep():
        time.sleep(0.001)

    ms = do_bench(sleep, warmup=2, rep=10, device="cpu")
    assert 0.9 < ms < 50
    all_times = do_bench(sleep, n_warmup=1, n_repeat=4, return_mode="all", device="cpu")
    assert len(all_times) == 4
    lo, hi = do_bench(sleep, n_warmup=1, n_repeat=4, quantiles=[0.0, 1.0], device="cpu")
    assert lo <= hi
    with pytest.raises(ValueError, match="return_mode"):
        do_bench(sleep, return_mode="avg")


def test_exported_as_tilec_profiler_do_bench():
    import tilec.profiler

    assert tilec.profiler.do_bench is do_bench


def test_profiler_on_the_interpreter():
    kernel = add.compile(N=1024)
    prof = kernel.get_profiler()
    assert isinstance(prof, Profiler)
    a, b = prof.inputs()
    assert a.shape == (1024,) and a.dtype == torch.float32 and a.std() > 0.5  # normal, not zeros
    out = prof.run_once()
    assert torch.allclose(out, a + b)
    prof.assert_allclose(lambda x, y: x + y)
    assert prof.do_bench(warmup=1, rep=5) > 0
    assert prof.do_bench(lambda x, y: x + y, warmup=1, rep=5) > 0


def test_assert_allclose_reports_mismatches():
    prof = add.compile(N=512).get_profiler()
    with pytest.raises(AssertionError, match=r"output 0: 512 of 512 elements"):
        prof.assert_allclose(lambda x, y: x + y + 1)
    # a few wrong elements stay under max_mismatched_ratio
    def nearly(x, y):
        r = x + y
        r[:2] += 10
        return r

    prof.assert_allclose(nearly, max_mismatched_ratio=0.01)
    with pytest.raises(AssertionError):
        prof.assert_allclose(nearly, max_mismatched_ratio=0.001)


def test_supply_types():
    prof = add.compile(N=64).get_profiler(TensorSupplyType.One)
    assert all(bool((t == 1).all()) for t in prof.inputs())
    prof = add.compile(N=64).get_profiler(TensorSupplyType.Integer)
    assert all(bool((t == t.round()).all()) for t in prof.inputs())


def test_dynamic_shapes_need_input_tensors():
    kernel = add_dynamic.compile()
    prof = kernel.get_profiler()
    with pytest.raises(TilecError, match="needs static shapes"):
        prof.run_once()
    a, b = torch.randn(300), torch.randn(300)
    prof.assert_allclose(lambda x, y: x + y, input_tensors=[a, b])
