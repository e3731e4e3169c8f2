"""RMSNorm, eager style: y = x / sqrt(mean(x^2) + eps) * w."""

import torch

import tilec
import tilec.language as T


@tilec.jit
def rms_norm(X, W, block_M: int = 2, eps: float = 1e-6, threads: int = 128):
    M, N = T.const("M, N")
    X: T.Tensor((M, N), T.float16)
    W: T.Tensor((N,), T.float16)
    Y = T.empty((M, N), T.float16)
    with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
        x = T.alloc_fragment((block_M, N), T.float32)
        ss = T.alloc_fragment((block_M,), T.float32)
        T.copy(X[bx * block_M, 0], x)
        for i, j in T.Parallel(block_M, N):
            x[i, j] = x[i, j] * x[i, j]
        T.reduce_sum(x, ss, dim=1)
        T.copy(X[bx * block_M, 0], x)
        for i, j in T.Parallel(block_M, N):
            x[i, j] = x[i, j] * T.rsqrt(ss[i] / N + eps) * W[j]
        T.copy(x, Y[bx * block_M, 0])
    return Y


def main(device: str) -> bool:
    x = torch.randn(32, 512, device=device).half()
    w = torch.randn(512, device=device).half()
    xf = x.float()
    ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
    return torch.allclose(rms_norm(x, w).float(), ref, atol=2e-2, rtol=1e-2)
