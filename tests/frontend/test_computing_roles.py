"""Warpgroup roles that all compute: `if tx < 128: .. else: ..` over 256 threads where both sides do
whole-tile work and issue their own TMA loads, with no producer warpgroup (TileLang's
example_warp_specialize_flashmla.py's form). tilec builds one `tile.warp_specialize` of two consumer
groups and no producer threads (tilec/frontend/thread_roles.py). Also here: what that example needed
besides (a gemm's run-time `clear_accum`, TMA boxes into column regions of a shared tile, several
T.tma_copy on one barrier phase before its arrival, `T.fence_proxy_async`).

Kernels live in this file (the frontend reads their source with `inspect`).
"""

# ruff: noqa: F841

import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.dialects import print_ir
from tilec.errors import TilecError
from tilec.frontend import build_prim_func

H, N, D, C = 64, 64, 256, 64  # rows of Q, keys per warpgroup, depth, the chunk of a TMA box (128 bytes)


def two_computing_roles(fence=True):
    """Warpgroup 0 computes S0 = Q K0^T, warpgroup 1 S1 = Q K1^T, each over four 64-column chunks of
    depth loaded by its own TMA boxes (region destinations; `clear_accum=(j == 0)`). Group 0 hands
    S0 (as float16) to group 1 through shared memory, which group 1 multiplies by V: O = S1 + P0 V.
    Q comes before the roles in three TMA copies on one barrier phase, arrived on by all 256 threads."""

    @T.prim_func
    def main(Q: T.Tensor((H, D), T.float16), K: T.Tensor((2 * N, D), T.float16), V: T.Tensor((N, C), T.float16),
             S0: T.Tensor((H, N), T.float32), O: T.Tensor((H, C), T.float32)):
        with T.Kernel(1, threads=256) as bx:
            Q_l = T.alloc_shared((H, D // 2), T.float16)
            Q_r = T.alloc_shared((H, D // 4), T.float16)
            Q_t = T.alloc_shared((H, D // 4), T.float16)
            K0 = T.alloc_shared((N, D), T.float16)
            K1 = T.alloc_shared((N, D), T.float16)
            V_s = T.alloc_shared((N, C), T.float16)
            P_s = T.alloc_shared((H, N), T.float16)
            q_ready = T.alloc_barrier(arrive_count=256)
            k0_ready = T.alloc_barrier(arrive_count=[128] * (D // C))
            k1_ready = T.alloc_barrier(arrive_count=[128] * (D // C))
            v_ready = T.alloc_barrier(arrive_count=128)
            p_ready = T.alloc_barrier(arrive_count=128)
            tx = T.get_thread_binding()
            T.tma_copy(Q[:, :D // 2], Q_l, barrier=q_ready)
            T.tma_copy(Q[:, D // 2:3 * D // 4], Q_r, barrier=q_ready)
            T.tma_copy(Q[:, 3 * D // 4:], Q_t, barrier=q_ready)
            T.barrier_arrive(q_ready)
            T.barrier_wait(q_ready, 0)
            if tx < 128:
                s0 = T.alloc_fragment((H, N), T.float32)
                p0 = T.alloc_fragment((H, N), T.float16)
                for j in T.unroll(D // C):
                    T.tma_copy(K[0:N, j * C:(j + 1) * C], K0[:, j * C:(j + 1) * C], barrier=k0_ready[j])
                    T.barrier_arrive(k0_ready[j])
                for j in T.unroll(D // C // 2):
                    T.barrier_wait(k0_ready[j], 0)
                    T.wgmma_gemm(Q_l[:, j * C:(j + 1) * C], K0[:, j * C:(j + 1) * C], s0, transpose_B=True,
                                 clear_accum=(j == 0))
                T.barrier_wait(k0_ready[2], 0)
                T.wgmma_gemm(Q_r, K0[:, 2 * C:3 * C], s0, transpose_B=True)
                T.barrier_wait(k0_ready[3], 0)
                T.wgmma_gemm(Q_t, K0[:, 3 * C:], s0, transpose_B=True)
                T.wait_wgmma(0)
                T.copy(s0, S0)
                T.copy(s0, p0)
                T.copy(p0, P_s)
                if fence:
                    T.fence_proxy_async()
                T.barrier_arrive(p_ready)
            else:
                s1 = T.alloc_fragment((H, N), T.float32)
                for j in T.unroll(D // C):
                    T.tma_copy(K[N:2 * N, j * C:(j + 1) * C], K1[:, j * C:(j + 1) * C], barrier=k1_ready[j])
                    T.barrier_arrive(k1_ready[j])
                T.tma_copy(V[:, :], V_s, barrier=v_ready)
                T.barrier_arrive(v_ready)
                for j in T.unroll(D // C // 2):
                    T.barrier_wait(k1_ready[j], 0)
                    T.wgmma_gemm(Q_l[:, j * C:(j + 1) * C], K1[:, j * C:(j + 1) * C], s1, transpose_B=True,
                                 clear_accum=(j == 0))
                T.barrier_wait(k1_ready[2], 0)
                T.wgmma_gemm(Q_r, K1[:, 2 * C:3 * C], s1, transpose_B=True)
                T.barrier_wait(k1_ready[3], 0)
                T.wgmma_gemm(Q_t, K1[:, 3 * C:], s1, transpose_B=True)
                T.barrier_wait(v_ready, 0)
                T.barrier_wait(p_ready, 0)
                T.wgmma_gemm(P_s, V_s, s1)
                T.wait_wgmma(0)
                T.copy(s1, O)

    return main


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(s).astype(np.float16) * 0.25 for s in ((H, D), (2 * N, D), (N, C)))
    s0 = q.astype(np.float64) @ k[:N].astype(np.float64).T
    o = q.astype(np.float64) @ k[N:].astype(np.float64).T + s0.astype(np.float16).astype(np.float64) @ v
    return (q, k, v), s0, o


def _run(target):
    (q, k, v), s0_ref, o_ref = _inputs()
    s0, o = np.zeros((H, N), np.float32), np.zeros((H, C), np.float32)
    if target == "cuda":
        import torch

        args = [torch.from_numpy(x).cuda() for x in (q, k, v, s0, o)]
        tilec.compile(two_computing_roles(), target=target)(*args)
        s0, o = args[3].cpu().numpy(), args[4].cpu().numpy()
    else:
        tilec.compile(two_computing_roles(), target=target)(q, k, v, s0, o)
    np.testing.assert_allclose(s0, s0_ref, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(o, o_ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("target", ["sim", "interp"])
def test_two_computing_warpgroups_run_on_the_simulator(target):
    """(The interp target runs such roles on the simulator: the tile interpreter models two roles,
    a one-thread producer and the consumers.)"""
    _run(target)


def test_two_computing_warpgroups_are_two_consumer_groups_and_no_producer():
    ir = print_ir(build_prim_func(two_computing_roles(), []).module)
    assert "producer_threads = 0 : i64" in ir and "consumer_groups = 2 : i64" in ir
    assert "tile.fence_proxy_async" in ir
    # the three copies of Q's phase announce their bytes in one arrival: 64 x (128 + 64 + 64) halves
    assert ir.count("tile.mbarrier_expect_tx") == 4  # Q; K0's and K1's (in their loops); V
    assert f"bytes = {H * D * 2} : i64" in ir


@pytest.mark.gpu
def test_two_computing_warpgroups_on_the_gpu():
    _run("cuda")


def _gemm_of_regions(clear_by):
    @T.prim_func
    def main(A: T.Tensor((64, 256), T.float16), B: T.Tensor((64, 256), T.float16), Out: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 256), T.float16)
            B_s = T.alloc_shared((64, 256), T.float16)
            acc = T.alloc_fragment((64, 64), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            if clear_by == "unroll":
                for j in T.unroll(4):
                    T.gemm(A_s[:, j * 64:(j + 1) * 64], B_s[:, j * 64:(j + 1) * 64], acc, transpose_B=True,
                           clear_accum=(j == 0))
            else:
                T.fill(acc, 7)  # cleared by the first gemm at run time
                for j in T.serial(4):
                    T.gemm(A_s[:, j * 64:(j + 1) * 64], B_s[:, j * 64:(j + 1) * 64], acc, transpose_B=True,
                           clear_accum=j < 1)
            T.copy(acc, Out)

    return main


@pytest.mark.parametrize("clear_by", ["unroll", "serial"])
@pytest.mark.parametrize("target, configs", [("interp", {}), ("sim", {}), ("sim", {"tilec.enable_wgmma": False})],
                         ids=["interp", "wgmma", "mma"])
def test_a_run_time_clear_accum_clears_where_it_holds(clear_by, target, configs):
    """`clear_accum=(j == 0)` is a run-time value in a loop: C is zeroed where it holds (it had been
    taken as True, so every iteration cleared and only the last chunk counted)."""
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((64, 256)).astype(np.float16) for _ in range(2))
    out = np.zeros((64, 64), np.float32)
    tilec.compile(_gemm_of_regions(clear_by), target=target, pass_configs=configs)(a, b, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-3, atol=1e-3)


def _gemm_transposed_at_run_time():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), B: T.Tensor((64, 64), T.float16), Out: T.Tensor((64, 64), T.float32),
             t: T.int32):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            B_s = T.alloc_shared((64, 64), T.float16)
            acc = T.alloc_fragment((64, 64), T.float32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, acc, transpose_B=t > 0)  # the transposed operand's line
            T.copy(acc, Out)

    return main


def _tma_into_row_major_columns():
    @T.prim_func
    def main(X: T.Tensor((64, 256), T.float16), Y: T.Tensor((64, 256), T.float16)):
        with T.Kernel(1, threads=256) as bx:
            S = T.alloc_shared((64, 256), T.float16)  # row-major: no wgmma reads it
            bar = T.alloc_barrier(arrive_count=128)
            tx = T.get_thread_binding()
            if tx < 128:
                T.tma_copy(X[:, 64:128], S[:, 64:128], barrier=bar)  # the region's line
                T.barrier_arrive(bar)
                T.barrier_wait(bar, 0)
                T.copy(S, Y)
            else:
                F = T.alloc_fragment((64, 64), T.float32)
                T.fill(F, 0)

    return main


def _arguments(make):
    if make is _tma_into_row_major_columns:
        return np.ones((64, 256), np.float16), np.zeros((64, 256), np.float16)
    return np.ones((64, 64), np.float16), np.ones((64, 64), np.float16), np.zeros((64, 64), np.float32), 1


def _line(marker: str) -> int:
    return next(i for i, text in enumerate(open(__file__), 1) if marker in text and "def " not in text)


@pytest.mark.parametrize("make, marker, message", [
    (_gemm_transposed_at_run_time, "the transposed operand's line", "T.gemm's transpose_B must be a compile-time"),
    (_tma_into_row_major_columns, "the region's line", "is not one run of its layout"),
], ids=["run-time-transpose", "tma-row-major-columns"])
def test_what_tilec_cannot_build_here_is_a_located_error(make, marker, message):
    with pytest.raises(TilecError, match=message) as e:
        tilec.compile(make(), target="sim")(*_arguments(make))
    assert f"test_computing_roles.py:{_line(marker)}:" in str(e.value)


# ---------------------------------------------------------------- a review's probes (session 27)


def tma_into_stage_regions():
    """Each 64-column chunk of both stages of a [2, 64, 128] tile TMA-loaded by a region of its own
    (`K_s[s, :, 0:64]`), then each stage read by a wgmma: O[:, 64s:64s+64] = Q K_s[s]^T."""

    @T.prim_func
    def main(Q: T.Tensor((64, 128), T.float16), K: T.Tensor((128, 128), T.float16), O: T.Tensor((64, 128), T.float32)):
        with T.Kernel(1, threads=256) as bx:
            Q_s = T.alloc_shared((64, 128), T.float16)
            K_s = T.alloc_shared((2, 64, 128), T.float16)
            bq = T.alloc_barrier(arrive_count=128)
            tx = T.get_thread_binding()
            if tx < 128:
                s = T.alloc_fragment((64, 64), T.float32)
                T.tma_copy(Q[:, :], Q_s, barrier=bq)
                T.tma_copy(K[0:64, 64:128], K_s[0, :, 64:128], barrier=bq)
                T.tma_copy(K[0:64, 0:64], K_s[0, :, 0:64], barrier=bq)
                T.tma_copy(K[64:128, 0:64], K_s[1, :, 0:64], barrier=bq)
                T.tma_copy(K[64:128, 64:128], K_s[1, :, 64:128], barrier=bq)
                T.barrier_arrive(bq)
                T.barrier_wait(bq, 0)
                for b in T.unroll(2):
                    T.gemm(Q_s, K_s[b, :, :], s, transpose_B=True, clear_accum=True)
                    T.copy(s, O[:, b * 64:(b + 1) * 64])
            else:
                s1 = T.alloc_fragment((64, 64), T.float32)
                T.fill(s1, 0)

    return main


def test_tma_boxes_into_regions_of_pipeline_stages():
    rng = np.random.default_rng(2)
    q, k = (rng.standard_normal(s).astype(np.float16) for s in ((64, 128), (128, 128)))
    o = np.zeros((64, 128), np.float32)
    tilec.compile(tma_into_stage_regions(), target="sim")(q, k, o)
    np.testing.assert_allclose(o, q.astype(np.float64) @ k.astype(np.float64).T, rtol=2e-3, atol=2e-3)


def buffers_inside_the_roles(upper_first=False):
    """Each role allocates a shared buffer of its own inside its side and works on it, while the other
    does the same: the two must not share bytes. The chain may list the upper warpgroup first."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float32), B: T.Tensor((64, 32), T.float32),
             O0: T.Tensor((64, 64), T.float32), O1: T.Tensor((64, 32), T.float32)):
        with T.Kernel(1, threads=256) as bx:
            bar = T.alloc_barrier(arrive_count=256)
            tx = T.get_thread_binding()
            if (tx >= 128) == upper_first:
                T.barrier_arrive(bar)
                S0 = T.alloc_shared((64, 64), T.float32)
                f0 = T.alloc_fragment((64, 64), T.float32)
                T.copy(A, S0)
                for k in T.serial(4):
                    for i, j in T.Parallel(64, 64):
                        f0[i, j] = S0[i, j] + S0[j, i]
                    T.copy(f0, S0)
                T.copy(S0, O0)
            else:
                T.barrier_arrive(bar)
                S1 = T.alloc_shared((64, 32), T.float32)
                f1 = T.alloc_fragment((64, 32), T.float32)
                T.copy(B, S1)
                for k in T.serial(4):
                    for i, j in T.Parallel(64, 32):
                        f1[i, j] = S1[i, j] * 0.5 + 1
                    T.copy(f1, S1)
                T.copy(S1, O1)

    return main


@pytest.mark.parametrize("upper_first", [False, True], ids=["lower-first", "upper-first"])
def test_buffers_allocated_inside_roles_get_bytes_of_their_own(upper_first):
    from tilec.compiler.lower import lower_to_thread
    from tilec.target import resolve_target

    lowered = lower_to_thread(build_prim_func(buffers_inside_the_roles(upper_first), []), resolve_target("sim"), {})
    ir = lowered.stage("tile-opt")
    assert "producer_threads = 0 : i64" in ir  # (either order of the chain: two computing roles)
    offsets = sorted(int(line.split("offset = ")[1].split(" ")[0]) for line in ir.splitlines()
                     if "tile.alloc {" in line and "shared>" in line)
    assert offsets == [0, 64 * 64 * 4]
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((64, 64)).astype(np.float32), rng.standard_normal((64, 32)).astype(np.float32)
    o0, o1 = np.zeros((64, 64), np.float32), np.zeros((64, 32), np.float32)
    tilec.compile(buffers_inside_the_roles(upper_first), target="sim")(a, b, o0, o1)
    e0, e1 = a.astype(np.float64), b.astype(np.float64)
    for _ in range(4):
        e0, e1 = e0 + e0.T, e1 * 0.5 + 1
    np.testing.assert_allclose(o0, e0, rtol=1e-5)
    np.testing.assert_allclose(o1, e1, rtol=1e-6)


def named_barrier_across_roles(bar=3):
    """Both roles write a tile to shared memory, meet at named barrier `bar` (256 threads, the
    block's), then read the other's."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float32), O0: T.Tensor((64, 64), T.float32), O1: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=256) as bx:
            S0 = T.alloc_shared((64, 64), T.float32)
            S1 = T.alloc_shared((64, 64), T.float32)
            bar0 = T.alloc_barrier(arrive_count=256)
            tx = T.get_thread_binding()
            if tx < 128:
                T.barrier_arrive(bar0)
                f0 = T.alloc_fragment((64, 64), T.float32)
                T.copy(A, f0)
                for i, j in T.Parallel(64, 64):
                    f0[i, j] = f0[i, j] * 2
                T.copy(f0, S0)
                T.sync_threads(bar, 256)  # the named barrier's line
                T.copy(S1, O0)
            else:
                T.barrier_arrive(bar0)
                f1 = T.alloc_fragment((64, 64), T.float32)
                T.copy(A, f1)
                for i, j in T.Parallel(64, 64):
                    f1[i, j] = f1[i, j] * 3
                T.copy(f1, S1)
                T.sync_threads(bar, 256)
                T.copy(S0, O1)

    return main


def test_a_named_barrier_of_the_blocks_threads_across_roles():
    a = np.random.default_rng(4).standard_normal((64, 64)).astype(np.float32)
    o0, o1 = np.zeros_like(a), np.zeros_like(a)
    tilec.compile(named_barrier_across_roles(), target="sim")(a, o0, o1)
    np.testing.assert_array_equal(o0, a * 3)
    np.testing.assert_array_equal(o1, a * 2)
    ptx = tilec.compile(named_barrier_across_roles(), target="sm_90a").get_kernel_source()
    assert ptx.count("barrier.sync \t3, 256;") == 2 and "bar.sync \t3" not in ptx  # (from each role's own code)


_ROLES_WITH_A_COPY = """import tilec.language as T


def make():
    @T.prim_func
    def main(K: T.Tensor((128, 256), T.float16), O: T.Tensor((64, 64), T.float32), n: T.int32):
        with T.Kernel(1, threads=256) as bx:
            K_s = T.alloc_shared((64, 256), T.float16)
            b = T.alloc_barrier(arrive_count=128)
            tx = T.get_thread_binding()
            if tx < 128:
                s = T.alloc_fragment((64, 64), T.float32)
COPY
                T.barrier_wait(b, 0)
                T.gemm(K_s[:, 0:64], K_s[:, 64:128], s, transpose_B=True, clear_accum=True)
                T.copy(s, O)
            else:
                s1 = T.alloc_fragment((64, 64), T.float32)
                T.fill(s1, 0)
    return main
"""


def _roles_with(copy: str) -> str:
    """Two computing roles; role 0 loads K into a 64x256 wgmma tile by the T.tma_copy form `copy`."""
    return _ROLES_WITH_A_COPY.replace("COPY", "\n".join(" " * 16 + line for line in copy.splitlines()))


@pytest.mark.parametrize("copy, message", [
    ("T.tma_copy(K[0:64, 0:32], K_s[:, 0:32], barrier=b)  # the copy's line\nT.barrier_arrive(b)",
     "a TMA copy of 32 columns of a shared tile laid out in 64-column chunks"),
    ("T.tma_copy(K[4:64, 0:64], K_s[4:64, 0:64], barrier=b)  # the copy's line\nT.barrier_arrive(b)",
     "starts 512 bytes into a 1024-byte block"),
    ("for j in T.serial(4):\n    T.tma_copy(K[0:64, j * 64:(j + 1) * 64], K_s[:, j * 64:(j + 1) * 64], barrier=b)\n"
     "T.barrier_arrive(b)  # the copy's line", "after a T.tma_copy\\(..., barrier=b\\) in a loop or branch of its own"),
    ("if n > 0:\n    T.tma_copy(K[0:64, :], K_s, barrier=b)\nT.barrier_arrive(b)  # the copy's line",
     "after a T.tma_copy\\(..., barrier=b\\) in a loop or branch of its own"),
    ("T.tma_copy(K[0:64, :], K_s, barrier=b)\nT.barrier_arrive(b)\nT.sync_threads(2, 128)  # the copy's line",
     "named barrier 2 is one of the consumer warpgroups' own barriers"),
    ("T.tma_copy(K[0:64, 32:96], K_s[:, 32:96], barrier=b)  # the copy's line\nT.barrier_arrive(b)",
     "a TMA box of 64x64 elements at this region of a 64x256 shared tile stored in 64-column chunks is not one run"),
    ("T.tma_copy(K[0:64, 0:64], K_s[:, 0:64], barrier=b)\nif n > 0:\n"
     "    T.tma_copy(K[0:64, 64:128], K_s[:, 64:128], barrier=b)  # the copy's line\nT.barrier_arrive(b)",
     "T.tma_copy\\(..., barrier=b\\) here, and an earlier one on the same barrier in another block"),
], ids=["part-of-a-chunk", "off-the-swizzle-pattern", "copies-in-a-loop", "copy-in-a-branch", "group-barrier-id",
        "across-chunks", "copies-in-two-blocks"])
def test_tma_copies_tilec_cannot_place_are_located_errors(tmp_path, monkeypatch, copy, message):
    k, o = np.zeros((128, 256), np.float16), np.zeros((64, 64), np.float32)
    _raises_at_the_marked_line(tmp_path, monkeypatch, _roles_with(copy), (k, o, 1), message)


def _raises_at_the_marked_line(tmp_path, monkeypatch, source: str, args: tuple, message: str) -> None:
    """`source` (a module whose `make()` gives the kernel) raises `message` at its line marked
    "the copy's line" when compiled for the simulator and called with `args`."""
    import importlib

    name = f"roles_with_a_copy_{tmp_path.name}"  # (a module of its own per case)
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "the copy's line" in text)
    with pytest.raises(TilecError, match=message) as e:
        tilec.compile(module.make(), target="sim")(*args)
    assert f"{name}.py:{line}:" in str(e.value)


_WS_WITH_A_COPY = """import tilec.language as T


def make():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float16), n: T.int32):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            ready = T.alloc_barrier(arrive_count=128)
            with T.ws(1):
COPY
            with T.ws(0):
                T.barrier_wait(ready, 0)
                T.copy(A_s, C)
    return main
"""

_ROLES_WITH_A_3D_COPY = """import tilec.language as T


def make():
    @T.prim_func
    def main(K: T.Tensor((2, 64, 64), T.float16), O: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=256) as bx:
            K_s = T.alloc_shared((2, 64, 64), T.float16)
            b = T.alloc_barrier(arrive_count=128)
            tx = T.get_thread_binding()
            if tx < 128:
                s = T.alloc_fragment((64, 64), T.float32)
                T.tma_copy(K[0:2, :, :], K_s, barrier=b)  # the copy's line
                T.barrier_arrive(b)
                T.barrier_wait(b, 0)
                T.gemm(K_s[0, :, :], K_s[1, :, :], s, transpose_B=True, clear_accum=True)
                T.copy(s, O)
            else:
                s1 = T.alloc_fragment((64, 64), T.float32)
                T.fill(s1, 0)
    return main
"""


@pytest.mark.parametrize("source, message", [
    (_WS_WITH_A_COPY.replace("COPY", "                if n > 0:\n"
                                      "                    T.tma_copy(A[0:64, 0:64], A_s, barrier=ready)\n"
                                      "                T.barrier_arrive(ready)  # the copy's line"),
     "T.barrier_arrive\\(b\\) after a T.tma_copy\\(..., barrier=b\\) in a loop or branch of its own"),
    (_WS_WITH_A_COPY.replace("COPY", "                if n > 0:\n"
                                      "                    T.tma_copy(A[0:64, 0:64], A_s, barrier=ready)\n"
                                      "                T.tma_copy(A[0:64, 0:64], A_s, barrier=ready)  # the copy's line\n"
                                      "                T.barrier_arrive(ready)"),
     "T.tma_copy\\(..., barrier=b\\) after a T.tma_copy\\(..., barrier=b\\) in a loop or branch of its own"),
    (_ROLES_WITH_A_3D_COPY, "a TMA copy of a 2x64x64 shared region: TMA boxes here are 2-D"),
], ids=["ws-copy-in-a-branch", "ws-copies-in-two-blocks", "three-dims"])
def test_more_tma_copies_tilec_cannot_place_are_located_errors(tmp_path, monkeypatch, source, message):
    if "T.ws" in source:
        args = (np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float16), 1)
    else:
        args = (np.zeros((2, 64, 64), np.float16), np.zeros((64, 64), np.float32))
    _raises_at_the_marked_line(tmp_path, monkeypatch, source, args, message)


def reported_hint():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), O: T.Tensor((64, 64), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 64), T.float16)
            for i, j in T.Parallel(64, 64, prefer_async=True):
                A_s[i, j] = A[i, j]
            T.copy(A_s, O)

    return main


def test_a_report_the_process_makes_an_error_stays_itself():
    """A hint tilec does not apply is reported (a TilecWarning); where warnings are errors it is that
    warning that stops the build, not an "internal compiler error"."""
    import warnings

    from tilec.errors import TilecWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", TilecWarning)
        with pytest.raises(TilecWarning, match="prefer_async=True. is not applied"):
            build_prim_func(reported_hint(), [])
