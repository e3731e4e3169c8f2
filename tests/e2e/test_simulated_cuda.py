"""The CUDA lowering's output run on the CPU by the thread-level simulator (target "sim").

Every kernel goes through the same passes, layouts and thread-level code as on the GPU; the
simulator runs a block's threads in lockstep and reports out-of-range accesses.  The cases
are the GPU tests' (tests/kernel_cases.py), plus the reference kernels of shared/kernels.
"""

import os
import re
import sys

import pytest

from kernel_cases import CASES, MMA_CASES, PIPELINE_CASES, SWIZZLE_CASES, WGMMA_CASES, run_case

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "kernels")
REFERENCE = ["elementwise_add", "softmax", "rms_norm", "gemm", "gemm_bias_gelu", "flash_attention"]


def assemble_case(case, arch: str = "sm_90a", configs: dict | None = None):
    """The case through the CUDA passes, LLVM and ptxas: (PTX, ptxas report, kernel name)."""
    from tilec.frontend import build_prim_func
    from tilec.compiler.lower import lower_to_thread
    from tilec.target import resolve_target
    from tilec.targets.nvptx import assemble, emit_ptx

    lowered = lower_to_thread(build_prim_func(case.prim, case.out_idx), resolve_target(arch), configs or {})
    spec = lowered.spec
    ptx = emit_ptx(lowered.thread, arch)
    cubin, report = assemble(ptx, arch)
    assert cubin.startswith(b"\x7fELF") and spec.kernel_name in report.kernels
    return ptx, report, spec.kernel_name


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_on_the_simulator(case):
    run_case(case, "sim", "cpu")


@pytest.mark.parametrize("name", REFERENCE)
def test_reference_kernel_on_the_simulator(name, monkeypatch):
    if not os.path.isdir(SHARED):
        pytest.skip(f"{SHARED} is absent")
    from tilec import config

    monkeypatch.setattr(config, "DEFAULT_TARGET", "sim")
    monkeypatch.syspath_prepend(SHARED)
    sys.modules.pop(name, None)
    module = __import__(name)
    assert module.main(), f"{name} failed on the simulated CUDA target"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_assembles_for_sm_90a(case, ptxas):
    """The same thread-level IR goes through LLVM to PTX that ptxas accepts."""
    assemble_case(case)


@pytest.mark.parametrize("case", MMA_CASES, ids=[c.name for c in MMA_CASES])
def test_tensor_core_gemm_on_the_simulator(case):
    """mma.sync (the sm_80 path; sm_90a chooses wgmma unless it is turned off)."""
    run_case(case, "sim", "cpu", pass_configs={"tilec.enable_mma": True, "tilec.enable_wgmma": False},
             expect_ir="nvvm.mma.sync")


@pytest.mark.parametrize("case", MMA_CASES, ids=[c.name for c in MMA_CASES])
def test_tensor_core_gemm_assembles(case, ptxas):
    ptx, _, _ = assemble_case(case, "sm_80", {"tilec.enable_mma": True})
    assert "mma.sync.aligned.m16n8k16.row.col.f32" in ptx
    assert "ldmatrix.sync.aligned.m8n8" in ptx  # operands come from shared memory by ldmatrix


def test_every_stage_prints_and_dumps(monkeypatch, tmp_path):
    """get_ir gives each stage of the CUDA pipeline; TILEC_DUMP_IR writes the IR after every pass."""
    from tilec import config

    monkeypatch.setattr(config, "DUMP_IR", str(tmp_path))
    case = next(c for c in CASES if c.name == "column_sum")
    kernel = __import__("tilec").compile(case.prim, out_idx=case.out_idx, target="sim")
    assert "tile.reduce" in kernel.get_ir("tile")
    assert '#tile.fragment<"' in kernel.get_ir("tile-opt") and "tile.barrier" not in kernel.get_ir("tile")
    assert "nvvm.kernel" in kernel.get_ir("thread")
    dumped = sorted(p.name for p in tmp_path.iterdir())
    for stage in ("tile-legalize-bounds", "tile-infer-layout", "tile-plan-shared-memory", "tile-insert-barriers",
                  "thread"):
        assert f"main.{stage}.mlir" in dumped, dumped


