"""A catalogue of malformed kernels and the located errors they raise.

Each case is a function that builds (or calls) one broken kernel; the
offending line carries the marker comment `# ERR`.  The rendered TilecError
must name this file and that line, contain the case's message fragment (and
hint, where one is promised), and read like a compiler diagnostic: no Python
traceback, no chained exception, no "internal compiler error".
"""

# Kernels bind block indices and buffers they do not use: that is the DSL, not dead code.
# ruff: noqa: F841, RUF059

import inspect
import math

import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.frontend import build_prim_func
from tilec.layout import make_swizzled_layout

CASES = []


def case(fragment: str, hint: str | None = None, *, bug: str | None = None):
    """Registers `fn` as a case: calling it must raise the described TilecError.

    `bug` marks a case the compiler gets wrong today (a strict xfail naming the fix).
    """

    def register(fn):
        marks = [pytest.mark.xfail(strict=True, reason=bug)] if bug else []
        CASES.append(pytest.param(fn, fragment, hint, id=fn.__name__, marks=marks))
        return fn

    return register


# --------------------------------------------------------------------------- #
# Types, shapes and scopes
# --------------------------------------------------------------------------- #


@case("tensor `A`: unknown dtype 'flaot16'")
def wrong_dtype_name():
    @T.prim_func
    def main(A: T.Tensor((64,), "flaot16")):  # ERR
        with T.Kernel(1, threads=64) as bx:
            pass

    build_prim_func(main)


@case("T.alloc_shared: unknown dtype 'halff'", hint="T.float16")
def wrong_alloc_dtype_name():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float16)):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64,), "halff")  # ERR

    build_prim_func(main)


@case("T.copy shapes differ: src (64, 32) vs dst (32, 64)", hint="same shape")
def copy_shape_mismatch():
    @T.prim_func
    def main(A: T.Tensor((128, 128), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((32, 64), T.float16)
            T.copy(A[0:64, 0:32], s)  # ERR

    build_prim_func(main)


@case(
    "T.gemm K differs: A (64, 32) gives K=32, B (16, 64) gives K=16",
    hint="transpose_A / transpose_B",
)
def gemm_k_mismatch():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 32), T.float16)
            b = T.alloc_shared((16, 64), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.gemm(a, b, c)  # ERR

    build_prim_func(main)


@case("T.gemm C must be (64, 64) for A (64, 32) and B (32, 64), got (64, 32)")
def gemm_c_wrong_shape():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 32), T.float16)
            b = T.alloc_shared((32, 64), T.float16)
            c = T.alloc_fragment((64, 32), T.float32)
            T.gemm(a, b, c)  # ERR

    build_prim_func(main)


