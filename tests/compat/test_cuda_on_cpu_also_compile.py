"""`tilec.testing.cuda_on_cpu` with `also_compile` / `compile_only`: a CPU run of a CUDA program
that also builds every kernel for a GPU target (what `tools/run_tilelang_examples.py
--also-compile / --compile-only` uses to tell "too slow on the interpreter" from "does not compile")."""

# ruff: noqa: F841

import numpy as np
import pytest
import torch

import tilec
import tilec.language as T
from tilec.testing import cuda_on_cpu


@tilec.jit(out_idx=[-1])
def printed_at_runtime_index(N=64):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), Idx: T.Tensor((1,), T.int32), Out: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            frag = T.alloc_fragment((N,), T.float32)
            T.copy(A, frag)
            Out[0] = frag[Idx[0]]
            T.print(frag, msg="frag")  # fine on the interpreter; the CUDA lowering refuses it

    return main


@tilec.jit(out_idx=[-1])
def add_one(N=64):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), Out: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(N):
                Out[i] = A[i] + 1

    return main


@pytest.fixture
def on_cpu():
    if torch.cuda.is_available():
        pytest.skip("a real GPU is visible")
    yield cuda_on_cpu
    cuda_on_cpu.uninstall()


def test_also_compile_reports_a_kernel_that_does_not_compile_for_the_gpu(on_cpu):
    a, idx = torch.arange(64, dtype=torch.float32), torch.tensor([5], dtype=torch.int32)
    on_cpu.install()
    assert printed_at_runtime_index(64)(a, idx).item() == 5.0  # the interpreter alone runs it
    on_cpu.uninstall()
    on_cpu.install(also_compile="sm_90a")
    with pytest.raises(tilec.TilecError, match="T.print is not supported by the CUDA target"):
        printed_at_runtime_index(65)(torch.arange(65, dtype=torch.float32), idx)


def test_also_compile_runs_kernels_that_compile_and_compile_only_runs_none(on_cpu, monkeypatch):
    a = torch.arange(64, dtype=torch.float32)
    on_cpu.install(also_compile="sm_90a")
    np.testing.assert_array_equal(add_one(64)(a).numpy(), a.numpy() + 1)
    on_cpu.uninstall()
    monkeypatch.setenv(on_cpu.ALSO_COMPILE_ENV, "sm_90a")
    monkeypatch.setenv(on_cpu.COMPILE_ONLY_ENV, "1")
    on_cpu.install()
    out = add_one(32)(torch.arange(32, dtype=torch.float32))  # built for sm_90a, never run
    assert not out.any()


def test_compile_only_needs_a_target(on_cpu):
    with pytest.raises(ValueError, match="compile_only needs a GPU target"):
        on_cpu.install(compile_only=True)
    assert not on_cpu.active()


def test_cuda_generators_are_cpu_generators(on_cpu):
    on_cpu.install()
    g = torch.Generator(device="cuda")
    g.manual_seed(3)
    x = torch.randn(4, generator=g, device="cuda")
    assert x.device.type == "cpu" and isinstance(g, torch.Generator)
    assert torch.equal(x, torch.randn(4, generator=torch.Generator(device="cuda").manual_seed(3)))