@pytest.mark.parametrize("mma", [False, True], ids=["simt", "mma"])
@pytest.mark.parametrize("case", SWIZZLE_CASES, ids=[c.name for c in SWIZZLE_CASES])
def test_swizzled_shared_tiles_on_the_simulator(case, mma):
    run_case(case, "sim", "cpu", pass_configs={"tilec.enable_mma": mma}, expect_ir="arith.xori")


GEMM_CASES = [c for c in CASES if "gemm" in c.name]


@pytest.mark.parametrize("case", GEMM_CASES, ids=[c.name for c in GEMM_CASES])
def test_simt_gemm_on_the_simulator(case):
    """The SIMT gemm (tensor cores off): the path for pre-sm_80 targets and for `tilec.enable_mma=False`."""
    run_case(case, "sim", "cpu", pass_configs={"tilec.enable_mma": False}, expect_ir="math.fma")


@pytest.mark.parametrize("case", SWIZZLE_CASES, ids=[c.name for c in SWIZZLE_CASES])
def test_swizzled_gemm_assembles(case, ptxas):
    assemble_case(case, configs={"tilec.enable_mma": True})


@pytest.mark.parametrize("mma", [False, True], ids=["simt", "mma"])
@pytest.mark.parametrize("case", PIPELINE_CASES, ids=[c.name for c in PIPELINE_CASES])
def test_pipelined_gemm_on_the_simulator(case, mma):
    """cp.async stages (tile-pipeline): the sm_80 path, and sm_90a's with warp specialization off."""
    run_case(case, "sim", "cpu", pass_configs={"tilec.enable_mma": mma, "tl.disable_warp_specialized": True},
             expect_ir="nvvm.cp.async.shared.global")


@pytest.mark.parametrize("case", PIPELINE_CASES, ids=[c.name for c in PIPELINE_CASES])
def test_pipelined_gemm_assembles(case, ptxas):
    ptx, report, name = assemble_case(case, "sm_80")
    assert "cp.async.cg.shared.global" in ptx and "cp.async.commit_group" in ptx
    assert re.search(r"cp\.async\.wait_group\s+[1-9]", ptx), "the loop waits for all but the stages in flight"
    assert not report.kernels[name].spills


_NO_WS = {"tl.disable_warp_specialized": True}


@pytest.mark.parametrize("specialized", [True, False], ids=["ws", "cp_async"])
@pytest.mark.parametrize("case", WGMMA_CASES, ids=[c.name for c in WGMMA_CASES])
def test_wgmma_gemm_on_the_simulator(case, specialized):
    """wgmma (the sm_90a default): TMA loads by a producer warpgroup, or cp.async stages."""
    run_case(case, "sim", "cpu", pass_configs={} if specialized else _NO_WS,
             expect_ir="nvvm.cp.async.bulk.tensor" if specialized else "nvvm.wgmma.mma_async")


@pytest.mark.parametrize("case", WGMMA_CASES, ids=[c.name for c in WGMMA_CASES])
def test_wgmma_gemm_assembles(case, ptxas):
    ptx, report, name = assemble_case(case, configs=_NO_WS)
    assert "wgmma.mma_async.sync.aligned.m64n" in ptx and "fence.proxy.async.shared::cta" in ptx
    assert not report.kernels[name].spills
    assert "C75" not in report.log, report.log  # no wgmma serialization warnings


