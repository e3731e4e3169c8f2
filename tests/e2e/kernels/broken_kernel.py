"""A kernel with a deliberate mistake, for tests/e2e/test_cli.py: the copy's shapes differ."""

import tilec
import tilec.language as T


@tilec.jit(out_idx=[-1])
def broken(M=128):
    @T.prim_func
    def main(A: T.Tensor((M, 64), T.float16), B: T.Tensor((M, 64), T.float16)):
        with T.Kernel(M // 64, threads=128) as bx:
            s = T.alloc_shared((64, 32), T.float16)
            T.copy(A[bx * 64, 0], s)
            T.copy(s, B[bx * 64 : (bx + 1) * 64, 0:64])  # ERR: (64, 32) into (64, 64)

    return main
