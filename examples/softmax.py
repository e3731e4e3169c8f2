"""Row softmax, classic (lazy) style: each block owns `block_M` whole rows."""

import torch

import tilec
import tilec.language as T


@tilec.jit(out_idx=[1])
def softmax(M, N, block_M=4, threads=128, dtype=T.float16):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            row_max = T.alloc_fragment((block_M,), T.float32)
            row_sum = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp2((x[i, j] - row_max[i]) * 1.4426950408889634)
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return main


def main(device: str) -> bool:
    x = torch.randn(64, 1024, device=device).half()
    y = softmax(64, 1024)(x)
    return torch.allclose(y.float(), torch.softmax(x.float(), -1), atol=1e-3)
