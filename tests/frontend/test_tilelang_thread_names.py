"""TileLang names for thread-level code and explicit hardware ops: named barriers
(`T.sync_threads(id, count)`), `T.thread_binding`, `T.atomic_addx2/x4`, `T.wgmma_gemm` /
`T.wait_wgmma`, the macro-parameter annotations `T.SharedBuffer` / `T.FragmentBuffer`, and the
located refusals of TIR-only names (`T.import_source`, `T.call_extern`, `T.attr`).

Kernels live in this file (the frontend reads their source with `inspect`).
"""

# ruff: noqa: F841

import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.dialects import print_ir
from tilec.frontend import build_prim_func


def _line(text: str) -> int:
    return next(i for i, line in enumerate(open(__file__), 1) if text in line)


def suffix_sum(n=256):
    """Half of the block computes an inclusive suffix sum in shared memory, synchronizing on named
    barrier 3 over its own threads only (TileLang's topk_selector does this)."""

    @T.prim_func
    def main(X: T.Tensor((n,), T.int32), Y: T.Tensor((n,), T.int32)):
        with T.Kernel(1, threads=2 * n) as bx:
            s = T.alloc_shared((n + 1,), T.int32)
            v = T.alloc_var(T.int32)
            tx = T.get_thread_binding()
            if tx < n:
                s[tx] = X[tx]
            if tx == 0:
                s[n] = 0
            T.sync_threads()
            if tx < n:
                for i in T.serial(8):
                    T.sync_threads(3, n)
                    if tx + (1 << i) < n:
                        v = s[tx] + s[tx + (1 << i)]
                    T.sync_threads(3, n)
                    if tx + (1 << i) < n:
                        s[tx] = v
            T.sync_threads()
            if tx < n:
                Y[tx] = s[tx]

    return main


def test_a_named_barrier_is_bar_sync_of_its_id_and_count():
    ir = print_ir(build_prim_func(suffix_sum(), [-1]).module)
    assert "tile.barrier {barrier_id = 3 : i64, thread_count = 256 : i64}" in ir
    ptx = tilec.compile(suffix_sum(), out_idx=[-1], target="sm_90a").get_kernel_source()
    assert "bar.sync \t3, 256;" in ptx


def test_a_named_barrier_orders_the_threads_that_share_it():
    x = np.random.default_rng(0).integers(-100, 100, 256).astype(np.int32)
    y = tilec.compile(suffix_sum(), out_idx=[-1], target="sim")(x)
    np.testing.assert_array_equal(y, np.cumsum(x[::-1])[::-1])


def bad_barrier(count):
    @T.prim_func
    def main(X: T.Tensor((128,), T.int32)):
        with T.Kernel(1, threads=128) as bx:
            T.sync_threads(2, count)

    return main


@pytest.mark.parametrize("count", [48, 256])
def test_a_named_barrier_count_of_part_warps_or_more_than_the_block_is_a_located_error(count):
    with pytest.raises(tilec.TilecError, match="arrive_count must be a multiple of 32") as e:
        build_prim_func(bad_barrier(count))
    assert f"test_tilelang_thread_names.py:{_line('T.sync_threads(2, count)')}:" in str(e.value)


def bound_threads(n=64, m=4):
    @T.prim_func
    def main(X: T.Tensor((m, n), T.float32), Y: T.Tensor((m, n), T.float32)):
        with T.Kernel(1, threads=(n, m)) as bx:
            i = T.thread_binding(0, n, thread="threadIdx.x")
            j = T.thread_binding(0, m, thread="threadIdx.y")
            Y[j, i] = X[j, i] * 2 + j

    return main


def test_thread_binding_is_the_thread_index_along_its_axis():
    x = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    y = tilec.compile(bound_threads(), out_idx=[-1], target="sim")(x)
    np.testing.assert_allclose(y, x * 2 + np.arange(4)[:, None])


