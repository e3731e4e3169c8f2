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
