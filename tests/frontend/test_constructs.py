"""One test per frontend construct: the Python kernel and the tile IR it builds.

Kernels live in this file (the frontend reads their source with `inspect`).
`_ir()` prints a program's module; `_expect()` checks regexes in order, like
FileCheck's CHECK lines, and `_absent()` like CHECK-NOT.
"""

# Kernels bind block indices and buffers they do not use: that is the DSL, not dead code.
# ruff: noqa: F841, RUF059

import inspect
import io
import re

import numpy as np
from xdsl.printer import Printer

import tilec
import tilec.language as T
from tilec.frontend import build_prim_func
from tilec.layout import make_swizzled_layout
from tilec.dialects import print_ir


def _ir(program) -> str:
    return print_ir(program.module)


def _prim_ir(prim, out_idx=None) -> str:
    return _ir(build_prim_func(prim, out_idx))


def _expect(text: str, *patterns: str) -> None:
    """Each regex matches, in order, after the previous match."""
    pos = 0
    for pattern in patterns:
        m = re.compile(pattern).search(text, pos)
        assert m is not None, f"no match for {pattern!r} after offset {pos} in:\n{text}"
        pos = m.end()


def _absent(text: str, *needles: str) -> None:
    for needle in needles:
        assert needle not in text, f"unexpected {needle!r} in:\n{text}"


def _count(text: str, needle: str) -> int:
    return text.count(needle)


# --------------------------------------------------------------------------- #
# The two authoring styles
# --------------------------------------------------------------------------- #


@tilec.jit(out_idx=[-1])
def scaled_copy(M, N, block_M=64, block_N=32, dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (
            bx,
            by,
        ):
            tile = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], tile)
            T.copy(tile, B[by * block_M, bx * block_N])

    return main


def test_prim_func_factory_style():
    program = scaled_copy.build_program(M=256, N=128)
    ir = _ir(program)
    _expect(
        ir,
        r"func.func @main\(%A: !tile.tensor<256x128xf16>, %B: !tile.tensor<256x128xf16>\)",
        r"%(\w+) = arith.constant 4 : index",
        r"= arith.constant 4 : index",
        r"tile.kernel \(%bx, %by\) in \(%\w+, %\w+\) threads \[128, 1, 1\]",
        r"%tile = tile.alloc : !tile.buffer<64x32xf16, shared>",
        r"tile.copy %\w+, %tile : !tile.tensor<64x32xf16>, !tile.buffer<64x32xf16, shared>",
        r"tile.copy %tile, %\w+ : !tile.buffer<64x32xf16, shared>, !tile.tensor<64x32xf16>",
    )
    assert [p.name for p in program.params] == ["A", "B"]
    assert [p.is_output for p in program.params] == [False, True]
    assert program.returns == [1]


@tilec.jit
def eager_add(A, B, block: int = 256, dtype=T.float32):
    N = T.const("N")
    A: T.Tensor((N,), dtype)
    B: T.Tensor((N,), dtype)
    C = T.empty((N,), dtype)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return C


def test_eager_style():
    program = eager_add.build_program(N=1024, block=512)
    ir = _ir(program)
    _expect(
        ir,
        r"func.func @eager_add\(%A: !tile.tensor<1024xf32>, %B: !tile.tensor<1024xf32>, "
        r"%\w+: !tile.tensor<1024xf32>\)",
        r"arith.constant 2 : index",  # ceildiv(1024, 512), folded
        r"tile.kernel \(%bx\) in",
        r"tile.parallel \(%i\) in \[512\]",
        r"tile.load %A\[",
        r"tile.load %B\[",
        r"arith.addf",
        r"tile.store",
    )
    assert [(p.name, p.is_output) for p in program.params] == [
        ("A", False),
        ("B", False),
        ("out0", True),
    ]
    assert program.returns == [2]


# --------------------------------------------------------------------------- #
# Compile-time Python
# --------------------------------------------------------------------------- #


