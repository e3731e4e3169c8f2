"""Pointer tables and `T.make_tensor` (issue 11): a kernel parameter that is a table of device
addresses (`T.Tensor([n], T.ptr)`, an int64 tensor of `data_ptr()`s) or one address (`p: T.ptr`),
from which the kernel builds global tensors that T.copy, T.gemm and indexing use like any other.

On the CPU targets the addresses are those of CPU torch tensors, which the interpreter maps back
to their memory (targets/interp/pointers.py). Results are compared with the same kernel written
over ordinary tensor parameters; misuse is checked for its message and the kernel's file:line.
Kernels live in this file (the frontend reads their source with `inspect`).
"""

# ruff: noqa: F841

import math

import numpy as np
import pytest
import torch

import tilec
import tilec.language as T
from tilec.frontend import build_prim_func


def _line(text: str) -> int:
    return next(i for i, line in enumerate(open(__file__), 1) if text in line and "_line(" not in line)


def _located(error, marker: str) -> None:
    assert f"test_pointer_tables.py:{_line('# marker: ' + marker)}:" in str(error), str(error)


def _table(tensors) -> torch.Tensor:
    return torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64)


# --------------------------------------------------------------------------- #
# Kernels
# --------------------------------------------------------------------------- #


def multi_copy(G, N, dtype=T.float16):
    @T.prim_func
    def main(src_ptrs: T.Tensor([G], T.ptr), out: T.Tensor([G, N], dtype)):
        with T.Kernel(G, threads=32) as bx:
            src = T.make_tensor(src_ptrs[bx], (N,), dtype)
            for i in T.Parallel(N):
                out[bx, i] = src[i] * 2

    return main


def grouped_gemm(sizes, K, N, bm, bn, bk, dtype=T.float16, by_pointer=True):
    """TileLang's grouped GEMM over pointer tables (examples/grouped_gemm/..._fwd_ptr.py), or the
    same over one stacked tensor per operand (`by_pointer=False`): the reference."""
    G, max_m = len(sizes), max(sizes)
    offsets = [0]
    for s in sizes[:-1]:
        offsets.append(offsets[-1] + math.ceil(s / bm))
    blocks = sum(math.ceil(s / bm) for s in sizes)

    @T.prim_func
    def by_table(A_ptrs: T.Tensor([G], T.ptr), B_ptrs: T.Tensor([G], T.ptr), C_ptrs: T.Tensor([G], T.ptr),
                 tile_offsets: T.Tensor([G], T.int32)):
        with T.Kernel(blocks, T.ceildiv(N, bn), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bk, bn), dtype)
            C_f = T.alloc_fragment((bm, bn), T.float32)
            g = T.alloc_var(T.int32)
            first = T.alloc_var(T.int32)
            g = 0
            first = 0
            for i in range(G):
                g = T.if_then_else(bx >= tile_offsets[i], i, g)
                first = T.if_then_else(bx >= tile_offsets[i], tile_offsets[i], first)
            m0 = (bx - first) * bm
            A = T.make_tensor(A_ptrs[g], (max_m, K), dtype)
            B = T.make_tensor(B_ptrs[g], (K, N), dtype)
            C = T.make_tensor(C_ptrs[g], (max_m, N), dtype)
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[m0, ko * bk], A_s)
                T.copy(B[ko * bk, by * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[m0, by * bn])

    @T.prim_func
    def stacked(A: T.Tensor([G, max_m, K], dtype), B: T.Tensor([G, K, N], dtype), C: T.Tensor([G, max_m, N], dtype),
                tile_offsets: T.Tensor([G], T.int32)):
        with T.Kernel(blocks, T.ceildiv(N, bn), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bk, bn), dtype)
            C_f = T.alloc_fragment((bm, bn), T.float32)
            g = T.alloc_var(T.int32)
            first = T.alloc_var(T.int32)
            g = 0
            first = 0
            for i in range(G):
                g = T.if_then_else(bx >= tile_offsets[i], i, g)
                first = T.if_then_else(bx >= tile_offsets[i], tile_offsets[i], first)
            m0 = (bx - first) * bm
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[g, m0, ko * bk], A_s)
                T.copy(B[g, ko * bk, by * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[g, m0, by * bn])

    return (by_table if by_pointer else stacked), offsets


def scalar_pointers(bm=16, bn=16):
    """TileLang's `p: T.ptr` parameters with run-time sizes: C = A + B over (m, n)."""

    @T.prim_func
    def main(a_ptr: T.ptr, b_ptr: T.ptr, c_ptr: T.ptr, m: T.int32, n: T.int32):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=64) as (bx, by):
            A = T.make_tensor(a_ptr, (m, n), T.float32)
            B = T.make_tensor(b_ptr, (m, n), T.float32)
            C = T.make_tensor(c_ptr, (m, n), T.float32)
            for i, j in T.Parallel(bm, bn):
                C[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j] + B[by * bm + i, bx * bn + j]

    return main


