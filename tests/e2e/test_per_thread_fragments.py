"""A fragment each thread fills with values of its own outside T.Parallel (TileLang's per-thread
registers: sparse MLA seesaw's producer prefetches its next indices into
`T.alloc_fragment([num_stages, 4], "int32")`) is each thread's whole buffer, like T.alloc_local.
It had been given a block-wide layout and its accesses a single shared copy, so every thread read
the last writer's values: a silently wrong gather.

Kernels live in this file (the frontend reads their source with `inspect`).
"""

import numpy as np
import pytest

import tilec
import tilec.language as T


def prefetch(threads=128):
    @T.prim_func
    def main(Idx: T.Tensor((threads * 4,), T.int32), Out: T.Tensor((threads * 4,), T.int32)):
        with T.Kernel(1, threads=threads) as bx:
            f = T.alloc_fragment((4,), T.int32)
            tx = T.get_thread_binding()
            for r in T.serial(4):
                f[r] = Idx[tx * 4 + r]
            for r in T.serial(4):
                Out[tx * 4 + r] = f[3 - r] * 2

    return main


def prefetch_in_a_producer_role():
    @T.prim_func
    def main(Idx: T.Tensor((512,), T.int32), Out: T.Tensor((512,), T.int32), Z: T.Tensor((256,), T.float32)):
        with T.Kernel(1, threads=384) as bx:
            bar = T.alloc_barrier(arrive_count=128)
            acc = T.alloc_fragment((128,), T.float32)
            tx = T.get_thread_binding()
            if tx >= 256:
                f = T.alloc_fragment((2, 4), T.int32)
                for r in T.serial(4):
                    for s in T.unroll(2):
                        f[s, r] = Idx[(tx - 256) * 4 + r] + s
                for r in T.serial(4):
                    Out[(tx - 256) * 4 + r] = f[1, r] - f[0, r] + f[0, r]
                T.barrier_arrive(bar)
            elif tx < 128:
                T.barrier_wait(bar, 0)
                T.fill(acc, 1.0)
                T.copy(acc, Z[0:128])
            else:
                T.barrier_wait(bar, 0)
                T.fill(acc, 2.0)
                T.copy(acc, Z[128:256])

    return main


