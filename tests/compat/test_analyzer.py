"""`tilec.tools.Analyzer` (TileLang's roofline estimate, on tilec's tile IR) and `carver.arch.CUDA`."""

# ruff: noqa: F841

import pytest
import torch

import tilec
import tilec.language as T
from tilec.carver.arch import CUDA
from tilec.testing import cuda_on_cpu
from tilec.tools import Analyzer

M = N = K = 256


@tilec.jit
def gemm(A, B, block_M=64, block_N=64, block_K=32, stages=2):
    A: T.Tensor((M, K), T.float16)
    B: T.Tensor((N, K), T.float16)
    C = T.empty((M, N), T.float16)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_s = T.alloc_shared((block_M, block_K), T.float16)
        B_s = T.alloc_shared((block_N, block_K), T.float16)
        C_l = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_l)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
            T.copy(A[by * block_M, k * block_K], A_s)
            T.copy(B[bx * block_N, k * block_K], B_s)
            T.gemm(A_s, B_s, C_l, transpose_B=True)
        for i, j in T.Parallel(block_M, block_N):
            C[by * block_M + i, bx * block_N + j] = C_l[i, j]
    return C


@pytest.fixture
def device():
    if torch.cuda.is_available():
        return CUDA("cuda")
    cuda_on_cpu.install()
    try:
        yield CUDA("cuda")
    finally:
        cuda_on_cpu.uninstall()


def test_the_analyzer_counts_the_gemm_flops_and_the_global_traffic(device):
    result = Analyzer.analysis(gemm.get_tir(block_M=64, block_N=64, block_K=32), device)
    assert result.total_flops == 2 * M * N * K
    blocks, trips = (N // 64) * (M // 64), K // 32
    loads = blocks * trips * (64 * 32 + 64 * 32) * 2  # the A and B tiles of every block and trip, fp16
    assert result.total_global_bytes == loads + M * N * 2  # and C, element by element
    assert result.estimated_time == max(result.total_flops / device.peak_flops,
                                        result.total_global_bytes / device.bandwidth)
    assert result.tflops > 0 and result.bandwidth_GBps > 0
    assert device.sm_count > 0 and device.compute_capability >= (8, 0)


def test_the_analyzer_needs_compile_time_loop_bounds(device):
    n = T.dynamic("n")

    @T.prim_func
    def dynamic(A: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.serial(T.ceildiv(n, 32)):
                A[i] = 0.0

    with pytest.raises(tilec.TilecError, match="the loop bound is not a compile-time number"):
        Analyzer.analysis(dynamic, device)