def matmul_by_address(M, N, K, bm=32, bn=32, bk=32, dtype=T.float16):
    """TileLang's own pointer test (testing/python/language/test_tilelang_language_ptr.py): the
    tensors are made before `with T.Kernel`, with run-time sizes, and read by a pipelined loop."""

    @T.prim_func
    def main(a_ptr: T.ptr, b_ptr: T.ptr, c_ptr: T.ptr, m: T.int32, n: T.int32, k: T.int32):
        A = T.make_tensor(a_ptr, (m, k), dtype)
        B = T.make_tensor(b_ptr, (n, k), dtype)
        C = T.make_tensor(c_ptr, (m, n), T.float32)
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bn, bk), dtype)
            C_l = T.alloc_fragment((bm, bn), T.float32)
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=3):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[bx * bn, ko * bk], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=True)
            T.copy(C_l, C[by * bm, bx * bn])

    return main


# --------------------------------------------------------------------------- #
# Results
# --------------------------------------------------------------------------- #


def test_pointer_table_copy_on_the_interpreter():
    srcs = [torch.randn(64, dtype=torch.float16) for _ in range(3)]
    out = torch.zeros(3, 64, dtype=torch.float16)
    tilec.compile(multi_copy(3, 64), target="interp")(_table(srcs), out)
    torch.testing.assert_close(out, torch.stack(srcs) * 2)


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_grouped_gemm_by_pointer_table_equals_stacked_tensors(target):
    from tilec.targets.interp import simt

    if target == "sim" and not _sim_reads_pointers(simt):
        pytest.skip("the simulator has no llvm.inttoptr handler yet (targets/interp/simt.py)")
    sizes, K, N, bm, bn, bk = [5, 20, 16], 64, 32, 16, 16, 32
    max_m = max(sizes)
    torch.manual_seed(0)
    a = [torch.zeros(max_m, K, dtype=torch.float16) for _ in sizes]
    for t, s in zip(a, sizes):
        t[:s] = torch.randn(s, K, dtype=torch.float16)
    b = [torch.randn(K, N, dtype=torch.float16) for _ in sizes]
    c = [torch.zeros(max_m, N, dtype=torch.float16) for _ in sizes]
    prog, offsets = grouped_gemm(sizes, K, N, bm, bn, bk)
    offsets = torch.tensor(offsets, dtype=torch.int32)
    tilec.compile(prog, target=target)(_table(a), _table(b), _table(c), offsets)
    ref_prog, _ = grouped_gemm(sizes, K, N, bm, bn, bk, by_pointer=False)
    c_ref = torch.zeros(len(sizes), max_m, N, dtype=torch.float16)
    tilec.compile(ref_prog, target="interp")(torch.stack(a), torch.stack(b), c_ref, offsets)
    for g, s in enumerate(sizes):
        torch.testing.assert_close(c[g][:s], c_ref[g][:s], atol=0, rtol=0)
        torch.testing.assert_close(c[g][:s].float(), a[g][:s].float() @ b[g].float(), atol=1e-2, rtol=1e-2)


def _sim_reads_pointers(simt) -> bool:
    from xdsl.dialects import llvm

    return llvm.IntToPtrOp in simt.HANDLERS