def per_thread_store_into_a_laid_out_fragment():
    @T.prim_func
    def main(A: T.Tensor((128,), T.float32), Out: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((128,), T.float32)
            tx = T.get_thread_binding()
            T.copy(A, f)
            f[0] = A[tx]  # ERR
            for i in T.Parallel(128):
                Out[i] = f[i]

    return main


def test_each_thread_keeps_its_own_fragment():
    idx = np.random.default_rng().integers(0, 1 << 20, 512).astype(np.int32)
    out = np.zeros(512, np.int32)
    tilec.compile(prefetch(), target="sim")(idx, out)
    np.testing.assert_array_equal(out, (idx.reshape(128, 4)[:, ::-1] * 2).reshape(-1))
    ir = tilec.compile(prefetch(), target="sm_90a").get_ir("tile-opt")
    assert "!tile.buffer<4xi32, local>" in ir and "shared" not in ir.split("tile.kernel", 1)[1]


def test_the_interp_target_runs_per_thread_code_on_the_simulator(caplog):
    """The tile interpreter runs the threads as lanes and keeps one fragment per block, so it refuses
    each thread's own fragment (threads.py); the interp target runs such a kernel on the simulator
    instead, and says so on the tilec logger (TileLang's topk_selector on the CPU runner)."""
    import logging

    idx = np.random.default_rng().integers(0, 1 << 20, 512).astype(np.int32)
    out = np.zeros(512, np.int32)
    with caplog.at_level(logging.INFO, logger="tilec"):
        tilec.compile(prefetch(), target="interp")(idx, out)
    np.testing.assert_array_equal(out, (idx.reshape(128, 4)[:, ::-1] * 2).reshape(-1))
    assert "per-thread code the tile interpreter does not run" in caplog.text and "target 'sim'" in caplog.text


def test_a_producer_roles_prefetch_is_its_threads_own():
    idx = np.random.default_rng().integers(0, 1 << 20, 512).astype(np.int32)
    out, z = np.zeros(512, np.int32), np.zeros(256, np.float32)
    tilec.compile(prefetch_in_a_producer_role(), target="sim")(idx, out, z)
    np.testing.assert_array_equal(out, idx + 1)
    np.testing.assert_array_equal(z, np.repeat(np.float32([1, 2]), 128))


def test_a_per_thread_store_into_a_fragment_laid_out_across_threads_is_a_located_error():
    import inspect

    lines, first = inspect.getsourcelines(per_thread_store_into_a_laid_out_fragment)
    line = first + next(k for k, text in enumerate(lines) if "# ERR" in text)
    with pytest.raises(tilec.TilecError, match="each thread stores a value of its own into this one element of a fragment laid out across") as e:
        tilec.compile(per_thread_store_into_a_laid_out_fragment(), target="sm_90a")
    assert f"test_per_thread_fragments.py:{line}:" in str(e.value).splitlines()[0]


@pytest.mark.gpu
def test_each_thread_keeps_its_own_fragment_on_the_gpu():
    import torch

    idx = np.random.default_rng().integers(0, 1 << 20, 512).astype(np.int32)
    out = torch.zeros(512, dtype=torch.int32, device="cuda")
    tilec.compile(prefetch(), target="cuda")(torch.from_numpy(idx).cuda(), out)
    np.testing.assert_array_equal(out.cpu().numpy(), (idx.reshape(128, 4)[:, ::-1] * 2).reshape(-1))


def cleared_then_accumulated():
    """T.clear of a fragment, then each thread adds its own values: each thread's registers (a fill
    keeps a fragment local)."""

    @T.prim_func
    def main(A: T.Tensor((512,), T.float32), Out: T.Tensor((512,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            acc = T.alloc_fragment((4,), T.float32)
            tx = T.get_thread_binding()
            T.clear(acc)
            for r in T.serial(4):
                acc[r] = acc[r] + A[tx * 4 + r]
            for r in T.serial(4):
                Out[tx * 4 + r] = acc[r]

    return main


def atomic_tickets():
    """Each thread's previous values of an atomic counter, kept in a fragment."""

    @T.prim_func
    def main(C: T.Tensor((1,), T.int32), Out: T.Tensor((512,), T.int32)):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((4,), T.int32)
            tx = T.get_thread_binding()
            for r in T.serial(4):
                f[r] = T.atomic_add(C[0], 1, return_prev=True)
            for r in T.serial(4):
                Out[tx * 4 + r] = f[r]

    return main


def own_element_then_reduce():
    """Each thread writes its own element of a fragment a reduction then reads: the elements are
    distinct, so the fragment keeps its layout (and its shared trip)."""

    @T.prim_func
    def main(A: T.Tensor((128,), T.float32), Out: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((128,), T.float32)
            s = T.alloc_fragment((1,), T.float32)
            tx = T.get_thread_binding()
            f[tx] = A[tx] * 2
            T.reduce_sum(f, s, dim=0)
            Out[0] = s[0]

    return main


def test_fills_atomics_and_distinct_elements_stay_right():
    rng = np.random.default_rng()
    a = rng.standard_normal(512).astype(np.float32)
    out = np.zeros(512, np.float32)
    tilec.compile(cleared_then_accumulated(), target="sim")(a, out)
    np.testing.assert_array_equal(out, a)
    tickets = np.zeros(512, np.int32)
    tilec.compile(atomic_tickets(), target="sim")(np.zeros(1, np.int32), tickets)
    np.testing.assert_array_equal(np.sort(tickets), np.arange(512))
    total = np.zeros(1, np.float32)
    tilec.compile(own_element_then_reduce(), target="sim")(a[:128].copy(), total)
    # (a float32 sum in another order: its error is bounded by the magnitudes summed, not by the sum, which
    # cancels; n * eps * sum |x| with n = 128, eps = 2^-24, is under 1e-5 of sum |x|)
    doubled = 2 * a[:128].astype(np.float64)
    np.testing.assert_allclose(total, [doubled.sum()], rtol=0, atol=1e-5 * np.abs(doubled).sum())
