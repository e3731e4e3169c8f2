"""Tiled GEMM with a pipelined K loop: C = A @ B (float16 in, float32 accumulate)."""

import torch

import tilec
import tilec.language as T


@tilec.jit(out_idx=[-1])
def matmul(M, N, K, block_M=64, block_N=64, block_K=32, num_stages=2, threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float16)
            B_s = T.alloc_shared((block_K, block_N), T.float16)
            C_f = T.alloc_fragment((block_M, block_N), T.float32)
            T.use_swizzle(panel_size=10)  # blocks in panels of 10 rows: neighbours share A and B tiles in L2
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[ko * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return main


def main(device: str) -> bool:
    a = torch.randn(200, 96, device=device).half()  # tails: 200 and 96 are not multiples of 64
    b = torch.randn(96, 130, device=device).half()
    c = matmul(200, 130, 96)(a, b)
    return torch.allclose(c.float(), a.float() @ b.float(), atol=5e-2, rtol=1e-2)