def partial_binding():
    @T.prim_func
    def main(X: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            i = T.thread_binding(0, 64, thread="threadIdx.x")
            X[i] = 0

    return main


def test_a_thread_binding_that_does_not_span_its_axis_is_a_located_error():
    with pytest.raises(tilec.TilecError, match="spans 64 threads, but the block has 128 along threadIdx.x") as e:
        build_prim_func(partial_binding())
    assert f"test_tilelang_thread_names.py:{_line('i = T.thread_binding(0, 64,')}:" in str(e.value)


def scatter_add4(rows=8, n=64, bn=32):
    @T.prim_func
    def main(A: T.Tensor((rows, n), T.float32), Idx: T.Tensor((rows,), T.int32), B: T.Tensor((4, n), T.float32)):
        with T.Kernel(n // bn, threads=128) as bx:
            A_s = T.alloc_shared((rows, bn), T.float32)
            T.copy(A[0, bx * bn], A_s)
            for r, j in T.Parallel(rows, bn // 4):
                T.atomic_addx4(B[Idx[r], bx * bn + j * 4], A_s[r, j * 4])

    return main


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_atomic_addx4_adds_four_consecutive_elements(target):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8, 64)).astype(np.float32)
    idx = rng.integers(0, 4, 8).astype(np.int32)  # rows collide: the adds must be atomic
    b = np.zeros((4, 64), np.float32)
    tilec.compile(scatter_add4(), target=target)(a, idx, b)
    want = np.zeros((4, 64), np.float32)
    np.add.at(want, idx, a)
    np.testing.assert_allclose(b, want, rtol=1e-5, atol=1e-5)


def wgmma_pair(M=64, N=64, K=64):
    @T.macro
    def both_halves(A_s: T.SharedBuffer([M, K], T.float16), B_s: T.SharedBuffer([N, K], T.float16),
                    acc: T.FragmentBuffer([M, N], T.float32)):
        T.wgmma_gemm(A_s[:, :K // 2], B_s[:, :K // 2], acc, transpose_B=True)
        T.wgmma_gemm(A_s[:, K // 2:], B_s[:, K // 2:], acc, transpose_B=True)
        T.wait_wgmma(0)

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), T.float16)
            B_s = T.alloc_shared((N, K), T.float16)
            acc = T.alloc_fragment((M, N), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(acc)
            both_halves(A_s, B_s, acc)
            T.copy(acc, C)

    return main


def test_wgmma_gemm_in_a_macro_and_wait_wgmma():
    """(tests/frontend/test_async_wgmma.py: where the waits go, the simulator, the refusals.)"""
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    c = tilec.compile(wgmma_pair(), out_idx=[-1], target="interp")(a, b)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-3, atol=1e-2)


def test_scoped_buffer_annotations_are_not_kernel_parameters():
    @T.prim_func
    def main(A: T.SharedBuffer([64], T.float16)):
        with T.Kernel(1) as bx:
            pass

    with pytest.raises(tilec.TilecError, match="needs a T.Tensor"):
        build_prim_func(main)


def uses_extern(which):
    @T.prim_func
    def main(A: T.Tensor((64,), T.float16)):
        with T.Kernel(1) as bx:
            if which == "import_source":
                T.import_source("__device__ void f() {}")
            elif which == "call_extern":
                T.call_extern("f", 0, dtype="handle")
            else:
                with T.attr(0, "reduce_scope", 0):
                    T.evaluate(0)

    return main


@pytest.mark.parametrize("which, message", [
    ("import_source", "T.import_source splices CUDA source"),
    ("call_extern", "T.call_extern calls a function of foreign"),
    ("attr", "T.attr opens a TVM TIR attribute scope"),
])
def test_tir_only_names_are_located_refusals(which, message):
    with pytest.raises(tilec.TilecError, match=message) as e:
        build_prim_func(uses_extern(which))
    assert "out of scope" in str(e.value)
    call = {"import_source": "T.import_source(", "call_extern": "T.call_extern(", "attr": "with T.attr("}[which]
    assert f"test_tilelang_thread_names.py:{_line(call)}:" in str(e.value)


def split_then_combine(n=256, bn=64):
    """A split kernel writes partial sums to a T.alloc_global scratch tensor; a combine kernel,
    launched after it, reads them all."""

    @T.prim_func
    def main(X: T.Tensor((n,), T.float32), Y: T.Tensor((n,), T.float32)):
        part = T.alloc_global((n // bn,), T.float32)
        with T.Kernel(n // bn, threads=128) as bx:
            x = T.alloc_fragment((bn,), T.float32)
            s = T.alloc_fragment((1,), T.float32)
            T.copy(X[bx * bn], x)
            T.reduce_sum(x, s, dim=0)
            T.copy(s, part[bx])
        with T.Kernel(n // bn, threads=128) as bx:
            p = T.alloc_shared((n // bn,), T.float32)
            y = T.alloc_fragment((bn,), T.float32)
            T.copy(part, p)
            T.copy(X[bx * bn], y)
            for i in T.Parallel(bn):
                y[i] = y[i] - p[bx] + p[(bx + 1) % (n // bn)]
            T.copy(y, Y[bx * bn])

    return main


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_alloc_global_scratch_is_shared_by_the_kernels_of_a_function(target):
    x = np.random.default_rng(4).standard_normal(256).astype(np.float32)
    kernel = tilec.compile(split_then_combine(), out_idx=[-1], target=target)
    assert [p.name for p in kernel.params][-1] == "workspace0" and kernel.params[-1].is_output
    sums = x.reshape(4, 64).sum(1)
    np.testing.assert_allclose(kernel(x), x - sums.repeat(64) + np.roll(sums, -1).repeat(64), rtol=1e-5, atol=1e-4)


def test_alloc_global_kernels_assemble_for_sm90a():
    src = tilec.compile(split_then_combine(), out_idx=[-1], target="sm_90a").get_kernel_source()
    assert src.count(".entry") == 2


def alloc_global_in_kernel():
    @T.prim_func
    def main(X: T.Tensor((64,), T.float32)):
        with T.Kernel(1) as bx:
            tmp = T.alloc_global((64,), T.float32)

    return main


def test_alloc_global_inside_a_kernel_is_a_located_error():
    with pytest.raises(tilec.TilecError, match="call it before `with T.Kernel") as e:
        build_prim_func(alloc_global_in_kernel())
    assert f"test_tilelang_thread_names.py:{_line('tmp = T.alloc_global((64,)')}:" in str(e.value)


def test_a_function_of_several_kernels_is_refused_as_one_deployable_image():
    kernel = tilec.compile(split_then_combine(), out_idx=[-1], target="sm_90a")
    assert kernel.get_ir("tile").count("tile.kernel") == 2
    with pytest.raises(tilec.TilecError, match="launches 2 kernels \\(one per T.Kernel\\)") as e:
        kernel._backend.emit("cubin")
    start = _line("def split_then_combine(")
    main = next(i for i, text in enumerate(open(__file__), 1) if i > start and "def main(" in text)
    assert f"test_tilelang_thread_names.py:{main}:" in str(e.value), str(e.value)  # the kernel function's def
