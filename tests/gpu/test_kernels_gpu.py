"""Whole kernels through the CUDA pipeline on the GPU, each checked against torch.

The cases (tests/kernel_cases.py) cover the lowering paths the reference kernels do not:
dynamic sizes with tails, every reduction kind, cross-warp reductions, scans, atomics, a
transposed bfloat16 gemm with tails, scalar variables in serial loops.  The same cases run
on the CPU through the thread-level simulator (tests/e2e/test_simulated_cuda.py).
"""

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from kernel_cases import CASES, run_case  # noqa: E402


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_on_the_gpu(case):
    run_case(case, "cuda", "cuda")


from kernel_cases import MMA_CASES  # noqa: E402


@pytest.mark.parametrize("case", MMA_CASES, ids=[c.name for c in MMA_CASES])
def test_tensor_core_gemm_on_the_gpu(case):
    """mma.sync m16n8k16 gemms (pass config tilec.enable_mma), first checked on the simulator."""
    run_case(case, "cuda", "cuda", pass_configs={"tilec.enable_mma": True, "tilec.enable_wgmma": False},
             expect_ir="nvvm.mma.sync")


from kernel_cases import SWIZZLE_CASES  # noqa: E402


@pytest.mark.parametrize("mma", [False, True], ids=["simt", "mma"])
@pytest.mark.parametrize("case", SWIZZLE_CASES, ids=[c.name for c in SWIZZLE_CASES])
def test_swizzled_shared_tiles_on_the_gpu(case, mma):
    run_case(case, "cuda", "cuda", pass_configs={"tilec.enable_mma": mma})


GEMM_CASES = [c for c in CASES if "gemm" in c.name]


@pytest.mark.parametrize("case", GEMM_CASES, ids=[c.name for c in GEMM_CASES])
def test_simt_gemm_on_the_gpu(case):
    """The SIMT gemm (tensor cores off), no longer the default on sm_80+."""
    run_case(case, "cuda", "cuda", pass_configs={"tilec.enable_mma": False}, expect_ir="math.fma")


from kernel_cases import PIPELINE_CASES  # noqa: E402


@pytest.mark.parametrize("mma", [False, True], ids=["simt", "mma"])
@pytest.mark.parametrize("case", PIPELINE_CASES, ids=[c.name for c in PIPELINE_CASES])
def test_pipelined_gemm_on_the_gpu(case, mma):
    """cp.async stages (tile-pipeline): on the GPU the copies really run ahead of the gemms."""
    for _ in range(3):  # fresh inputs each time: an ordering bug shows as a changing error
        run_case(case, "cuda", "cuda", pass_configs={"tilec.enable_mma": mma, "tl.disable_warp_specialized": True},
                 expect_ir="nvvm.cp.async.shared.global")


from kernel_cases import WGMMA_CASES  # noqa: E402


@pytest.mark.parametrize("case", WGMMA_CASES, ids=[c.name for c in WGMMA_CASES])
def test_wgmma_gemm_on_the_gpu(case):
    """wgmma m64nNk16 from swizzled shared tiles (pass config tilec.enable_wgmma), first simulated."""
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma needs sm_90a")
    for _ in range(2):
        run_case(case, "cuda", "cuda", pass_configs={"tilec.enable_wgmma": True}, expect_ir="nvvm.wgmma.mma_async")
        run_case(case, "cuda", "cuda", pass_configs={"tl.disable_warp_specialized": True},
                 expect_ir="nvvm.wgmma.mma_async")  # and with the cp.async stages


from kernel_cases import REGION_OPERAND_CASES  # noqa: E402


@pytest.mark.parametrize("kind", ["wgmma", "mma"])
@pytest.mark.parametrize("case", REGION_OPERAND_CASES, ids=[c.name for c in REGION_OPERAND_CASES])
def test_region_operand_gemm_on_the_gpu(case, kind):
    """A gemm operand that is a shared region at a run-time offset (issue 8, item 5): wgmma reads it
    by descriptors from the region's start on sm_90a; mma.sync (wgmma off) by pairs of elements
    (ldmatrix cannot address it)."""
    if kind == "wgmma":
        if torch.cuda.get_device_capability() != (9, 0):
            pytest.skip("wgmma needs sm_90a")
        run_case(case, "cuda", "cuda", expect_ir="nvvm.wgmma.mma_async")
    else:
        run_case(case, "cuda", "cuda", pass_configs={"tilec.enable_wgmma": False}, expect_ir="nvvm.mma.sync")


def test_one_plus_tanh_keeps_its_relative_precision_on_the_gpu():
    """thread-sigmoid's 2·rcp(1 + ex2(−2x·log2 e)) on the hardware's approximations: a few ulp."""
    import numpy as np

    import tilec
    import tilec.language as T

    @T.prim_func
    def one_plus_tanh(X: T.Tensor((256,), T.float32), Y: T.Tensor((256,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(256):
                Y[i] = 1.0 + T.tanh(X[i])

    x = torch.linspace(-12, 12, 256, dtype=torch.float32, device="cuda")
    kernel = tilec.compile(one_plus_tanh, out_idx=[1], target="cuda")
    got = kernel(x).double().cpu().numpy()
    want = 1.0 + np.tanh(x.double().cpu().numpy())
    assert np.max(np.abs(got - want) / want) < 2e-6
