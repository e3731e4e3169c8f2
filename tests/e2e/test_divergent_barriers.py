"""Barriers and branches that only some threads take (TileLang's deepseek_v32/topk_selector).

tile-insert-barriers puts no barrier inside a branch on a per-thread condition: the threads
that skip the branch never arrive, and on a GPU the block deadlocks (or its later barriers go
out of step: topk_selector timed out on the H200). The simulator runs a block's threads in
lockstep, so it reports a block-wide barrier reached under a lane mask as a simulated
deadlock rather than running it.

Kernels live in this file (the frontend reads their source with `inspect`).
"""

# ruff: noqa: F841

import os
import subprocess
import sys

import numpy as np
import pytest

import tilec
import tilec.language as T

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), os.pardir,
                        "shared", "tilelang-examples")


def tail_pass(n=256, thresholds=(0.3, 0.6)):
    """topk_selector's tail pass: each round, the threads whose candidate passes the round's
    threshold move it from one half of a double buffer to the other, taking slots with an
    atomic on the other half's counter (`return_prev=True`). The move reads and writes the
    same shared buffer inside a branch only some threads take."""

    @T.prim_func
    def main(X: T.Tensor((n,), T.float32), Out: T.Tensor((n,), T.int32), Count: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=n) as bx:
            tx = T.get_thread_binding()
            s_idx = T.alloc_shared([2, n], T.int32)
            s_count = T.alloc_shared([2], T.int32)
            num = T.alloc_var(T.int32)
            pos = T.alloc_var(T.int32)
            s_idx[0, tx] = tx
            s_idx[1, tx] = -1
            if tx == 0:
                s_count[0] = n
            for r in T.serial(2):
                r_idx = r % 2
                T.sync_threads()
                if tx == 0:
                    s_count[r_idx ^ 1] = 0
                T.sync_threads()
                num = s_count[r_idx]
                if tx < num:  # noqa: SIM102 (topk_selector nests the two)
                    if X[s_idx[r_idx, tx]] > T.if_then_else(r == 0, thresholds[0], thresholds[1]):
                        pos = T.atomic_add(s_count[r_idx ^ 1], 1, return_prev=True)
                        s_idx[r_idx ^ 1, pos] = s_idx[r_idx, tx]
            T.sync_threads()
            Out[tx] = s_idx[0, tx]
            if tx == 0:
                Count[0] = s_count[0]

    return main


def test_tail_pass_runs_on_the_simulator():
    rng = np.random.default_rng(0)
    x = rng.random(256).astype(np.float32)
    out, count = tilec.compile(tail_pass(), out_idx=[-2, -1], target="sim")(x)
    kept = np.flatnonzero(x > 0.6).tolist()
    assert int(count[0]) == len(kept)
    assert sorted(out[:len(kept)].tolist()) == kept


def test_tail_pass_builds_for_sm_90a():
    ptx = tilec.compile(tail_pass(), out_idx=[-2, -1], target="sm_90a").get_kernel_source()
    assert "atom.shared.add" in ptx, ptx


def barrier_under_a_variable():
    """A T.sync_threads() the user wrote under a per-thread condition (through a variable, which
    the frontend's check of branches on the thread index does not follow)."""

    @T.prim_func
    def main(X: T.Tensor((64,), T.int32), Y: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            v = T.alloc_var(T.int32)
            v = X[tx]
            if v > 0:
                T.sync_threads()  # marker: divergent barrier
                Y[tx] = v

    return main


def test_a_block_barrier_under_a_divergent_branch_is_a_simulated_deadlock():
    x = np.array([1, -1] * 32, np.int32)
    with pytest.raises(tilec.TilecError, match=r"block-wide barrier reached by 32 of the block's 64 threads.*"
                                               r"simulated deadlock") as caught:
        tilec.compile(barrier_under_a_variable(), out_idx=[-1], target="sim")(x)
    line = next(i for i, text in enumerate(open(__file__), 1) if "marker: divergent barrier" in text)
    assert f"test_divergent_barriers.py:{line}" in str(caught.value)  # the kernel's T.sync_threads line
    y = tilec.compile(barrier_under_a_variable(), out_idx=[-1], target="sim")(np.ones(64, np.int32))
    assert (y == 1).all()  # every thread takes the branch: the barrier is reached by all


_TOPK = """
import sys, torch
sys.path.insert(0, {folder!r})
from tilec import config
config.DEFAULT_TARGET = "sim"
import topk_selector
torch.manual_seed(1)
x = torch.randn(2, 32 * 1024)
starts = torch.zeros(2, dtype=torch.int32)
ends = torch.full((2,), 32 * 1024, dtype=torch.int32)
got = topk_selector.tl_topk(x, starts, ends, 2048)
want = torch.topk(x, 2048, dim=-1)[1]
for i in range(2):
    assert set(got[i].tolist()) == set(want[i].tolist()), i
print("ok")
"""


def test_tilelang_topk_selector_on_the_simulator(tmp_path):
    """The example itself, at the test's row length (its tail pass moves 800-960 candidates per
    row: the branch splits a warp), through the CUDA lowering on the simulator."""
    folder = os.path.join(EXAMPLES, "deepseek_v32")
    if not os.path.isdir(folder):
        pytest.skip("TileLang's examples (../shared/tilelang-examples) are not here")
    script = tmp_path / "topk.py"
    script.write_text(_TOPK.format(folder=folder))
    env = dict(os.environ, TILEC_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-m", "tilec.compat", "--cuda-on-cpu", str(script)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout[-2000:] + done.stderr[-4000:]
