"""TileLang's hand-written warp specialization (`with T.ws(k):` blocks, mbarriers, `T.tma_copy(...,
barrier=)`) → `tile.warp_specialize`: results on the simulated CUDA lowering (whose warp-specialized
regions run concurrently), PTX that ptxas assembles for sm_90a, and the located refusals.

Kernels live in this file (the frontend reads their source with `inspect`).
"""

# ruff: noqa: F841

from functools import partial

import numpy as np
import pytest
from kernel_cases import gemm_tiles

import tilec
from tilec import TilecError
from tilec.errors import TilecRaceWarning
import tilec.language as T
from tilec.dialects import print_ir
from tilec.errors import TilecWarning
from tilec.frontend import build_prim_func


def ws_gemm(M, N, K, bm=64, bn=64, bk=32, producer=0, stages=0):
    """Two barriers, one buffer: the producer waits for the consumer to be done with it."""
    consumer = 1 - producer

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=256) as (bx, by):
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bk, bn), T.float16)
            C_l = T.alloc_fragment((bm, bn), T.float32)
            ready = T.alloc_barrier(arrive_count=128)
            done = T.alloc_barrier(arrive_count=128)
            with T.ws(consumer):
                T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                with T.ws(producer):
                    T.barrier_wait(done, (ko + 1) % 2)
                    T.tma_copy(A[by * bm, ko * bk], A_s, barrier=ready)
                    T.tma_copy(B[ko * bk, bx * bn], B_s, barrier=ready)
                    T.barrier_arrive(ready)
                with T.ws(consumer):
                    T.barrier_wait(ready, ko % 2)
                    T.gemm(A_s, B_s, C_l)
                    T.barrier_arrive(done)
            with T.ws(consumer):
                T.copy(C_l, C[by * bm, bx * bn])

    return main


def ws_copy_staged(M, K, bm=64, bk=32, stages=2):
    """A barrier array: stages 0..S-1 say "full", S..2S-1 "free"; TMA into stage views of a 3-D buffer."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((M, K), T.float16)):
        with T.Kernel(T.ceildiv(M, bm), threads=256) as by:
            A_s = T.alloc_shared((stages, bm, bk), T.float16)
            bars = T.alloc_barrier([128, 128] * stages)
            for ko in range(T.ceildiv(K, bk)):
                with T.ws(1):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages + stages], parity=((ko // stages) % 2) ^ 1)
                    T.tma_copy(A[by * bm:(by + 1) * bm, ko * bk:(ko + 1) * bk], A_s[ko % stages, :, :],
                               barrier=bars[ko % stages])
                    T.mbarrier_arrive(mbarrier=bars[ko % stages])
                with T.ws(0):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages], parity=(ko // stages) % 2)
                    T.copy(A_s[ko % stages, :, :], C[by * bm:(by + 1) * bm, ko * bk:(ko + 1) * bk])
                    T.mbarrier_arrive(mbarrier=bars[ko % stages + stages])

    return main


def ws_gemm_staged(M, N, K, bm=64, bn=64, bk=32, stages=2):
    """The same protocol around a gemm of the stage views."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=256) as (bx, by):
            A_s = T.alloc_shared((stages, bm, bk), T.float16)
            B_s = T.alloc_shared((stages, bk, bn), T.float16)
            C_l = T.alloc_fragment((bm, bn), T.float32)
            bars = T.alloc_barrier([128, 128] * stages)
            with T.ws(0):
                T.clear(C_l)
            for ko in range(T.ceildiv(K, bk)):
                with T.ws(1):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages + stages], parity=((ko // stages) % 2) ^ 1)
                    T.tma_copy(A[by * bm:(by + 1) * bm, ko * bk:(ko + 1) * bk], A_s[ko % stages, :, :],
                               barrier=bars[ko % stages])
                    T.tma_copy(B[ko * bk:(ko + 1) * bk, bx * bn:(bx + 1) * bn], B_s[ko % stages, :, :],
                               barrier=bars[ko % stages])
                    T.mbarrier_arrive(mbarrier=bars[ko % stages])
                with T.ws(0):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages], parity=(ko // stages) % 2)
                    T.gemm(A_s[ko % stages, :, :], B_s[ko % stages, :, :], C_l)
                    T.mbarrier_arrive(mbarrier=bars[ko % stages + stages])
            with T.ws(0):
                T.copy(C_l, C[by * bm, bx * bn])

    return main


def _operands(M, N, K):
    rng = np.random.default_rng(0)
    return rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)


def _check(c, a, b):
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), atol=0.05, rtol=0.01)


