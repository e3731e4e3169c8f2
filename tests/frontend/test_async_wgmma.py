"""TileLang's asynchronous wgmma: `T.wgmma_gemm` leaves its group running, `T.gemm(..., wg_wait=N)`
leaves the newest N, and `T.wait_wgmma(n)` completes all but the newest n, the accumulators of the
wgmmas that can be running tied through the wait (tile-select-mma's `running_accumulators`).
Checked here on the interpreter and the simulator (which holds a wgmma's shared reads open until
the wait that completes it), in the PTX (where the waits are) and by ptxas (no wait it had to
inject)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.compiler.lower import lower_to_thread
from tilec.frontend import build_prim_func
from tilec.target import resolve_target
from tilec.targets.nvptx import emit_ptx

M = N = K = 64


def two_halves():
    """acc = A B^T as two wgmmas over the halves of K, both left running, then one wait."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), T.float16)
            B_s = T.alloc_shared((N, K), T.float16)
            acc = T.alloc_fragment((M, N), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(acc)
            T.wgmma_gemm(A_s[:, :K // 2], B_s[:, :K // 2], acc, transpose_B=True)
            T.wgmma_gemm(A_s[:, K // 2:], B_s[:, K // 2:], acc, transpose_B=True)
            T.wait_wgmma(0)
            T.copy(acc, C)

    return main


def one_kept_running(first="wgmma_gemm"):
    """X = A B^T left running (`T.wgmma_gemm`, or `T.gemm(wg_wait=-1)`, which any target runs); Y =
    A D^T waited for with one group left running (X's, the older, completes); X is read, then the
    last wait completes Y."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), D: T.Tensor((N, K), T.float16),
             X: T.Tensor((M, N), T.float32), Y: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), T.float16)
            B_s = T.alloc_shared((N, K), T.float16)
            D_s = T.alloc_shared((N, K), T.float16)
            x = T.alloc_fragment((M, N), T.float32)
            y = T.alloc_fragment((M, N), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.copy(D, D_s)
            if first == "wgmma_gemm":
                T.wgmma_gemm(A_s, B_s, x, transpose_B=True, clear_accum=True)
            else:
                T.gemm(A_s, B_s, x, transpose_B=True, clear_accum=True, wg_wait=-1)
            T.gemm(A_s, D_s, y, transpose_B=True, clear_accum=True, wg_wait=1)
            T.copy(x, X)
            T.wait_wgmma(0)
            T.copy(y, Y)

    return main


def _inputs(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float16) for s in shapes]


def _ref(a, b):
    return a.astype(np.float64) @ b.astype(np.float64).T


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_two_wgmmas_left_running_then_waited_for(target):
    a, b = _inputs(1, (M, K), (N, K))
    c = np.zeros((M, N), np.float32)
    tilec.compile(two_halves(), target=target)(a, b, c)
    np.testing.assert_allclose(c, _ref(a, b), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_a_gemm_that_leaves_one_group_running(target):
    a, b, d = _inputs(2, (M, K), (N, K), (N, K))
    x, y = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    tilec.compile(one_kept_running(), target=target)(a, b, d, x, y)
    np.testing.assert_allclose(x, _ref(a, b), rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(y, _ref(a, d), rtol=1e-3, atol=1e-2)


def _thread_ir_and_ptx(prim, configs=None):
    low = lower_to_thread(build_prim_func(prim, []), resolve_target("sm_90a"), configs or {})
    return low, emit_ptx(low.thread, "sm_90a")


def _wgmma_events(ptx: str) -> list[str]:
    """The kernel's wgmma instructions in order: "mma", "commit", "wait N"."""
    events = []
    for line in ptx.splitlines():
        if "wgmma.mma_async" in line:
            events.append("mma")
        elif "wgmma.commit_group" in line:
            events.append("commit")
        elif m := re.search(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", line):
            events.append(f"wait {m.group(1)}")
    collapsed = []
    for e in events:  # one "mma" per run of k16 steps
        if not (e == "mma" and collapsed and collapsed[-1] == "mma"):
            collapsed.append(e)
    return collapsed


def test_the_waits_are_where_the_program_puts_them():
    low, ptx = _thread_ir_and_ptx(two_halves())
    assert _wgmma_events(ptx) == ["mma", "commit", "mma", "commit", "wait 0"]
    # the program's wait ties the accumulator (its 32 registers per thread) through wgmma.wait_group
    assert re.search(r"tile.gemm_wait %acc\b", low.stage("tile-opt"))
    _, ptx = _thread_ir_and_ptx(one_kept_running())
    assert _wgmma_events(ptx) == ["mma", "commit", "mma", "commit", "wait 1", "wait 0"]


def test_the_pass_config_completes_each_gemm_where_it_stands():
    """`tilec.async_wgmma=False` (a comparison point): every gemm waits for itself, the program's
    waits find nothing running."""
    _, ptx = _thread_ir_and_ptx(one_kept_running(), {"tilec.async_wgmma": False})
    assert _wgmma_events(ptx) == ["mma", "commit", "wait 0", "mma", "commit", "wait 0", "wait 0"]


@pytest.mark.parametrize("prim", [two_halves, one_kept_running])
def test_ptxas_injects_no_wait(prim, ptxas):
    """ptxas injects a `warpgroup.wait` (C7517) where registers of a running wgmma are used before the
    program's wait: none here, so the wgmmas run asynchronously as written."""
    from tilec.targets.nvptx import assemble

    _, ptx = _thread_ir_and_ptx(prim())
    _, report = assemble(ptx, "sm_90a")
    assert "C75" not in report.log, report.log


def written_while_read():
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), T.float16)
            B_s = T.alloc_shared((N, K), T.float16)
            acc = T.alloc_fragment((M, N), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.wgmma_gemm(A_s, B_s, acc, transpose_B=True, clear_accum=True)
            T.copy(B, A_s)  # the wgmma may still read A_s: T.wait_wgmma(0) belongs before this copy
            T.wait_wgmma(0)
            T.copy(acc, C)

    return main


def test_a_tile_written_before_the_wait_is_a_race_on_the_simulator():
    """The simulator holds the wgmma's reads of A_s open until T.wait_wgmma: the copy into A_s before
    it is reported at its line (a TilecRaceWarning, an error under the tests' warning filters)."""
    from tilec.errors import TilecRaceWarning

    a, b = _inputs(3, (M, K), (N, K))
    with pytest.raises(TilecRaceWarning, match="wgmma still reads") as info:
        tilec.compile(written_while_read(), target="sim")(a, b, np.zeros((M, N), np.float32))
    line = _marked_line(written_while_read, "# the wgmma may still read")
    assert f"test_async_wgmma.py:{line}:" in str(info.value)


def too_few_rows(rows=32):
    @T.prim_func
    def main(A: T.Tensor((rows, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((rows, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((rows, K), T.float16)
            B_s = T.alloc_shared((N, K), T.float16)
            acc = T.alloc_fragment((rows, N), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.wgmma_gemm(A_s, B_s, acc, transpose_B=True, clear_accum=True)  # marked
            T.wait_wgmma(0)
            T.copy(acc, C)

    return main


def _marked_line(prim, mark="# marked") -> int:
    import inspect

    lines, start = inspect.getsourcelines(prim)
    return start + next(i for i, line in enumerate(lines) if mark in line)


@pytest.mark.parametrize("target, configs, message", [
    ("sm_90a", {}, "wgmma cannot compute it"),  # 32 rows: wgmma computes whole 64-row blocks
    ("sm_80", {}, "the target sm_80 has no wgmma"),
    ("sm_90a", {"tl.disable_wgmma": True}, "wgmma is turned off"),
    ("sm_90a", {"tilec.enable_mma": False}, "does not compute the gemm on wgmma"),
], ids=["rows", "sm_80", "disabled", "no-tensor-cores"])
def test_a_wgmma_gemm_wgmma_cannot_run_is_refused_at_its_line(target, configs, message):
    prim = too_few_rows(32 if message == "wgmma cannot compute it" else 64)
    with pytest.raises(tilec.TilecError, match=message) as info:
        lower_to_thread(build_prim_func(prim, []), resolve_target(target), configs)
    assert f"test_async_wgmma.py:{_marked_line(too_few_rows)}" in str(info.value)


def test_the_interpreter_runs_a_wgmma_gemm_in_program_order():
    """The interpreter has no wgmma: a T.wgmma_gemm completes where it stands (the program's waits
    then find it done)."""
    a, b = _inputs(4, (32, K), (N, K))
    c = np.zeros((32, N), np.float32)
    tilec.compile(too_few_rows(32), target="interp")(a, b, c)
    np.testing.assert_allclose(c, _ref(a, b), rtol=1e-3, atol=1e-2)


def bad_waits(which):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((M, M), T.float32), n: T.int32):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), T.float16)
            acc = T.alloc_fragment((M, M), T.float32)
            T.copy(A, A_s)
            if which == "wg_wait":
                T.gemm(A_s, A_s, acc, transpose_B=True, wg_wait=-2)  # wg_wait
            elif which == "run-time":
                T.gemm(A_s, A_s, acc, transpose_B=True, wg_wait=n)  # run-time
            elif which == "flag":
                T.gemm(A_s, A_s, acc, transpose_B=True, wg_wait=True)  # flag
            else:
                T.wait_wgmma(-1)  # wait
            T.copy(acc, C)

    return main


@pytest.mark.parametrize("which, message", [
    ("wg_wait", "wg_wait must be -1 .no wait"),
    ("run-time", "wg_wait must be a compile-time integer"),
    ("flag", "wg_wait is a count of wgmma groups left running .-1: no wait., not True / False"),
    ("wait", "T.wait_wgmma's count is the number of wgmma groups left running"),
])
def test_wait_counts_are_checked_at_their_line(which, message):
    with pytest.raises(tilec.TilecError, match=message) as info:
        build_prim_func(bad_waits(which), [])
    assert f"test_async_wgmma.py:{_marked_line(bad_waits, '# ' + which)}:" in str(info.value)


def test_a_wait_on_a_target_without_wgmma_is_nothing(ptxas):
    """On sm_80 the gemms take mma.sync and complete in order: T.wait_wgmma has nothing to wait
    for (it had been the sm_90 intrinsic, which LLVM cannot select there: the process aborted)."""
    from tilec.targets.nvptx import assemble

    low = lower_to_thread(build_prim_func(one_kept_running("gemm"), []), resolve_target("sm_80"), {})
    ptx = emit_ptx(low.thread, "sm_80")
    assert "wgmma" not in ptx and "mma.sync" in ptx
    assemble(ptx, "sm_80")


def overwritten_after_the_wait():
    """Two warpgroups share one 128-row wgmma reading B_s; B_s is loaded again after the wait (and a
    barrier for X_s stands between the gemm and the wait)."""

    @T.prim_func
    def main(A: T.Tensor((128, K), T.float16), B: T.Tensor((N, K), T.float16), D: T.Tensor((N, K), T.float16),
             E: T.Tensor((128, K), T.float16), Out: T.Tensor((128, K), T.float16),
             C: T.Tensor((128, N), T.float32)):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((128, K), T.float16)
            B_s = T.alloc_shared((N, K), T.float16)
            X_s = T.alloc_shared((128, K), T.float16)
            acc = T.alloc_fragment((128, N), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.wgmma_gemm(A_s, B_s, acc, transpose_B=True, clear_accum=True)
            T.copy(E, X_s)
            T.copy(X_s, Out)
            T.wait_wgmma(0)
            T.copy(D, B_s)
            T.wgmma_gemm(A_s, B_s, acc, transpose_B=True)
            T.wait_wgmma(0)
            T.copy(acc, C)

    return main


def test_a_tile_read_by_a_running_wgmma_is_written_only_after_a_barrier_behind_the_wait():
    """Warpgroup 0 passing its own wait must not overwrite B_s while warpgroup 1's wgmma still reads
    it: the barrier goes after the wait (tile-insert-barriers counts the reads until it), not only
    after the gemm."""
    low, _ = _thread_ir_and_ptx(overwritten_after_the_wait())
    lines = [line.strip() for line in low.stage("tile-opt").splitlines()]
    wait = next(i for i, line in enumerate(lines) if line.startswith("tile.gemm_wait"))
    assert lines[wait + 1].startswith("tile.barrier") and lines[wait + 2].startswith("tile.copy %D, %B_s")
    rng = np.random.default_rng(5)
    a, b, d, e = (rng.standard_normal(s).astype(np.float16) for s in ((128, K), (N, K), (N, K), (128, K)))
    out, c = np.zeros((128, K), np.float16), np.zeros((128, N), np.float32)
    tilec.compile(overwritten_after_the_wait(), target="sim")(a, b, d, e, out, c)
    np.testing.assert_allclose(c, _ref(a, b) + _ref(a, d), rtol=1e-3, atol=2e-2)
    np.testing.assert_array_equal(out, e)


def waits_under_thread_branches():
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), T.float16)
            B_s = T.alloc_shared((N, K), T.float16)
            acc = T.alloc_fragment((M, N), T.float32)
            tx = T.get_thread_binding()
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.wgmma_gemm(A_s, B_s, acc, transpose_B=True, clear_accum=True)
            if tx < 16:
                T.wait_wgmma(0)
            for i, j in T.Parallel(M, N):
                acc[i, j] = acc[i, j] * 2
            T.copy(acc, C)

    return main


def test_a_wait_under_a_branch_on_the_thread_index_is_the_whole_blocks():
    """A wait is the warpgroup's (`.sync.aligned`): under `if tx < 16` it runs on the whole block, as
    other whole-tile work there does (thread_branches.py), and it still ties the accumulator of the
    gemm before the branch (the branch is no warpgroup role)."""
    low, ptx = _thread_ir_and_ptx(waits_under_thread_branches())
    tile_opt = low.stage("tile-opt")
    assert re.search(r"tile.gemm_wait %acc\b", tile_opt) and "scf.if" not in tile_opt.split("tile.gemm_wait")[0].split(
        "mma = \"wgmma\"")[-1]
    assert _wgmma_events(ptx) == ["mma", "commit", "wait 0"]
    a, b = _inputs(6, (M, K), (N, K))
    c = np.zeros((M, N), np.float32)
    tilec.compile(waits_under_thread_branches(), target="sim")(a, b, c)
    np.testing.assert_allclose(c, 2 * _ref(a, b), rtol=1e-3, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("prim", [two_halves, one_kept_running, overwritten_after_the_wait])
def test_asynchronous_wgmmas_on_the_gpu(prim):
    """The kernels above on an sm_90a GPU, fresh inputs each run against float64."""
    import torch

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma needs sm_90a")
    for seed in range(3):
        rng = np.random.default_rng(seed + 10)
        if prim is two_halves:
            a, b = (rng.standard_normal(s).astype(np.float16) for s in ((M, K), (N, K)))
            args, want = [a, b, np.zeros((M, N), np.float32)], {2: _ref(a, b)}
        elif prim is one_kept_running:
            a, b, d = (rng.standard_normal(s).astype(np.float16) for s in ((M, K), (N, K), (N, K)))
            args = [a, b, d, np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)]
            want = {3: _ref(a, b), 4: _ref(a, d)}
        else:
            a, b, d, e = (rng.standard_normal(s).astype(np.float16) for s in ((128, K), (N, K), (N, K), (128, K)))
            args = [a, b, d, e, np.zeros((128, K), np.float16), np.zeros((128, N), np.float32)]
            want = {4: e.astype(np.float64), 5: _ref(a, b) + _ref(a, d)}
        tensors = [torch.from_numpy(x).cuda() for x in args]
        tilec.compile(prim(), target="cuda")(*tensors)
        for i, ref in want.items():
            np.testing.assert_allclose(tensors[i].cpu().numpy().astype(np.float64), ref, rtol=1e-3, atol=2e-2)


def kept_running_across_the_back_edge():
    """O += P V left running into the next iteration, whose rescale of O (after the wait that
    completes it) ptxas cannot tell from a read of a running wgmma's registers: it serializes the
    loop's wgmmas (C7514). TileLang's FlashMLA waits at the end of each iteration instead."""

    @T.prim_func
    def main(Q: T.Tensor((M, K), T.float16), Kt: T.Tensor((4 * N, K), T.float16), V: T.Tensor((4 * N, K), T.float16),
             O: T.Tensor((M, K), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            Q_s = T.alloc_shared((M, K), T.float16)
            K_s = T.alloc_shared((N, K), T.float16)
            V_s = T.alloc_shared((N, K), T.float16)
            s = T.alloc_fragment((M, N), T.float32)
            p = T.alloc_fragment((M, N), T.float16)
            o = T.alloc_fragment((M, K), T.float32)
            T.copy(Q, Q_s)
            T.clear(o)
            for k in T.serial(4):
                T.copy(Kt[k * N:(k + 1) * N, :], K_s)
                T.wgmma_gemm(Q_s, K_s, s, transpose_B=True, clear_accum=True)
                T.wait_wgmma(1)
                T.copy(V[k * N:(k + 1) * N, :], V_s)
                for i, j in T.Parallel(M, K):
                    o[i, j] = o[i, j] * 0.5
                T.wait_wgmma(0)
                for i, j in T.Parallel(M, N):
                    p[i, j] = s[i, j] * 0.125
                T.wgmma_gemm(p, V_s, o)
            T.wait_wgmma(0)
            T.copy(o, O)

    return main


def test_ptxas_serializing_the_programs_wgmmas_is_reported(ptxas):
    """ptxas's "Potential Performance Loss" notes on the wgmmas become a TilecWarning at the kernel,
    with what to change; the kernel still builds (and computes right: the simulator)."""
    from tilec.errors import TilecWarning

    with pytest.warns(TilecWarning, match=r"ptxas: .*serialized.*\(C7514\): an accumulator of a running wgmma") as got:
        tilec.compile(kept_running_across_the_back_edge(), target="sm_90a")
    note = next(w for w in got if "C7514" in str(w.message))  # at the kernel: its `def main`
    assert note.filename.endswith("test_async_wgmma.py")
    assert note.lineno == _marked_line(kept_running_across_the_back_edge, "def main(")
    rng = np.random.default_rng(7)
    q, kt, v = (rng.standard_normal(s).astype(np.float16) * 0.5 for s in ((M, K), (4 * N, K), (4 * N, K)))
    o = np.zeros((M, K), np.float32)
    tilec.compile(kept_running_across_the_back_edge(), target="sim")(q, kt, v, o)
    want = np.zeros((M, K))
    for i in range(4):
        want *= 0.5
        p = (_ref(q, kt[i * N:(i + 1) * N]).astype(np.float32) * np.float32(0.125)).astype(np.float16)
        want += p.astype(np.float64) @ v[i * N:(i + 1) * N].astype(np.float64)
    np.testing.assert_allclose(o, want, rtol=1e-2, atol=2e-2)