@case(
    "T.gemm operand A must be in shared or fragment scope, got a global tile",
    hint="T.alloc_shared",
)
def gemm_operand_in_global_scope():
    @T.prim_func
    def main(A: T.Tensor((64, 32), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            b = T.alloc_shared((32, 64), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            T.gemm(A, b, c)  # ERR

    build_prim_func(main)


@case("T.reduce_sum: dim 2 is out of range for a 2-D source (4, 64)")
def reduce_dim_out_of_range():
    @T.prim_func
    def main(A: T.Tensor((4, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((4, 64), T.float32)
            r = T.alloc_fragment((4,), T.float32)
            T.reduce_sum(x, r, dim=2)  # ERR

    build_prim_func(main)


@case(
    "T.reduce_max: reducing (4, 64) along dim 0 gives (64,), but the destination is (4,)"
)
def reduce_dst_wrong_shape():
    @T.prim_func
    def main(A: T.Tensor((4, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((4, 64), T.float32)
            r = T.alloc_fragment((4,), T.float32)
            T.reduce_max(x, r, dim=0)  # ERR

    build_prim_func(main)


@case("T.alloc_fragment: buffer sizes must be positive integers, got 0")
def buffer_size_not_positive():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64, 0), T.float32)  # ERR

    build_prim_func(main)


@case("T.infinity needs a floating-point dtype, got int32")
def infinity_of_int_dtype():
    @T.prim_func
    def main(A: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64,), T.int32)
            T.fill(x, T.infinity(T.int32))  # ERR

    build_prim_func(main)


@case("operator % is not defined for f32")
def float_modulo():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                A[i] = A[i] % 2.0  # ERR

    build_prim_func(main)


# --------------------------------------------------------------------------- #
# Elements and regions
# --------------------------------------------------------------------------- #


@case("T.copy between two single elements", hint="give one side as a buffer or a slice")
def copy_between_two_points():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), B: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=64) as bx:
            T.copy(A[0, 0], B[bx, 0])  # ERR

    build_prim_func(main)


@case("has 2 dimensions but is indexed with 1", hint="[i0, i1]")
def index_2d_buffer_with_one_index():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64, 64), T.float32)
            for i in T.Parallel(64):
                x[i] = 1.0  # ERR

    build_prim_func(main)


@case("into one element", hint="T.copy")
def store_tile_into_element():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            A[bx, 0] = x  # ERR

    build_prim_func(main)


@case(
    "the extent of slice 0 of A is not a compile-time constant",
    hint="start:start + size",
)
def slice_extent_not_constant():
    @T.prim_func
    def main(A: T.Tensor((256,), T.float32)):
        with T.Kernel(4, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            T.copy(A[bx * 64 : bx * 128], x)  # ERR

    build_prim_func(main)


# --------------------------------------------------------------------------- #
# Names, Python constructs and calls
# --------------------------------------------------------------------------- #


@case("unknown name `T.reduce_summ` in the kernel language", hint="T.reduce_sum")
def unknown_language_name():
    @T.prim_func
    def main(A: T.Tensor((4, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((4, 64), T.float32)
            r = T.alloc_fragment((4,), T.float32)
            T.reduce_summ(x, r, dim=1)  # ERR

    build_prim_func(main)


@case("T.sync_grid is a grid-wide barrier (a cooperative launch), which tilec does not launch",
      hint="split the kernel in two")
def tilelang_name_tilec_lacks():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            T.sync_grid()  # ERR

    build_prim_func(main)


@case("T.ptx_cp_async copies 4, 8 or 16 bytes a thread: 6 elements of float16 are 12 bytes",
      hint="num_elems = 2, 4, 8 for float16")
def raw_cp_async_of_twelve_bytes():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((64, 64), T.float16)
            tid = T.get_thread_binding()
            T.ptx_cp_async(T.access_ptr(s[tid // 8, 0], "w", 6), T.access_ptr(A[tid // 8, 0], "r", 6), 6)  # ERR

    build_prim_func(main)


@case("T.ptx_cp_async copies from global to shared memory: its destination (first argument) x is a fragment buffer",
      hint="T.alloc_shared")
def raw_cp_async_into_a_fragment():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((64, 64), T.float16)
            T.ptx_cp_async(T.access_ptr(x[0, 0], "w", 8), T.access_ptr(A[0, 0], "r", 8), 8)  # ERR

    build_prim_func(main)


@case("T.access_ptr takes a raw buffer pointer for foreign code", hint="only written as an operand of T.ptx_cp_async")
def access_ptr_outside_cp_async():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            p = T.access_ptr(A[0, 0], "r", 8)  # ERR

    build_prim_func(main)


@case("T.ptx_cp_async: cannot prove that the shared destination (its 128-byte swizzle) starts on a 16-byte boundary",
      hint="a multiple of 8")
def raw_cp_async_at_an_unaligned_column():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), B: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((64, 64), T.float16)
            T.annotate_layout({s: make_swizzled_layout(s)})
            tid = T.get_thread_binding()
            T.ptx_cp_async(T.access_ptr(s[tid // 8, (tid % 8) * 4], "w", 8),  # ERR
                           T.access_ptr(A[tid // 8, (tid % 8) * 8], "r", 8), 8)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.copy(s, B)

    tilec.compile(main, target="sm_90a")


@case("T.tcgen05_gemm is a Blackwell (sm_100) feature: tilec targets sm_80 and sm_90a", hint="wgmma")
def blackwell_name():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 64), T.float16)
            T.tcgen05_gemm(a, a, a)  # ERR

    build_prim_func(main)


@case("name `undefined_buffer` is not defined")
def unknown_name():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            T.copy(A, undefined_buffer)  # ERR  # noqa: F821

    build_prim_func(main)


@case("unsupported Python construct `While` in a kernel", hint="T.serial")
def while_loop():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            while bx < 4:  # ERR
                pass

    build_prim_func(main)


@case("unsupported Python construct `Try` in a kernel", hint="T.device_assert")
def try_statement():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            try:  # ERR
                pass
            finally:
                pass

    build_prim_func(main)


@case("a lambda called with run-time values takes its arguments by position", hint="`def`")
def lambda_with_keywords():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            f = lambda x: x + 1
            A[0] = f(x=A[1])  # ERR

    build_prim_func(main)


@case("a comprehension is computed at compile time, but `A` is a run-time value", hint="T.serial")
def list_comprehension_of_runtime_values():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            sizes = [A[k] * 2 for k in range(4)]  # ERR

    build_prim_func(main)


@case("`break` in a T.Parallel loop is not supported", hint="`if`")
def break_statement():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            for k in T.Parallel(64):
                break  # ERR

    build_prim_func(main)


@case(
    "is assigned inside a run-time loop or `if` but defined outside it",
    hint="T.alloc_var",
)
def reassign_outer_name_in_runtime_loop():
    @T.prim_func
    def main(A: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=64) as bx:
            total = 0
            for k in T.serial(4):
                total = total + k  # ERR
            A[bx] = total

    build_prim_func(main)


@case("cannot call Python function `floor` with run-time values", hint="T.floor")
def builtin_function_with_runtime_values():
    @T.prim_func
    def main(A: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=64) as bx:
            A[bx] = math.floor(bx)  # ERR

    build_prim_func(main)


@case("T.Parallel is only usable as the iterable of a `for` loop")
def parallel_outside_for():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            loops = T.Parallel(64)  # ERR

    build_prim_func(main)


@case("T.Parallel extents must be positive compile-time integers", hint="T.serial")
def parallel_runtime_extent():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(4, threads=64) as bx:
            for i in T.Parallel(bx + 1):  # ERR
                A[i] = 0.0

    build_prim_func(main)


# --------------------------------------------------------------------------- #
# Kernels and programs
# --------------------------------------------------------------------------- #


@case("T.alloc_fragment is only usable inside `with T.Kernel(...)`", hint="kernel body")
def fragment_outside_kernel():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        x = T.alloc_fragment((64,), T.float32)  # ERR
        with T.Kernel(1, threads=64) as bx:
            T.copy(A, x)

    build_prim_func(main)


@case(
    "T.Kernel has 2 grid dimensions but `as (bx, by, bz)` names 3 block indices",
    hint="one block index per grid dimension",
)
def wrong_number_of_block_indices():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(2, 2, threads=64) as (bx, by, bz):  # ERR
            pass

    build_prim_func(main)


@case("2048 threads per block exceed the limit of 1024")
def too_many_threads():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=[256, 8]) as bx:  # ERR
            pass

    build_prim_func(main)


@case("T.Kernel cannot be nested inside another T.Kernel")
def nested_kernel():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:  # noqa: SIM117 - the nesting is the mistake
            with T.Kernel(1, threads=64) as by:  # ERR
                pass

    build_prim_func(main)


@case("T.empty is for eager kernels", hint="out_idx")
def empty_inside_prim_func():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        B = T.empty((64,), T.float32)  # ERR
        with T.Kernel(1, threads=64) as bx:
            T.copy(A, B)

    build_prim_func(main)


@case("parameter `B` of main needs a T.Tensor(shape, dtype) annotation")
def prim_func_parameter_without_annotation():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B):  # ERR
        with T.Kernel(1, threads=64) as bx:
            pass

    build_prim_func(main)


@case("out_idx 2 is out of range for main, which has 2 parameters")
def out_idx_out_of_range():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):  # ERR
        with T.Kernel(1, threads=64) as bx:
            T.copy(A, B)

    tilec.compile(main, out_idx=[2], target="interp")


@case("unknown pass-config key 'tl.disable_tma_lowr'", hint="tl.disable_tma_lower")
def unknown_pass_config_key():
    def factory(n):  # ERR
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32)):
            with T.Kernel(1, threads=64) as bx:
                pass

        return main

    tilec.jit(out_idx=[-1], pass_configs={"tl.disable_tma_lowr": True})(factory)


@case("T.const `N` is not bound", hint="compile(N=...)")
def const_not_bound():
    @tilec.jit(target="interp")
    def kernel(A):
        N = T.const("N")  # ERR
        A: T.Tensor((N,), T.float32)
        with T.Kernel(1, threads=64) as bx:
            pass

    kernel.compile()


@case("argument 0 (`A`) must be float32, got float64", hint=".to(float32)")
def eager_call_wrong_dtype():
    @tilec.jit(target="interp")
    def kernel(A):  # ERR
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B = T.empty((N,), T.float32)
        with T.Kernel(1, threads=64) as bx:
            T.copy(A[0:64], B[0:64])
        return B

    kernel(np.zeros(64, np.float64))


@case("tensor `A` must have 2 dimensions, got shape (64,)")
def eager_call_wrong_rank():
    @tilec.jit(target="interp")
    def kernel(A):  # ERR
        M, N = T.const("M, N")
        A: T.Tensor((M, N), T.float32)
        B = T.empty((M, N), T.float32)
        with T.Kernel(1, threads=64) as bx:
            T.copy(A, B)
        return B

    kernel(np.zeros(64, np.float32))


# --------------------------------------------------------------------------- #
# Diagnostics for mistakes the compiler once missed
# --------------------------------------------------------------------------- #


@case(
    "swizzle_bytes must be 32, 64 or 128, got 16",
)
def swizzle_bytes_invalid():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64, 64), T.float16)
            T.annotate_layout({s: make_swizzled_layout(s, swizzle_bytes=16)})  # ERR

    build_prim_func(main)


@case("make_swizzled_layout: allow_pad is TileLang's flag (a bool), got 'no'", hint="pass True or False")
def swizzled_layout_allow_pad_not_a_flag():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64, 64), T.float16)
            T.annotate_layout({s: make_swizzled_layout(s, True, "no")})  # ERR

    build_prim_func(main)


@case("make_half_bank_swizzled_layout needs a shared buffer, got fragment")
def bank_swizzled_layout_of_a_fragment():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=64) as bx:
            f = T.alloc_fragment((64, 64), T.float16)
            T.annotate_layout({f: tilec.layout.make_half_bank_swizzled_layout(f)})  # ERR

    build_prim_func(main)


@case(
    "condition",
)
def tile_as_if_condition():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            if x:  # ERR
                T.fill(x, 0.0)

    build_prim_func(main)


@case(
    "condition",
)
def tile_as_if_then_else_condition():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            for i in T.Parallel(64):
                x[i] = T.if_then_else(x, 1.0, 2.0)  # ERR

    build_prim_func(main)


@case(
    "has no attribute `shape`",
)
def attribute_of_scalar():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            n = bx.shape  # ERR

    build_prim_func(main)


@case(
    "exceeds dimension 0 of x",
)
def region_past_buffer_end_names_the_buffer():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_shared((32,), T.float32)
            T.copy(A[0:32], x[16:48])  # ERR

    build_prim_func(main)


@case(
    "argument",
)
def eager_call_too_many_arguments():
    @tilec.jit(target="interp")
    def kernel(A):  # ERR
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        with T.Kernel(1, threads=64) as bx:
            pass

    kernel(np.zeros(64, np.float32), np.zeros(64, np.float32))


# --------------------------------------------------------------------------- #
# Calls, targets and sizes a user can get wrong (issue 7, item 4)
# --------------------------------------------------------------------------- #


@case("argument 0 (`A`) must be a tensor, got list", hint="torch.tensor(values, dtype=torch.float32)")
def python_list_as_tensor():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):  # ERR
        with T.Kernel(1, threads=64) as bx:
            T.copy(A, B)

    tilec.compile(main, out_idx=[1], target="interp")([0.0] * 64)