def test_scalar_pointer_parameters_with_run_time_sizes():
    m, n = 20, 24
    a, b = torch.randn(m, n), torch.randn(m, n)
    c = torch.zeros(m, n)
    kernel = tilec.compile(scalar_pointers(), target="interp")
    kernel(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n)
    torch.testing.assert_close(c, a + b)


def test_tensors_made_before_the_kernel_move_into_it():
    text = str(build_prim_func(matmul_by_address(64, 64, 64)).module)
    kernel_at = text.index("tile.kernel")
    assert text.count("tile.make_tensor") == 3 and text.index("tile.make_tensor") > kernel_at
    assert "tile.make_tensor %a_ptr[%" in text and "!tile.tensor<?x?xf16>" in text


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_matmul_through_scalar_pointers(target):
    from tilec.targets.interp import simt

    if target == "sim" and not _sim_reads_pointers(simt):
        pytest.skip("the simulator has no llvm.inttoptr handler yet (targets/interp/simt.py)")
    M, N, K = 64, 32, 96
    torch.manual_seed(1)
    a, b, c = torch.randn(M, K, dtype=torch.float16), torch.randn(N, K, dtype=torch.float16), torch.zeros(M, N)
    tilec.compile(matmul_by_address(M, N, K), target=target)(a.data_ptr(), b.data_ptr(), c.data_ptr(), M, N, K)
    torch.testing.assert_close(c, a.float() @ b.float().T, atol=1e-2, rtol=1e-2)


def test_make_tensor_lowers_through_inttoptr_for_sm_90a():
    """The CUDA lowering views the address as a global pointer; with no host descriptor of the
    tensor, its copies are cp.async (sm_80+), never TMA."""
    from tilec.targets.nvptx import translate
    from xdsl.dialects import llvm

    if llvm.IntToPtrOp not in translate.LOWERINGS:
        pytest.skip("the NVPTX translator has no llvm.inttoptr yet (targets/nvptx/translate_ops.py)")
    prog, _ = grouped_gemm([5, 20, 16], 64, 32, 16, 16, 32)
    kernel = tilec.compile(prog, target="sm_90a", pass_configs={"tl.disable_warp_specialized": True})
    thread = kernel.get_ir("thread")
    assert "llvm.inttoptr" in thread and "cp.async" in thread.replace("nvvm.cp.async", "cp.async")
    assert "cp.async.bulk.tensor" not in kernel.get_kernel_source()


# --------------------------------------------------------------------------- #
# Located errors
# --------------------------------------------------------------------------- #


def make_tensor_of_a_tensor():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            X = T.make_tensor(A, (64,), T.float32)  # marker: of a tensor

    return main


def make_tensor_of_a_float():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            X = T.make_tensor(A[0], (64,), T.float32)  # marker: of a float

    return main


def make_tensor_of_an_int32():
    @T.prim_func
    def main(offs: T.Tensor((4,), T.int32)):
        with T.Kernel(1, threads=32) as bx:
            X = T.make_tensor(offs[bx], (64,), T.float32)  # marker: of an int32

    return main


def make_tensor_without_shape():
    @T.prim_func
    def main(ptrs: T.Tensor((4,), T.ptr)):
        with T.Kernel(1, threads=32) as bx:
            X = T.make_tensor(ptrs[bx])  # marker: no shape

    return main


def make_tensor_with_strides():
    @T.prim_func
    def main(ptrs: T.Tensor((4,), T.ptr)):
        with T.Kernel(1, threads=32) as bx:
            X = T.make_tensor(ptrs[bx], (8, 8), T.float32, strides=(1, 8))  # marker: strides

    return main


def make_tensor_of_zero_rows():
    @T.prim_func
    def main(ptrs: T.Tensor((4,), T.ptr)):
        with T.Kernel(1, threads=32) as bx:
            X = T.make_tensor(ptrs[bx], (0, 8), T.float32)  # marker: zero rows

    return main