def test_compile_time_values_fold():
    dim = 64
    scale = (1.0 / dim) ** 0.5  # a float closure value
    tiles = (32, dim)  # a tuple
    dtypes = [T.float16, T.float32]  # a list of dtypes
    use_bias = False  # a bool

    def rows(n):  # a plain Python helper called with compile-time values
        return n // 2

    @T.prim_func
    def main(
        A: T.Tensor((rows(128), dim), dtypes[0]), B: T.Tensor((64, dim), dtypes[1])
    ):
        with T.Kernel(1, threads=tiles[0] * 4) as bx:
            x = T.alloc_fragment(tiles, dtypes[1])
            T.copy(A[0 : tiles[0], 0:dim], x)
            for i, j in T.Parallel(tiles[0], tiles[1]):
                x[i, j] = x[i, j] * (scale * 2 + (1 if use_bias else 0))
            T.copy(x, B[bx * 32, 0])

    ir = _prim_ir(main)
    _expect(
        ir,
        r"%A: !tile.tensor<64x64xf16>, %B: !tile.tensor<64x64xf32>",
        r"threads \[128, 1, 1\]",
        r"tile.alloc : !tile.buffer<32x64xf32, fragment>",
        r"tile.parallel \(%i, %j\) in \[32, 64\]",
        r"arith.constant 2.500000e-01 : f32",  # scale * 2 + 0, folded
        r"arith.mulf",
    )
    _absent(ir, "arith.divf", "math.powf")


