"""tile-cluster: pairs of blocks that share a TMA-loaded operand, loaded once by multicast, run on
the simulator (the blocks of a cluster run together and write each other's shared memory; a
release that does not reach both blocks' `empty` barriers deadlocks here) and, marked gpu, on an
H100/H200."""

import math

import pytest
import torch
from kernel_cases import Case, _attention_inputs, _attention_ref, _gemm_inputs, _gemm_ref, attention, gemm_tiles, run_case

import tilec
import tilec.language as T

_ON = {"tilec.cluster": True}

CASES = [
    # a 2x2 grid of 128x128 tiles: either dimension pairs; B (2 chunks) split by chunk
    Case("cluster_gemm_2x2", gemm_tiles(256, 256, 192, 128, 128, 64, "float16", threads=256), [2],
         _gemm_inputs(256, 256, 192, "float16", False), _gemm_ref(False), tol=1e-3),
    # 3 row tiles, 4 column tiles: pairs along the columns share A, one 64-column chunk cut into
    # two bands of 64 rows; tails in M and K
    Case("cluster_gemm_bands_tails", gemm_tiles(300, 512, 200, 128, 128, 64, "float16", threads=256, stages=3), [2],
         _gemm_inputs(300, 512, 200, "float16", False), _gemm_ref(False), tol=1e-3),
    Case("cluster_gemm_bf16_bt", gemm_tiles(128, 256, 128, 128, 128, 64, "bfloat16", transpose_b=True, threads=256),
         [2], _gemm_inputs(128, 256, 128, "bfloat16", True), _gemm_ref(True), tol=1e-2),
]


def gemm_bias_relu(m, n, k, bm=128, bn=128, bk=64, stages=2, threads=256):
    """A bias tile copied per tile before the loop, a rasterized grid, two consumer warpgroups
    (threads=256; 128: one, or two consumer groups taking turns under ping-pong)."""

    @T.prim_func
    def main(A: T.Tensor((m, k), T.float16), B: T.Tensor((k, n), T.float16), Bias: T.Tensor((n,), T.float16),
             C: T.Tensor((m, n), T.float16)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=threads) as (bx, by):
            a = T.alloc_shared((bm, bk), T.float16)
            b = T.alloc_shared((bk, bn), T.float16)
            bias = T.alloc_shared((bn,), T.float16)
            c = T.alloc_fragment((bm, bn), T.float32)
            T.use_swizzle(panel_size=2)
            T.clear(c)
            T.copy(Bias[bx * bn], bias)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=stages):
                T.copy(A[by * bm, ko * bk], a)
                T.copy(B[ko * bk, bx * bn], b)
                T.gemm(a, b, c)
            for i, j in T.Parallel(bm, bn):
                c[i, j] = T.max(c[i, j] + bias[j], 0.0)
            T.copy(c, C[by * bm, bx * bn])

    return main


def _clustered(kernel) -> bool:
    return "nvvm.cluster_dim" in kernel.get_ir("thread")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_clusters_on_the_simulator(case):
    kernel = tilec.compile(case.prim, out_idx=case.out_idx, target="sim", pass_configs=_ON)
    assert "multicast" in kernel.get_ir("tile-opt") and _clustered(kernel)
    run_case(case, "sim", "cpu", pass_configs=_ON, expect_ir="nvvm.mapa.shared.cluster")


def test_cluster_gemm_with_an_epilogue_on_the_simulator():
    """A bias tile copied before the loop and a rasterized grid: the cluster's blocks stay paired
    under use_swizzle (their shared B tile is the same)."""
    m, n, k = 512, 384, 128
    kernel = tilec.compile(gemm_bias_relu(m, n, k), out_idx=[3], target="sim", pass_configs=_ON)
    assert "multicast" in kernel.get_ir("tile-opt")
    a, b, bias = torch.randn(m, k).half(), torch.randn(k, n).half(), torch.randn(n).half()
    out = kernel(a, b, bias)
    ref = torch.relu(a.float() @ b.float() + bias.float())
    assert ((out.float() - ref).norm() / ref.norm()).item() < 1e-2


def test_clusters_with_the_warpgroup_turns_on_the_simulator():
    """tile-warpgroup-pingpong moves attention's stage release to the next iteration: the moved
    release stays cluster-wide (else each block's `empty` got half its arrivals: a deadlock once a
    stage is reused, S = 512 with two stages)."""
    case = Case("cluster_attention_turns", attention(1, 1, 512, 64, False, 128, 128, 2, 256, "float16"), [3],
                _attention_inputs(1, 1, 512, 64, "float16"), _attention_ref(False), tol=1e-2)
    configs = {"tilec.cluster": True, "tilec.warpgroup_pingpong": True}
    ir = tilec.compile(case.prim, out_idx=case.out_idx, target="sim", pass_configs=configs).get_ir("tile-opt")
    assert "multicast" in ir and "tile.warpgroup_wait_turn" in ir and "{cluster}" in ir
    run_case(case, "sim", "cpu", pass_configs=configs)