@pytest.mark.parametrize("case", WGMMA_CASES, ids=[c.name for c in WGMMA_CASES])
def test_warp_specialized_gemm_assembles(case, ptxas):
    """TMA into the stages, mbarriers, setmaxnreg per role, wgmma with one group in flight."""
    ptx, report, name = assemble_case(case)
    for text in ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                 "mbarrier.arrive.expect_tx", "mbarrier.try_wait.parity", "setmaxnreg.dec.sync.aligned.u32",
                 "setmaxnreg.inc.sync.aligned.u32", "wgmma.wait_group.sync.aligned 1;", ".maxntid"):
        assert text in ptx, text
    # TMA writes in the async proxy: no fence before the wgmmas; the only fences are the epilogue's,
    # each before the TMA store of the result (the writes of the staged tile, for the async proxy)
    for fence in re.finditer(r"fence\.proxy\.async", ptx):
        rest = ptx[fence.end():]
        store = rest.find("cp.async.bulk.tensor.2d.global.shared::cta")
        assert store >= 0 and ("wgmma.mma_async" not in rest or store < rest.index("wgmma.mma_async"))
    assert not report.kernels[name].spills
    assert "C75" not in report.log, report.log  # setmaxnreg honoured (C7508), wgmma not serialized


@pytest.mark.parametrize("case", WGMMA_CASES, ids=[c.name for c in WGMMA_CASES])
def test_persistent_gemm_on_the_simulator(case):
    """`tilec.persistent`: the simulator launches 3 blocks (SIM_PROCESSORS), each looping over its
    tiles with the stage ring continuing from tile to tile."""
    run_case(case, "sim", "cpu", pass_configs={"tilec.persistent": True}, expect_ir="nvvm.cp.async.bulk.tensor")


