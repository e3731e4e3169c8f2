"""Division by a shared divisor (thread-shared-divisor) returns exactly what `/` returns.

`x[i, j] / s[i]` takes the pass's shared-reciprocal path; the quotients must equal IEEE
division bit for bit on every input: dividends and divisors over the whole float32 range,
inside and outside the fast path's window, signed zeros, subnormals, infinities and NaNs.
On the CPU the simulator runs the thread-level IR against numpy's division; on the GPU the
kernel runs against torch's (`div.rn.f32`).
"""

import numpy as np
import pytest

import tilec
import tilec.language as T

M, N = 64, 256


@tilec.jit(out_idx=[2])
def divide_rows(M, N, block_M=2, threads=64):
    @T.prim_func
    def main(X: T.Tensor((M, N), T.float32), S: T.Tensor((M,), T.float32), Y: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            s = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            T.copy(S[bx * block_M], s)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / s[i]
            T.copy(x, Y[bx * block_M, 0])

    return main


SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-40, 1.17549435e-38, 3.4028235e38, -3.4028235e38,
                    2.0**-60, 2.0**60, -(2.0**-61), 2.0**61, 1.0, -1.0, 3.0, 0.1], np.float32)


def inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random magnitudes spread over every binade (and the specials), random signs and mantissas."""
    rng = np.random.default_rng(seed)

    def spread(shape, lo, hi):
        mag = np.exp2(rng.uniform(lo, hi, shape)) * rng.uniform(1, 2, shape)
        return (mag * rng.choice([-1.0, 1.0], shape)).astype(np.float32)

    x = spread((M, N), -80, 80)
    x[: M // 2] = spread((M // 2, N), -8, 8)  # ordinary rows: mostly the fast path
    x.flat[rng.choice(x.size, 400, replace=False)] = rng.choice(SPECIAL, 400)
    s = spread((M,), -70, 70)
    s[: M // 2] = spread((M // 2,), -4, 4)
    s[M // 2: M // 2 + len(SPECIAL)] = SPECIAL
    return x, s


def assert_bitwise_equal(out: np.ndarray, ref: np.ndarray) -> None:
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(out), nan), "NaN positions differ"
    got, want = out.view(np.uint32)[~nan], ref.view(np.uint32)[~nan]
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} quotients differ, first: {out[~nan][bad[0]]!r} vs {ref[~nan][bad[0]]!r}"


def test_the_pass_applies_and_assembles(ptxas):
    from tilec.targets.nvptx import assemble

    kernel = tilec.compile(divide_rows.fn(M, N), out_idx=[2], target="cuda")
    thread, ptx = kernel.get_ir("thread"), kernel.get_ir("ptx")
    assert "nvvm.rcp.approx.ftz.f" in thread and "arith.divf" in thread
    assert "rcp.approx.ftz.f32" in ptx and "div.rn.f32" in ptx  # the shared reciprocal and the exact fallback
    cubin, _ = assemble(ptx, "sm_90a")
    assert cubin.startswith(b"\x7fELF")


@pytest.mark.parametrize("seed", [0, 1])
def test_simulated_division_is_exact(seed):
    x, s = inputs(seed)
    kernel = tilec.compile(divide_rows.fn(M, N), out_idx=[2], target="sim")
    with np.errstate(all="ignore"):
        ref = x / s[:, None]
    assert_bitwise_equal(np.asarray(kernel(x, s)), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(4))
def test_gpu_division_is_exact(seed):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    x, s = inputs(seed)
    xt, st = torch.from_numpy(x).cuda(), torch.from_numpy(s).cuda()
    out = divide_rows(M, N)(xt, st)
    assert_bitwise_equal(out.cpu().numpy(), (xt / st[:, None]).cpu().numpy())