_PERSISTENT = {"tilec.cluster": True, "tilec.persistent": True}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_persistent_clusters_on_the_simulator(case):
    """A persistent kernel of clusters: the simulator's 3 multiprocessors launch one cluster of two
    blocks, which loops over the cluster tiles (pairs of tiles along the shared dimension; with tails
    in M and K, pairs along the columns), each block taking its tile of the pair by rank."""
    kernel = tilec.compile(case.prim, out_idx=case.out_idx, target="sim", pass_configs=_PERSISTENT)
    ir = kernel.get_ir("tile-opt")
    assert "multicast" in ir and "tile.persistent" in ir and "not_clustered" not in ir
    assert "nvvm.cluster_dim = array<i32: 2, 1, 1>" in kernel.get_ir("thread")
    grid = kernel._backend.spec.grid
    assert grid.cluster == 2 and "multiprocessors // 2 * 2" in str(grid)
    tiles = math.prod(grid.tiles({}))  # (even: the clustered extent is)
    assert grid.evaluate({}, 3) == (2, 1, 1) and grid.evaluate({}, 132) == (min(tiles, 132), 1, 1)
    run_case(case, "sim", "cpu", pass_configs=_PERSISTENT)


def test_persistent_clusters_with_consumer_groups_on_the_simulator():
    """Ping-pong (threads=128: two consumer groups taking the cluster's tiles in turns, four
    stages) with a bias epilogue: every group of both blocks releases on both blocks' barriers."""
    m, n, k = 512, 384, 256
    kernel = tilec.compile(gemm_bias_relu(m, n, k, stages=4, threads=128), out_idx=[3], target="sim",
                           pass_configs={**_PERSISTENT, "tilec.pingpong": True})
    ir = kernel.get_ir("tile-opt")
    assert "multicast" in ir and "groups = 2" in ir
    a, b, bias = torch.randn(m, k).half(), torch.randn(k, n).half(), torch.randn(n).half()
    out = kernel(a, b, bias)
    ref = torch.relu(a.float() @ b.float() + bias.float())
    assert ((out.float() - ref).norm() / ref.norm()).item() < 1e-2


def test_a_run_time_grid_extent_is_not_clustered():
    """A dynamic M: the lowering pairs block indices over a constant grid, so the pass declines."""
    m = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((m, 128), T.float16), B: T.Tensor((128, 256), T.float16), C: T.Tensor((m, 256), T.float16)):
        with T.Kernel(2, T.ceildiv(m, 128), threads=256) as (bx, by):
            a = T.alloc_shared((128, 64), T.float16)
            b = T.alloc_shared((64, 128), T.float16)
            c = T.alloc_fragment((128, 128), T.float32)
            T.clear(c)
            for ko in T.Pipelined(2, num_stages=2):
                T.copy(A[by * 128, ko * 64], a)
                T.copy(B[ko * 64, bx * 128], b)
                T.gemm(a, b, c)
            T.copy(c, C[by * 128, bx * 128])

    kernel = tilec.compile(main, out_idx=[2], target="sim", pass_configs=_ON)
    assert 'not_clustered = "a run-time grid extent"' in kernel.get_ir("tile-opt")
    a, b = torch.randn(256, 128).half(), torch.randn(128, 256).half()
    out = kernel(a, b)
    ref = a.float() @ b.float()
    assert ((out.float() - ref).norm() / ref.norm()).item() < 1e-2


def test_clusters_are_opt_in():
    """Off by default: measured slower than unclustered kernels on the H200 (bench/NOTES.md)."""
    kernel = tilec.compile(CASES[0].prim, out_idx=[2], target="sim")
    assert "multicast" not in kernel.get_ir("tile-opt") and not _clustered(kernel)


def test_cluster_gemm_assembles(ptxas):
    """A compile-time cluster shape, multicast TMA loads, remote arrivals at .cta scope (no
    MEMBAR.ALL.GPU in the main loop: only the three cluster barriers have one)."""
    from tilec.compiler.lower import lower_to_thread
    from tilec.frontend import build_prim_func
    from tilec.target import resolve_target
    from tilec.targets.nvptx import assemble, emit_ptx

    lowered = lower_to_thread(build_prim_func(CASES[0].prim, [2]), resolve_target("sm_90a"), _ON)
    ptx = emit_ptx(lowered.thread, "sm_90a")
    _, report = assemble(ptx, "sm_90a")
    assert ".explicitcluster" in ptx and ".reqnctapercluster" in ptx
    assert "multicast::cluster" in ptx and "mapa.shared::cluster" in ptx
    assert "mbarrier.arrive.shared::cluster.b64" in ptx and "mbarrier.arrive.release.cluster" not in ptx
    assert not report.kernels[lowered.spec.kernel_name].spills


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_clusters_on_the_gpu(case):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("TMA multicast here is built for sm_90a")
    for configs in (_ON, _PERSISTENT, None):
        for _ in range(2):
            run_case(case, "cuda", "cuda", pass_configs=configs)
