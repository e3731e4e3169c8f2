"""Elementwise add, eager style: C = A + B over float16 vectors of any length."""

import torch

import tilec
import tilec.language as T


@tilec.jit
def add(A, B, block: int = 1024, threads: int = 128, dtype=T.float16):
    N = T.const("N")
    A: T.Tensor((N,), dtype)
    B: T.Tensor((N,), dtype)
    C = T.empty((N,), dtype)
    with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
        for i in T.Parallel(block):
            idx = bx * block + i
            if idx < N:
                C[idx] = A[idx] + B[idx]
    return C


def main(device: str) -> bool:
    a = torch.randn(10_000, device=device).half()
    b = torch.randn(10_000, device=device).half()
    c = add(a, b, block=512)
    return torch.allclose(c.float(), (a + b).float(), atol=1e-3)