def test_the_ws_blocks_become_a_producer_region_of_tma_loads_and_a_consumer_region():
    ir = print_ir(build_prim_func(ws_gemm(64, 64, 64), [-1]).module)
    producer, consumer = ir.split("} consumer {")
    assert "threads [128, 1, 1]" in ir and "producer_threads = 128" in consumer
    assert producer.count("tile.mbarrier_expect_tx %") == 2 and producer.count("tile.tma_load") == 2
    assert "126 : index" in producer  # the warpgroup's 128 arrivals, less the two of the copies
    assert "tile.gemm" in consumer and "tile.gemm" not in producer and "tile.tma_load" not in consumer


@pytest.mark.parametrize("producer", [0, 1])
def test_hand_written_warp_specialization_computes_the_gemm(producer):
    a, b = _operands(64, 128, 96)
    kernel = tilec.compile(ws_gemm(64, 128, 96, producer=producer), out_idx=[-1], target="sim")
    _check(kernel(a, b), a, b)


def test_barrier_arrays_and_stage_views():
    a, _ = _operands(128, 64, 192)
    c = tilec.compile(ws_copy_staged(128, 192), out_idx=[-1], target="sim")(a)
    np.testing.assert_array_equal(c, a)


def test_ws_kernels_assemble_for_sm90a():
    ptx = tilec.compile(ws_gemm(256, 256, 256, 128, 128, 64), out_idx=[-1], target="sm_90a").get_kernel_source()
    assert "cp.async.bulk.tensor" in ptx and "wgmma.mma_async" in ptx and "mbarrier.try_wait" in ptx


_MMA_SYNC = {"tilec.enable_wgmma": False}


@pytest.mark.parametrize("configs", [{}, _MMA_SYNC], ids=["wgmma", "mma.sync"])
def test_a_ws_consumer_gemm_of_stage_views_is_right_on_the_simulator(configs):
    """TileLang's barrierpipe example in small: the gemm of stage views, run by the consumer warps
    only, is a wgmma (descriptors of the stage) by default, an mma.sync with wgmma off. The mma.sync's
    ldmatrix reads are fenced (fence.proxy.async) before the stage is released, or the simulator
    reports the race."""
    rng = np.random.default_rng()
    a = rng.standard_normal((128, 256)).astype(np.float16)
    b = rng.standard_normal((256, 128)).astype(np.float16)
    kernel = tilec.compile(ws_gemm_staged(128, 128, 256, 128, 128, 64), out_idx=[-1], target="sim", pass_configs=configs)
    _check(kernel(a, b), a, b)
    assert ("nvvm.mma.sync" if configs else "nvvm.wgmma.mma_async") in kernel.get_ir("thread")


def test_a_ws_consumer_mma_gemm_of_stage_views_fences_its_reads_before_the_release():
    ptx = tilec.compile(ws_gemm_staged(256, 256, 256, 128, 128, 64), out_idx=[-1], target="sm_90a",
                        pass_configs=_MMA_SYNC).get_kernel_source()
    consumer = ptx[ptx.index("ldmatrix"):]
    assert "mma.sync.aligned.m16n8k16" in consumer and "wgmma" not in ptx
    fence = consumer.index("fence.proxy.async.shared::cta")
    assert consumer.rindex("ldmatrix") < fence < consumer.index("mbarrier.arrive.shared")


def test_a_wgmma_of_tiles_only_tma_writes_needs_no_proxy_fence_or_barrier():
    """The consumer's wgmma reads stage views that only T.tma_copy writes (the async proxy, waited for on
    the stage's mbarrier): no fence.proxy.async and no barrier of the consumer warps before it, as
    TileLang emits none (before, both came once per k step). The loop's gemm is the only wgmma;
    the kernel's one fence is the mbarriers' initialization."""
    ptx = tilec.compile(ws_gemm_staged(256, 256, 256, 128, 128, 64), out_idx=[-1], target="sm_90a").get_kernel_source()
    loop = ptx[ptx.index("mbarrier.try_wait"):ptx.rindex("wgmma.wait_group")]
    assert "wgmma.mma_async" in loop and "fence.proxy.async" not in loop and "bar.sync" not in loop


