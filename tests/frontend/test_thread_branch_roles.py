"""TileLang's other spelling of warp specialization: `tid = T.get_thread_binding()`, then
`if tid >= 128: <producer> else: <consumer>` meeting at mbarriers (minference's vertical-slash
attention), built as `with T.ws(1):` / `with T.ws(0):` blocks. What the kernel computes before
the branch (a count into a T.alloc_var, a T.Parallel fill of a shared index list) runs in the
consumer warpgroup, which hands it to the producer through a barrier; the producer runs the
prologue's scalar assignments again.

Kernels live in this file (the frontend reads their source with `inspect`).
"""

# ruff: noqa: F841

import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.dialects import print_ir
from tilec.frontend import build_prim_func

M, K, NSEL, BM, BK = 128, 256, 4, 64, 32


def gather_blocks(stages=2):
    """Row block `by` copies out, in order, the `Count[by]` column blocks of A that `Sel[by]` lists:
    the producer (threads 128..255) TMA-loads them into a ring of stages, the consumer copies each
    one out."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), Sel: T.Tensor((M // BM, NSEL), T.int32),
             Count: T.Tensor((M // BM,), T.int32), C: T.Tensor((M, NSEL * BK), T.float16)):
        with T.Kernel(M // BM, threads=256) as by:
            A_s = T.alloc_shared((stages, BM, BK), T.float16)
            sel = T.alloc_shared((NSEL,), T.int32)
            count = T.alloc_var(T.int32)
            bars = T.alloc_barrier([128, 128] * stages)
            count = Count[by]
            for i in T.Parallel(NSEL):
                sel[i] = Sel[by, i]
            tid = T.get_thread_binding()
            if tid >= 128:
                T.annotate_producer_reg_dealloc()
                for ko in T.serial(count):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages + stages], parity=((ko // stages) % 2) ^ 1)
                    k = sel[ko] * BK
                    T.tma_copy(A[by * BM:(by + 1) * BM, k:k + BK], A_s[ko % stages, :, :], barrier=bars[ko % stages])
                    T.mbarrier_arrive(mbarrier=bars[ko % stages])
            else:
                T.annotate_consumer_reg_alloc()
                for ko in T.serial(count):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages], parity=(ko // stages) % 2)
                    T.copy(A_s[ko % stages, :, :], C[by * BM:(by + 1) * BM, ko * BK:(ko + 1) * BK])
                    T.mbarrier_arrive(mbarrier=bars[ko % stages + stages])

    return main


def gather_blocks_consumer_first(stages=2):
    """The same with the consumer written first (`128 > tid`) and the tensor seen as 4-D: the
    producer's T.tma_copy takes a [1, 1, BM, BK] region into a BM x BK stage."""

    @T.prim_func
    def main(A: T.Tensor((1, 1, M, K), T.float16), Sel: T.Tensor((M // BM, NSEL), T.int32),
             Count: T.Tensor((M // BM,), T.int32), C: T.Tensor((M, NSEL * BK), T.float16)):
        with T.Kernel(M // BM, threads=256) as by:
            A_s = T.alloc_shared((stages, BM, BK), T.float16)
            sel = T.alloc_shared((NSEL,), T.int32)
            count = T.alloc_var(T.int32)
            bars = T.alloc_barrier([128, 128] * stages)
            count = Count[by]
            for i in T.Parallel(NSEL):
                sel[i] = Sel[by, i]
            tid = T.get_thread_binding()
            if 128 > tid:
                for ko in T.serial(count):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages], parity=(ko // stages) % 2)
                    T.copy(A_s[ko % stages, :, :], C[by * BM:(by + 1) * BM, ko * BK:(ko + 1) * BK])
                    T.mbarrier_arrive(mbarrier=bars[ko % stages + stages])
            else:
                for ko in T.serial(count):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages + stages], parity=((ko // stages) % 2) ^ 1)
                    k = sel[ko] * BK
                    T.tma_copy(A[0, 0, by * BM:(by + 1) * BM, k:k + BK], A_s[ko % stages, :, :],
                               barrier=bars[ko % stages])
                    T.mbarrier_arrive(mbarrier=bars[ko % stages])

    return main


def producer_reads_a_consumer_variable(stages=2):
    """`count` is set in an `if` before the roles: tilec runs that in the consumers only, and the
    producer's copy of the variable would never be set."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), Count: T.Tensor((M // BM,), T.int32),
             C: T.Tensor((M, NSEL * BK), T.float16)):
        with T.Kernel(M // BM, threads=256) as by:
            A_s = T.alloc_shared((stages, BM, BK), T.float16)
            count = T.alloc_var(T.int32)
            bars = T.alloc_barrier([128, 128] * stages)
            count = 0
            if Count[by] > 0:
                count = Count[by]
            tid = T.get_thread_binding()
            if tid >= 128:
                for ko in T.serial(count):  # ERR
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages + stages], parity=((ko // stages) % 2) ^ 1)
                    T.tma_copy(A[by * BM:(by + 1) * BM, ko * BK:(ko + 1) * BK], A_s[ko % stages, :, :],
                               barrier=bars[ko % stages])
                    T.mbarrier_arrive(mbarrier=bars[ko % stages])
            else:
                for ko in T.serial(count):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages], parity=(ko // stages) % 2)
                    T.copy(A_s[ko % stages, :, :], C[by * BM:(by + 1) * BM, ko * BK:(ko + 1) * BK])
                    T.mbarrier_arrive(mbarrier=bars[ko % stages + stages])

    return main


def split_at_64():
    """Barriers between threads 0..63 and the rest: not two warpgroups, so not tilec's two roles."""

    @T.prim_func
    def main(X: T.Tensor((128, 64), T.float16), Y: T.Tensor((128, 64), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            xs = T.alloc_shared((128, 64), T.float16)
            ready = T.alloc_barrier(arrive_count=128)
            if T.get_thread_binding() >= 64:
                T.tma_copy(X[0:128, 0:64], xs, barrier=ready)  # ERR
                T.barrier_arrive(ready)
            else:
                T.barrier_wait(ready, 0)
                T.copy(xs, Y)

    return main


def fill_before_roles():
    """The prologue writes the index list with a call (T.fill), not an element store: still a handoff."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((M, NSEL * BK), T.float16)):
        with T.Kernel(M // BM, threads=256) as by:
            A_s = T.alloc_shared((2, BM, BK), T.float16)
            sel = T.alloc_shared((NSEL,), T.int32)
            bars = T.alloc_barrier([128, 128] * 2)
            T.fill(sel, 3)
            tid = T.get_thread_binding()
            if tid >= 128:
                for ko in T.serial(NSEL):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % 2 + 2], parity=((ko // 2) % 2) ^ 1)
                    k = sel[ko] * BK
                    T.tma_copy(A[by * BM:(by + 1) * BM, k:k + BK], A_s[ko % 2, :, :], barrier=bars[ko % 2])
                    T.mbarrier_arrive(mbarrier=bars[ko % 2])
            else:
                for ko in T.serial(NSEL):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % 2], parity=(ko // 2) % 2)
                    T.copy(A_s[ko % 2, :, :], C[by * BM:(by + 1) * BM, ko * BK:(ko + 1) * BK])
                    T.mbarrier_arrive(mbarrier=bars[ko % 2 + 2])

    return main


def name_rebound_before_roles():
    """`n = NSEL`, then `n = Count[by]` (run in the roles), then `m = n`: m is the count, not NSEL."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), Sel: T.Tensor((M // BM, NSEL), T.int32),
             Count: T.Tensor((M // BM,), T.int32), C: T.Tensor((M, NSEL * BK), T.float16)):
        with T.Kernel(M // BM, threads=256) as by:
            A_s = T.alloc_shared((2, BM, BK), T.float16)
            sel = T.alloc_shared((NSEL,), T.int32)
            bars = T.alloc_barrier([128, 128] * 2)
            n = NSEL
            n = Count[by]
            m = n + 0
            for i in T.Parallel(NSEL):
                sel[i] = Sel[by, i]
            tid = T.get_thread_binding()
            if tid >= 128:
                for ko in T.serial(m):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % 2 + 2], parity=((ko // 2) % 2) ^ 1)
                    k = sel[ko] * BK
                    T.tma_copy(A[by * BM:(by + 1) * BM, k:k + BK], A_s[ko % 2, :, :], barrier=bars[ko % 2])
                    T.mbarrier_arrive(mbarrier=bars[ko % 2])
            else:
                for ko in T.serial(m):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % 2], parity=(ko // 2) % 2)
                    T.copy(A_s[ko % 2, :, :], C[by * BM:(by + 1) * BM, ko * BK:(ko + 1) * BK])
                    T.mbarrier_arrive(mbarrier=bars[ko % 2 + 2])

    return main


def replay_before_a_later_write():
    """`first = sel[NSEL - 1]` between two fills of `sel`: the producer, running it again after the
    consumers' whole prologue, would see the second fill."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), Sel: T.Tensor((M // BM, NSEL), T.int32),
             C: T.Tensor((M, NSEL * BK), T.float16)):
        with T.Kernel(M // BM, threads=256) as by:
            A_s = T.alloc_shared((2, BM, BK), T.float16)
            sel = T.alloc_shared((NSEL,), T.int32)
            bars = T.alloc_barrier([128, 128] * 2)
            for i in T.Parallel(NSEL):
                sel[i] = Sel[by, NSEL - 1 - i]
            first = sel[NSEL - 1]  # ERR
            for i in T.Parallel(NSEL):
                sel[i] = Sel[by, i]
            tid = T.get_thread_binding()
            if tid >= 128:
                for ko in T.serial(NSEL):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % 2 + 2], parity=((ko // 2) % 2) ^ 1)
                    k = T.if_then_else(ko == 0, first, sel[ko]) * BK
                    T.tma_copy(A[by * BM:(by + 1) * BM, k:k + BK], A_s[ko % 2, :, :], barrier=bars[ko % 2])
                    T.mbarrier_arrive(mbarrier=bars[ko % 2])
            else:
                for ko in T.serial(NSEL):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % 2], parity=(ko // 2) % 2)
                    T.copy(A_s[ko % 2, :, :], C[by * BM:(by + 1) * BM, ko * BK:(ko + 1) * BK])
                    T.mbarrier_arrive(mbarrier=bars[ko % 2 + 2])

    return main


def thread_index_read_in_a_side():
    """TileLang's thread index inside a side: no counterpart in tilec's roles."""

    @T.prim_func
    def main(X: T.Tensor((128, 64), T.float16), Y: T.Tensor((256,), T.int32)):
        with T.Kernel(1, threads=256) as bx:
            xs = T.alloc_shared((128, 64), T.float16)
            ready = T.alloc_barrier(arrive_count=128)
            tid = T.get_thread_binding()
            if tid >= 128:
                T.tma_copy(X[0:128, 0:64], xs, barrier=ready)
                T.barrier_arrive(ready)
            else:
                T.barrier_wait(ready, 0)
                Y[tid] = 1  # ERR

    return main

def allocation_after_a_computed_size():
    """An allocation before the roles sized by a value the roles compute."""

    @T.prim_func
    def main(X: T.Tensor((128, 64), T.float16), Y: T.Tensor((128, 64), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            xs = T.alloc_shared((128, 64), T.float16)
            ready = T.alloc_barrier(arrive_count=128)
            n = X[0, 0]
            extra = T.alloc_shared((n,), T.float16)  # ERR
            if T.get_thread_binding() >= 128:
                T.tma_copy(X[0:128, 0:64], xs, barrier=ready)
                T.barrier_arrive(ready)
            else:
                T.barrier_wait(ready, 0)
                T.copy(xs, Y)

    return main


def tma_copy_of_another_shape():
    """A 128x32 region into a 128x64 tile."""

    @T.prim_func
    def main(X: T.Tensor((128, 64), T.float16), Y: T.Tensor((128, 64), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            xs = T.alloc_shared((128, 64), T.float16)
            ready = T.alloc_barrier(arrive_count=128)
            if T.get_thread_binding() >= 128:
                T.tma_copy(X[0:128, 0:32], xs, barrier=ready)  # ERR
                T.barrier_arrive(ready)
            else:
                T.barrier_wait(ready, 0)
                T.copy(xs, Y)

    return main

def _inputs():
    rng = np.random.default_rng()
    a = rng.standard_normal((M, K)).astype(np.float16)
    sel = np.stack([rng.permutation(K // BK)[:NSEL] for _ in range(M // BM)]).astype(np.int32)
    count = np.array([3, NSEL], np.int32)
    return a, sel, count


def _expected(a, sel, count):
    c = np.zeros((M, NSEL * BK), np.float16)
    for b in range(M // BM):
        for j in range(count[b]):
            c[b * BM:(b + 1) * BM, j * BK:(j + 1) * BK] = a[b * BM:(b + 1) * BM, sel[b, j] * BK:(sel[b, j] + 1) * BK]
    return c


@pytest.mark.parametrize("make", [gather_blocks, gather_blocks_consumer_first])
def test_a_thread_branch_with_barriers_runs_as_two_roles_on_the_simulator(make):
    a, sel, count = _inputs()
    c = np.zeros((M, NSEL * BK), np.float16)
    operand = a.reshape(1, 1, M, K) if make is gather_blocks_consumer_first else a
    tilec.compile(make(), target="sim")(operand, sel, count, c)
    np.testing.assert_array_equal(c, _expected(a, sel, count))


def test_the_consumers_prologue_is_handed_to_the_producer_through_a_barrier():
    ir = print_ir(build_prim_func(gather_blocks()).module)
    prologue, roles = ir.split("tile.warp_specialize producer {")
    producer, consumer = roles.split("} consumer {")
    assert "threads [128, 1, 1]" in prologue and "tile.thread_id" not in ir
    assert "tile.load %Count" not in prologue and "tile.parallel" not in prologue
    handoff = prologue.strip().splitlines()[-1]  # the barrier allocated last, just before the roles
    assert "tile.alloc_barrier {arrive_count = 128 : i64} : !tile.mbarrier" in handoff
    name = handoff.split("=")[0].strip()
    # the producer: the wait, then the count again (a load into its own variable), then the TMA loop
    assert producer.index(f"tile.mbarrier_wait_parity {name},") < producer.index("tile.load %Count") <         producer.index("tile.tma_load")
    # the consumers: the count and the index list, then their arrival, then the copies
    assert consumer.index("tile.load %Count") < consumer.index("tile.parallel") <         consumer.index(f"tile.mbarrier_arrive {name} ") < consumer.index("tile.copy")


def test_thread_branch_roles_assemble_for_sm90a():
    ptx = tilec.compile(gather_blocks(), target="sm_90a").get_kernel_source()
    assert "cp.async.bulk.tensor" in ptx and "mbarrier.try_wait" in ptx


@pytest.mark.parametrize("make, message", [
    (producer_reads_a_consumer_variable, ("the producer warpgroup reads `count`, which the kernel sets before its "
                                          "roles in a statement tilec runs in the consumer warpgroup only")),
    (split_at_64, "inside a branch on the thread index"),
    (replay_before_a_later_write, "the producer warpgroup runs this again after the consumers' whole prologue, so it "
                                  "would read `sel`"),
    (thread_index_read_in_a_side, "`tid`, the thread index this branch splits the warpgroups by, is read here too"),
    (allocation_after_a_computed_size, "an allocation before them may not depend on a value computed there"),
    (tma_copy_of_another_shape, r"T.tma_copy shapes differ: src \(128, 32\) vs dst \(128, 64\)"),
])
def test_thread_branches_tilec_cannot_split_are_located_errors(make, message):
    import inspect

    lines, first = inspect.getsourcelines(make)
    line = first + next(k for k, text in enumerate(lines) if "# ERR" in text)
    with pytest.raises(tilec.TilecError, match=message) as e:
        tilec.compile(make(), target="sm_90a")
    assert f"test_thread_branch_roles.py:{line}:" in str(e.value).splitlines()[0]


def ws_gemm_clear_before_roles(m=64, n=128, k=96, bm=64, bn=64, bk=32):
    """T.ws blocks with the accumulator cleared before them, on every thread as TileLang has it:
    the consumers' registers only, so nothing to hand to the producer."""

    @T.prim_func
    def main(A: T.Tensor((m, k), T.float16), B: T.Tensor((k, n), T.float16), C: T.Tensor((m, n), T.float16)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=256) as (bx, by):
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bk, bn), T.float16)
            C_l = T.alloc_fragment((bm, bn), T.float32)
            ready = T.alloc_barrier(arrive_count=128)
            done = T.alloc_barrier(arrive_count=128)
            T.clear(C_l)
            for ko in T.serial(T.ceildiv(k, bk)):
                with T.ws(0):
                    T.barrier_wait(done, (ko + 1) % 2)
                    T.tma_copy(A[by * bm, ko * bk], A_s, barrier=ready)
                    T.tma_copy(B[ko * bk, bx * bn], B_s, barrier=ready)
                    T.barrier_arrive(ready)
                with T.ws(1):
                    T.barrier_wait(ready, ko % 2)
                    T.gemm(A_s, B_s, C_l)
                    T.barrier_arrive(done)
            with T.ws(1):
                T.copy(C_l, C[by * bm, bx * bn])

    return main


def test_a_prologue_that_writes_only_the_consumers_registers_needs_no_handoff():
    ir = print_ir(build_prim_func(ws_gemm_clear_before_roles(), [-1]).module)
    prologue, roles = ir.split("tile.warp_specialize producer {")
    assert prologue.count("tile.alloc_barrier") == 2 and "tile.fill" in roles.split("} consumer {")[1]
    rng = np.random.default_rng()
    a = rng.standard_normal((64, 96)).astype(np.float16)
    b = rng.standard_normal((96, 128)).astype(np.float16)
    c = tilec.compile(ws_gemm_clear_before_roles(), out_idx=[-1], target="sim")(a, b)
    np.testing.assert_allclose(np.asarray(c, np.float32), a.astype(np.float32) @ b.astype(np.float32), atol=0.05,
                               rtol=0.01)


@pytest.mark.gpu
@pytest.mark.parametrize("make", [gather_blocks, gather_blocks_consumer_first])
def test_thread_branch_roles_on_the_gpu(make):
    import torch

    a, sel, count = _inputs()
    operand = a.reshape(1, 1, M, K) if make is gather_blocks_consumer_first else a
    c = torch.zeros((M, NSEL * BK), dtype=torch.float16, device="cuda")
    tilec.compile(make(), target="cuda")(*(torch.from_numpy(x).cuda() for x in (operand, sel, count)), c)
    np.testing.assert_array_equal(c.cpu().numpy(), _expected(a, sel, count))


def test_a_prologue_that_writes_shared_memory_by_a_call_is_handed_over():
    a = np.random.default_rng().standard_normal((M, K)).astype(np.float16)
    c = np.zeros((M, NSEL * BK), np.float16)
    tilec.compile(fill_before_roles(), target="sim")(a, c)
    sel = np.full((M // BM, NSEL), 3, np.int32)
    np.testing.assert_array_equal(c, _expected(a, sel, np.array([NSEL, NSEL])))


def test_a_name_computed_before_the_roles_is_not_folded_from_an_earlier_binding():
    a, sel, count = _inputs()
    c = np.zeros((M, NSEL * BK), np.float16)
    tilec.compile(name_rebound_before_roles(), target="sim")(a, sel, count, c)
    np.testing.assert_array_equal(c, _expected(a, sel, count))


def stage_published_by(barrier_waited, M=64, K=64, BM=64, BK=32, S=2):
    """The producer loads each stage by TMA on full[s], then arrives on full[s] and on go[s]; the
    consumer waits on `barrier_waited` ("full": the load's own barrier; "go": another one, which
    orders the producer's arrival but not the load's bytes) and copies the stage out."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((M, K), T.float16)):
        with T.Kernel(1, threads=256) as by:
            A_s = T.alloc_shared((S, BM, BK), T.float16)
            full = T.alloc_barrier([128] * S)
            go = T.alloc_barrier([128] * S)
            empty = T.alloc_barrier([128] * S)
            tid = T.get_thread_binding()
            if tid >= 128:
                for ko in T.serial(K // BK):
                    T.barrier_wait(empty[ko % S], ((ko // S) % 2) ^ 1)
                    T.tma_copy(A[0:BM, ko * BK:(ko + 1) * BK], A_s[ko % S, :, :], barrier=full[ko % S])
                    T.barrier_arrive(full[ko % S])
                    T.barrier_arrive(go[ko % S])
            else:
                for ko in T.serial(K // BK):
                    if barrier_waited == "full":
                        T.barrier_wait(full[ko % S], (ko // S) % 2)
                    else:
                        T.barrier_wait(go[ko % S], (ko // S) % 2)
                    T.copy(A_s[ko % S, :, :], C[0:BM, ko * BK:(ko + 1) * BK])
                    T.barrier_arrive(empty[ko % S])

    return main


def test_a_tma_load_is_published_by_its_own_barrier_only():
    """On the GPU a TMA load's bytes are there once its mbarrier's phase completes; another barrier the
    producer arrives on afterwards does not wait for them. The simulator (whose load lands when its
    barrier is waited on) read stale bytes there without a word; now it is a located race."""
    from tilec.errors import TilecRaceWarning

    a = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float16)
    np.testing.assert_array_equal(tilec.compile(stage_published_by("full"), out_idx=[-1], target="sim")(a), a)
    with pytest.raises(TilecRaceWarning, match="a read by threads 0..127 and a TMA load, complete only when its "
                                               "mbarrier's phase completes") as e:
        tilec.compile(stage_published_by("go"), out_idx=[-1], target="sim")(a)
    assert "test_thread_branch_roles.py" in str(e.value).splitlines()[0]