@pytest.mark.parametrize("factory, marker, message", [
    (make_tensor_of_a_tensor, "of a tensor", "T.make_tensor takes a pointer, got the tensor `A`"),
    (make_tensor_of_a_float, "of a float", "T.make_tensor takes a pointer (a 64-bit integer), got a value of type f32"),
    (make_tensor_of_an_int32, "of an int32", "T.make_tensor takes a pointer (a 64-bit integer), got a value of type i32"),
    (make_tensor_without_shape, "no shape", "bad arguments to T.make_tensor: missing a required argument: 'shape'"),
    (make_tensor_with_strides, "strides", "T.make_tensor: explicit strides are not supported by tilec"),
    (make_tensor_of_zero_rows, "zero rows", "T.make_tensor: sizes must be positive, got 0"),
])
def test_make_tensor_misuse_is_a_located_error(factory, marker, message):
    with pytest.raises(tilec.TilecError) as e:
        build_prim_func(factory())
    assert message in str(e.value), str(e.value)
    _located(e.value, marker)


def test_an_address_no_tensor_holds_is_a_located_error():
    kernel = tilec.compile(multi_copy(1, 64), target="interp")
    with pytest.raises(tilec.TilecError, match=r"address 0x10 is not inside any tensor this call can reach") as e:
        kernel(torch.tensor([16], dtype=torch.int64), torch.zeros(1, 64, dtype=torch.float16))
    assert "data_ptr() of a CPU torch tensor" in str(e.value)
    assert f"test_pointer_tables.py:{_line('src = T.make_tensor(src_ptrs[bx], (N,), dtype)')}:" in str(e.value)


def test_a_tensor_larger_than_its_memory_is_a_located_error():
    kernel = tilec.compile(multi_copy(1, 64), target="interp")
    small = torch.zeros(16, dtype=torch.float16)
    with pytest.raises(tilec.TilecError, match=r"a tensor of shape \(64,\) and dtype float16 at 0x[0-9a-f]+ needs "
                                               r"128 bytes, but the memory holding that address has 32 bytes") as e:
        kernel(_table([small]), torch.zeros(1, 64, dtype=torch.float16))
    assert f"test_pointer_tables.py:{_line('src = T.make_tensor(src_ptrs[bx], (N,), dtype)')}:" in str(e.value)


def test_the_call_arrays_are_reachable_through_their_addresses():
    """numpy arrays passed to the interpreter are known by address too (not only torch tensors)."""
    from tilec.targets.interp import pointers

    data = np.arange(8, dtype=np.float32)
    with pointers.registered([data]):
        view = pointers.current().view(data.ctypes.data + 8, (6,), np.dtype(np.float32), None)
    np.testing.assert_array_equal(view, data[2:])
    view[0] = 100.0
    assert data[2] == 100.0


def tma_copy_of_a_pointer_tensor():
    @T.prim_func
    def main(ptrs: T.Tensor((1,), T.ptr), C: T.Tensor((64, 32), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((64, 32), T.float16)
            ready = T.alloc_barrier(arrive_count=128)
            with T.ws(1):
                A = T.make_tensor(ptrs[0], (64, 32), T.float16)
                T.tma_copy(A[0, 0], A_s, barrier=ready)  # marker: tma of a pointer tensor
            with T.ws(0):
                T.barrier_wait(ready, 0)
                T.copy(A_s, C)

    return main


def test_tma_copy_of_a_pointer_tensor_is_a_located_error():
    with pytest.raises(tilec.TilecError, match=r"T.tma_copy cannot read a tensor of T.make_tensor: TMA needs a "
                                               r"host-side descriptor") as e:
        build_prim_func(tma_copy_of_a_pointer_tensor())
    _located(e.value, "tma of a pointer tensor")


def test_a_tensor_for_a_pointer_parameter_says_to_pass_its_address():
    kernel = tilec.compile(scalar_pointers(), target="interp")
    a = torch.zeros(16, 16)
    with pytest.raises(tilec.TilecError, match=r"argument 0 \(`a_ptr`\) is a int64 scalar, got Tensor") as e:
        kernel(a, a.data_ptr(), a.data_ptr(), 16, 16)
    assert "pass tensor.data_ptr()" in str(e.value) and "test_pointer_tables.py" in str(e.value)