@case("argument `A` must be a tensor, got list", hint="torch.tensor")
def python_list_to_eager_kernel():
    @tilec.jit(target="interp")
    def kernel(A):  # ERR
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B = T.empty((N,), T.float32)
        with T.Kernel(1, threads=64) as bx:
            T.copy(A[0:64], B[0:64])
        return B

    kernel([1.0, 2.0])


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_meta_tensor_is_refused(target):
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            T.copy(A, B)

    torch = pytest.importorskip("torch")
    kernel = tilec.compile(main, out_idx=[1], target=target)
    with pytest.raises(tilec.TilecError) as info:
        kernel(torch.empty(64, device="meta"))
    err = info.value
    assert "argument 0 (`A`) is a meta-device tensor" in err.msg and "device='cpu'" in err.hint
    assert err.loc is not None and err.loc.line == main.fn.__code__.co_firstlineno + 1


@case("a compiled kernel takes its tensors by position, got keyword argument `A`", hint="call it as main(A)")
def keyword_tensor_to_compiled_kernel():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):  # ERR
        with T.Kernel(1, threads=64) as bx:
            T.copy(A, B)

    tilec.compile(main, out_idx=[1], target="interp")(A=np.zeros(64, np.float32))


@case("unknown target 'sm_70': tilec generates code for sm_80 and later", hint="'cuda'")
def target_too_old():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):  # ERR
        with T.Kernel(1, threads=64) as bx:
            pass

    tilec.compile(main, target="sm_70")


