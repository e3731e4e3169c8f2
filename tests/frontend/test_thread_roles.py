"""Warpgroup roles written as a chain of branches on the thread index (`if tx < 128: .. elif tx < 256:
.. else: ..`, threads=384), TileLang's sparse MLA forward's form: two consumer warpgroups doing
different whole-tile work and a producer whose every thread runs its own code (index loads,
element copies), meeting at mbarriers; what comes before the chain runs on every thread (a TMA
load issued by thread 0, every thread's arrival). tilec builds one `tile.warp_specialize` of two
consumer groups and an all-threads producer (tilec/frontend/thread_roles.py).

Kernels live in this file (the frontend reads their source with `inspect`).
"""

# ruff: noqa: F841

import inspect

import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.dialects import print_ir
from tilec.frontend import build_prim_func

M, K, BM, BK = 128, 256, 64, 64


def three_roles(stages=2, c1_regs=168):
    """Row block `by` of C: consumer 0 writes A + B on the left half of each column block, consumer 1
    A - B on the right; the producer TMA-loads A's blocks into a ring of stages (its first thread
    issues, all 128 arrive), B comes by a TMA load before the roles that every thread arrives on."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((BM, BK), T.float16), C: T.Tensor((M, K), T.float16)):
        with T.Kernel(M // BM, threads=384) as by:
            A_s = T.alloc_shared((stages, BM, BK), T.float16)
            B_s = T.alloc_shared((BM, BK), T.float16)
            full = T.alloc_barrier([128] * stages)
            empty = T.alloc_barrier([256] * stages)
            bar_b = T.alloc_barrier(384)
            tx = T.get_thread_binding()
            T.tma_copy(B[0:BM, 0:BK], B_s, barrier=bar_b)
            T.barrier_arrive(bar_b)
            if tx < 128:
                T.set_max_nreg(240, 1)
                T.barrier_wait(bar_b, 0)
                for ko in T.serial(K // BK):
                    T.barrier_wait(full[ko % stages], (ko // stages) % 2)
                    for i, j in T.Parallel(BM, BK // 2):
                        C[by * BM + i, ko * BK + j] = A_s[ko % stages, i, j] + B_s[i, j]
                    T.barrier_arrive(empty[ko % stages])
            elif tx >= 128 and tx < 256:
                T.set_max_nreg(c1_regs, 1)
                T.barrier_wait(bar_b, 0)
                for ko in T.serial(K // BK):
                    T.barrier_wait(full[ko % stages], (ko // stages) % 2)
                    for i, j in T.Parallel(BM, BK // 2):
                        C[by * BM + i, ko * BK + BK // 2 + j] = A_s[ko % stages, i, BK // 2 + j] - B_s[i, BK // 2 + j]
                    T.barrier_arrive(empty[ko % stages])
            else:
                T.set_max_nreg(40, 0)
                for ko in T.serial(K // BK):
                    T.barrier_wait(empty[ko % stages], ((ko // stages) % 2) ^ 1)
                    T.tma_copy(A[by * BM:(by + 1) * BM, ko * BK:(ko + 1) * BK], A_s[ko % stages, :, :],
                               barrier=full[ko % stages])
                    T.barrier_arrive(full[ko % stages])

    return main


def _three_roles_expected(a, b):
    c = np.empty_like(a)
    tiled = np.tile(b, (M // BM, 1))
    for ko in range(K // BK):
        left, right = slice(ko * BK, ko * BK + BK // 2), slice(ko * BK + BK // 2, (ko + 1) * BK)
        c[:, left] = a[:, left] + tiled[:, :BK // 2]
        c[:, right] = a[:, right] - tiled[:, BK // 2:]
    return c


H, D, DV, NKV, TOPK, BI = 64, 128, 128, 256, 256, 64


def gathered_attention_core(stages=2):
    """Sparse MLA's pipeline without the softmax: O = sum over the gathered key blocks of
    bf16(Q Kb^T) Kb, Kb the TOPK rows of KV that Idx lists, BI at a time. The producer's threads
    each load an index and copy their half of that row into the stage, element by element;
    consumer 0 computes S = Q Kb^T (wgmma over regions of Q and of the stage), stores it to shared
    and accumulates its left half of O; consumer 1 waits for S and accumulates the right half."""

    @T.prim_func
    def main(Q: T.Tensor((H, D), T.bfloat16), KV: T.Tensor((NKV, DV), T.bfloat16),
             Idx: T.Tensor((TOPK,), T.int32), O: T.Tensor((H, DV), T.bfloat16)):
        with T.Kernel(1, threads=384) as bx:
            Q_s = T.alloc_shared((H, D), T.bfloat16)
            KV_s = T.alloc_shared((stages, BI, DV), T.bfloat16)
            S_s = T.alloc_shared((H, BI), T.bfloat16)
            acc_s = T.alloc_fragment((H, BI), T.float32)
            acc_l = T.alloc_fragment((H, DV // 2), T.float32)
            acc_r = T.alloc_fragment((H, DV // 2), T.float32)
            row = T.alloc_var(T.int32)
            bar_q = T.alloc_barrier(arrive_count=384)
            k_ready = T.alloc_barrier(arrive_count=[128] * stages)
            k_free = T.alloc_barrier(arrive_count=[256] * stages)
            s_ready = T.alloc_barrier(arrive_count=256)
            s_free = T.alloc_barrier(arrive_count=256)
            tx = T.get_thread_binding()
            T.tma_copy(Q[0:H, 0:D], Q_s, barrier=bar_q)
            T.barrier_arrive(bar_q)
            if tx < 128:
                T.fill(acc_l, 0)
                T.barrier_wait(bar_q, 0)
                for i_i in T.serial(TOPK // BI // stages):
                    for stage in T.unroll(stages):
                        T.barrier_wait(k_ready[stage], i_i & 1)
                        T.clear(acc_s)
                        T.gemm(Q_s[:, :D // 2], KV_s[stage, :, :D // 2], acc_s, transpose_B=True)
                        T.gemm(Q_s[:, D // 2:], KV_s[stage, :, D // 2:], acc_s, transpose_B=True)
                        if i_i != 0 or stage != 0:
                            T.barrier_arrive(s_free)
                            T.barrier_wait(s_free, ((i_i * stages + stage) & 1) ^ 1)
                        T.copy(acc_s, S_s)
                        T.gemm(S_s, KV_s[stage, :, :DV // 2], acc_l)
                        T.barrier_arrive(s_ready)
                        T.barrier_arrive(k_free[stage])
                T.copy(acc_l, O[0:H, 0:DV // 2])
            elif tx < 256:
                T.fill(acc_r, 0)
                for i_i in T.serial(TOPK // BI // stages):
                    for stage in T.unroll(stages):
                        T.barrier_arrive(s_ready)
                        T.barrier_wait(s_ready, (i_i * stages + stage) & 1)
                        T.gemm(S_s, KV_s[stage, :, DV // 2:], acc_r)
                        T.barrier_arrive(k_free[stage])
                        if stage != stages - 1 or i_i != TOPK // BI // stages - 1:
                            T.barrier_arrive(s_free)
                T.copy(acc_r, O[0:H, DV // 2:DV])
            else:
                for i_i in T.serial(TOPK // BI // stages):
                    for stage in T.unroll(stages):
                        T.barrier_wait(k_free[stage], (i_i & 1) ^ 1)
                        row = Idx[(i_i * stages + stage) * BI + (tx - 256) // 2]
                        for e in T.serial(DV // 2):
                            KV_s[stage, (tx - 256) // 2, (tx - 256) % 2 * (DV // 2) + e] = \
                                KV[row, (tx - 256) % 2 * (DV // 2) + e]
                        T.barrier_arrive(k_ready[stage])

    return main


def _bf16(x):
    import torch

    return torch.from_numpy(np.ascontiguousarray(x, np.float32)).bfloat16()


def _gathered_inputs(seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((H, D)).astype(np.float32) / 4
    kv = rng.standard_normal((NKV, DV)).astype(np.float32) / 4
    idx = rng.permutation(NKV)[:TOPK].astype(np.int32)
    return q, kv, idx


def _gathered_expected(q, kv, idx):
    q, kv = (_bf16(x).float().numpy() for x in (q, kv))
    o = np.zeros((H, DV), np.float32)
    for blk in range(TOPK // BI):
        kb = kv[idx[blk * BI:(blk + 1) * BI]]
        s = _bf16(q @ kb.T).float().numpy()
        o += s @ kb
    return o


def test_three_warpgroup_roles_run_on_the_simulator():
    rng = np.random.default_rng()
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((BM, BK)).astype(np.float16)
    c = np.zeros((M, K), np.float16)
    tilec.compile(three_roles(), target="sim")(a, b, c)
    np.testing.assert_array_equal(c, _three_roles_expected(a, b))


def test_the_roles_are_two_consumer_groups_and_an_all_threads_producer():
    ir = print_ir(build_prim_func(three_roles()).module)
    prologue, roles = ir.split("tile.warp_specialize producer {")
    producer, consumer = roles.split("} consumer {")
    assert "threads [128, 1, 1]" in prologue and "tile.thread_id" not in prologue
    assert "all_producer_threads" in consumer and "consumer_groups = 2" in consumer
    # the producer: the thread index as the kernel numbers it, every thread's arrival on B's barrier
    assert "tile.set_max_nreg {count = 40 : i64}" in producer and "arith.constant 256" in producer
    assert "tile.tma_load %B" not in producer and "tile.tma_load" in producer
    # consumer group 0 holds thread 0: it issues B's load; group 1 does not
    group0, group1 = consumer.split("} else {", 1)
    assert "tile.consumer_group" in group0 and "tile.tma_load %B" in group0 and "tile.tma_load" not in group1
    assert "tile.set_max_nreg {count = 240 : i64, increase}" in group0
    assert "tile.set_max_nreg {count = 168 : i64, increase}" in group1


def test_three_warpgroup_roles_assemble_for_sm90a():
    from tilec.targets.nvptx.ptxas import find_ptxas

    ptx = tilec.compile(three_roles(), target="sm_90a").get_kernel_source()
    assert ".maxntid 384, 1, 1" in ptx and ".minnctapersm 1" in ptx
    for count in ("dec.sync.aligned.u32 \t40", "inc.sync.aligned.u32 \t240", "inc.sync.aligned.u32 \t168"):
        assert f"setmaxnreg.{count}" in ptx
    if find_ptxas() is None:
        pytest.skip("no ptxas")


def test_gathered_rows_through_three_roles_match_float64():
    q, kv, idx = _gathered_inputs()
    o = tilec.compile(gathered_attention_core(), out_idx=[-1], target="sim")(_bf16(q), _bf16(kv), idx)
    expected = _gathered_expected(q, kv, idx)
    np.testing.assert_allclose(np.asarray(o.float()), expected, atol=0.05, rtol=0.02)


def test_gathered_roles_use_wgmma_on_regions_and_stages():
    ir = tilec.compile(gathered_attention_core(), out_idx=[-1], target="sm_90a").get_ir("tile-opt")
    assert ir.count('mma = "wgmma"') == 4


# ------------------------------------------------------------------ what tilec cannot split


def sides_of_192_threads():
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16)):
        with T.Kernel(1, threads=384) as bx:
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx < 192:  # ERR
                T.barrier_arrive(bar)
            elif tx < 256:
                T.barrier_arrive(bar)
            else:
                T.barrier_wait(bar, 0)

    return main


def two_producers():
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((M, K), T.float16)):
        with T.Kernel(1, threads=384) as bx:
            A_s = T.alloc_shared((BM, BK), T.float16)
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx < 128:  # ERR
                T.barrier_wait(bar, 0)
                T.copy(A_s, C[0:BM, 0:BK])
            elif tx < 256:
                T.barrier_arrive(bar)
            else:
                T.barrier_arrive(bar)

    return main


def registers_beyond_the_block():
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((M, K), T.float16)):
        with T.Kernel(1, threads=384) as bx:
            A_s = T.alloc_shared((BM, BK), T.float16)
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx < 128:
                T.set_max_nreg(240, 1)
                T.barrier_wait(bar, 0)
                T.copy(A_s, C[0:BM, 0:BK])
            elif tx < 256:
                T.set_max_nreg(240, 1)  # ERR
                T.barrier_wait(bar, 0)
                T.copy(A_s, C[0:BM, 0:BK])
            else:
                T.set_max_nreg(40, 0)
                T.barrier_arrive(bar)

    return main


def increase_below_the_start():
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((M, K), T.float16)):
        with T.Kernel(1, threads=384) as bx:
            A_s = T.alloc_shared((BM, BK), T.float16)
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx < 128:
                T.set_max_nreg(160, 1)  # ERR
                T.barrier_wait(bar, 0)
                T.copy(A_s, C[0:BM, 0:BK])
            elif tx < 256:
                T.barrier_wait(bar, 0)
                T.copy(A_s, C[0:BM, 0:BK])
            else:
                T.barrier_arrive(bar)

    return main


def code_after_the_roles():
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((M, K), T.float16)):
        with T.Kernel(1, threads=384) as bx:
            A_s = T.alloc_shared((BM, BK), T.float16)
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx < 128:
                T.barrier_wait(bar, 0)
                T.copy(A_s, C[0:BM, 0:BK])
            elif tx < 256:
                T.barrier_wait(bar, 0)
                T.copy(A_s, C[0:BM, 0:BK])
            else:
                T.barrier_arrive(bar)
            T.copy(A_s, C[BM:2 * BM, 0:BK])  # ERR

    return main


def tma_copy_without_its_arrival():
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((M, K), T.float16)):
        with T.Kernel(1, threads=384) as bx:
            A_s = T.alloc_shared((BM, BK), T.float16)
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx < 128:
                T.barrier_wait(bar, 0)
                T.copy(A_s, C[0:BM, 0:BK])
            elif tx < 256:
                T.barrier_wait(bar, 0)
                T.copy(A_s, C[0:BM, 0:BK])
            else:
                T.tma_copy(A[0:BM, 0:BK], A_s, barrier=bar)  # ERR

    return main


@pytest.mark.parametrize("make, message", [
    (sides_of_192_threads, r"gives threads 0\.\.191 \(192 threads\) to one side"),
    (two_producers, "here 2 sides have none"),
    (registers_beyond_the_block, r"ask for 520 registers per thread of a warpgroup \(240 \+ 240 \+ 40\)"),
    (increase_below_the_start, r"setmaxnreg.inc, which may only raise a thread's register count, and each thread of "
                               "this block starts with 168"),
    (code_after_the_roles, "a statement after the branch that splits the kernel into warpgroup roles"),
    (tma_copy_without_its_arrival, r"must be followed by T.barrier_arrive\(b\) in the same block"),
])
def test_roles_tilec_cannot_build_are_located_errors(make, message):
    lines, first = inspect.getsourcelines(make)
    line = first + next(k for k, text in enumerate(lines) if "# ERR" in text)
    with pytest.raises(tilec.TilecError, match=message) as e:
        tilec.compile(make(), target="sm_90a")
    assert f"test_thread_roles.py:{line}:" in str(e.value).splitlines()[0]


@pytest.mark.gpu
def test_three_warpgroup_roles_on_the_gpu():
    import torch

    rng = np.random.default_rng()
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((BM, BK)).astype(np.float16)
    c = torch.zeros((M, K), dtype=torch.float16, device="cuda")
    tilec.compile(three_roles(), target="cuda")(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), c)
    np.testing.assert_array_equal(c.cpu().numpy(), _three_roles_expected(a, b))


@pytest.mark.gpu
def test_gathered_rows_through_three_roles_on_the_gpu():
    import torch

    q, kv, idx = _gathered_inputs(seed=1)
    kernel = tilec.compile(gathered_attention_core(), out_idx=[-1], target="cuda")
    o = kernel(_bf16(q).cuda(), _bf16(kv).cuda(), torch.from_numpy(idx).cuda())
    np.testing.assert_allclose(o.float().cpu().numpy(), _gathered_expected(q, kv, idx), atol=0.05, rtol=0.02)


def copy_before_the_roles():
    """TileLang's MLA decode (warp-specialized): Q copied into shared memory by every thread before
    the roles; here consumer 0 adds it to the producer's stages, consumer 1 copies them out."""

    @T.prim_func
    def main(Q: T.Tensor((BM, BK), T.float16), A: T.Tensor((M, K), T.float16), C: T.Tensor((M, K), T.float16),
             D: T.Tensor((M, K), T.float16)):
        with T.Kernel(M // BM, threads=384) as by:
            Q_s = T.alloc_shared((BM, BK), T.float16)
            A_s = T.alloc_shared((BM, BK), T.float16)
            full = T.alloc_barrier(128)
            empty = T.alloc_barrier(256)
            tx = T.get_thread_binding()
            T.copy(Q, Q_s)
            if tx < 128:
                for ko in T.serial(K // BK):
                    T.barrier_wait(full, ko % 2)
                    for i, j in T.Parallel(BM, BK):
                        C[by * BM + i, ko * BK + j] = A_s[i, j] + Q_s[i, j]
                    T.barrier_arrive(empty)
            elif tx < 256:
                for ko in T.serial(K // BK):
                    T.barrier_wait(full, ko % 2)
                    T.copy(A_s, D[by * BM:(by + 1) * BM, ko * BK:(ko + 1) * BK])
                    T.barrier_arrive(empty)
            else:
                for ko in T.serial(K // BK):
                    T.barrier_wait(empty, (ko % 2) ^ 1)
                    for e in T.serial(BM * BK // 128):
                        A_s[(tx - 256) // 2, (tx - 256) % 2 * (BK // 2) + e] = \
                            A[by * BM + (tx - 256) // 2, ko * BK + (tx - 256) % 2 * (BK // 2) + e]
                    T.barrier_arrive(full)

    return main


def test_tile_work_before_the_roles_runs_once_and_the_block_meets_after_it():
    ir = print_ir(build_prim_func(copy_before_the_roles()).module)
    _, roles = ir.split("tile.warp_specialize producer {")
    producer, consumer = roles.split("} consumer {")
    group0, group1 = consumer.split("} else {", 1)
    assert "tile.copy %Q" in group0 and "tile.copy %Q" not in group1 and "tile.copy %Q" not in producer
    for role in (producer, group0, group1):
        assert "tile.barrier {barrier_id = 15 : i64, thread_count = 384 : i64, unaligned}" in role
    rng = np.random.default_rng()
    q = rng.standard_normal((BM, BK)).astype(np.float16)
    a = rng.standard_normal((M, K)).astype(np.float16)
    c, d = np.zeros((M, K), np.float16), np.zeros((M, K), np.float16)
    tilec.compile(copy_before_the_roles(), target="sim")(q, a, c, d)
    np.testing.assert_array_equal(d, a)
    np.testing.assert_array_equal(c, a + np.tile(q, (M // BM, K // BK)))


@pytest.mark.gpu
def test_tile_work_before_the_roles_on_the_gpu():
    import torch

    rng = np.random.default_rng()
    q = rng.standard_normal((BM, BK)).astype(np.float16)
    a = rng.standard_normal((M, K)).astype(np.float16)
    c, d = (torch.zeros((M, K), dtype=torch.float16, device="cuda") for _ in range(2))
    tilec.compile(copy_before_the_roles(), target="cuda")(torch.from_numpy(q).cuda(), torch.from_numpy(a).cuda(), c, d)
    np.testing.assert_array_equal(d.cpu().numpy(), a)
    np.testing.assert_array_equal(c.cpu().numpy(), a + np.tile(q, (M // BM, K // BK)))


def fragment_and_sync_before_the_roles():
    """Before the chain: a fragment filled (each consumer group's own registers), each thread's
    element of a shared index list stored, then T.sync_threads(): the block meets there."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), Sel: T.Tensor((384,), T.int32), C: T.Tensor((M, K), T.float16),
             D: T.Tensor((M // BM, 384), T.int32)):
        with T.Kernel(M // BM, threads=384) as by:
            A_s = T.alloc_shared((BM, BK), T.float16)
            sel = T.alloc_shared((384,), T.int32)
            acc = T.alloc_fragment((BM, BK // 2), T.float32)
            full = T.alloc_barrier(128)
            empty = T.alloc_barrier(256)
            tx = T.get_thread_binding()
            T.fill(acc, 1)
            sel[383 - tx] = Sel[383 - tx]
            T.sync_threads()  # the block meets here
            if tx < 128:
                for ko in T.serial(K // BK):
                    T.barrier_wait(full, ko % 2)
                    for i, j in T.Parallel(BM, BK // 2):
                        C[by * BM + i, ko * BK + j] = A_s[i, j] + acc[i, j]
                    T.barrier_arrive(empty)
            elif tx < 256:
                for ko in T.serial(K // BK):
                    T.barrier_wait(full, ko % 2)
                    for i, j in T.Parallel(BM, BK // 2):
                        C[by * BM + i, ko * BK + BK // 2 + j] = A_s[i, BK // 2 + j] - acc[i, j]
                    T.barrier_arrive(empty)
            else:
                D[by, tx] = sel[tx - 256] + sel[tx] * by
                for ko in T.serial(K // BK):
                    T.barrier_wait(empty, (ko % 2) ^ 1)
                    for e in T.serial(BM * BK // 128):
                        A_s[(tx - 256) // 2, (tx - 256) % 2 * (BK // 2) + e] = \
                            A[by * BM + (tx - 256) // 2, ko * BK + (tx - 256) % 2 * (BK // 2) + e]
                    T.barrier_arrive(full)

    return main


def test_fragments_before_the_roles_are_every_groups_and_the_block_meets_at_sync_threads():
    rng = np.random.default_rng()
    a = rng.standard_normal((M, K)).astype(np.float16)
    sel = rng.integers(0, 1000, 384).astype(np.int32)
    c, d = np.zeros((M, K), np.float16), np.zeros((M // BM, 384), np.int32)
    tilec.compile(fragment_and_sync_before_the_roles(), target="sim")(a, sel, c, d)
    expected = a.copy()
    for ko in range(K // BK):
        expected[:, ko * BK:ko * BK + BK // 2] += 1
        expected[:, ko * BK + BK // 2:(ko + 1) * BK] -= 1
    np.testing.assert_array_equal(c, expected)
    for by in range(M // BM):
        np.testing.assert_array_equal(d[by, 256:], sel[:128] + sel[256:] * by)
    ptx = tilec.compile(fragment_and_sync_before_the_roles(), target="sm_90a").get_kernel_source()
    assert ptx.count("barrier.sync \t15, 384;") == 3  # each role meets the block at the T.sync_threads()
    assert "bar.sync \t15" not in ptx  # (bar.sync is aligned: one instruction for every thread blocking there)


def test_the_simulator_reports_roles_meeting_at_an_aligned_bar_sync(monkeypatch):
    """bar.sync promises that the threads blocking in a round run one instruction; the roles reach
    the meeting from their own code (session 26's synccheck run on the H100 reported it as
    divergent), so they meet at the unaligned barrier.sync. Made aligned, the simulator says so."""
    import types

    from tilec.dialects import tile
    from tilec.errors import TilecError
    from tilec.frontend import thread_roles

    aligned = types.SimpleNamespace(**{k: getattr(tile, k) for k in dir(tile) if not k.startswith("__")})
    aligned.BarrierOp = lambda *a, unaligned=False, **k: tile.BarrierOp(*a, **k)
    monkeypatch.setattr(thread_roles, "tile", aligned)
    a, sel = np.zeros((M, K), np.float16), np.zeros(384, np.int32)
    c, d = np.zeros((M, K), np.float16), np.zeros((M // BM, 384), np.int32)
    with pytest.raises(TilecError, match="bar.sync on named barrier 15 here and at another instruction") as e:
        tilec.compile(fragment_and_sync_before_the_roles(), target="sim")(a, sel, c, d)
    line = next(i for i, text in enumerate(open(__file__), 1) if "# the block meets here" in text)
    assert f"test_thread_roles.py:{line}:" in str(e.value)


def one_warp_arrives():
    """`if tx < 32: T.barrier_arrive(bar)` in a 384-thread kernel, the other threads doing nothing
    there: a branch, not warpgroup roles (it runs as before)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((M, K), T.float16)):
        with T.Kernel(1, threads=384) as bx:
            bar = T.alloc_barrier(32)
            tx = T.get_thread_binding()
            if tx < 32:
                T.barrier_arrive(bar)
            T.barrier_wait(bar, 0)
            T.copy(A, C)

    return main


def test_a_branch_some_threads_skip_is_not_taken_for_roles():
    a = np.random.default_rng().standard_normal((M, K)).astype(np.float16)
    c = np.zeros((M, K), np.float16)
    assert "tile.warp_specialize" not in print_ir(build_prim_func(one_warp_arrives()).module)
    tilec.compile(one_warp_arrives(), target="sim")(a, c)
    np.testing.assert_array_equal(c, a)


def _roles_with(consumer0: str, prologue: str = ""):
    """A three-role kernel with `consumer0` first in consumer 0's side and `prologue` before the chain."""
    source = f'''
def main_factory():
    @T.prim_func
    def main(A: T.Tensor(({M}, {K}), T.float16), C: T.Tensor(({M}, {K}), T.float16)):
        with T.Kernel(1, threads=384) as bx:
            A_s = T.alloc_shared(({BM}, {BK}), T.float16)
            frag = T.alloc_fragment(({BM}, {BK}), T.float16)
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            {prologue}
            if tx < 128:
                {consumer0}
                T.barrier_wait(bar, 0)
                T.copy(A_s, C[0:{BM}, 0:{BK}])
            elif tx < 256:
                T.barrier_wait(bar, 0)
                T.copy(A_s, C[{BM}:{2 * BM}, 0:{BK}])
            else:
                T.barrier_arrive(bar)
    return main
'''
    return source


@pytest.mark.parametrize("consumer0, prologue, message", [
    ("T.sync_threads()  # ERR", "", r"T.sync_threads\(\) in a warpgroup role waits for every thread of the block"),
    ("T.sync_threads(15, 128)  # ERR", "", r"T.sync_threads\(15, ..\) in a kernel split into warpgroup roles: tilec's "
                                           "roles meet at named barrier 15"),
    ("if bx == 0:\n                    T.set_max_nreg(240, 1)  # ERR", "",
     "T.set_max_nreg in a warpgroup role is setmaxnreg, which every thread of the warpgroup must run together"),
    ("pass", "T.set_max_nreg(240, 1)  # ERR",
     "T.set_max_nreg in a warpgroup role is setmaxnreg, which every thread of the warpgroup must run together"),
    ("T.set_max_nreg(240, 1)\n                T.set_max_nreg(240, 1)  # ERR", "",
     "a second T.set_max_nreg in this warpgroup role"),
    ("T.set_max_nreg(236, 1)  # ERR", "", r"T.set_max_nreg: the count must be a multiple of 8 in \[24, 256\], got 236"),
    ("pass", "tx = 383 - tx  # ERR",
     "`tx` holds the thread index the kernel splits its warpgroups by, and is assigned again"),
    ("pass", "for i, j in T.Parallel(16, 16):  # ERR\n                frag[i, j] = A[i, j]\n                A_s[i, j] = A[i, j]",
     "before warpgroup roles, whole-tile work that writes both registers"),
])
def test_role_code_tilec_refuses_is_a_located_error(tmp_path, consumer0, prologue, message):
    import importlib.util

    path = tmp_path / "roles_kernel.py"
    path.write_text("import tilec.language as T\n" + _roles_with(consumer0, prologue))
    line = 1 + next(k for k, text in enumerate(path.read_text().splitlines()) if "# ERR" in text)
    spec = importlib.util.spec_from_file_location("roles_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(tilec.TilecError, match=message) as e:
        tilec.compile(module.main_factory(), target="sm_90a")
    assert f"roles_kernel.py:{line}:" in str(e.value).splitlines()[0]


@pytest.mark.gpu
def test_fragments_and_sync_threads_before_the_roles_on_the_gpu():
    import torch

    rng = np.random.default_rng()
    a = rng.standard_normal((M, K)).astype(np.float16)
    sel = rng.integers(0, 1000, 384).astype(np.int32)
    c = torch.zeros((M, K), dtype=torch.float16, device="cuda")
    d = torch.zeros((M // BM, 384), dtype=torch.int32, device="cuda")
    tilec.compile(fragment_and_sync_before_the_roles(), target="cuda")(torch.from_numpy(a).cuda(),
                                                                         torch.from_numpy(sel).cuda(), c, d)
    expected = a.copy()
    for ko in range(K // BK):
        expected[:, ko * BK:ko * BK + BK // 2] += 1
        expected[:, ko * BK + BK // 2:(ko + 1) * BK] -= 1
    np.testing.assert_array_equal(c.cpu().numpy(), expected)
    for by in range(M // BM):
        np.testing.assert_array_equal(d.cpu().numpy()[by, 256:], sel[:128] + sel[256:] * by)


def row_max_in_the_second_group(rows=32, keys=64, dim=64):
    """A gemm and a row reduction in consumer group 1: 32 rows on wgmma leave the warps' partial
    maxima to meet through the group's own shared-memory area (one per group)."""

    @T.prim_func
    def main(Q: T.Tensor((rows, dim), T.bfloat16), Kt: T.Tensor((keys, dim), T.bfloat16),
             O: T.Tensor((rows,), T.float32)):
        with T.Kernel(1, threads=384) as bx:
            Q_s = T.alloc_shared((rows, dim), T.bfloat16)
            K_s = T.alloc_shared((keys, dim), T.bfloat16)
            acc = T.alloc_fragment((rows, keys), T.float32)
            m = T.alloc_fragment((rows,), T.float32)
            q_l = T.alloc_fragment((rows, dim), T.bfloat16)
            full = T.alloc_barrier(384)
            tx = T.get_thread_binding()
            T.tma_copy(Q[0:rows, 0:dim], Q_s, barrier=full)
            T.barrier_arrive(full)
            if tx < 128:
                T.barrier_wait(full, 0)
                T.copy(Q_s, q_l)  # (reads Q_s beside group 1's gemm: whole-tile work, no race)
            elif tx < 256:
                T.barrier_wait(full, 0)
                T.copy(Kt, K_s)
                T.clear(acc)
                T.gemm(Q_s, K_s, acc, transpose_B=True)
                T.reduce_max(acc, m, dim=1, clear=True)
                T.copy(m, O)
            else:
                T.barrier_wait(full, 0)

    return main


def test_a_cross_warp_reduction_in_a_consumer_group_uses_its_own_area():
    q, k = _bf16(np.random.default_rng().standard_normal((32, 64))), _bf16(np.random.default_rng().standard_normal((64, 64)))
    o = np.zeros(32, np.float32)
    tilec.compile(row_max_in_the_second_group(), target="sim")(q, k, o)
    np.testing.assert_allclose(o, (q.double() @ k.double().T).max(1).values.numpy(), rtol=1e-5, atol=1e-5)


def rows_by_cp_async(tracked, M=128, K=128, BM=128, BK=32, S=2):
    """Three roles: the producer's 128 threads each cp.async one row of a stage, then either track the
    copies on full[s] (T.cp_async_barrier_noinc, `tracked`) or only arrive there (the copies may still
    be in flight); two consumer groups copy halves of the stage out."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((M, K), T.float16)):
        with T.Kernel(1, threads=384) as by:
            A_s = T.alloc_shared((S, BM, BK), T.float16)
            full = T.alloc_barrier([128] * S)
            empty = T.alloc_barrier([256] * S)
            tx = T.get_thread_binding()
            if tx < 128:
                for ko in T.serial(K // BK):
                    T.barrier_wait(full[ko % S], (ko // S) % 2)
                    T.copy(A_s[ko % S, :, 0:BK // 2], C[0:BM, ko * BK:ko * BK + BK // 2])
                    T.barrier_arrive(empty[ko % S])
            elif tx < 256:
                for ko in T.serial(K // BK):
                    T.barrier_wait(full[ko % S], (ko // S) % 2)
                    T.copy(A_s[ko % S, :, BK // 2:BK], C[0:BM, ko * BK + BK // 2:(ko + 1) * BK])
                    T.barrier_arrive(empty[ko % S])
            else:
                for ko in T.serial(K // BK):
                    T.barrier_wait(empty[ko % S], ((ko // S) % 2) ^ 1)
                    for q in T.serial(BK // 8):
                        T.ptx_cp_async(T.access_ptr(A_s[ko % S, tx - 256, q * 8], "w", 8),
                                       T.access_ptr(A[tx - 256, ko * BK + q * 8], "r", 8), 8)
                    if tracked:
                        T.cp_async_barrier_noinc(full[ko % S])
                    else:
                        T.barrier_arrive(full[ko % S])

    return main


def test_cp_async_copies_are_published_by_their_tracking_barrier_only():
    """A plain arrival after cp.async does not wait for the copies (the simulator read stale bytes there
    without a word); T.cp_async_barrier_noinc makes the barrier's phase wait for them."""
    from tilec.errors import TilecRaceWarning

    a = np.random.default_rng(0).standard_normal((128, 128)).astype(np.float16)
    np.testing.assert_array_equal(tilec.compile(rows_by_cp_async(True), out_idx=[-1], target="sim")(a), a)
    with pytest.raises(TilecRaceWarning, match="and a cp.async copy, complete only at its cp.async.wait_group or "
                                               "the mbarrier phase tracking it") as e:
        tilec.compile(rows_by_cp_async(False), out_idx=[-1], target="sim")(a)
    assert "test_thread_roles.py" in str(e.value).splitlines()[0]
