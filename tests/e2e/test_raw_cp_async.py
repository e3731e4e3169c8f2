"""TileLang's raw per-thread cp.async: `T.ptx_cp_async(T.access_ptr(S[i, j], "w", n),
T.access_ptr(A[..], "r", n), n)` and `T.cp_async_barrier_noinc(bar)` (`tile.cp_async`,
`tile.cp_async_arrive`). Each thread copies its own run of 16 bytes at indices from
T.get_thread_binding(); the copies complete by `T.ptx_commit_group` / `T.ptx_wait_group` or on an
mbarrier. Run on the interpreter (the threads as lanes), on the simulator (the CUDA lowering:
addresses under the shared buffer's swizzle), assembled by ptxas for sm_90a and sm_80, and on a
GPU. Kernels live in this file (the frontend reads their source)."""

# ruff: noqa: F841

import pytest
import torch

import tilec
import tilec.language as T
from tilec.frontend import build_prim_func
from tilec.layout import make_swizzled_layout

DTYPES = {"float16": (T.float16, torch.float16), "bfloat16": (T.bfloat16, torch.bfloat16)}


def _line(text: str) -> int:
    return next(i for i, line in enumerate(open(__file__), 1) if text in line and "_line(" not in line)


def tile_through_shared(dtype=T.float16, swizzled=False, completion="groups"):
    """A [64, 64] tile into shared memory by 128 threads, each copying 16 bytes per row band
    (`S[tid // 8 + 16 * r, (tid % 8) * 8]`), then out by T.copy. `completion`: "groups" (commit,
    wait_group 0, a barrier) or "mbarrier" (each half of the rows arrives on its barrier of an
    array once its copies have landed, and the block waits on both)."""

    @T.prim_func
    def main(G: T.Tensor((64, 64), dtype), Out: T.Tensor((64, 64), dtype)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), dtype)
            if completion == "mbarrier":
                bars = T.alloc_barrier([128, 128])
            if swizzled:
                T.annotate_layout({S: make_swizzled_layout(S)})
            tid = T.get_thread_binding()
            for half in T.serial(2):
                for r in T.serial(2):
                    row = tid // 8 + 16 * (2 * half + r)
                    T.ptx_cp_async(T.access_ptr(S[row, (tid % 8) * 8], "w", 8),
                                   T.access_ptr(G[row, (tid % 8) * 8], "r", 8), 8)
                if completion == "mbarrier":
                    T.cp_async_barrier_noinc(bars[half])
            if completion == "mbarrier":
                T.barrier_wait(bars[0], 0)
                T.barrier_wait(bars[1], 0)
            else:
                T.ptx_commit_group()
                T.ptx_wait_group(0)
                T.sync_threads()
            T.copy(S, Out)

    return main


@pytest.mark.parametrize("target", ["interp", "sim"])
@pytest.mark.parametrize("completion", ["groups", "mbarrier"])
@pytest.mark.parametrize("swizzled", [False, True], ids=["row_major", "swizzled"])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_each_thread_copies_its_part(dtype, swizzled, completion, target):
    t_dtype, torch_dtype = DTYPES[dtype]
    g = torch.randn(64, 64).to(torch_dtype)
    out = tilec.compile(tile_through_shared(t_dtype, swizzled, completion), out_idx=[-1], target=target)(g)
    assert torch.equal(out.view(torch.int16), g.view(torch.int16))  # bit-exact


