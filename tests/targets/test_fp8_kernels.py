"""fp8 kernels (float8_e4m3fn / float8_e5m2) on the interpreter and on `sim` (the CUDA passes and
lowering, the thread IR simulated): both compute torch's casts bit for bit (saturation, inf, NaN,
subnormals), and an fp8 T.gemm runs on sm_90a's wgmma (k32, K-major operands) with the same
result; fp8 gemms the hardware cannot take are refused at the gemm's line."""

# Kernels bind block indices they do not use: that is the DSL.
# ruff: noqa: F841

import re

import pytest
import torch

import tilec
import tilec.language as T
from tilec import TilecError

TARGETS = ["interp", "sim"]
FP8 = [(T.float8_e4m3fn, torch.float8_e4m3fn), (T.float8_e5m2, torch.float8_e5m2)]
FP8_IDS = ["e4m3fn", "e5m2"]
TORCH = {T.float32: torch.float32, T.float16: torch.float16, T.bfloat16: torch.bfloat16}


def round_trip(n, src, dst, blk=512):
    """B = A as fp8 (through a fragment, as TileLang's T.copy converts), C = B widened back."""

    @T.prim_func
    def main(A: T.Tensor((n,), src), B: T.Tensor((n,), dst), C: T.Tensor((n,), T.float32)):
        with T.Kernel(T.ceildiv(n, blk), threads=128) as bx:
            a = T.alloc_fragment((blk,), src)
            b = T.alloc_fragment((blk,), dst)
            T.copy(A[bx * blk], a)
            T.copy(a, b)
            T.copy(b, B[bx * blk])
            for i in T.Parallel(blk):
                C[bx * blk + i] = B[bx * blk + i]

    return main


def special_inputs(n, dtype):
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(n, generator=gen) * torch.logspace(-7, 5, n)
    specials = torch.tensor([float("nan"), -float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 448, 464, 465,
                             480, 1e6, -1e6, 57344, 61439, 61440, 2**-9, 2**-10, 3 * 2**-11, 2**-16, 2**-17])
    x[: len(specials)] = specials
    return x.to(dtype)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fp8,tfp8", FP8, ids=FP8_IDS)
@pytest.mark.parametrize("src", [T.float32, T.float16, T.bfloat16], ids=["f32", "f16", "bf16"])
def test_casts_are_torchs_bit_for_bit(target, fp8, tfp8, src):
    n = 1024
    kernel = tilec.compile(round_trip(n, src, fp8), target=target)
    x = special_inputs(n, TORCH[src])
    b, c = torch.empty(n, dtype=tfp8), torch.empty(n)
    kernel(x, b, c)
    ref = x.to(tfp8)
    assert torch.equal(b.view(torch.uint8), ref.view(torch.uint8))
    torch.testing.assert_close(c, ref.float(), rtol=0, atol=0, equal_nan=True)


