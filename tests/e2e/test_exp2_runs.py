"""A thread's run of f32 exponentials checks its range once (thread-exp2-runs): a T.Parallel
softmax body is lowered op by op, so a thread's 64 `exp2`s come in one run; they skip
ex2.approx's subnormal fix-up when no argument is below -126, and return exactly what each
`exp2` returned before. On the CPU: the run forms (and does not where the body's iterations
could touch each other's elements), the simulator's values, ptxas; on the GPU: bit for bit
against the same kernel with `tilec.exp2_runs=False`, over arguments spread over the whole
range (below -126 in some rows, -inf, NaN, subnormals)."""

import numpy as np
import pytest

import tilec
import tilec.language as T

M, N = 64, 128


def _softmax_exp(m=M, n=N, block_M=16, threads=64, shifted=False):
    """y[i, j] = exp2(x[i, j] * 1.5 - r[i]), per block of 16 rows (32 elements per thread);
    `shifted`: the body reads x[i, j + 1] (another iteration's element, which it also writes)."""

    @T.prim_func
    def main(X: T.Tensor((m, n), T.float32), R: T.Tensor((m,), T.float32), Y: T.Tensor((m, n), T.float32)):
        with T.Kernel(T.ceildiv(m, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, n), T.float32)
            r = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            T.copy(R[bx * block_M], r)
            for i, j in T.Parallel(block_M, n):
                if shifted:
                    x[i, j] = T.exp2(x[i, (j + 1) % n] * 1.5 - r[i])
                else:
                    x[i, j] = T.exp2(x[i, j] * 1.5 - r[i])
            T.copy(x, Y[bx * block_M, 0])

    return main


def test_the_run_forms_and_assembles(ptxas):
    from tilec.targets.nvptx import assemble

    kernel = tilec.compile(_softmax_exp(), out_idx=[2], target="cuda")
    thread, ptx = kernel.get_ir("thread"), kernel.get_ir("ptx")
    assert thread.count("arith.minnumf") == 16 * N // 64 - 1  # one tree over the thread's 32 arguments
    assert "fastmath<afn>" in thread
    assert "ex2.approx.ftz.f32" in ptx and "ex2.approx.f32" in ptx  # the short run and the exact fallback
    assert assemble(ptx, "sm_90a")[0].startswith(b"\x7fELF")


def test_off_keeps_each_fixup():
    thread = tilec.compile(_softmax_exp(), out_idx=[2], target="cuda",
                           pass_configs={"tilec.exp2_runs": False}).get_ir("thread")
    assert "arith.minnumf" not in thread and "fastmath<afn>" not in thread


def test_a_body_reading_another_iterations_element_keeps_the_element_order():
    thread = tilec.compile(_softmax_exp(shifted=True), out_idx=[2], target="cuda").get_ir("thread")
    assert "arith.minnumf" not in thread  # pairs only: no run of 8


def _inputs(seed: int):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, 4, (M, N)).astype(np.float32)
    x[8:16] = rng.uniform(-120, 0, (8, N))  # rows whose arguments go below -126 (x * 1.5 - r)
    x[16:20] = rng.uniform(-1e-30, 1e-30, (4, N))
    special = np.array([np.inf, -np.inf, np.nan, 1e-45, -1e-40, -200.0, -126.0, -125.99, 127.5, 0.0, -0.0], np.float32)
    x.flat[rng.choice(x.size, 300, replace=False)] = rng.choice(special, 300)
    r = rng.uniform(-2, 2, M).astype(np.float32)
    r[20:24] = [np.nan, np.inf, -np.inf, 300.0]
    return x, r


def test_simulated_values():
    x, r = _inputs(0)
    got = np.asarray(tilec.compile(_softmax_exp(), out_idx=[2], target="sim")(x, r))
    with np.errstate(all="ignore"):
        want = np.exp2(x * np.float32(1.5) - r[:, None]).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, equal_nan=True)


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(3))
def test_gpu_exponentials_are_unchanged_bit_for_bit(seed):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    x, r = _inputs(seed)
    xt, rt = torch.from_numpy(x).cuda(), torch.from_numpy(r).cuda()
    runs = tilec.compile(_softmax_exp(), out_idx=[2])
    each = tilec.compile(_softmax_exp(), out_idx=[2], pass_configs={"tilec.exp2_runs": False})
    assert "ex2.approx.ftz.f32" in runs.get_kernel_source() and "ex2.approx.ftz.f32" not in each.get_kernel_source()
    got, want = runs(xt, rt).cpu().numpy(), each(xt, rt).cpu().numpy()
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got.view(np.uint32)[~nan], want.view(np.uint32)[~nan])