def test_both_row_blocks_accumulators_are_fenced_before_the_wgmmas(ptxas):
    """The consumer's 128 rows are two 64-row wgmmas, each accumulating onto the zeros of a T.clear
    in a T.ws block of its own: the second block's zeros had been copied into their registers after
    the wgmma.fence, and ptxas injected a warpgroup.arrive and a wait (C7519, C7517), which it
    reports as a TilecWarning at the kernel."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tilec.compile(ws_gemm_staged(256, 256, 256, 128, 128, 64), out_idx=[-1], target="sm_90a")
    assert not [w for w in caught if "ptxas:" in str(w.message)], [str(w.message) for w in caught]


def test_a_wgmma_of_a_tile_the_threads_also_write_keeps_its_fence():
    """A tile the threads write too (T.copy of the accumulator's tile between the TMA loads) is read
    after a proxy fence and a barrier, or the wgmma could read the generic writes unordered."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), B: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            B_s = T.alloc_shared((64, 64), T.float16)
            C_l = T.alloc_fragment((64, 64), T.float32)
            ready = T.alloc_barrier(arrive_count=128)
            with T.ws(1):
                T.tma_copy(A, A_s, barrier=ready)
                T.barrier_arrive(ready)
            with T.ws(0):
                T.copy(B, B_s)
                T.mbarrier_wait_parity(mbarrier=ready, parity=0)
                T.gemm(A_s, B_s, C_l, clear_accum=True)
                T.copy(C_l, C)

    ptx = tilec.compile(main, out_idx=[-1], target="sm_90a").get_kernel_source()
    before = ptx[:ptx.index("wgmma.mma_async")]
    assert "fence.proxy.async.shared::cta" in before[before.rindex("mbarrier.try_wait"):]
    a, b = _operands(64, 64, 64)
    np.testing.assert_allclose(tilec.compile(main, out_idx=[-1], target="sim")(a, b),
                               a.astype(np.float32) @ b.astype(np.float32), atol=0.05, rtol=0.01)


def test_a_ws_consumer_copy_of_a_stage_view_fences_its_reads_before_the_release():
    ptx = tilec.compile(ws_copy_staged(128, 192), out_idx=[-1], target="sm_90a").get_kernel_source()
    consumer = ptx[ptx.rindex("mbarrier.try_wait"):]
    assert consumer.index("ld.shared") < consumer.index("fence.proxy.async.shared::cta") < \
        consumer.index("mbarrier.arrive.shared")


def test_the_simulator_reports_a_tma_load_over_unfenced_generic_reads(monkeypatch):
    """Without the fence before the consumer's release, the producer's next TMA load into the
    released stage is a write-after-read race across proxies (the mma.sync's generic reads): a
    located error at the T.tma_copy."""
    from tilec.passes.convert_tile_to_thread import proxy

    monkeypatch.setattr(proxy, "fence_before_release", lambda *args: None)
    a, b = _operands(128, 128, 256)
    with pytest.raises(TilecError, match="TMA load over shared byte .* no fence.proxy.async.shared::cta") as e:
        tilec.compile(ws_gemm_staged(128, 128, 256, 128, 128, 64), out_idx=[-1], target="sim",
                      pass_configs=_MMA_SYNC)(a, b)
    line = next(i for i, text in enumerate(open(__file__), 1)
                if "T.tma_copy(A[by * bm:(by + 1) * bm" in text and i > 80)
    assert f"test_warp_specialize_ws.py:{line}:" in str(e.value)


def ws_gemm_without_the_wait_for_the_free_buffer(M, N, K, bm=64, bn=64, bk=32):
    """ws_gemm whose producer does not wait for the consumer to be done with the one buffer (a
    barrier per k-step, so that no phase overruns)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=256) as (bx, by):
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bk, bn), T.float16)
            C_l = T.alloc_fragment((bm, bn), T.float32)
            ready = T.alloc_barrier([128] * (K // bk))
            with T.ws(1):
                T.clear(C_l)
            for ko in T.serial(K // bk):
                with T.ws(0):
                    T.tma_copy(A[by * bm, ko * bk], A_s, barrier=ready[ko])  # (over the tile being read)
                    T.tma_copy(B[ko * bk, bx * bn], B_s, barrier=ready[ko])
                    T.barrier_arrive(ready[ko])
                with T.ws(1):
                    T.barrier_wait(ready[ko], 0)
                    T.gemm(A_s, B_s, C_l)
            with T.ws(1):
                T.copy(C_l, C[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("configs", [{}, "mma_sync"])
def test_the_simulator_reports_a_race_between_the_roles_on_a_shared_buffer(configs):
    """The producer's next TMA load overwrites the buffer the consumer's gemm reads, and nothing orders
    the two: a located race, at the load or at the gemm (whichever the simulation runs second; a load
    while the wgmma is still in flight is reported as that, first)."""
    a, b = _operands(64, 64, 64)
    with pytest.raises(TilecRaceWarning, match="a race on shared memory: .* with nothing ordering the two|"
                                               "a TMA load into shared memory that another role's wgmma still reads") as e:
        tilec.compile(ws_gemm_without_the_wait_for_the_free_buffer(64, 64, 64), out_idx=[-1], target="sim",
                      pass_configs=_MMA_SYNC if configs else {})(a, b)
    lines = [i for i, text in enumerate(open(__file__), 1)
             if "over the tile being read" in text or "B_s, barrier=ready[ko])" in text or
             ("T.gemm(A_s, B_s, C_l)" in text and i > 200)]
    assert any(f"test_warp_specialize_ws.py:{line}:" in str(e.value).splitlines()[0] for line in lines), str(e.value)
    assert "note: a " in str(e.value)


def test_a_race_is_a_warning_where_the_filters_do_not_make_it_an_error():
    """For users the simulator reports a race and goes on (this project's tests make it an error)."""
    a, b = _operands(64, 64, 64)
    with pytest.warns(TilecRaceWarning, match="a race on shared memory") as caught:
        c = tilec.compile(ws_gemm_without_the_wait_for_the_free_buffer(64, 64, 64), out_idx=[-1], target="sim")(a, b)
    race = next(str(w.message) for w in caught if "a race on shared memory" in str(w.message))
    assert "test_warp_specialize_ws.py" in race and ": warning: a race" in race
    _check(c, a, b)  # (the simulated TMA loads land when waited for: the values are the gemm's here)


def test_the_simulator_reports_a_stage_released_while_its_wgmma_still_reads_it(monkeypatch):
    """In a gemm tilec warp-specializes itself, tile-warp-specialize keeps one wgmma group in flight
    and releases the stage of the k-step before, whose group that wait completed. Leaving two groups
    in flight (the release unchanged) frees a stage a wgmma still reads: the producer's next TMA load
    into it is a located race."""
    from tilec.passes import tile_warp_specialize as ws_pass

    a, b = _operands(128, 128, 256)
    pipelined_gemm = partial(gemm_tiles, 128, 128, 256, 128, 128, 32, "float16", stages=3, out_dtype=T.float16)
    _check(tilec.compile(pipelined_gemm(), out_idx=[-1], target="sim")(a, b), a, b)
    real = ws_pass.IntegerAttr
    monkeypatch.setattr(ws_pass, "IntegerAttr", lambda v, t: real(2 if v == 1 and t == ws_pass.i64 else v, t))
    with pytest.raises(TilecRaceWarning, match="a TMA load into shared memory that another role's wgmma still reads") as e:
        tilec.compile(pipelined_gemm(), out_idx=[-1], target="sim")(a, b)
    assert "note: the wgmma" in str(e.value)


def test_pipelined_stages_around_ws_blocks_are_reported_as_not_applied():
    with pytest.warns(TilecWarning, match=r"num_stages=...\) around T.ws blocks is not applied"):
        build_prim_func(ws_gemm(64, 64, 64, stages=2), [-1])


def ws_with_copy_in_producer():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            ready = T.alloc_barrier(arrive_count=128)
            with T.ws(0):
                T.tma_copy(A, A_s, barrier=ready)
                T.copy(A, A_s)
                T.barrier_arrive(ready)
            with T.ws(1):
                T.barrier_wait(ready, 0)
                T.copy(A_s, C)

    return main


def ws_without_arrive():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            ready = T.alloc_barrier(arrive_count=1)
            with T.ws(0):
                T.tma_copy(A, A_s, barrier=ready)
            with T.ws(1):
                T.barrier_wait(ready, 0)
                T.copy(A_s, C)

    return main


def ws_producer_count():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            ready = T.alloc_barrier(arrive_count=1)
            with T.ws(0):
                T.tma_copy(A, A_s, barrier=ready)
                T.barrier_arrive(ready)
            with T.ws(1):
                T.barrier_wait(ready, 0)
                T.copy(A_s, C)

    return main


def ws_three_warpgroups():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=384) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            with T.ws(0):
                T.copy(A, A_s)
            with T.ws(2):
                T.copy(A_s, C)

    return main


def ws_tma_barrier(which):
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            bars = T.alloc_barrier([128, 128])
            with T.ws(0):
                if which == "array":
                    T.tma_copy(A, A_s, barrier=bars)
                else:
                    T.tma_copy(A, A_s, barrier=A_s)
                T.barrier_arrive(bars[0])
            with T.ws(1):
                T.barrier_wait(bars[0], 0)
                T.copy(A_s, C)

    return main


@pytest.mark.parametrize("make, message", [
    (lambda: ws_tma_barrier("array"), r"barrier= of T.tma_copy: an array of 2 barriers needs an index \(`bars\[i\]`\)"),
    (lambda: ws_tma_barrier("buffer"), "barrier= of T.tma_copy takes a barrier of T.alloc_barrier, got"),
    (ws_with_copy_in_producer, "tile.copy in the T.ws producer: tilec runs the producer on one thread"),
    (ws_without_arrive, r"must be followed by T.barrier_arrive\(b\)"),
    (ws_producer_count, "the T.ws producer arrives on a barrier that expects 1 arrivals"),
    (ws_three_warpgroups, "two warpgroups, a producer and a consumer"),
])
def test_ws_kernels_tilec_cannot_build_are_located_errors(make, message):
    with pytest.raises(tilec.TilecError, match=message) as e:
        build_prim_func(make(), [-1])
    assert "test_warp_specialize_ws.py" in str(e.value)


@pytest.mark.parametrize("producer", [0, 1])
def test_the_interpreter_runs_the_two_roles_concurrently_meeting_at_the_barriers(producer):
    """One buffer reused every iteration: run one role after the other and the gemm sees only the
    last tile; interleaved at the mbarriers as the hardware does, it is the product."""
    a, b = _operands(64, 128, 96)
    _check(tilec.compile(ws_gemm(64, 128, 96, producer=producer), out_idx=[-1], target="interp")(a, b), a, b)


def test_the_interpreter_runs_barrier_arrays_and_stage_views():
    a, b = _operands(128, 128, 192)
    np.testing.assert_array_equal(tilec.compile(ws_copy_staged(128, 192), out_idx=[-1], target="interp")(a), a)
    _check(tilec.compile(ws_gemm_staged(128, 128, 192), out_idx=[-1], target="interp")(a, b), a, b)


def ws_deadlock():
    """The producer waits for phase 0 of `done` (parity 0), which only the consumer completes, after
    the producer's own data: neither can go on."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            ready = T.alloc_barrier(arrive_count=128)
            done = T.alloc_barrier(arrive_count=128)
            with T.ws(0):
                T.barrier_wait(done, 0)
                T.tma_copy(A, A_s, barrier=ready)
                T.barrier_arrive(ready)
            with T.ws(1):
                T.barrier_wait(ready, 0)
                T.copy(A_s, C)
                T.barrier_arrive(done)

    return main


def test_a_ws_kernel_whose_barriers_deadlock_is_a_located_error_on_the_interpreter():
    a = np.zeros((64, 64), np.float16)
    with pytest.raises(tilec.TilecError, match="deadlock: this mbarrier wait can never pass") as e:
        tilec.compile(ws_deadlock(), out_idx=[-1], target="interp")(a)
    lines = open(__file__).read().splitlines()
    start = next(i for i, text in enumerate(lines) if text.startswith("def ws_deadlock"))
    line = next(i for i in range(start, len(lines)) if "T.barrier_wait(ready, 0)" in lines[i]) + 1
    assert f"test_warp_specialize_ws.py:{line}:" in str(e.value)



def ws_element_read(m=128, k=256, bm=128, bk=64, stages=2):
    """A T.ws consumer that reads one element of each TMA-filled stage (no gemm, no copy): its
    releases need the proxy fence as much as an ldmatrix reader's."""

    @T.prim_func
    def main(A: T.Tensor((m, k), T.float16), C: T.Tensor((m // bm, k // bk), T.float16)):
        with T.Kernel(1, T.ceildiv(m, bm), threads=256) as (bx, by):
            A_s = T.alloc_shared((stages, bm, bk), T.float16)
            bars = T.alloc_barrier([128, 128] * stages)
            for ko in range(T.ceildiv(k, bk)):
                with T.ws(1):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages + stages], parity=((ko // stages) % 2) ^ 1)
                    T.tma_copy(A[by * bm:(by + 1) * bm, ko * bk:(ko + 1) * bk], A_s[ko % stages, :, :],
                               barrier=bars[ko % stages])
                    T.mbarrier_arrive(mbarrier=bars[ko % stages])
                with T.ws(0):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages], parity=(ko // stages) % 2)
                    C[by, ko] = A_s[ko % stages, 1, 2]
                    T.mbarrier_arrive(mbarrier=bars[ko % stages + stages])

    return main


def test_an_element_read_of_a_stage_is_fenced_before_its_release(monkeypatch):
    """sim: the element of each stage; sm_90a: the fence between the consumer's ld.shared and its
    release; without the fence, the simulator's located race error at the T.tma_copy."""
    a = np.random.default_rng(1).standard_normal((256, 256)).astype(np.float16)
    out = tilec.compile(ws_element_read(256, 256), out_idx=[-1], target="sim")(a)
    assert np.array_equal(np.asarray(out), a.reshape(2, 128, 4, 64)[:, 1, :, 2])
    ptx = tilec.compile(ws_element_read(256, 256), out_idx=[-1], target="sm_90a").get_kernel_source()
    consumer = ptx[ptx.rindex("mbarrier.try_wait"):]
    assert consumer.index("ld.shared") < consumer.index("fence.proxy.async.shared::cta") < \
        consumer.index("mbarrier.arrive.shared")
    from tilec.passes.convert_tile_to_thread import proxy

    monkeypatch.setattr(proxy, "fence_before_release", lambda *args: None)
    with pytest.raises(TilecError, match="TMA load over shared byte .* no fence.proxy.async.shared::cta") as e:
        tilec.compile(ws_element_read(256, 256), out_idx=[-1], target="sim")(a)
    lines = open(__file__).read().splitlines()
    start = next(i for i, text in enumerate(lines) if text.startswith("def ws_element_read"))
    line = next(i for i in range(start, len(lines)) if "T.tma_copy(" in lines[i]) + 1
    assert f"test_warp_specialize_ws.py:{line}:" in str(e.value)


def ws_parallel_consumer(m=128, k=192, bm=64, bk=32, stages=2):
    """A T.Parallel over a TMA-filled stage in the T.ws consumer (it used to fail its verifier:
    the role was built outside the kernel)."""

    @T.prim_func
    def main(A: T.Tensor((m, k), T.float16), C: T.Tensor((m, k), T.float16)):
        with T.Kernel(T.ceildiv(m, bm), threads=256) as by:
            A_s = T.alloc_shared((stages, bm, bk), T.float16)
            bars = T.alloc_barrier([128, 128] * stages)
            for ko in range(T.ceildiv(k, bk)):
                with T.ws(1):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages + stages], parity=((ko // stages) % 2) ^ 1)
                    T.tma_copy(A[by * bm:(by + 1) * bm, ko * bk:(ko + 1) * bk], A_s[ko % stages, :, :],
                               barrier=bars[ko % stages])
                    T.mbarrier_arrive(mbarrier=bars[ko % stages])
                with T.ws(0):
                    T.mbarrier_wait_parity(mbarrier=bars[ko % stages], parity=(ko // stages) % 2)
                    for i, j in T.Parallel(bm, bk):
                        C[by * bm + i, ko * bk + j] = A_s[ko % stages, i, j] * 2.0
                    T.mbarrier_arrive(mbarrier=bars[ko % stages + stages])

    return main


def test_a_parallel_loop_in_a_ws_consumer():
    a = np.random.default_rng(2).standard_normal((128, 192)).astype(np.float16)
    out = tilec.compile(ws_parallel_consumer(), out_idx=[-1], target="sim")(a)
    assert np.array_equal(np.asarray(out), a * np.float16(2))
    ptx = tilec.compile(ws_parallel_consumer(), out_idx=[-1], target="sm_90a").get_kernel_source()
    assert "fence.proxy.async.shared::cta" in ptx[ptx.rindex("mbarrier.try_wait"):]


@pytest.mark.parametrize("which, spelled", [("array", "barrier=bars)"), ("buffer", "barrier=A_s)")])
def test_a_tma_copy_barrier_error_is_at_its_line(which, spelled):
    line = next(i for i, text in enumerate(open(__file__), 1) if f"T.tma_copy(A, A_s, {spelled}" in text)
    with pytest.raises(tilec.TilecError, match="barrier= of T.tma_copy") as e:
        build_prim_func(ws_tma_barrier(which), [-1])
    assert f"test_warp_specialize_ws.py:{line}:" in str(e.value).splitlines()[0]