def decode(fp8):
    @T.prim_func
    def main(A: T.Tensor((256,), fp8), B: T.Tensor((256,), T.float32), H: T.Tensor((256,), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(256):
                B[i] = A[i]
                H[i] = A[i]

    return main


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fp8,tfp8", FP8, ids=FP8_IDS)
def test_every_code_widens_exactly(target, fp8, tfp8):
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(tfp8)
    b, h = torch.empty(256), torch.empty(256, dtype=torch.float16)
    tilec.compile(decode(fp8), target=target)(codes, b, h)
    torch.testing.assert_close(b, codes.float(), rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(h, codes.half(), rtol=0, atol=0, equal_nan=True)


def per_token_quant(m, n, group=128, blk_m=8):
    """TileLang's example_per_token_cast_to_fp8, small: scale each 128-wide group by its amax."""

    @T.prim_func
    def main(X: T.Tensor((m, n), T.float32), Q: T.Tensor((m, n), T.float8_e4m3fn),
             S: T.Tensor((m, n // group), T.float32)):
        with T.Kernel(T.ceildiv(m, blk_m), n // group, threads=128) as (bx, by):
            y = T.alloc_fragment((blk_m, group), T.float32)
            amax = T.alloc_fragment((blk_m,), T.float32)
            q = T.alloc_fragment((blk_m, group), T.float8_e4m3fn)
            T.copy(X[bx * blk_m, by * group], y)
            T.reduce_absmax(y, amax, dim=1)
            for i in T.Parallel(blk_m):
                amax[i] = T.max(amax[i], 1e-4) / 448.0
            for i, j in T.Parallel(blk_m, group):
                q[i, j] = T.clamp(y[i, j] / amax[i], -448.0, 448.0)
            for i in T.Parallel(blk_m):
                S[bx * blk_m + i, by] = amax[i]
            T.copy(q, Q[bx * blk_m, by * group])

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_per_token_quantization(target):
    m, n = 16, 256
    x = torch.randn(m, n, generator=torch.Generator().manual_seed(2)) * 10
    q, s = torch.empty(m, n, dtype=torch.float8_e4m3fn), torch.empty(m, n // 128)
    tilec.compile(per_token_quant(m, n), target=target)(x, q, s)
    view = x.view(m, -1, 128)
    scale = view.abs().amax(dim=2).clamp(1e-4) / 448.0
    ref = (view / scale.unsqueeze(2)).clamp(-448, 448).to(torch.float8_e4m3fn).view(m, n)
    torch.testing.assert_close(s, scale)
    # the scales agree to the last bit of f32 division: the codes agree except at rare ties
    assert (q.view(torch.uint8) != ref.view(torch.uint8)).sum() <= 2


def fp8_gemm(m, n, k, bm, bn, bk, dtype, threads=128, trans_b=True):
    b_shape = (n, k) if trans_b else (k, n)

    @T.prim_func
    def main(A: T.Tensor((m, k), dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((m, n), T.float32)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=threads) as (bx, by):
            a_s = T.alloc_shared((bm, bk), dtype)
            b_s = T.alloc_shared((bn, bk) if trans_b else (bk, bn), dtype)
            c_l = T.alloc_fragment((bm, bn), T.float32)
            T.clear(c_l)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], a_s)
                if trans_b:
                    T.copy(B[bx * bn, ko * bk], b_s)
                else:
                    T.copy(B[ko * bk, bx * bn], b_s)
                T.gemm(a_s, b_s, c_l, transpose_B=trans_b)
            T.copy(c_l, C[by * bm, bx * bn])

    return main


def _operands(m, n, k, tfp8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(m, k, generator=gen).to(tfp8), torch.randn(n, k, generator=gen).to(tfp8)


@pytest.mark.parametrize("fp8,tfp8", FP8, ids=FP8_IDS)
@pytest.mark.parametrize("bk,threads", [(64, 128), (128, 128), (256, 256)], ids=["k64", "k128", "k256-2wg"])
def test_gemm_on_wgmma_matches_the_interpreter(fp8, tfp8, bk, threads):
    """K of 64 / 128 bytes: the 64- / 128-byte swizzle; 256: two 128-byte chunks per row."""
    m, n, k = 128, 64, 2 * bk
    a, b = _operands(m, n, k, tfp8)
    ref = a.float() @ b.float().T
    out = {}
    for target in TARGETS:
        out[target] = torch.empty(m, n)
        tilec.compile(fp8_gemm(m, n, k, 128, 64, bk, fp8, threads=threads), target=target)(a, b, out[target])
        torch.testing.assert_close(out[target], ref, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(out["sim"], out["interp"], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("fp8,name", [(T.float8_e4m3fn, "e4m3"), (T.float8_e5m2, "e5m2")], ids=FP8_IDS)
def test_gemm_ptx_is_wgmma_k32(fp8, name):
    ptx = tilec.compile(fp8_gemm(128, 64, 128, 128, 64, 64, fp8), target="sm_90a").get_kernel_source()
    lines = [line.strip() for line in ptx.splitlines() if "wgmma.mma_async" in line]
    assert lines and len(lines) % 4 == 0  # 2 row blocks x 2 k32 steps per block_K of 64, per copy of the loop body
    assert all(f"m64n64k32.f32.{name}.{name}" in line for line in lines)
    assert "cp.async.bulk.tensor" in ptx  # the operands come by TMA (a warp-specialized producer)
    # descriptors, scale-d (1 or a predicate), imm-scale-a/b: no imm-trans operands for fp8
    assert all(re.search(r"\}, %rd\d+, %rd\d+, (1|%p\d+), 1, 1;$", line) for line in lines), lines[0]


def test_n_major_fp8_b_is_refused_at_the_gemm():
    with pytest.raises(TilecError, match=r"reads 8-bit operands only K-major") as info:
        tilec.compile(fp8_gemm(128, 64, 128, 128, 64, 64, T.float8_e4m3fn, trans_b=False), target="sm_90a")
    assert "T.gemm(a_s, b_s, c_l, transpose_B=trans_b)" in str(info.value)
    assert "transpose_B=True" in str(info.value)
    assert f"test_fp8_kernels.py:{_gemm_line()}:" in str(info.value)


def test_without_wgmma_an_n_major_fp8_gemm_runs_without_tensor_cores():
    m, n, k = 64, 64, 64
    a, b = _operands(m, n, k, torch.float8_e5m2, seed=3)
    c = torch.empty(m, n)
    kernel = tilec.compile(fp8_gemm(m, n, k, 64, 64, 32, T.float8_e5m2, trans_b=False), target="sim",
                           pass_configs={"tl.disable_wgmma": True})
    kernel(a, b.T.contiguous(), c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-5, atol=1e-4)


def test_sm_80_refuses_fp8_gemm_naming_the_feature():
    with pytest.raises(TilecError, match=r"float8_e4m3fn operands needs sm_89 or newer.*sm_80") as info:
        tilec.compile(fp8_gemm(128, 64, 128, 128, 64, 64, T.float8_e4m3fn), target="sm_80")
    assert f"test_fp8_kernels.py:{_gemm_line()}:" in str(info.value)


def _gemm_line() -> int:
    return next(i for i, text in enumerate(open(__file__), 1) if "T.gemm(a_s, b_s, c_l, transpose_B=trans_b)" in text
                and "assert" not in text)


def test_sm_80_refuses_fp8_casts_naming_the_feature():
    with pytest.raises(TilecError, match=r"fp8 .*conversions need sm_89 or newer.*sm_80"):
        tilec.compile(round_trip(256, T.float32, T.float8_e4m3fn), target="sm_80")


def test_tma_copies_fp8_as_bytes():
    from tilec.targets.cuda.tensor_map import TensorMapSpec, tma_supported

    for dtype in ("f8E4M3FN", "f8E5M2"):
        spec = TensorMapSpec(0, dtype, (64, 128), 128)
        assert tma_supported(spec, (1024, 512), (512, 1)) is None


def fp8_arith(n, fp8):
    @T.prim_func
    def main(A: T.Tensor((n,), fp8), B: T.Tensor((n,), fp8), C: T.Tensor((n,), fp8)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(n):
                C[i] = A[i] * B[i] + A[i]

    return main


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fp8,tfp8", FP8, ids=FP8_IDS)
def test_arithmetic_on_fp8_values(target, fp8, tfp8):
    """Computed in f32 and rounded into fp8 by torch's rule (overflow included)."""
    n = 256
    gen = torch.Generator().manual_seed(9)
    a = (torch.randn(n, generator=gen) * 30).to(tfp8)
    b = (torch.randn(n, generator=gen) * 30).to(tfp8)
    c = torch.empty(n, dtype=tfp8)
    tilec.compile(fp8_arith(n, fp8), target=target)(a, b, c)
    af, bf = a.float(), b.float()
    once = (af * bf + af).to(tfp8)  # one rounding of the f32 result
    twice = ((af * bf).to(tfp8).float() + af).to(tfp8)  # fp8 arithmetic rounding after each op
    got = c.view(torch.uint8)
    assert torch.equal(got, once.view(torch.uint8)) or torch.equal(got, twice.view(torch.uint8))
