"""Whole kernels through the CUDA pipeline, each checked against torch and against the interpreter.

These cover the lowering paths the reference kernels do not: dynamic sizes, every reduction
kind, scans, atomics, a transposed bfloat16 gemm, scalar variables in serial loops, tails.
"""

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import tilec  # noqa: E402
import tilec.language as T  # noqa: E402


def _both(prim, out_idx, *inputs):
    """The kernel's outputs on the GPU and on the interpreter (on CPU copies of the inputs)."""
    gpu = tilec.compile(prim, out_idx=out_idx, target="cuda")(*inputs)
    cpu = tilec.compile(prim, out_idx=out_idx, target="interp")(*[t.cpu() for t in inputs])
    return gpu, cpu


def _close(out, ref, tol=1e-2):
    out, ref = out.double().cpu(), ref.double().cpu()
    err = ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()
    assert err < tol and not torch.isnan(out).any(), err


def scale_dynamic():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, 256), threads=128) as bx:
            for i in T.Parallel(256):
                if bx * 256 + i < N:
                    B[bx * 256 + i] = A[bx * 256 + i] * 2.0 + 1.0

    return main


@pytest.mark.parametrize("n", [1, 1000, 4096, 100_003])
def test_dynamic_size_with_tails(n):
    kernel = tilec.compile(scale_dynamic(), out_idx=[1], target="cuda")
    a = torch.randn(n, device="cuda")
    _close(kernel(a), a * 2 + 1)


def row_reduce(kind: str, rows=64, cols=256):
    reduce = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min, "abssum": T.reduce_abssum,
              "absmax": T.reduce_absmax}[kind]

    @T.prim_func
    def main(X: T.Tensor((rows, cols), T.float16), Y: T.Tensor((rows,), T.float32)):
        with T.Kernel(rows // 16, threads=128) as bx:
            x = T.alloc_fragment((16, cols), T.float32)
            y = T.alloc_fragment((16,), T.float32)
            T.copy(X[bx * 16, 0], x)
            reduce(x, y, dim=1)
            T.copy(y, Y[bx * 16])

    return main


@pytest.mark.parametrize("kind", ["sum", "max", "min", "abssum", "absmax"])
def test_every_reduction_kind(kind):
    x = torch.randn(64, 256, device="cuda").half()
    gpu, cpu = _both(row_reduce(kind), [1], x)
    xf = x.float()
    ref = {"sum": xf.sum(1), "max": xf.amax(1), "min": xf.amin(1), "abssum": xf.abs().sum(1),
           "absmax": xf.abs().amax(1)}[kind]
    _close(gpu, ref, 1e-3)
    _close(gpu, cpu.to(gpu.device), 1e-5)


def column_sum():
    @T.prim_func
    def main(X: T.Tensor((128, 64), T.float32), Y: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((128, 64), T.float32)
            y = T.alloc_fragment((64,), T.float32)
            T.copy(X, x)
            T.reduce_sum(x, y, dim=0)
            T.copy(y, Y)

    return main


def test_reduce_over_rows_crosses_warps():
    x = torch.randn(128, 64, device="cuda")
    gpu, _ = _both(column_sum(), [1], x)
    _close(gpu, x.sum(0), 1e-5)


def scan(reverse: bool):
    @T.prim_func
    def main(X: T.Tensor((32, 64), T.float32), Y: T.Tensor((32, 64), T.float32)):
        with T.Kernel(4, threads=128) as bx:
            x = T.alloc_fragment((8, 64), T.float32)
            T.copy(X[bx * 8, 0], x)
            T.cumsum(x, dim=1, reverse=reverse)
            T.copy(x, Y[bx * 8, 0])

    return main


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(reverse):
    x = torch.randn(32, 64, device="cuda")
    gpu, cpu = _both(scan(reverse), [1], x)
    ref = x.flip(1).cumsum(1).flip(1) if reverse else x.cumsum(1)
    _close(gpu, ref, 1e-5)
    _close(gpu, cpu.to(gpu.device), 1e-5)


def atomic_rows():
    @T.prim_func
    def main(X: T.Tensor((256, 128), T.float32), Total: T.Tensor((128,), T.float32)):
        with T.Kernel(16, threads=128) as bx:
            x = T.alloc_fragment((16, 128), T.float32)
            s = T.alloc_fragment((128,), T.float32)
            T.copy(X[bx * 16, 0], x)
            T.reduce_sum(x, s, dim=0)
            T.atomic_add(Total[0], s)

    return main


def test_atomic_add_of_partial_sums():
    x = torch.randn(256, 128, device="cuda")
    total = torch.zeros(128, device="cuda")
    tilec.compile(atomic_rows(), target="cuda")(x, total)
    _close(total, x.sum(0), 1e-5)


def gemm_bt(m=96, n=80, k=64):
    @T.prim_func
    def main(A: T.Tensor((m, k), T.bfloat16), B: T.Tensor((n, k), T.bfloat16), C: T.Tensor((m, n), T.float32)):
        with T.Kernel(T.ceildiv(n, 64), T.ceildiv(m, 64), threads=128) as (bx, by):
            a = T.alloc_shared((64, 32), T.bfloat16)
            b = T.alloc_shared((64, 32), T.bfloat16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.clear(c)
            for ko in T.Pipelined(T.ceildiv(k, 32), num_stages=2):
                T.copy(A[by * 64, ko * 32], a)
                T.copy(B[bx * 64, ko * 32], b)
                T.gemm(a, b, c, transpose_B=True)
            T.copy(c, C[by * 64, bx * 64])

    return main


def test_transposed_bfloat16_gemm_with_tails():
    a = torch.randn(96, 64, device="cuda").bfloat16()
    b = torch.randn(80, 64, device="cuda").bfloat16()
    gpu, cpu = _both(gemm_bt(), [2], a, b)
    _close(gpu, a.float() @ b.float().T, 1e-3)
    _close(gpu, cpu.to(gpu.device), 1e-4)


def serial_accumulate():
    @T.prim_func
    def main(X: T.Tensor((64, 32), T.float32), Y: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_shared((64, 32), T.float32)
            T.copy(X, x)
            for i in T.Parallel(64):
                acc = T.alloc_var(T.float32, init=0.0)
                for k in T.serial(32):
                    acc = acc + x[i, k] * x[i, k]
                Y[i] = acc

    return main


def test_alloc_var_in_serial_loop():
    x = torch.randn(64, 32, device="cuda")
    gpu = tilec.compile(serial_accumulate(), out_idx=[1], target="cuda")(x)
    _close(gpu, (x * x).sum(1), 1e-5)
