"""A gemm operand that is a region of one stage of a multi-buffered shared tile (TileLang's sparse
MLA forward: `T.wgmma_gemm(Q_shared[:, :D // 2], KV_shared[stage, :, :D // 2], acc_s)`): the stage's
view, then the region of it, so the operand is 2-D as T.gemm wants (before, `buf[s, :, a:b]` kept the
stage dim and was refused as 3-D)."""

# ruff: noqa: F841

import pytest
import torch

import tilec
import tilec.language as T


def halves_of_each_stage(stages=2, n=64, k=64):
    half = k // 2

    @T.prim_func
    def main(A: T.Tensor((64, k), T.float16), B: T.Tensor((stages, n, k), T.float16), C: T.Tensor((64, n), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((64, k), T.float16)
            b_s = T.alloc_shared((stages, n, k), T.float16)
            c = T.alloc_fragment((64, n), T.float32)
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.clear(c)
            for s in T.unroll(stages):
                T.gemm(a_s[:, :half], b_s[s, :, :half], c, transpose_B=True)
                T.wgmma_gemm(a_s[:, half:], b_s[s, :, half:], c, transpose_B=True)
            T.wait_wgmma(0)
            T.copy(c, C)

    def ref(a, b):
        return sum(a.double() @ b[s].double().T for s in range(stages)).float()

    return main, ref


@pytest.mark.parametrize("target", ["sim", "interp"])
def test_regions_of_stages_are_gemm_operands(target):
    main, ref = halves_of_each_stage()
    torch.manual_seed(0)
    a, b = torch.randn(64, 64).half(), torch.randn(2, 64, 64).half()
    kernel = tilec.compile(main, out_idx=[2], target=target)
    torch.testing.assert_close(kernel(a, b), ref(a, b), atol=2e-2, rtol=1e-2)


def test_assembles_for_sm_90a(ptxas):
    """(With no wait of its own that ptxas injects: no TilecWarning reports one.)"""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tilec.compile(halves_of_each_stage()[0], out_idx=[2], target="sm_90a")
    assert not [w for w in caught if "ptxas:" in str(w.message)], [str(w.message) for w in caught]


@pytest.mark.gpu
def test_on_the_gpu():
    main, ref = halves_of_each_stage()
    a, b = torch.randn(64, 64).half(), torch.randn(2, 64, 64).half()
    out = tilec.compile(main, out_idx=[2], target="cuda")(a.cuda(), b.cuda())
    torch.testing.assert_close(out.cpu(), ref(a, b), atol=2e-2, rtol=1e-2)
