"""Index arithmetic is 32-bit for static kernels whose tensors have at most 2^30 elements, else 64-bit."""

import pytest

import tilec
import tilec.language as T


def scale(shape, dynamic=False):
    n = T.dynamic("n") if dynamic else shape[0]

    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(T.ceildiv(n, 256), threads=128) as bx:
            for i in T.Parallel(256):
                if bx * 256 + i < n:
                    B[bx * 256 + i] = A[bx * 256 + i] * 2.0

    return main


@pytest.mark.parametrize("shape,dynamic,configs,bits", [
    ((4096,), False, None, 32),
    ((4096,), True, None, 64),  # a dynamic size may exceed 2^31
    (((1 << 30) + 256,), False, None, 64),
    ((4096,), False, {"tl.config_index_bitwidth": 64}, 64),
])
def test_index_width(shape, dynamic, configs, bits):
    kernel = tilec.compile(scale(shape, dynamic), out_idx=[1], target="cuda", pass_configs=configs)
    assert kernel._backend._index_bits() == bits
    llvm_ir = kernel.get_ir("llvm")
    assert (f"mul i{bits}" in llvm_ir or f"add i{bits}" in llvm_ir or f"shl i{bits}" in llvm_ir), llvm_ir[-2000:]