@case("T.alloc_barrier: tilec's mbarriers (phase waits, transaction counts) need sm_90 or newer; this kernel is built "
      "for sm_80", hint="sm_90a")
def mbarrier_on_sm80():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), C: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            bar = T.alloc_barrier(128)  # ERR
            T.barrier_arrive(bar)
            T.barrier_wait(bar, 0)
            T.copy(A, C)

    tilec.compile(main, target="sm_80").get_kernel_source()


@case("unknown target 'interpp'", hint="did you mean 'interp'?")
def target_misspelled_on_jit():
    @tilec.jit(target="interpp")
    def kernel(A):  # ERR
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        with T.Kernel(1, threads=64) as bx:
            pass


@case("size N would be 0: this call passes `A` of shape (0,), and a T.const size must be positive",
      hint='N = T.dynamic("N")')
def zero_size_tensor_for_const():
    @tilec.jit(target="interp")
    def kernel(A):  # ERR
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
            for i in T.Parallel(64):
                B[bx * 64 + i] = A[bx * 64 + i]
        return B

    kernel(np.zeros(0, np.float32))


def test_zero_size_tensor_for_dynamic_size_runs():
    @tilec.jit(target="interp")
    def kernel(A):
        N = T.dynamic("N")
        A: T.Tensor((N,), T.float32)
        B = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
            for i in T.Parallel(64):
                B[bx * 64 + i] = A[bx * 64 + i] + 1
        return B

    assert kernel(np.zeros(0, np.float32)).shape == (0,)
    np.testing.assert_array_equal(kernel(np.ones(70, np.float32)), np.full(70, 2, np.float32))


