"""TileLang's frontend semantics that its own examples rely on (issue 11, item 4), checked on the
interpreter against numpy: each kernel here is written as a TileLang user writes it.

Kernels live in this file (the frontend reads their source with `inspect`).
"""

# ruff: noqa: F841

import inspect

import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.errors import TilecWarning


# --------------------------------------------------------------------------- #
# Loop variables are scoped to their loop
# --------------------------------------------------------------------------- #


@tilec.jit(out_idx=[-1], target="interp")
def shadowing_loops(N, G=4, BS=8):
    @T.prim_func
    def main(Idx: T.Tensor((N,), T.int32), A: T.Tensor((64, BS), T.float32), Out: T.Tensor((N, G, BS), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            acc = T.alloc_fragment((G, BS), T.float32)
            for i in T.serial(N):
                row = Idx[i]
                for i, j in T.Parallel(G, BS):  # shadows the outer `i` inside this loop only
                    acc[i, j] = A[row, j] * (i + 1)
                for j in T.Parallel(BS):
                    acc[0, j] += i  # the outer `i` again
                T.copy(acc, Out[i, :, :])

    return main


def test_an_inner_loop_variable_shadows_the_outer_one_inside_its_loop_only():
    idx = np.array([3, 0, 5], np.int32)
    a = np.random.default_rng(0).standard_normal((64, 8)).astype(np.float32)
    out = shadowing_loops(3)(idx, a)
    want = np.stack([a[r][None, :] * np.arange(1, 5, dtype=np.float32)[:, None] for r in idx])
    want[:, 0, :] += np.arange(3, dtype=np.float32)[:, None]
    np.testing.assert_allclose(out, want, rtol=1e-6)


# --------------------------------------------------------------------------- #
# Custom layouts of global tensors (T.Layout in T.annotate_layout)
# --------------------------------------------------------------------------- #


def _dq_layout(dQ):
    return T.Layout(dQ.shape, lambda l, d: [l // 8, d // 8, (d % 2), 4 * (l % 8) + (d % 8) // 2])


def _dq_order(L, D):
    """numpy's view of that layout: physical[flat(fn(l, d))] = logical[l, d]."""
    l, d = np.indices((L, D))
    phys = np.ravel_multi_index([l // 8, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2], (L // 8, D // 8, 2, 32))
    return phys


@tilec.jit(target="interp")
def laid_out_accumulate(L, D, blk=16):
    @T.prim_func
    def main(X: T.Tensor((L, D), T.float32), dQ: T.Tensor((L, D), T.float32)):
        with T.Kernel(L // blk, threads=64) as bx:
            T.annotate_layout({dQ: _dq_layout(dQ)})
            for i, j in T.Parallel(blk, D):
                T.atomic_add(dQ[bx * blk + i, j], X[bx * blk + i, j])

    return main


@tilec.jit(out_idx=[-1], target="interp")
def laid_out_read(L, D, blk=16):
    @T.prim_func
    def main(dQ: T.Tensor((L, D), T.float32), Out: T.Tensor((L, D), T.float16)):
        with T.Kernel(L // blk, threads=64) as bx:
            T.annotate_layout({dQ: _dq_layout(dQ)})
            T.copy(dQ[bx * blk:(bx + 1) * blk, :], Out[bx * blk:(bx + 1) * blk, :])

    return main


def test_a_custom_layout_places_elements_where_its_function_says_and_copies_read_them_back():
    L, D = 32, 16
    x = np.random.default_rng(1).standard_normal((L, D)).astype(np.float32)
    dq = np.zeros((L, D), np.float32)
    laid_out_accumulate(L, D)(x, dq)
    np.testing.assert_array_equal(dq.reshape(-1)[_dq_order(L, D)], x)  # stored in the layout's order
    out = laid_out_read(L, D)(dq)  # the kernel that shares the buffer reads it through the same layout
    np.testing.assert_allclose(out, x.astype(np.float16))


@tilec.jit(out_idx=[-1], target="interp")
def transposed_dynamic(D=8, blk=4):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N, 2, D), T.float32), Out: T.Tensor((N, 2, D), T.float32)):
        with T.Kernel(T.ceildiv(N, blk), 2, threads=32) as (bx, by):
            T.annotate_layout({A: T.Layout(A.shape, lambda l, h, d: [h, l, d])})
            T.copy(A[bx * blk:(bx + 1) * blk, by, :], Out[bx * blk:(bx + 1) * blk, by, :])

    return main


def test_a_custom_layout_may_permute_a_dynamic_dimension_and_copies_stop_at_the_tensor_end():
    n, d = 6, 8
    phys = np.random.default_rng(2).standard_normal((2, n, d)).astype(np.float32)  # stored as [h, l, d]
    out = transposed_dynamic()(np.ascontiguousarray(phys).reshape(n, 2, d))
    np.testing.assert_array_equal(out, phys.transpose(1, 0, 2))


@tilec.jit(target="interp")
def not_one_to_one(L=16):
    @T.prim_func
    def main(A: T.Tensor((L,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            T.annotate_layout({A: T.Layout(A.shape, lambda i: [i // 2, (i % 2) * 0])})

    return main


@tilec.jit(target="interp")
def laid_out_gemm_operand(L=16):
    @T.prim_func
    def main(A: T.Tensor((L, L), T.float16), C: T.Tensor((L, L), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            T.annotate_layout({A: T.Layout(A.shape, lambda i, j: [j, i])})
            acc = T.alloc_fragment((L, L), T.float32)
            T.clear(acc)
            T.gemm(A, A, acc)

    return main


def test_custom_layouts_that_cannot_be_honoured_are_located_errors():
    with pytest.raises(tilec.TilecError, match="does not have as many elements") as e:
        not_one_to_one()
    assert "test_tilelang_semantics.py" in str(e.value)
    with pytest.raises(tilec.TilecError, match="has a custom T.Layout, which tilec addresses element by element"):
        laid_out_gemm_operand()


def test_custom_layouts_on_the_cuda_lowering_simulated():
    L, D = 32, 16
    x = np.random.default_rng(3).standard_normal((L, D)).astype(np.float32)
    accumulate = tilec.compile(laid_out_accumulate.fn(L, D), target="sim")
    read = tilec.compile(laid_out_read.fn(L, D), out_idx=[-1], target="sim")
    dq = np.zeros((L, D), np.float32)
    accumulate(x, dq)
    np.testing.assert_array_equal(dq.reshape(-1)[_dq_order(L, D)], x)
    np.testing.assert_allclose(read(dq), x.astype(np.float16))


@tilec.jit(target="interp")
def laid_out_tile_atomic(L, D, blk=16):
    @T.prim_func
    def main(X: T.Tensor((L, D), T.float32), dQ: T.Tensor((L, D), T.float32)):
        with T.Kernel(L // blk, threads=64) as bx:
            T.annotate_layout({dQ: _dq_layout(dQ)})
            x = T.alloc_shared((blk, D), T.float32)
            T.copy(X[bx * blk:(bx + 1) * blk, :], x)
            T.atomic_add(dQ[bx * blk:(bx + 1) * blk, :], x)
            T.atomic_add(dQ[bx * blk:(bx + 1) * blk, :], x)

    return main


def test_a_tile_wide_atomic_into_a_laid_out_tensor_adds_element_by_element():
    L, D = 32, 16
    x = np.random.default_rng(4).standard_normal((L, D)).astype(np.float32)
    dq = np.zeros((L, D), np.float32)
    laid_out_tile_atomic(L, D)(x, dq)
    np.testing.assert_allclose(dq.reshape(-1)[_dq_order(L, D)], 2 * x, rtol=1e-6)


@tilec.jit(target="interp")
def atomic_options(N=16, order="relaxed", tma=False):
    @T.prim_func
    def main(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_shared((N,), T.float32)
            T.copy(X, x)
            T.atomic_add(Y, x, memory_order=order, use_tma=tma)

    return main


def test_atomic_memory_order_and_use_tma():
    x, y = np.arange(16, dtype=np.float32), np.ones(16, np.float32)
    atomic_options(order="relaxed")(x, y)
    np.testing.assert_array_equal(y, x + 1)
    with pytest.warns(TilecWarning, match=r"use_tma=True\) is not applied"):
        atomic_options(tma=True)(x, y)
    np.testing.assert_array_equal(y, 2 * x + 1)
    with pytest.raises(tilec.TilecError, match="memory_order='seq_cst'.*not supported"):
        atomic_options(order="seq_cst")


# --------------------------------------------------------------------------- #
# Lambdas: Python functions at compile time, traced when called with run-time values
# --------------------------------------------------------------------------- #


@tilec.jit(target="interp")
def lambdas(N=64):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            k = 3
            f = lambda x, y=2: x * y + k
            block = (lambda n: n // 2)(N)  # compile time: a Python int
            A[0] = f(A[0])
            for i in T.Parallel(block):
                A[i + block] = f(A[i + block], 3.0)

    return main


def test_lambdas_compute_at_compile_time_and_are_traced_on_run_time_values():
    a = np.ones(64, np.float32)
    lambdas()(a)
    assert a[0] == 5 and (a[32:] == 6).all() and (a[1:32] == 1).all()


# --------------------------------------------------------------------------- #
# Scalar kernel parameters (`max_seqlen: T.int32`)
# --------------------------------------------------------------------------- #


def varlen_rows(batch, blk=4, D=8):
    total = T.dynamic("total")

    @T.prim_func
    def main(X: T.Tensor((total, D), T.float32), cu: T.Tensor((batch + 1,), T.int32), max_len: T.int32,
             scale: T.int32, Y: T.Tensor((total, D), T.float32)):
        with T.Kernel(T.ceildiv(max_len, blk), batch, threads=32) as (bx, by):
            start = cu[by]
            n = cu[by + 1] - start
            for i, j in T.Parallel(blk, D):
                if bx * blk + i < n:
                    Y[start + bx * blk + i, j] = X[start + bx * blk + i, j] * scale + max_len

    return main


def _varlen_case():
    lens = [5, 9, 2]
    cu = np.array([0, *np.cumsum(lens)], np.int32)
    x = np.random.default_rng(5).standard_normal((cu[-1], 8)).astype(np.float32)
    return cu, x, max(lens)


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_scalar_parameters_are_passed_by_value_and_may_size_the_grid(target):
    from tilec.passes import convert_tile_to_thread

    cu, x, max_len = _varlen_case()
    if target == "sim" and not getattr(convert_tile_to_thread, "SCALAR_PARAMS", False):
        with pytest.raises(tilec.TilecError, match="scalar parameter `max_len` .* not supported by the CUDA lowering"):
            tilec.compile(varlen_rows(3), out_idx=[-1], target=target)
        return
    kernel = tilec.compile(varlen_rows(3), out_idx=[-1], target=target)
    y = kernel(x, cu, max_len, 2)
    np.testing.assert_allclose(y, x * 2 + max_len, rtol=1e-6)
    y = kernel(x[:7], cu[:3] if False else np.array([0, 3, 5, 7], np.int32), 3, 1)  # another grid
    np.testing.assert_allclose(y, x[:7] + 3, rtol=1e-6)
    with pytest.raises(tilec.TilecError, match=r"argument 2 \(`max_len`\) is a int32 scalar, got float"):
        kernel(x, cu, 9.5, 1)


# --------------------------------------------------------------------------- #
# Annotations
# --------------------------------------------------------------------------- #


@tilec.jit(target="interp")
def one_dynamic_size(x, y):
    batch = T.dynamic("batch")
    x: T.Tensor[(batch, 4), T.float32]
    y: T.Tensor[(batch), T.float32]  # `(batch)` is batch itself: a one-dimensional shape
    with T.Kernel(batch, threads=32) as bx:
        y[bx] = x[bx, 0] + x[bx, 3]


def test_a_tensor_annotation_with_one_bare_size():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.zeros(3, np.float32)
    one_dynamic_size(x, y)
    np.testing.assert_array_equal(y, x[:, 0] + x[:, 3])


@tilec.jit(target="interp")
def call_annotation_with_bare_size(x, y):
    n = T.dynamic("n")
    x: T.Tensor((n, 2), T.float32)
    y: T.Tensor((n), T.float32)  # the call form, with a run-time size alone
    with T.Kernel(n, threads=32) as bx:
        y[bx] = x[bx, 1]


@tilec.jit(target="interp")
def comprehension_sizes(a, sizes=(3, 5, 8), block=4):
    total = sum(sizes)
    blocks = sum((s + block - 1) // block for s in sizes)  # a generator expression, at compile time
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    a: T.Tensor((total,), T.float32)
    out = T.empty((blocks,), T.int32)
    with T.Kernel(1, threads=32) as bx:
        out[0] = starts[2] + len({s % 2 for s in sizes}) + {k: k for k in range(3)}[2]
    return out


def test_annotation_calls_and_compile_time_comprehensions():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    y = np.zeros(3, np.float32)
    call_annotation_with_bare_size(x, y)
    np.testing.assert_array_equal(y, x[:, 1])
    out = comprehension_sizes(np.zeros(16, np.float32))
    assert out.shape == (1 + 2 + 2,) and out[0] == 8 + 2 + 2


def pointer_table():
    @T.prim_func
    def main(ptrs: T.Tensor([4], T.ptr), out: T.Tensor([4], T.float32)):
        with T.Kernel(1, threads=32) as bx:
            out[0] = 1.0

    return main


def test_pointer_tables_are_int64_tensor_parameters():
    # TileLang's ABI: a `T.Tensor([n], T.ptr)` table is an int64 tensor of data_ptr()s
    # (tests/frontend/test_pointer_tables.py runs kernels that read through one).
    from tilec.frontend import build_prim_func

    program = build_prim_func(pointer_table())
    assert program.params[0].dtype.name == "int64" and program.params[0].shape == (4,)
    assert "%ptrs: !tile.tensor<4xi64>" in str(program.module)


# --------------------------------------------------------------------------- #
# Region slices whose start is a T.alloc_var
# --------------------------------------------------------------------------- #


@tilec.jit(target="interp")
def var_start_rows(X, sizes, blk=4, D=8):
    M, G = T.const("M, G")
    X: T.Tensor((M, D), T.float32)
    sizes: T.Tensor((G,), T.int32)
    out = T.empty((G, blk, D), T.float32)
    with T.Kernel(G, threads=32) as g:
        tile_ = T.alloc_fragment((blk, D), T.float32)
        offset = T.alloc_var(dtype=T.int32)
        offset = 0
        for i in T.serial(g):
            offset += sizes[i]
        T.copy(X[offset:offset + blk, :], tile_)  # a loaded start: the extent is still blk
        T.copy(X[offset + 0 * blk:offset + (0 + 1) * blk, :], tile_)
        T.copy(tile_, out[g, :, :])
    return out


def test_a_slice_that_starts_at_a_variable_has_the_extent_of_its_bounds_difference():
    x = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    sizes = np.array([4, 5, 7], np.int32)
    out = var_start_rows(x, sizes)
    np.testing.assert_array_equal(out, np.stack([x[0:4], x[4:8], x[9:13]]))


def out_of_bounds_fragment(heads=1, block_M=8, whole=False):
    @T.prim_func
    def main(S: T.Tensor((heads,), T.float32), O: T.Tensor((block_M,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            sinks = T.alloc_fragment([heads], T.float32)  # (TileLang's attention-sink backward examples: [heads], not [block_M])
            if whole:
                T.fill(sinks, 0)
            for i in T.Parallel(block_M):
                sinks[i] = S[0] + i  # heads < block_M: past the fragment's end
            for i in T.Parallel(block_M):
                O[i] = sinks[i]

    return main


def _past_the_end_line() -> int:
    lines, first = inspect.getsourcelines(out_of_bounds_fragment)
    return first + next(k for k, line in enumerate(lines) if "past the fragment's end" in line)


def test_a_fragment_indexed_past_its_end_by_a_parallel_loop_is_sized_by_the_loop_with_a_warning():
    with pytest.warns(TilecWarning, match=r"index 0 of sinks takes values 0 to 7 .* dimension 0 has size 1: "
                                                 r"tilec allocates it as 8 \(declared 1\)") as caught:
        kernel = tilec.compile(out_of_bounds_fragment(), target="interp")
    warning = next(w for w in caught if "tilec allocates it" in str(w.message))
    assert warning.filename.endswith("test_tilelang_semantics.py") and warning.lineno == _past_the_end_line()
    assert "!tile.buffer<8xf32, fragment>" in kernel.get_ir("tile")
    s, o = np.array([0.5], np.float32), np.zeros(8, np.float32)
    kernel(s, o)
    np.testing.assert_array_equal(o, 0.5 + np.arange(8, dtype=np.float32))


def test_a_fragment_indexed_past_its_end_and_used_whole_is_a_located_error():
    from tilec.frontend import build_prim_func

    with pytest.raises(tilec.TilecError, match=r"index 0 of sinks takes values 0 to 7 .* dimension 0 has size 1") as e:
        build_prim_func(out_of_bounds_fragment(whole=True))  # T.fill's extent would change with the fragment's
    assert f"test_tilelang_semantics.py:{_past_the_end_line()}:" in str(e.value).splitlines()[0]
    assert "used whole (tile.fill)" in str(e.value)
    build_prim_func(out_of_bounds_fragment(heads=8, whole=True))  # the same kernel with a buffer as large as the loop


def guarded_fragment(n=4, block=8):
    @T.prim_func
    def main(S: T.Tensor((block,), T.float32), O: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            part = T.alloc_fragment([n], T.float32)
            for i in T.Parallel(block):
                if i < n:
                    part[i] = S[i] * 2
            T.copy(part, O)

    return main


def test_a_guarded_access_is_not_judged_by_the_loop_extent_alone():
    o = np.zeros(4, np.float32)
    tilec.compile(guarded_fragment(), target="interp")(np.arange(8, dtype=np.float32), o)
    np.testing.assert_array_equal(o, np.arange(4) * 2)


@tilec.jit(target="interp")
def fill_one_element(a):
    a: T.Tensor((4,), T.int32)
    with T.Kernel(1, threads=32) as bx:
        s = T.alloc_shared([4], T.int32)
        T.fill(s, 7)
        T.fill(s[2], 0)  # one element: the region of that element
        T.copy(s, a)


def test_fill_of_one_element():
    a = np.zeros(4, np.int32)
    fill_one_element(a)
    np.testing.assert_array_equal(a, [7, 7, 0, 7])


# --------------------------------------------------------------------------- #
# Unsigned integers (T.reinterpret(x, "uint32") and bit tricks on it)
# --------------------------------------------------------------------------- #


@tilec.jit(target="interp")
def float_bits(x, N=8):
    x: T.Tensor((N,), T.float32)
    out = T.empty((N,), T.int32)
    big = T.empty((N,), T.uint32)
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(N):
            bits = T.reinterpret(x[i], "uint32")
            exponent = (bits >> 23) & 0xFF  # a logical shift: the sign bit does not spread
            mantissa = bits & ((1 << 23) - 1)
            out[i] = T.Cast("int32", exponent - 127 + T.if_then_else(mantissa != 0, 1, 0))
            big[i] = T.if_then_else(bits > 0x80000000, bits // 2, bits % 7)
    return out, big


def test_unsigned_arithmetic_shifts_divides_and_compares_as_unsigned():
    x = np.array([1.0, 3.0, 0.5, 1e-3, -2.0, -0.75, 1024.0, 6.0], np.float32)
    out, big = float_bits(x)
    bits = x.view(np.uint32)
    np.testing.assert_array_equal(out, np.ceil(np.log2(np.abs(x))).astype(np.int32))
    np.testing.assert_array_equal(big, np.where(bits > 0x80000000, bits // 2, bits % 7).astype(np.uint32))


@tilec.jit(target="interp")
def unsigned_conversions(a, N=4):
    a: T.Tensor((N,), T.uint8)
    wide = T.empty((N,), T.uint32)
    f = T.empty((N,), T.float32)
    back = T.empty((N,), T.uint16)
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(N):
            wide[i] = a[i]  # zero-extended
            f[i] = a[i] * 1.0
            back[i] = f[i] * 2.0 + a[i]
    return wide, f, back


def test_unsigned_conversions_zero_extend():
    a = np.array([0, 1, 200, 255], np.uint8)
    wide, f, back = unsigned_conversions(a)
    np.testing.assert_array_equal(wide, a.astype(np.uint32))
    np.testing.assert_array_equal(f, a.astype(np.float32))
    np.testing.assert_array_equal(back, (a.astype(np.float32) * 3).astype(np.uint16))


@tilec.jit(target="interp")
def inverted_bits(x, N=4):
    x: T.Tensor((N,), T.int32)
    out = T.empty((N,), T.int32)
    u = T.empty((N,), T.uint16)
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(N):
            out[i] = ~x[i]
            u[i] = ~T.reinterpret(T.cast(x[i], T.float16), T.uint16) & 0xFFFF
    return out, u


def test_bitwise_not_of_run_time_integers():
    x = np.array([0, 5, -3, 1000], np.int32)
    out, u = inverted_bits(x)
    np.testing.assert_array_equal(out, ~x)
    np.testing.assert_array_equal(u, ~x.astype(np.float16).view(np.uint16))


# --------------------------------------------------------------------------- #
# Convolution as an implicit gemm: T.im2col and T.Tensor(shape, dtype, A.data) views
# --------------------------------------------------------------------------- #


@tilec.jit(target="interp")
def conv_im2col(data, kernel, S=1, D=1, P=1, bm=16, bn=16, bk=16):
    N, C, H, W, F, K = T.const("N, C, H, W, F, K")
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    data: T.Tensor((N, H, W, C), T.float16)
    kernel: T.Tensor((K, K, C, F), T.float16)
    out = T.empty((N, OH, OW, F), T.float32)
    with T.Kernel(T.ceildiv(F, bn), T.ceildiv(N * OH * OW, bm), threads=128) as (bx, by):
        data_s = T.alloc_shared((bm, bk), T.float16)
        kernel_s = T.alloc_shared((bk, bn), T.float16)
        acc = T.alloc_fragment((bm, bn), T.float32)
        kernel_flat = T.Tensor((K * K * C, F), T.float16, kernel.data)
        out_flat = T.Tensor((N * OH * OW, F), T.float32, out.data)
        T.clear(acc)
        for k in T.serial(T.ceildiv(K * K * C, bk)):
            T.im2col(data, data_s, by, k, K, S, D, P)
            T.copy(kernel_flat[k * bk, bx * bn], kernel_s)
            T.gemm(data_s, kernel_s, acc)
        T.copy(acc, out_flat[by * bm, bx * bn])
    return out


@pytest.mark.parametrize("stride, dilation, pad", [(1, 1, 1), (2, 1, 0), (1, 2, 2)])
def test_im2col_convolution_matches_torch(stride, dilation, pad):
    import torch

    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 9, 7, 8)).astype(np.float16)
    w = rng.standard_normal((3, 3, 8, 16)).astype(np.float16)
    out = conv_im2col(x, w, S=stride, D=dilation, P=pad)
    ref = torch.nn.functional.conv2d(torch.from_numpy(x).float().permute(0, 3, 1, 2),
                                     torch.from_numpy(w).float().permute(3, 2, 0, 1),
                                     stride=stride, padding=pad, dilation=dilation).permute(0, 2, 3, 1).numpy()
    np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2)