def _swizzled_gelu(m, n, k):
    import tilec.language as T

    @T.prim_func
    def main(A: T.Tensor((m, k), T.float16), B: T.Tensor((k, n), T.float16), Bias: T.Tensor((n,), T.float16),
             C: T.Tensor((m, n), T.float16)):
        with T.Kernel(T.ceildiv(n, 64), T.ceildiv(m, 64), threads=128) as (bx, by):
            a = T.alloc_shared((64, 64), T.float16)
            b = T.alloc_shared((64, 64), T.float16)
            bias = T.alloc_shared((64,), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.use_swizzle(panel_size=2)
            T.clear(c)
            T.copy(Bias[bx * 64], bias)
            for ko in T.Pipelined(T.ceildiv(k, 64), num_stages=2):
                T.copy(A[by * 64, ko * 64], a)
                T.copy(B[ko * 64, bx * 64], b)
                T.gemm(a, b, c)
            for i, j in T.Parallel(64, 64):
                c[i, j] = T.max(c[i, j] + bias[j], 0.0)
            T.copy(c, C[by * 64, bx * 64])

    return main


def test_persistent_gemm_with_rasterization_and_an_epilogue(ptxas):
    """Five by three tiles on 3 simulated multiprocessors, in T.use_swizzle's order, a bias staged
    per tile (the next tile's copy waits for this tile's readers), tails in M and N."""
    import torch

    import tilec

    m, n, k = 300, 200, 128
    configs = {"tilec.persistent": True}
    kernel = tilec.compile(_swizzled_gelu(m, n, k), out_idx=[3], target="sim", pass_configs=configs)
    assert "tilec.persistent" in kernel.get_ir("thread")
    a, b, bias = torch.randn(m, k).half(), torch.randn(k, n).half(), torch.randn(n).half()
    ref = torch.relu(a.float() @ b.float() + bias.float())
    assert ((kernel(a, b, bias).float() - ref).norm() / ref.norm()) < 1e-3
    ptx, report, name = assemble_case(type("C", (), {"prim": _swizzled_gelu(m, n, k), "out_idx": [3]}),
                                      configs=configs)
    assert "%nctaid.x" in ptx and not report.kernels[name].spills


def _clear_then_gemm():
    import tilec.language as T

    @T.prim_func
    def main(A: T.Tensor((128, 64), T.float16), B: T.Tensor((64, 64), T.float16), C: T.Tensor((128, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((128, 64), T.float16)
            b = T.alloc_shared((64, 64), T.float16)
            c = T.alloc_fragment((128, 64), T.float32)
            T.clear(c)
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c)
            T.copy(c, C)

    return main


def test_wgmma_after_a_clear_starts_from_zero(ptxas):
    """`T.clear(c)` then a gemm into c (attention's Q·K^T): the wgmmas start with scale-d 0 and
    no accumulator inputs, so ptxas need not copy zeros between them and serialize them."""
    import torch

    import tilec

    configs = {"tilec.enable_wgmma": True}
    ptx, report, _ = assemble_case(type("C", (), {"prim": _clear_then_gemm(), "out_idx": [2]}), configs=configs)
    first = [line.strip() for line in ptx.splitlines() if "wgmma.mma_async" in line]
    assert len(first) == 8 and all(line.endswith(", 0, 1, 1, 0, 1;") for line in first[:2])
    assert not any(code in report.log for code in ("C7510", "C7511", "C7517", "C7519")), report.log
    kernel = tilec.compile(_clear_then_gemm(), out_idx=[2], target="sim", pass_configs=configs)
    a, b = torch.randn(128, 64).half(), torch.randn(64, 64).half()
    ref = a.float() @ b.float()
    assert ((kernel(a, b) - ref).norm() / ref.norm()) < 1e-5


def _one_plus_tanh(n):
    import tilec.language as T

    @T.prim_func
    def main(X: T.Tensor((n,), T.float32), Y: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(n):
                Y[i] = 1.0 + T.tanh(X[i])

    return main


def test_one_plus_tanh_keeps_its_relative_precision():
    """thread-sigmoid: 1 + tanh(x) = 2σ(2x) on the CUDA path, accurate to a few ulp relative even
    where tanh(x) is near −1 (1 + tanh(−8) ≈ 2.3e-7: the sum of two f32 values would keep no digit)."""
    import numpy as np
    import torch

    import tilec

    x = torch.linspace(-12, 12, 256, dtype=torch.float32)
    kernel = tilec.compile(_one_plus_tanh(256), out_idx=[1], target="sim")
    assert "math.tanh" not in kernel.get_ir("thread")
    got = kernel(x).double().numpy()
    want = 1.0 + np.tanh(x.double().numpy())
    assert np.max(np.abs(got - want) / want) < 2e-6


def _gelu_tanh(n):
    import tilec.language as T

    @T.prim_func
    def main(X: T.Tensor((n,), T.float32), Y: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(n):
                v = X[i]
                Y[i] = 0.5 * v * (1.0 + T.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))

    return main


def test_gelu_tanh_in_six_instructions_keeps_its_precision():
    """thread-sigmoid on gelu_tanh as the fused epilogues write it: the halving folds into the sigmoid
    and the cubic into Horner's form (no tanh, no fma by 0.5 left), and the result stays within a few
    ulp of float64's, relative, on both tails (down to gelu(-9) ~ 1e-35, positive values to 1 + ulp)."""
    import numpy as np
    import torch

    import tilec

    x = torch.cat([torch.linspace(-9, 9, 512), torch.randn(512) * 3]).float()
    kernel = tilec.compile(_gelu_tanh(1024), out_idx=[1], target="sim")
    thread = kernel.get_ir("thread")
    assert "math.tanh" not in thread and "-0.102943" in thread  # Horner's k * 0.044715
    assert not re.search(r"math\.fma %\w+, (%\w+), \1 ", thread)  # no (1 + e) / 2: the halving folded
    got = kernel(x).double().numpy()
    v = x.double().numpy()
    want = v / (1.0 + np.exp(-2.0 * 0.7978845608 * (v + 0.044715 * v ** 3)))  # 1 + tanh cancels in float64 too
    assert np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-30)) < 1e-5
