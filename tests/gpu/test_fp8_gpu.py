"""fp8 on the GPU (sm_89+; the H200 runs sm_90a): the kernels of tests/targets/test_fp8_kernels.py,
built for the device. Casts must equal tilec's rounding (targets/interp/float8.py) bit for bit (our rule: cvt.rn.satfinite
plus the fix-ups of targets/nvptx/translate_fp8.py), every code must widen exactly, and the fp8
gemm (wgmma m64nNk32) must match an f32 matmul of the same fp8 values.

Run: python -m pytest -q tests/gpu/test_fp8_gpu.py
"""

import importlib.util
import pathlib

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)
if torch.cuda.get_device_capability() < (8, 9):
    pytest.skip("fp8 needs sm_89 or newer", allow_module_level=True)

import ml_dtypes
import numpy as np

import tilec
import tilec.language as T
from tilec.targets.interp.float8 import encode


def _numpy(x):
    """x as numpy, bfloat16 through ml_dtypes (its bits kept)."""
    if x.dtype == torch.bfloat16:
        return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return x.numpy()


def tfp8_numpy(tfp8):
    return ml_dtypes.float8_e4m3fn if tfp8 == torch.float8_e4m3fn else ml_dtypes.float8_e5m2


def _cases():
    path = pathlib.Path(__file__).resolve().parent.parent / "targets" / "test_fp8_kernels.py"
    spec = importlib.util.spec_from_file_location("_tilec_fp8_kernel_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


K = _cases()
FP8, FP8_IDS, TORCH = K.FP8, K.FP8_IDS, K.TORCH


@pytest.mark.parametrize("fp8,tfp8", FP8, ids=FP8_IDS)
@pytest.mark.parametrize("src", [T.float32, T.float16, T.bfloat16], ids=["f32", "f16", "bf16"])
def test_casts_equal_tilecs_rounding_bit_for_bit(fp8, tfp8, src):
    n = 1 << 16
    x = K.special_inputs(n, TORCH[src])
    if src == T.float32:  # every exponent and the rounding midpoints: a sweep of f32 bit patterns
        x[4096:] = torch.arange(0, 1 << 32, (1 << 32) // (n - 4096), dtype=torch.int64)[: n - 4096] \
            .to(torch.int32).view(torch.float32)
    kernel = tilec.compile(K.round_trip(n, src, fp8), target="cuda")
    b = torch.empty(n, dtype=tfp8, device="cuda")
    c = torch.empty(n, device="cuda")
    kernel(x.cuda(), b, c)
    torch.cuda.synchronize()
    # tilec's rule (targets/interp/float8.py: TileLang's cvt.satfinite, and torch 2.13's CPU cast);
    # torch itself changed: 2.11 gives NaN for an e4m3fn overflow, 2.13 saturates to 448
    ref = torch.from_numpy(encode(_numpy(x), tfp8_numpy(tfp8)).view(np.uint8).copy())
    got = b.cpu().view(torch.uint8)
    bad = got != ref
    assert not bad.any(), (x[bad][:8], got[bad][:8], ref[bad][:8])
    torch.testing.assert_close(c.cpu(), ref.view(tfp8).float(), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("fp8,tfp8", FP8, ids=FP8_IDS)
def test_every_code_widens_exactly(fp8, tfp8):
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(tfp8)
    b = torch.empty(256, device="cuda")
    h = torch.empty(256, dtype=torch.float16, device="cuda")
    tilec.compile(K.decode(fp8), target="cuda")(codes.cuda(), b, h)
    torch.testing.assert_close(b.cpu(), codes.float(), rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(h.cpu(), codes.half(), rtol=0, atol=0, equal_nan=True)


def test_per_token_quantization():
    m, n = 256, 1024
    x = torch.randn(m, n, generator=torch.Generator().manual_seed(2)) * 10
    q = torch.empty(m, n, dtype=torch.float8_e4m3fn, device="cuda")
    s = torch.empty(m, n // 128, device="cuda")
    tilec.compile(K.per_token_quant(m, n), target="cuda")(x.cuda(), q, s)
    view = x.view(m, -1, 128)
    scale = view.abs().amax(dim=2).clamp(1e-4) / 448.0
    ref = (view / scale.unsqueeze(2)).clamp(-448, 448).to(torch.float8_e4m3fn).view(m, n)
    torch.testing.assert_close(s.cpu(), scale)
    assert (q.cpu().view(torch.uint8) != ref.view(torch.uint8)).sum() <= m * n // 10000


@pytest.mark.parametrize("fp8,tfp8", FP8, ids=FP8_IDS)
@pytest.mark.parametrize("bk,threads", [(64, 128), (128, 128), (256, 256)], ids=["k64", "k128", "k256-2wg"])
def test_gemm_on_wgmma(fp8, tfp8, bk, threads):
    m, n, k = 256, 256, 1024
    a, b = K._operands(m, n, k, tfp8)
    kernel = tilec.compile(K.fp8_gemm(m, n, k, 128, 64, bk, fp8, threads=threads), target="cuda")
    assert "k32.f32" in kernel.get_kernel_source()
    c = torch.empty(m, n, device="cuda")
    kernel(a.cuda(), b.cuda(), c)
    ref = a.double() @ b.double().T
    err = (c.cpu().double() - ref).norm() / ref.norm()
    # fp8 products are exact; Hopper's fp8 wgmma accumulates with fewer bits than f32 (why DeepGEMM
    # promotes to a second accumulator): a layout or descriptor bug gives an error near 1
    assert err < 1e-3, err