def gemm_of_a_raw_copied_tile():
    """A is filled by raw cp.asyncs from the second of two [64, 64] slices, B by T.copy; on sm_90a
    both are wgmma operands, 128-byte swizzled, which the wgmma reads through its descriptors."""

    @T.prim_func
    def main(A: T.Tensor((2, 64, 64), T.float16), B: T.Tensor((64, 64), T.float16),
             C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            B_s = T.alloc_shared((64, 64), T.float16)
            acc = T.alloc_fragment((64, 64), T.float32)
            tid = T.get_thread_binding()
            T.copy(B, B_s)
            for r in T.serial(4):
                T.ptx_cp_async(T.access_ptr(A_s[tid // 8 + 16 * r, (tid % 8) * 8], "w", 8),
                               T.access_ptr(A[1, tid // 8 + 16 * r, (tid % 8) * 8], "r", 8), 8)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.sync_threads()
            T.gemm(A_s, B_s, acc, clear_accum=True)
            T.copy(acc, C)

    return main


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_a_swizzled_gemm_operand_filled_by_raw_copies(target):
    a = torch.randn(2, 64, 64).half()
    c = tilec.compile(gemm_of_a_raw_copied_tile(), out_idx=[-1], target=target)(a, torch.eye(64).half())
    assert torch.equal(c, a[1].float())


def test_the_gemm_operand_is_swizzled_for_wgmma():
    kernel = tilec.compile(gemm_of_a_raw_copied_tile(), out_idx=[-1], target="sm_90a")
    assert "tile.alloc {swizzle = 128 : i64" in kernel.get_ir("tile-opt")
    assert "wgmma.mma_async" in kernel.get_kernel_source()


def gathered_rows(n_rows=60):
    """Sparse attention's producer in small: each thread copies 8 elements of a row that an index
    tensor picks (a run-time row, so every copy is bounds-checked), only where the row is valid
    (`predicate`); an index outside the tensor reads zeros, an invalid one writes zeros."""

    @T.prim_func
    def main(KV: T.Tensor((1, n_rows, 2, 64), T.float16), Indices: T.Tensor((64,), T.int32),
             Out: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((2, 64, 64), T.float16)
            tid = T.get_thread_binding()
            for r in T.serial(4):
                row = Indices[tid // 8 + 16 * r]
                T.ptx_cp_async(T.access_ptr(S[1, tid // 8 + 16 * r, (tid % 8) * 8], "w", 8),
                               T.access_ptr(KV[0, row, 1, (tid % 8) * 8], "r", 8), 8, predicate=row % 3 != 0)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.sync_threads()
            T.copy(S[1, :, :], Out)

    return main


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_gathered_rows_with_a_predicate(target):
    kv = torch.randn(1, 60, 2, 64).half()
    idx = torch.randint(-4, 64, (64,), dtype=torch.int32)
    out = tilec.compile(gathered_rows(), out_idx=[-1], target=target)(kv, idx)
    want = torch.zeros(64, 64, dtype=torch.float16)
    for i, row in enumerate(idx.tolist()):
        if row % 3 != 0 and 0 <= row < 60:
            want[i] = kv[0, row, 1]
    assert torch.equal(out, want)


def access_ptr_forms():
    """TileLang's other spellings of the element: a whole 1-D buffer moved by `offset=`, a region
    (its first element), and `ignore_last_ndim` (the last dim from 0)."""

    @T.prim_func
    def main(G: T.Tensor((16, 64), T.float16), Flat: T.Tensor((1024,), T.float16),
             Rows: T.Tensor((128, 8), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S1 = T.alloc_shared((1024,), T.float16)
            S2 = T.alloc_shared((128, 8), T.float16)
            tid = T.get_thread_binding()
            col = (tid % 8) * 8
            T.ptx_cp_async(T.access_ptr(S1, "w", offset=tid * 8), T.access_ptr(G[tid // 8, col:col + 8], "r"), 8)
            T.ptx_cp_async(T.access_ptr(S2[tid, 3], 2, 8, ignore_last_ndim=1), T.access_ptr(G[tid // 8, col], 1), 8)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.sync_threads()
            T.copy(S1, Flat)
            T.copy(S2, Rows)

    return main


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_access_ptr_forms_name_the_same_elements(target):
    g = torch.randn(16, 64).half()
    flat, rows = tilec.compile(access_ptr_forms(), out_idx=[-2, -1], target=target)(g)
    assert torch.equal(flat, g.flatten()) and torch.equal(rows, g.reshape(128, 8))


def test_the_frontend_builds_per_thread_copies_and_arrivals():
    text = str(build_prim_func(tile_through_shared(completion="mbarrier")).module)
    assert "tile.cp_async %G[%row, %" in text and "{elements = 8 : i64}" in text
    assert "tile.cp_async_arrive %1[%half] : !tile.mbarrier<2>" in text


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_ptx_of_the_raw_copies_assembles(arch, ptxas):
    from tilec.targets.nvptx import assemble

    ptx = tilec.compile(tile_through_shared(swizzled=True), out_idx=[-1], target=arch).get_kernel_source()
    assert ptx.count("cp.async.cg.shared.global") == 4 and "cp.async.wait_group 0;" in " ".join(ptx.split())
    assemble(ptx, arch)
    if arch == "sm_90a":  # mbarriers need sm_90 in tilec (try_wait.parity, fence.mbarrier_init)
        ptx = tilec.compile(tile_through_shared(completion="mbarrier"), out_idx=[-1], target=arch).get_kernel_source()
        assert ptx.count("cp.async.mbarrier.arrive.noinc.shared.b64") == 2
        assemble(ptx, arch)


def test_a_predicate_and_run_time_rows_become_the_zero_fill_form(ptxas):
    ptx = tilec.compile(gathered_rows(), out_idx=[-1], target="sm_90a").get_kernel_source()
    copies = [line for line in ptx.splitlines() if "cp.async.cg.shared.global" in line]
    assert copies and all(line.count(",") == 3 for line in copies), copies  # [dst], [src], 16, src-size


def copy_in_parallel():
    @T.prim_func
    def main(G: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), T.float16)
            for i in T.Parallel(8):
                T.ptx_cp_async(T.access_ptr(S[0, i * 8], "w", 8),  # marker: parallel
                               T.access_ptr(G[0, i * 8], "r", 8), 8)

    return main


def copy_from_shared():
    @T.prim_func
    def main(G: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), T.float16)
            R = T.alloc_shared((64, 64), T.float16)
            T.ptx_cp_async(T.access_ptr(S[0, 0], "w", 8), T.access_ptr(R[0, 0], "r", 8), 8)  # marker: shared source

    return main


def copy_without_access_ptr():
    @T.prim_func
    def main(G: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), T.float16)
            T.ptx_cp_async(S[0, 0], T.access_ptr(G[0, 0], "r", 8), 8)  # marker: no access_ptr

    return main


def arrive_on_an_array():
    @T.prim_func
    def main(G: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            bars = T.alloc_barrier([128, 128])
            T.cp_async_barrier_noinc(bars)  # marker: barrier array

    return main


def unaligned_source_row():
    @T.prim_func
    def main(G: T.Tensor((64, 60), T.float16), Out: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), T.float16)
            tid = T.get_thread_binding()
            T.ptx_cp_async(T.access_ptr(S[tid // 8, (tid % 8) * 8], "w", 8),  # marker: unaligned source
                           T.access_ptr(G[tid // 8, (tid % 8) * 4], "r", 8), 8)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.copy(S, Out)

    return main


def copy_between_dtypes():
    @T.prim_func
    def main(G: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), T.float16)
            T.ptx_cp_async(T.access_ptr(S[0, 0], "w", 8), T.access_ptr(G[0, 0], "r", 8), 8)  # marker: dtypes

    return main


def copy_into_short_rows():
    @T.prim_func
    def main(G: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 12), T.float16)
            T.ptx_cp_async(T.access_ptr(S[0, 0], "w", 8), T.access_ptr(G[0, 0], "r", 8), 8)  # marker: short rows

    return main


def copy_past_the_buffer():
    @T.prim_func
    def main(G: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), T.float16)
            T.ptx_cp_async(T.access_ptr(S[64, 0], "w", 8), T.access_ptr(G[0, 0], "r", 8), 8)  # marker: past the end

    return main


def pointer_of_a_bad_access_type():
    @T.prim_func
    def main(G: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), T.float16)
            T.ptx_cp_async(T.access_ptr(S[0, 0], "x", 8),  # marker: access type
                           T.access_ptr(G[0, 0], "r", 8), 8)

    return main


def pointer_offset_in_two_dims():
    @T.prim_func
    def main(G: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), T.float16)
            T.ptx_cp_async(T.access_ptr(S, "w", offset=8),  # marker: offset
                           T.access_ptr(G[0, 0], "r", 8), 8)

    return main


def arrive_on_a_buffer():
    @T.prim_func
    def main(G: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), T.float16)
            T.cp_async_barrier_noinc(S)  # marker: not a barrier

    return main


def copy_in_a_ws_producer():
    @T.prim_func
    def main(G: T.Tensor((64, 64), T.float16), Out: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            S = T.alloc_shared((64, 64), T.float16)
            R = T.alloc_shared((64, 64), T.float16)
            ready = T.alloc_barrier(arrive_count=128)
            with T.ws(1):
                T.tma_copy(G[0:64, 0:64], R, barrier=ready)
                T.ptx_cp_async(T.access_ptr(S[0, 0], "w", 8), T.access_ptr(G[0, 0], "r", 8), 8)  # marker: producer
                T.cp_async_barrier_noinc(ready)
            with T.ws(0):
                T.barrier_wait(ready, 0)
                T.copy(S, Out)

    return main


@pytest.mark.parametrize("make, marker, message", [
    (copy_in_parallel, "parallel",
     "T.ptx_cp_async is issued by each thread at its own indices, not by the iterations of T.Parallel"),
    (copy_from_shared, "shared source",
     "T.ptx_cp_async copies from global to shared memory: its source (second argument) R is a shared buffer"),
    (copy_without_access_ptr, "no access_ptr",
     "T.ptx_cp_async: the destination (first argument) is written T.access_ptr(A[i, j], ...)"),
    (arrive_on_an_array, "barrier array", "T.cp_async_barrier_noinc: an array of 2 barriers needs an index"),
    (unaligned_source_row, "unaligned source",
     "T.ptx_cp_async: cannot prove that the global source starts on a 16-byte boundary"),
    (copy_between_dtypes, "dtypes", "T.ptx_cp_async copies bits: the source G is float32, the destination S float16"),
    (copy_into_short_rows, "short rows", "T.ptx_cp_async: the rows of S (12 elements) do not hold whole runs of 8"),
    (copy_past_the_buffer, "past the end", "T.ptx_cp_async writes outside S: index 64 of dim 0 (size 64)"),
    (pointer_of_a_bad_access_type, "access type", "T.access_ptr: access_type 'x' is none of"),
    (pointer_offset_in_two_dims, "offset", "T.access_ptr(offset=...) moves along a 1-D buffer, not the 2-D S"),
    (arrive_on_a_buffer, "not a barrier", "T.cp_async_barrier_noinc takes a barrier of T.alloc_barrier, got"),
    (copy_in_a_ws_producer, "producer", "T.ptx_cp_async in a warp-specialized producer, which tilec runs on one "
                                        "thread of its warpgroup"),
])
def test_misuse_is_a_located_error(make, marker, message):
    with pytest.raises(tilec.TilecError) as e:
        tilec.compile(make(), target="sm_90a")
    assert message in str(e.value), str(e.value)
    assert f"test_raw_cp_async.py:{_line('# marker: ' + marker)}:" in str(e.value).splitlines()[0], str(e.value)


@pytest.mark.gpu
@pytest.mark.parametrize("completion", ["groups", "mbarrier"])
def test_each_thread_copies_its_part_on_the_gpu(completion):
    g = torch.randn(64, 64, dtype=torch.float16, device="cuda")
    out = tilec.compile(tile_through_shared(swizzled=True, completion=completion), out_idx=[-1], target="cuda")(g)
    assert torch.equal(out, g)
