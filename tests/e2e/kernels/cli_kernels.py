"""Kernels for tests/e2e/test_cli.py: one factory (lazy style) and one eager kernel."""

import tilec
import tilec.language as T


@tilec.jit(out_idx=[-1])
def row_scale(M, N, block_M=64, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            tile = T.alloc_fragment((block_M, N), "float32")
            T.copy(A[bx * block_M, 0], tile)
            for i, j in T.Parallel(block_M, N):
                tile[i, j] = tile[i, j] * 2.0
            T.copy(tile, B[bx * block_M, 0])

    return main


@tilec.jit
def vector_add(A, B, block: int = 256):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B: T.Tensor((N,), T.float32)
    C = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return C


def _gemm(M, N, K, block_M, block_N, block_K, dtype):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return main


@tilec.jit(out_idx=[-1])
def gemm(M, N, K, block_M=128, block_N=128, block_K=64, dtype="float16"):
    return _gemm(M, N, K, block_M, block_N, block_K, dtype)


@tilec.jit(out_idx=[-1])
def dynamic_gemm(block_M=128, block_N=128, block_K=64, dtype="float16"):
    """`gemm` over sizes bound at the call (T.dynamic)."""
    return _gemm(T.dynamic("m"), T.dynamic("n"), T.dynamic("k"), block_M, block_N, block_K, dtype)
