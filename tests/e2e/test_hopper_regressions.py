"""Bugs of the Hopper path that the differential fuzzer found on the H200 (seeds of
bench/fuzz_gpu.py --seed 20261201): each kernel minimized, checked on the simulator and
(marked gpu) on the GPU, with the IR fact that makes it right."""

# ruff: noqa: F841 - kernels bind block indices they do not use

import pytest
import torch

import tilec
import tilec.language as T


def gemm_of_a_tile_rewritten_in_the_loop():
    """The loop scales A's tile after its copy (seed 20261911): the tile is written by the
    threads, so the wgmma of the iteration before, still in flight, must not read it."""

    @T.prim_func
    def main(A: T.Tensor((128, 128), T.float16), B: T.Tensor((64, 128), T.float16), C: T.Tensor((128, 64), T.float16)):
        with T.Kernel(1, 1, threads=128) as (bx, by):
            a = T.alloc_shared((128, 32), T.float16)
            b = T.alloc_shared((64, 32), T.float16)
            c = T.alloc_fragment((128, 64), T.float32)
            T.clear(c)
            for ko in T.Pipelined(4, num_stages=3):
                T.copy(A[0, ko * 32], a)
                T.copy(B[0, ko * 32], b)
                for i, k in T.Parallel(128, 32):
                    a[i, k] = a[i, k] * 0.5
                T.gemm(a, b, c, transpose_B=True)
            T.copy(c, C)

    return main


def _check_gemm(kernel, device):
    a, b = torch.randn(128, 128, device=device).half(), torch.randn(64, 128, device=device).half()
    c = torch.full((128, 64), float("nan"), device=device).half()
    kernel(a, b, c)
    ref = (a.float() * 0.5).half().float() @ b.float().T
    assert ((c.float() - ref).norm() / ref.norm()).item() < 1e-2


def test_no_warp_specialization_when_the_threads_write_a_gemm_operand():
    kernel = tilec.compile(gemm_of_a_tile_rewritten_in_the_loop(), target="sim")
    ir = kernel.get_ir("tile-opt")
    assert "tile.tma_load" not in ir and "a gemm operand is written by the block's threads" in ir
    _check_gemm(kernel, "cpu")


@pytest.mark.gpu
def test_no_warp_specialization_when_the_threads_write_a_gemm_operand_gpu():
    _check_gemm(tilec.compile(gemm_of_a_tile_rewritten_in_the_loop(), target="cuda"), "cuda")


def pipelined_tiles_too_big_for_four_stages():
    """Seed 20261870: four stages of the loop's tiles exceed the 227 KiB a block may use; one
    stage fits, so the kernel is valid: the passes take fewer stages instead of refusing it."""

    @T.prim_func
    def main(A: T.Tensor((256, 128), T.float32), B: T.Tensor((64, 128), T.bfloat16), C: T.Tensor((256, 64), T.float32)):
        with T.Kernel(1, 1, threads=256) as (bx, by):
            a = T.alloc_shared((256, 64), T.bfloat16)
            b = T.alloc_shared((64, 64), T.bfloat16)
            c = T.alloc_fragment((256, 64), T.float32)
            staged = T.alloc_shared((256, 64), T.float32)
            T.clear(c)
            for ko in T.Pipelined(2, num_stages=4):
                T.copy(A[0, ko * 64], staged)
                for i, k in T.Parallel(256, 64):
                    a[i, k] = staged[i, k]
                T.copy(B[0, ko * 64], b)
                T.gemm(a, b, c, transpose_B=True)
            T.copy(c, C)

    return main


def test_stages_are_cut_to_the_shared_memory_budget():
    kernel = tilec.compile(pipelined_tiles_too_big_for_four_stages(), target="sim")
    a, b = torch.randn(256, 128), torch.randn(64, 128).bfloat16()
    c = torch.full((256, 64), float("nan"))
    kernel(a, b, c)
    ref = a.bfloat16().float() @ b.float().T
    assert ((c - ref).norm() / ref.norm()).item() < 1e-2


def f16_atomic_max():
    """Seed 20268315: many threads' atomic max into float16 elements that share 32-bit words."""

    @T.prim_func
    def main(X: T.Tensor((64, 3), T.float32), Out: T.Tensor((3,), T.float16)):
        with T.Kernel(1, threads=32) as bx:
            f = T.alloc_fragment((64, 3), T.float32)
            T.copy(X, f)
            for i, j in T.Parallel(64, 3):
                T.atomic_max(Out[j], f[i, j])

    return main