def test_starred_loop_extents():
    shape = (4, 64)

    @T.prim_func
    def main(A: T.Tensor(shape, T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i, j in T.Parallel(*shape):
                A[i, j] = 0.0

    _expect(_prim_ir(main), r"tile.parallel \(%i, %j\) in \[4, 64\]")


def test_compile_time_if_builds_no_scf_if():
    def kernel(is_causal):
        @T.prim_func
        def main(A: T.Tensor((64, 64), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                s = T.alloc_fragment((64, 64), T.float32)
                if is_causal:
                    for i, j in T.Parallel(64, 64):
                        s[i, j] = T.if_then_else(i >= j, 0, -T.infinity(T.float32))
                else:
                    T.clear(s)
                T.copy(s, A[0, 0])

        return main

    causal, plain = _prim_ir(kernel(True)), _prim_ir(kernel(False))
    _absent(causal, "scf.if", "tile.fill")
    _expect(causal, r"tile.parallel", r"arith.cmpi sge", r"arith.select")
    _absent(plain, "scf.if", "tile.parallel")
    _expect(plain, r"tile.fill %s, %\w+ : !tile.buffer<64x64xf32, fragment>, f32")


def test_shape_list_shared_by_parameters():
    def kernel(b, s, h, d):
        shape = [b, s, h, d]

        @T.prim_func
        def main(Q: T.Tensor(shape, T.float16), O: T.Tensor(shape, T.float16)):
            with T.Kernel(s // 64, h, b, threads=128) as (bx, by, bz):
                q = T.alloc_shared((64, d), T.float16)
                T.copy(Q[bz, bx * 64 : (bx + 1) * 64, by, :], q)
                T.copy(q, O[bz, bx * 64 : (bx + 1) * 64, by, :])

        return main

    ir = _prim_ir(kernel(2, 256, 4, 32))
    _expect(ir, r"%Q: !tile.tensor<2x256x4x32xf16>, %O: !tile.tensor<2x256x4x32xf16>")


# --------------------------------------------------------------------------- #
# Names, elements and regions
# --------------------------------------------------------------------------- #


@T.prim_func
def local_bindings(A: T.Tensor((4, 128), T.float32), B: T.Tensor((4, 128), T.float32)):
    with T.Kernel(1, threads=128) as bx:
        x = T.alloc_fragment((4, 128), T.float32)
        T.copy(A, x)
        for i, j in T.Parallel(4, 128):
            doubled = x[i, j] * 2.0
            shifted = doubled - 1.0
            x[i, j] = shifted * shifted
        T.copy(x, B)


def test_local_scalar_bindings_in_parallel():
    ir = _prim_ir(local_bindings)
    # A whole-tensor operand needs no tile.region.
    _expect(
        ir,
        r"tile.copy %A, %x : !tile.tensor<4x128xf32>, !tile.buffer<4x128xf32, fragment>",
        r"tile.parallel \(%i, %j\) in \[4, 128\]",
        r"%doubled = arith.mulf",
        r"%shifted = arith.subf",
        r"arith.mulf %shifted, %shifted : f32",
        r"tile.store",
        r"tile.copy %x, %B",
    )
    _absent(ir, "tile.region")


def test_slice_with_points_is_a_region_keeping_unit_dims():
    @T.prim_func
    def main(Q: T.Tensor((2, 256, 4, 32), T.float16)):
        with T.Kernel(4, 4, 2, threads=128) as (bx, by, bz):
            q = T.alloc_shared((64, 32), T.float16)
            T.copy(Q[bz, bx * 64 : (bx + 1) * 64, by, :], q)

    ir = _prim_ir(main)
    _expect(
        ir,
        r"(%\w+) = arith.muli %bx, %\w+ : index",
        r"tile.region %Q\[%bz, %\w+, %by, %\w+\] : !tile.tensor<2x256x4x32xf16> -> !tile.tensor<1x64x1x32xf16>",
        r"tile.copy %\w+, %q : !tile.tensor<1x64x1x32xf16>, !tile.buffer<64x32xf16, shared>",
    )


def test_point_access_is_a_region_sized_by_the_other_side():
    @T.prim_func
    def main(A: T.Tensor((256, 128), T.float16), C: T.Tensor((256, 128), T.float32)):
        with T.Kernel(4, 2, threads=128) as (bx, by):
            a = T.alloc_shared((64, 32), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            for k in T.serial(4):
                T.copy(A[by * 64, k * 32], a)
            T.copy(c, C[by * 64, bx * 64])

    ir = _prim_ir(main)
    _expect(
        ir,
        r"tile.region %A\[%\w+, %\w+\] : !tile.tensor<256x128xf16> -> !tile.tensor<64x32xf16>",
        r"tile.region %C\[%\w+, %\w+\] : !tile.tensor<256x128xf32> -> !tile.tensor<64x64xf32>",
        r"tile.copy %c, %\w+ : !tile.buffer<64x64xf32, fragment>, !tile.tensor<64x64xf32>",
    )


def test_augmented_assignment_on_elements_and_names():
    @T.prim_func
    def main(A: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((128,), T.float32)
            T.copy(A, x)
            for i in T.Parallel(128):
                acc = x[i]
                acc *= 3.0
                x[i] += acc
            T.copy(x, A)

    ir = _prim_ir(main)
    _expect(
        ir,
        r"%acc = tile.load %x\[%i\]",
        r"(%\w+) = arith.mulf %acc, %\w+ : f32",
        r"tile.load %x\[%i\]",
        r"arith.addf",
        r"tile.store %\w+, %x\[%i\]",
    )


def test_dynamic_size_is_a_question_mark_and_a_dim():
    M = T.dynamic("M")

    @T.prim_func
    def main(A: T.Tensor((M, 64), T.float16), B: T.Tensor((M, 64), T.float16)):
        with T.Kernel(T.ceildiv(M, 32), threads=128) as bx:
            s = T.alloc_shared((32, 64), T.float16)
            T.copy(A[bx * 32, 0], s)
            T.copy(s, B[bx * 32, 0])

    program = build_prim_func(main, [1])
    ir = _ir(program)
    _expect(
        ir,
        r"%A: !tile.tensor<\?x64xf16>, %B: !tile.tensor<\?x64xf16>",
        r"%M = tile.dim %A {dim = 0 : i64} : !tile.tensor<\?x64xf16>",
        r"arith.ceildivsi %M, %\w+ : index",
        r"tile.kernel \(%bx\) in \(%\w+\)",
    )
    # every dynamic size of every tensor is read (B's bounds need its own); `M` names A's
    assert _count(ir, "tile.dim") == 2
    assert program.params[0].shape == (M, 64)


@T.macro
def scale_rows(buf, factor, rows: int):
    for i, j in T.Parallel(rows, 64):
        buf[i, j] = buf[i, j] * factor


def test_macro_is_inlined():
    @T.prim_func
    def main(A: T.Tensor((16, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((16, 64), T.float32)
            T.copy(A, x)
            scale_rows(x, 0.5, 16)
            scale_rows(x, 4.0, rows=16)
            T.copy(x, A)

    ir = _prim_ir(main)
    assert len(re.findall(r"tile.parallel \(%i\w*, %j\w*\) in \[16, 64\]", ir)) == 2
    _expect(
        ir, r"arith.constant 5.000000e-01 : f32", r"arith.constant 4.000000e\+00 : f32"
    )
    _absent(ir, "func.call")


# --------------------------------------------------------------------------- #
# Control flow and loops
# --------------------------------------------------------------------------- #


def test_runtime_if_builds_scf_if():
    @T.prim_func
    def main(A: T.Tensor((256,), T.float32)):
        with T.Kernel(4, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            if bx < 2:
                T.fill(x, 1.0)
            else:
                T.fill(x, 2.0)
            if bx == 3:
                T.copy(x, A[bx * 64])

    ir = _prim_ir(main)
    _expect(
        ir,
        r"(%\w+) = arith.cmpi slt, %bx, %\w+ : index",
        r"scf.if %\w+ \{",
        r"tile.fill",
        r"\} else \{",
        r"tile.fill",
        r"arith.cmpi eq, %bx",
        r"scf.if",
        r"tile.copy",
    )


def test_if_then_else_is_a_select():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            for i in T.Parallel(64):
                x[i] = T.if_then_else(i < 32, 1.0, x[i])
            T.copy(x, A)

    ir = _prim_ir(main)
    _expect(
        ir,
        r"(%\w+) = arith.cmpi slt, %i, %\w+ : index",
        r"arith.select %\w+, %\w+, %\w+ : f32",
    )
    _absent(ir, "scf.if")


def test_pipelined_loop_attributes():
    @T.prim_func
    def main(A: T.Tensor((64, 512), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 32), T.float16)
            f = T.alloc_fragment((64, 32), T.float32)
            for k in T.Pipelined(16, num_stages=3, order=[1, 0], stage=[0, 1]):
                T.copy(A[0, k * 32], a)
                T.copy(a, f)
            for k in T.Pipelined(2, 16, num_stages=2):
                T.copy(A[0, k * 32], a)

    ir = _prim_ir(main)
    _expect(
        ir,
        r"tile.for %k = %\w+ to %\w+ step %\w+ \{",
        r'\} \{kind = "pipelined", num_stages = 3 : i64, order = array<i64: 1, 0>, stage = array<i64: 0, 1>\}',
        r'\} \{kind = "pipelined", num_stages = 2 : i64\}',
    )


def test_serial_range_and_unroll_loops():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            for k in T.serial(4):
                T.fill(x, 1.0)
            for k in range(1, 9, 2):
                T.fill(x, 2.0)
            for k in T.unroll(2):
                T.fill(x, 3.0)
            T.copy(x, A)

    ir = _prim_ir(main)
    assert _count(ir, "tile.for ") == 3
    _expect(
        ir,
        r"(%\w+) = arith.constant 4 : index",
        r"tile.for %k = %\w+ to %\w+ step %\w+ \{",
        r"arith.constant 9 : index",
        r"arith.constant 2 : index",
        r"tile.for %k_\d+ = ",
        r'\} \{kind = "unroll"\}',
    )
    _absent(ir, 'kind = "serial"')  # the default kind is not printed


def test_alloc_var_read_and_write():
    @T.prim_func
    def main(A: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=64) as bx:
            total = T.alloc_var(T.int32, init=0)
            for k in T.serial(8):
                total = total + k
            A[bx] = total

    ir = _prim_ir(main)
    var = re.search(r"(%\w+) = tile.alloc : !tile.buffer<1xi32, local>", ir)
    assert var is not None, ir
    v = re.escape(var[1])
    _expect(
        ir,
        rf"tile.store %\w+, {v}\[%\w+\] : i32",
        r"tile.for %k",
        rf"tile.load {v}\[%\w+\] : !tile.buffer<1xi32, local> -> i32",
        r"arith.addi",
        rf"tile.store %\w+, {v}\[",
        rf"tile.load {v}\[",
        r"tile.store %\w+, %A\[%bx\]",
    )


# --------------------------------------------------------------------------- #
# Tile ops
# --------------------------------------------------------------------------- #


def test_reduce_kinds_and_negative_dim():
    @T.prim_func
    def main(A: T.Tensor((8, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((8, 64), T.float32)
            r = T.alloc_fragment((8,), T.float32)
            c = T.alloc_fragment((64,), T.float32)
            T.copy(A, x)
            T.reduce_sum(x, r, dim=-1)
            T.reduce_max(x, r, dim=1, clear=False)
            T.reduce_min(x, c, dim=-2)
            T.reduce_abssum(x, c, dim=0)
            T.reduce_absmax(x, r)

    ir = _prim_ir(main)
    _expect(
        ir,
        r'tile.reduce %x, %r \{kind = "sum", dim = 1 : i64, clear = true\}',
        r'tile.reduce %x, %r \{kind = "max", dim = 1 : i64, clear = false\}',
        r'tile.reduce %x, %c \{kind = "min", dim = 0 : i64, clear = true\}',
        r'tile.reduce %x, %c \{kind = "abssum", dim = 0 : i64, clear = true\}',
        r'tile.reduce %x, %r \{kind = "absmax", dim = 1 : i64, clear = true\}',
    )


def test_cumsum():
    @T.prim_func
    def main(A: T.Tensor((4, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((4, 64), T.float32)
            y = T.alloc_fragment((4, 64), T.float32)
            T.copy(A, x)
            T.cumsum(x, y, dim=1, reverse=True)
            T.cumsum(x, dim=-1)
            T.copy(y, A)

    ir = _prim_ir(main)
    _expect(
        ir,
        r"tile.cumsum %x, %y \{dim = 1 : i64, reverse = true\}",
        r"tile.cumsum %x, %x \{dim = 1 : i64\} : !tile.buffer<4x64xf32, fragment>",
    )


def test_atomic_add_element_and_tile_forms():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), S: T.Tensor((128,), T.float32)):
        with T.Kernel(2, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            T.copy(A, x)
            for i in T.Parallel(64):
                T.atomic_add(S[i], x[i])
            T.atomic_add(S[bx * 64 : (bx + 1) * 64], x)

    ir = _prim_ir(main)
    _expect(
        ir,
        r"(%\w+) = tile.load %x\[%i\]",
        r'tile.atomic %S\[%i\], %\w+ \{kind = "add"\} : !tile.tensor<128xf32>, f32',
        r"tile.region %S\[%\w+\] : !tile.tensor<128xf32> -> !tile.tensor<64xf32>",
        r'tile.atomic %\w+\[\], %x \{kind = "add"\} : !tile.tensor<64xf32>, !tile.buffer<64xf32, fragment>',
    )


def test_use_swizzle():
    @T.prim_func
    def main(A: T.Tensor((128, 128), T.float16)):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            T.use_swizzle(panel_size=8, order="col")
            T.use_swizzle(4, enable=False)

    ir = _prim_ir(main)
    assert _count(ir, "tile.use_swizzle") == 1  # enable=False builds nothing
    _expect(ir, r'tile.use_swizzle \{panel_size = 8 : i64, order = "col"\}')


def test_annotate_layout_with_swizzled_layout():
    @T.prim_func
    def main(A: T.Tensor((128, 128), T.float16)):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            a = T.alloc_shared((64, 64), T.float16)
            b = T.alloc_shared((64, 32), T.float16)
            T.annotate_layout(
                {
                    a: make_swizzled_layout(a),
                    b: make_swizzled_layout(b, swizzle_bytes=64),
                }
            )
            T.copy(A[by * 64, bx * 64], a)

    ir = _prim_ir(main)
    _expect(
        ir,
        r"tile.annotate_layout %a \{layout = #tile.swizzle<128>\} : !tile.buffer<64x64xf16, shared>",
        r"tile.annotate_layout %b \{layout = #tile.swizzle<64>\} : !tile.buffer<64x32xf16, shared>",
    )


def test_print():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            T.copy(A, x)
            T.print(x, msg="x")
            T.print(bx)
            T.print(msg="done")

    ir = _prim_ir(main)
    _expect(
        ir,
        r'tile.print %x : !tile.buffer<64xf32, fragment> \{msg = "x"\}',
        r"tile.print %bx : index\n",
        r'tile.print \{msg = "done"\}',
    )


def test_device_assert():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(4, threads=64) as bx:
            T.device_assert(bx < 4, "bx in range")

    ir = _prim_ir(main)
    _expect(
        ir,
        r"(%\w+) = arith.cmpi slt, %bx",
        r'tile.device_assert %\w+ \{msg = "bx in range"\}',
    )


def test_astype_and_cast():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float16), B: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                wide = A[i].astype(T.float32)
                B[i] = T.cast(wide * 2.0, T.int32)

    ir = _prim_ir(main)
    _expect(
        ir,
        r"(%\w+) = tile.load %A\[%i\] : !tile.tensor<64xf16> -> f16",
        r"%wide = arith.extf %\w+ : f16 to f32",
        r"arith.mulf %wide",
        r"arith.fptosi %\w+ : f32 to i32",
        r"tile.store %\w+, %B\[%i\] : i32",
    )


# --------------------------------------------------------------------------- #
# Locations
# --------------------------------------------------------------------------- #


@T.prim_func
def located(A: T.Tensor((64, 64), T.float16)):
    with T.Kernel(1, threads=128) as bx:
        s = T.alloc_shared((64, 64), T.float16)
        T.copy(A, s)  # the located statement


def _debug_ir(program) -> str:
    out = io.StringIO()
    Printer(stream=out, print_debuginfo=True).print_op(program.module)
    return out.getvalue()


def test_ops_carry_absolute_file_line_col():
    text = _debug_ir(build_prim_func(located))
    lines, first = inspect.getsourcelines(located.fn)
    offset = next(n for n, line in enumerate(lines) if "T.copy(A, s)" in line)
    line = lines[offset]
    col = len(line) - len(line.lstrip()) + 1
    m = re.search(
        r'tile.copy %A, %s : .*? loc\("(?P<file>[^"]+)":(?P<line>\d+):(?P<col>\d+)\)',
        text,
    )
    assert m is not None, text
    assert m["file"].endswith("test_constructs.py")
    assert (int(m["line"]), int(m["col"])) == (first + offset, col)
    # Every op the kernel body builds is located in this file.
    body = text[text.index("tile.kernel") : text.index("func.return")]
    for op_line in body.splitlines():
        if op_line.strip() and not op_line.endswith(
            "{"
        ):  # a region's op is located at its `}`
            assert 'test_constructs.py":' in op_line, op_line


def test_function_and_return_are_located_at_the_def():
    text = _debug_ir(build_prim_func(located))
    lines, first = inspect.getsourcelines(located.fn)
    def_line = first + next(
        n for n, line in enumerate(lines) if line.lstrip().startswith("def ")
    )
    ret = re.search(r'func.return loc\("[^"]+":(\d+):\d+\)', text)
    fn = re.search(
        r'^  \} loc\("[^"]+":(\d+):\d+\)$', text, re.MULTILINE
    )  # the func.func's closing brace
    assert ret is not None and fn is not None, text
    assert int(ret[1]) == int(fn[1]) == def_line


def test_compile_time_comparisons_of_non_numbers_fold():
    mode, missing = "fast", None

    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                A[i] = A[i] * (2.0 if mode == "fast" and missing is None else 3.0)

    ir = _ir(build_prim_func(main))
    assert "2.000000e+00" in ir and "3.000000e+00" not in ir and "scf.if" not in ir


def _mask(i, j, block: int):
    """A plain Python helper (no @T.macro): called with run-time values, it is traced into the kernel."""
    q, k = i // block, j // block
    return T.if_then_else(q >= k, 1, 0)


def test_plain_python_helper_with_runtime_values_is_inlined():
    @T.prim_func
    def main(A: T.Tensor((8, 8), T.int32)):
        with T.Kernel(1, threads=64) as bx:
            for i, j in T.Parallel(8, 8):
                A[i, j] = _mask(i, j, 4)

    ir = _prim_ir(main)
    _expect(ir, r"tile.parallel", r"arith.floordivsi", r"arith.floordivsi", r"arith.cmpi sge", r"arith.select",
            r"tile.store")
    kernel = tilec.compile(main, target="interp")
    out = np.zeros((8, 8), np.int32)
    kernel(out)
    i, j = np.indices((8, 8))
    assert (out == (i // 4 >= j // 4)).all()


_EPILOGUES = {"double": lambda v: v * 2.0, "gelu": lambda v: 0.5 * v * (1.0 + T.tanh(0.7978845608 * v)),
              "shift": lambda v, s=3.0: v + s}
_first, _second = (lambda v: v + 1.0), (lambda v: v - (lambda w: w * 4.0)(v))


def _epilogue_kernel(epilogue):
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                B[i] = epilogue(A[i])

    return tilec.compile(main, target="interp")


def test_lambda_helpers_called_with_runtime_values_are_inlined():
    """TileLang evaluates a Python function of PrimExprs, lambdas too (`epilogues[name](v)`); tilec
    inlines a lambda defined outside the kernel as it does a def, found in its file even where a
    line holds several (`_first, _second = ...`) or it is a fragment of a statement (a dict entry)."""
    a = np.linspace(-3, 3, 64, dtype=np.float32)
    scale = 5.0
    cases = {"double": a * 2, "gelu": 0.5 * a * (1 + np.tanh(0.7978845608 * a)), "shift": a + 3,
             "first": a + 1, "second": a - 4 * a, "closure": a * scale}
    helpers = {**_EPILOGUES, "first": _first, "second": _second, "closure": lambda v: v * scale}
    for name, want in cases.items():
        out = np.zeros(64, np.float32)
        _epilogue_kernel(helpers[name])(a, out)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_lambdas_side_by_side_on_one_line_are_told_apart():
    twins = [lambda v: v + 1.0, lambda v: v + 2.0]
    a = np.arange(64, dtype=np.float32)
    for k, twin in enumerate(twins):
        out = np.zeros(64, np.float32)
        _epilogue_kernel(twin)(a, out)
        np.testing.assert_array_equal(out, a + k + 1)


def test_lambda_without_source_is_a_located_error():
    helper = eval("lambda v: v + 1.0")  # noqa: S307 - no file to read it from
    try:
        _epilogue_kernel(helper)
    except tilec.TilecError as e:
        text = str(e)
    else:
        text = ""
    assert "cannot read the source of a lambda" in text and "test_constructs.py:" in text, text
