"""What tile-pipeline must leave alone or order, checked on kernels that would go wrong.

- A loop that writes global memory is not pipelined: a copy issued iterations ahead would
  read a row before the iteration that writes it.
- The prologue's async copies come after a barrier: a buffer read before the loop may share
  bytes with the stages.
"""

import torch

import tilec
import tilec.language as T


def recurrence(stages):
    @T.prim_func
    def main(X: T.Tensor((8, 64), T.float32), Y: T.Tensor((8, 64), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((1, 64), T.float32)
            for k in T.Pipelined(7, num_stages=stages):
                T.copy(X[k, 0], s)
                for i in T.Parallel(64):
                    X[k + 1, i] = s[0, i] + 1.0
            T.copy(X, Y)

    return main


def test_a_loop_writing_global_memory_is_not_pipelined():
    for stages in (2, 3):
        kernel = tilec.compile(recurrence(stages), out_idx=[1], target="sim")
        assert "nvvm.cp.async" not in kernel.get_ir("thread")
        x = torch.zeros(8, 64)
        kernel(x)
        assert torch.equal(x[:, 0], torch.arange(8.0))


def bias_then_gemm():
    @T.prim_func
    def main(A: T.Tensor((64, 128), T.float16), B: T.Tensor((128, 64), T.float16),
             Bias: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_shared((64, 64), T.float16)
            a = T.alloc_shared((64, 32), T.float16)
            b = T.alloc_shared((32, 64), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.copy(Bias, x)
            T.copy(x, c)
            for ko in T.Pipelined(4, num_stages=3):
                T.copy(A[0, ko * 32], a)
                T.copy(B[ko * 32, 0], b)
                T.gemm(a, b, c)
            T.copy(c, C)

    return main


def test_the_prologue_waits_for_reads_of_bytes_the_stages_reuse():
    kernel = tilec.compile(bias_then_gemm(), out_idx=[3], target="sim",
                           pass_configs={"tl.disable_warp_specialized": True})  # tile-pipeline's cp.async stages
    tile_ir = kernel.get_ir("tile-opt")
    # x's last read (the copy into the fragment) and the first async copy: a barrier between
    head = tile_ir[:tile_ir.index("{async}")]
    assert head.rindex("tile.barrier") > head.index("tile.copy %x, %c")
    a, b, bias = torch.randn(64, 128).half(), torch.randn(128, 64).half(), torch.randn(64, 64).half()
    out = kernel(a, b, bias)
    ref = a.float() @ b.float() + bias.float()
    assert ((out - ref).norm() / ref.norm()) < 1e-3