def test_f16_atomic_max_recomputes_in_its_cas_loop():
    """LLVM 22 expands `atomicrmw fmax half` with the max computed once before its CAS loop; the
    translation's own loop computes it from every word it reads."""
    ptx = tilec.compile(f16_atomic_max(), target="sm_90a").get_kernel_source()
    body = ptx[ptx.index("$L__BB0_1:"):]
    body = body[:body.index("bra")]
    assert "max.f16" in body and "atom" in body and "cas.b32" in body


@pytest.mark.gpu
def test_f16_atomic_max_gpu():
    x = torch.randn(64, 3, device="cuda")
    out = torch.full((3,), -1e4, device="cuda").half()
    tilec.compile(f16_atomic_max(), target="cuda")(x, out)
    torch.testing.assert_close(out.float(), x.max(0).values.half().float())


def _loop_bound_from_a_load():
    import tilec.language as T

    @T.prim_func
    def main(A: T.Tensor((256, 64), T.float16), B: T.Tensor((64, 64), T.float16), L: T.Tensor((1,), T.int32),
             C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 64), T.float16)
            b = T.alloc_shared((64, 64), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            n = L[0]
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(n, 64), num_stages=2):
                T.copy(A[k * 64, 0], a)
                T.copy(B[0, 0], b)
                T.gemm(a, b, c)
            T.copy(c, C)

    return main


def test_a_loop_bound_loaded_by_the_threads_is_not_warp_specialized():
    """TileLang's gqa_decode_varlen_logits (H200 run of 2026-12-01): a T.Pipelined loop whose trip
    count comes from a load crashed the lowering (the producer ran a loop bounded by a value only the
    consumers computed). It now stays on cp.async stages, with the reason in the IR."""
    import torch

    import tilec

    kernel = tilec.compile(_loop_bound_from_a_load(), out_idx=[3], target="sim")
    assert "its bounds are computed by the block's threads" in kernel.get_ir("tile-opt")
    a, b = torch.randn(256, 64).half(), torch.randn(64, 64).half()
    ref = sum(a[i * 64:(i + 1) * 64].float() @ b.float() for i in range(3))
    assert ((kernel(a, b, torch.tensor([192], dtype=torch.int32)) - ref).norm() / ref.norm()) < 1e-5


def _mma_gemm_after_a_warp_specialized_loop():
    import tilec.language as T

    @T.prim_func
    def main(A: T.Tensor((12, 32), T.bfloat16), B: T.Tensor((63, 32), T.bfloat16), V: T.Tensor((63, 16), T.bfloat16),
             O: T.Tensor((12, 32), T.float16)):
        with T.Kernel(2, 1, threads=128) as (bx, by):
            a0 = T.alloc_shared((64, 32), T.bfloat16)
            b1 = T.alloc_shared((56, 32), T.bfloat16)
            c2 = T.alloc_fragment((64, 56), T.float32)
            T.clear(c2)
            for ko in T.Pipelined(T.ceildiv(32, 32), num_stages=0):
                T.copy(A[by * 64, ko * 32], a0)
                T.copy(B[bx * 56, ko * 32], b1)
                T.gemm(a0, b1, c2, transpose_B=True)
            p3 = T.alloc_shared((64, 56), T.bfloat16)
            v4 = T.alloc_shared((56, 16), T.bfloat16)
            o5 = T.alloc_fragment((64, 16), T.float32)
            T.copy(c2, p3)
            T.copy(V[bx * 56, 0], v4)
            T.fill(o5, 0.0)
            T.gemm(p3, v4, o5)
            T.copy(o5, O[by * 64, bx * 16])

    return main


def test_an_mma_gemm_after_a_warp_specialized_loop_still_builds():
    """Fuzz seed 31000284: the refusal of non-wgmma gemms of stage views in a consumer region must
    leave alone a SIMT or mma.sync gemm of plain tiles there (after the loop, in the consumers' epilogue)."""
    import torch

    import tilec

    kernel = tilec.compile(_mma_gemm_after_a_warp_specialized_loop(), out_idx=[3], target="sim")
    assert "tilec.warp_roles" in kernel.get_ir("thread")  # the loop is warp-specialized; the second gemm is not wgmma
    a, b, v = torch.randn(12, 32).bfloat16(), torch.randn(63, 32).bfloat16(), torch.randn(63, 16).bfloat16()
    got = kernel(a, b, v).float()
    ref = torch.zeros(12, 32)
    for bx in range(2):
        s = (a.float() @ b.float()[bx * 56:(bx + 1) * 56].T).bfloat16().float()
        vv = v.float()[bx * 56:(bx + 1) * 56]
        ref[:, bx * 16:(bx + 1) * 16] = s[:, :vv.shape[0]] @ vv
    assert ((got - ref).norm() / ref.norm()) < 1e-2