@case("T.const `N` = -5: sizes must be positive", hint="pass a positive N")
def negative_const_size():
    @tilec.jit(target="interp")
    def kernel(A):
        N = T.const("N")  # ERR
        A: T.Tensor((N,), T.float32)
        with T.Kernel(1, threads=64) as bx:
            pass

    kernel.compile(N=-5)


@case("tensor `A`: sizes must be positive, got -3")
def negative_static_tensor_size():
    n = -3

    @T.prim_func
    def main(A: T.Tensor((n,), T.float32)):  # ERR
        with T.Kernel(1, threads=64) as bx:
            pass

    build_prim_func(main)


@case("T.ceildiv(5000, 0): division by zero", hint="must be positive")
def readme_add_with_block_zero():
    @tilec.jit(target="interp")
    def add(A, B, block: int = 1024):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B: T.Tensor((N,), T.float32)
        C = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:  # ERR
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
        return C

    a = np.zeros(5000, np.float32)
    add(a, a, block=0)


@case("integer division by zero (`// 0`)")
def runtime_value_floordiv_by_zero():
    d = 0

    @T.prim_func
    def main(A: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                A[i] = A[i] // d  # ERR

    build_prim_func(main)


@case("T.macro rec is inlined 24 calls deep (rec -> rec", hint="base case decided by compile-time values")
def self_recursive_macro():
    @T.macro
    def rec(x):
        rec(x)  # ERR

    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            rec(A)

    build_prim_func(main)


def test_macro_recursion_with_a_compile_time_base_case_builds():
    @T.macro
    def halve(x, n):
        if n > 1:
            halve(x, n // 2)
        else:
            x[0] = 1.0

    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            halve(A, 1 << 20)

    a = np.zeros(64, np.float32)
    tilec.compile(main, target="interp")(a)
    assert a[0] == 1.0


# --------------------------------------------------------------------------- #
# Per-thread scalars in T.Parallel (issue 7, item 1)
# --------------------------------------------------------------------------- #


@case("`acc` is read here before this T.Parallel iteration has written it", hint="T.reduce_sum")
def alloc_var_accumulated_in_parallel():
    @T.prim_func
    def main(A: T.Tensor((128,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            acc = T.alloc_var(T.float32)
            acc = 0.0
            for i in T.Parallel(128):
                acc = acc + A[i]  # ERR
            B[0] = acc

    build_prim_func(main)


@case("`acc` is read here before this T.Parallel iteration has written it", hint="T.serial")
def alloc_var_augmented_in_a_serial_loop_inside_parallel():
    @T.prim_func
    def main(A: T.Tensor((64, 4), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            acc = T.alloc_var(T.float32, init=0.0)
            for i in T.Parallel(64):
                for k in T.serial(4):
                    acc += A[i, k]  # ERR
                B[i] = acc

    build_prim_func(main)


@case("`t` is read here before this T.Parallel iteration has written it", hint="assign it in the loop body")
def alloc_var_written_on_one_branch_only():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            t = T.alloc_var(T.float32)
            for i in T.Parallel(64):
                if A[i] > 0:
                    t = A[i]
                B[i] = t  # ERR

    build_prim_func(main)


@case("`tmp` is read here before this T.Parallel iteration has written it")
def alloc_local_element_read_before_written():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            tmp = T.alloc_local((2,), T.float32)
            for i in T.Parallel(64):
                tmp[0] = A[i]
                B[i] = tmp[0] + tmp[1]  # ERR

    build_prim_func(main)


@case("`tmp` is read here before this T.Parallel iteration has written it",
      hint="allocate it inside the T.Parallel body")
def alloc_local_filled_at_runtime_indices_outside():
    @T.prim_func
    def main(A: T.Tensor((256,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            tmp = T.alloc_local((4,), T.float32)
            for i in T.Parallel(64):
                for k in T.serial(4):
                    tmp[k] = A[i * 4 + k]
                B[i] = tmp[0] + tmp[3]  # ERR

    build_prim_func(main)


@case("`t` is read here after a T.Parallel loop that writes it", hint="assign it after the loop")
def alloc_var_read_after_parallel_that_writes_it():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            t = T.alloc_var(T.float32)
            for i in T.Parallel(64):
                t = A[i] * 2.0
                B[i] = t
            B[0] = t  # ERR

    build_prim_func(main)


@case("`t` is read here after a T.Parallel loop that writes it")
def alloc_var_read_at_the_next_serial_iteration():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            t = T.alloc_var(T.float32, init=1.0)
            for k in T.serial(2):
                A[k] = t  # ERR
                for i in T.Parallel(64):
                    t = A[i]
                    B[i] = t

    build_prim_func(main)


@case("`t` is read here after a T.Parallel loop that writes it")
def alloc_var_read_in_a_later_parallel():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            t = T.alloc_var(T.float32)
            for i in T.Parallel(64):
                t = A[i]
                B[i] = t
            for i in T.Parallel(64):
                B[i] = t  # ERR

    build_prim_func(main)


# --------------------------------------------------------------------------- #
# Language rules the CUDA lowering once enforced alone (issue 7, item 2)
# --------------------------------------------------------------------------- #


@case("T.copy works on whole tiles (or the whole block) and cannot be used inside T.Parallel",
      hint="move it before or after the T.Parallel loop")
def tile_copy_inside_parallel():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64,), T.float32)
            for i in T.Parallel(64):
                T.copy(A, s)  # ERR

    build_prim_func(main)


@case("T.sync_threads works on whole tiles (or the whole block) and cannot be used inside T.Parallel")
def barrier_inside_parallel():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                T.sync_threads()  # ERR

    build_prim_func(main)


@case("T.Parallel cannot be used inside T.Parallel: T.Parallel loops do not nest",
      hint="for i, j in T.Parallel(m, n)")
def nested_parallel():
    @T.prim_func
    def main(A: T.Tensor((8, 8), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(8):
                for j in T.Parallel(8):  # ERR
                    A[i, j] = 0.0

    build_prim_func(main)


@case("T.alloc_shared: shared buffers cannot be allocated inside T.Parallel: they belong to the whole block",
      hint="allocate it before the loop")
def shared_alloc_inside_parallel():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                s = T.alloc_shared((4,), T.float32)  # ERR

    build_prim_func(main)


@case("this write to fragment x does not use the T.Parallel variable `j`, so every iteration along it writes "
      "the same element", hint="T.reduce_*")
def fragment_written_by_several_iterations():
    @T.prim_func
    def main(A: T.Tensor((64, 4), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((64,), T.float32)
            for i, j in T.Parallel(64, 4):
                if j == 0:
                    x[i] = A[i, j]  # ERR
            T.copy(x, B)

    build_prim_func(main)


@case("tile.store writes out of range: index 70 of dim 0 is outside a fragment buffer of shape (64,)")
def constant_index_write_out_of_range():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            T.copy(A, x)
            x[70] = 1.0  # ERR

    build_prim_func(main)


@case("tile.load reads out of range: index 4 of dim 1 is outside a shared buffer of shape (8, 4)")
def constant_index_read_out_of_range():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((8, 4), T.float32)
            for i in T.Parallel(8):
                A[i] = s[i, 4]  # ERR

    build_prim_func(main)


@case("the bounds of a loop inside T.Parallel must be the same for every element",
      hint="guard the body with an `if`")
def per_element_serial_bound():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(64):
                acc = T.alloc_var(T.float32, init=0.0)
                for k in T.serial(i % 4):  # ERR
                    acc += A[k]
                B[i] = acc

    build_prim_func(main)


def _two_kernels():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                A[i] = A[i] + 1.0
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                B[i] = A[i] * 2.0

    return main


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_two_kernels_in_one_function_run_in_turn(target):
    """The second kernel reads what the first wrote (the GPU targets launch one after the other)."""
    a, b = np.ones(64, np.float32), np.zeros(64, np.float32)
    tilec.compile(_two_kernels(), target=target)(a, b)
    np.testing.assert_array_equal(b, np.full(64, 4.0, np.float32))


def test_two_kernels_in_one_function_assemble_for_sm80_as_two_entries():
    src = tilec.compile(_two_kernels(), target="sm_80").get_kernel_source()
    assert src.count(".entry") == 2 and "// kernel 2 of 2 of main" in src


@case("a run-time `if` is only possible inside `with T.Kernel(...)`")
def kernel_under_a_runtime_if():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32)):
        if N > 10:  # ERR
            with T.Kernel(1, threads=64) as bx:
                A[0] = 1.0

    build_prim_func(main)


@case("writing an element of A is only possible inside `with T.Kernel(...)`", hint="move it into the kernel")
def element_write_before_the_kernel():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        A[0] = 1.0  # ERR
        with T.Kernel(1, threads=64) as bx:
            pass

    build_prim_func(main)


@case("main has no `with T.Kernel(...)`", hint="with T.Kernel(grid, threads=...)")
def function_without_a_kernel():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):  # ERR
        pass

    build_prim_func(main)


@case("T.gemm accumulator C must be in fragment scope, got a local tile")
def gemm_accumulator_in_local_scope():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 32), T.float16)
            b = T.alloc_shared((32, 64), T.float16)
            c = T.alloc_local((64, 64), T.float32)
            T.gemm(a, b, c)  # ERR

    build_prim_func(main)


# --------------------------------------------------------------------------- #
# Internal errors a hostile sweep found (issue 7, item 4)
# --------------------------------------------------------------------------- #


@case("the annotation of parameter `A` (T.Tensor((undefined_size,), T.float32)) does not evaluate: NameError",
      hint="define the names they use there")
def string_annotation_that_does_not_evaluate():
    @T.prim_func
    def main(A: "T.Tensor((undefined_size,), T.float32)"):  # ERR  # noqa: F821
        with T.Kernel(1, threads=64) as bx:
            pass

    build_prim_func(main)


@case("T.const takes the size names as a string, got int 5", hint='T.const("N")')
def const_with_a_number():
    @tilec.jit(target="interp")
    def kernel(A):
        N = T.const(5)  # ERR
        A: T.Tensor((N,), T.float32)
        with T.Kernel(1, threads=64) as bx:
            pass

    kernel.compile(N=4)


@case("the integer 1180591620717411303424 does not fit in i32", hint="T.int64")
def integer_constant_too_wide():
    @T.prim_func
    def main(A: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                A[i] = 2**70  # ERR

    build_prim_func(main)


@case("T.Kernel threads must be a positive int or a list of up to 3, got [64.0]")
def threads_as_a_float():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(2, threads=64.0) as bx:  # ERR
            pass

    build_prim_func(main)


@case("out_idx must be an int or a list of ints, got 'a'", hint="out_idx=[-1]")
def out_idx_as_a_string():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):  # ERR
        with T.Kernel(1, threads=64) as bx:
            pass

    build_prim_func(main, "a")


@case("pass config 'tl.config_index_bitwidth' = 16: the value must be one of 32, 64")
def pass_config_value_out_of_range():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):  # ERR
        with T.Kernel(1, threads=64) as bx:
            pass

    tilec.compile(main, target="interp", pass_configs={"tl.config_index_bitwidth": 16})


@case("argument `B` is a tensor, but the kernel does not annotate it", hint="`B: T.Tensor(shape, dtype)`")
def eager_tensor_argument_not_annotated():
    @tilec.jit(target="interp")
    def kernel(A, B):  # ERR
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        C = T.empty((N,), T.float32)
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                C[i] = A[i]
        return C

    kernel(np.zeros(64, np.float32), np.zeros(64, np.float32))


@case("kernel.compile: M is neither a parameter nor a T.const size", hint="its T.const sizes: N")
def eager_compile_with_an_unknown_size():
    @tilec.jit(target="interp")
    def kernel(A):  # ERR
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        with T.Kernel(1, threads=64) as bx:
            pass

    kernel.compile(M=64)


@case("bad call of factory: got an unexpected keyword argument 'blok'")
def factory_called_with_an_unknown_keyword():
    @tilec.jit(out_idx=[-1], target="interp")
    def factory(n, block=64):  # ERR
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32)):
            with T.Kernel(1, threads=64) as bx:
                pass

        return main

    factory(128, blok=32)


@case("@tilec.jit wraps a kernel function or a factory returning a T.prim_func, got the T.prim_func main",
      hint="tilec.compile(prim_func, out_idx=...)")
def jit_of_a_prim_func():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):  # ERR
        with T.Kernel(1, threads=64) as bx:
            pass

    tilec.jit(out_idx=[-1])(main)


# --------------------------------------------------------------------------- #
# The checks
# --------------------------------------------------------------------------- #


def _marked_line(fn) -> tuple[int, str]:
    lines, first = inspect.getsourcelines(fn)
    marked = [n for n, line in enumerate(lines) if "# ERR" in line]
    assert len(marked) == 1, f"{fn.__name__} needs exactly one `# ERR` line"
    return first + marked[0], lines[marked[0]].split("# ERR")[0].strip()


def test_catalogue_is_large():
    assert sum(not c.marks for c in CASES) >= 30


@pytest.mark.parametrize(("trigger", "fragment", "hint"), CASES)
def test_located_diagnostic(trigger, fragment, hint):
    with pytest.raises(tilec.TilecError) as info:
        trigger()
    err = info.value
    text = str(err)
    line, source = _marked_line(trigger)
    assert f"test_diagnostics.py:{line}:" in text.splitlines()[0], text
    assert source in text, text  # the offending line is quoted under the message
    assert fragment in err.msg, text
    if hint is not None:
        assert err.hint is not None and hint in err.hint, text
    assert "Traceback" not in text
    assert "OpResult" not in text and "ssa=" not in text  # no Python reprs of IR values
    assert "internal compiler error" not in text
    assert err.__cause__ is None
    assert err.__context__ is None or err.__suppress_context__


def test_jit_of_a_lambda_is_refused_at_its_line():
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(tilec.TilecError) as info:
        tilec.jit(lambda n: n)
    err = info.value
    assert "@tilec.jit needs a function defined with `def`" in err.msg and "a def in a .py file" in err.hint
    assert err.loc is not None and err.loc.line == line and err.loc.file.endswith("test_diagnostics.py")
