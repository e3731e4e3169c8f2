"""Schedules of tile-warp-specialize beyond the plain gemm loop, run on the simulator (whose
mbarriers report a deadlock instead of hanging) and, marked gpu, on an H100/H200: a loop of
one stage, and a loop whose gemm result is read in the loop (each gemm waited for, each
iteration releasing its own stage)."""

import pytest
import torch
from kernel_cases import Case, _gemm_inputs, _gemm_ref, attention, gemm_tiles, run_case

import tilec
import tilec.language as T


def gemm_rows_max(m=64, n=64, k=256, bk=64, stages=2):
    """Per K block, the row maxima of that block's product, summed over the blocks: the
    accumulator is read inside the loop right after its gemm."""

    @T.prim_func
    def main(A: T.Tensor((m, k), T.float16), B: T.Tensor((k, n), T.float16), Y: T.Tensor((m,), T.float32)):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((m, bk), T.float16)
            b = T.alloc_shared((bk, n), T.float16)
            c = T.alloc_fragment((m, n), T.float32)
            mx = T.alloc_fragment((m,), T.float32)
            total = T.alloc_fragment((m,), T.float32)
            T.clear(total)
            for ko in T.Pipelined(k // bk, num_stages=stages):
                T.copy(A[0, ko * bk], a)
                T.copy(B[ko * bk, 0], b)
                T.gemm(a, b, c, clear_accum=True)
                T.reduce_max(c, mx, dim=1)
                for i in T.Parallel(m):
                    total[i] += mx[i]
            T.copy(total, Y)

    return main


def _rows_max_ref(a, b, bk=64):
    return sum((a[:, i:i + bk].float() @ b[i:i + bk].float()).amax(1) for i in range(0, a.shape[1], bk))


CASES = [
    Case("ws_gemm_one_stage", gemm_tiles(64, 64, 256, 64, 64, 64, "float16", stages=1), [2],
         _gemm_inputs(64, 64, 256, "float16", False), _gemm_ref(False), tol=1e-3),
    *[Case(f"ws_gemm_read_in_the_loop_{s}st", gemm_rows_max(stages=s), [2], _gemm_inputs(64, 64, 256, "float16", False),
           _rows_max_ref, tol=1e-3) for s in (1, 2)],
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_schedule_on_the_simulator(case):
    kernel = tilec.compile(case.prim, out_idx=case.out_idx, target="sim")
    ir = kernel.get_ir("tile-opt")
    assert "in_flight = 0" in ir and "tile.gemm_wait" not in ir, "each gemm waited for in the iteration"
    run_case(case, "sim", "cpu", expect_ir="nvvm.cp.async.bulk.tensor")


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_schedule_on_the_gpu(case):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("warp specialization needs sm_90a")
    for _ in range(2):
        run_case(case, "cuda", "cuda", expect_ir="nvvm.cp.async.bulk.tensor")


# ---- ping-pong: a kernel of one warpgroup, two consumer groups on alternate tiles -------------

def gemm_bias_relu(m, n, k, bm=64, bn=64, bk=64, stages=2):
    """A bias tile copied per tile before the loop (each group's own), rasterized tiles, tails."""

    @T.prim_func
    def main(A: T.Tensor((m, k), T.float16), B: T.Tensor((k, n), T.float16), Bias: T.Tensor((n,), T.float16),
             C: T.Tensor((m, n), T.float16)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
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


def _bias_relu_inputs(m, n, k):
    return lambda d: [torch.randn(m, k, device=d).half(), torch.randn(k, n, device=d).half(),
                      torch.randn(n, device=d).half()]


PINGPONG_CASES = [
    # 7 tiles on the simulator's 3 multiprocessors: block 0 runs 3 (its groups 2 and 1), block 2 only one
    Case("pingpong_7_tiles_k_tail", gemm_tiles(448, 64, 200, 64, 64, 64, "float16", stages=3), [2],
         _gemm_inputs(448, 64, 200, "float16", False), _gemm_ref(False), tol=1e-3),
    Case("pingpong_bf16_bt_tails", gemm_tiles(200, 136, 96, 64, 64, 32, "bfloat16", transpose_b=True, stages=2), [2],
         _gemm_inputs(200, 136, 96, "bfloat16", True), _gemm_ref(True), tol=1e-2),
    Case("pingpong_bias_relu_swizzled", gemm_bias_relu(300, 200, 128), [3], _bias_relu_inputs(300, 200, 128),
         lambda a, b, bias: torch.relu(a.float() @ b.float() + bias.float()), tol=1e-2),
]


@pytest.mark.parametrize("pingpong", [True, False], ids=["pingpong", "persistent"])
@pytest.mark.parametrize("case", PINGPONG_CASES, ids=[c.name for c in PINGPONG_CASES])
def test_pingpong_on_the_simulator(case, pingpong):
    """On by default for one warpgroup; the simulator runs each consumer group as its own thread,
    its mbarriers and named barriers shared, so a group that read a stage out of turn would
    read a stale one (or deadlock) here."""
    configs = {"tilec.pingpong": pingpong, "tilec.persistent": True}
    kernel = tilec.compile(case.prim, out_idx=case.out_idx, target="sim", pass_configs=configs)
    tile_ir, thread_ir = kernel.get_ir("tile-opt"), kernel.get_ir("thread")
    assert ("consumer_groups = 2" in tile_ir and "tile.wait_turn" in tile_ir) == pingpong
    assert ("nvvm.barrier.arrive" in thread_ir) == pingpong
    run_case(case, "sim", "cpu", pass_configs=configs, expect_ir="tilec.persistent")


def test_pingpong_is_the_default_for_one_warpgroup_only():
    """One warpgroup: ping-pong (two consumer groups, persistent). Two warpgroups sharing a tile:
    persistent by default (a loop of one gemm), without groups; `tilec.persistent: False` turns that
    off, and an attention loop (two gemms) is not made persistent."""
    one = tilec.compile(gemm_tiles(256, 256, 128, 64, 64, 64, "float16"), out_idx=[2], target="sim")
    assert "consumer_groups = 2" in one.get_ir("tile-opt")
    two = tilec.compile(gemm_tiles(256, 256, 128, 128, 64, 64, "float16", threads=256), out_idx=[2], target="sim")
    assert "consumer_groups" not in two.get_ir("tile-opt") and "tilec.persistent" in two.get_ir("thread")
    plain = tilec.compile(gemm_tiles(256, 256, 128, 128, 64, 64, "float16", threads=256), out_idx=[2], target="sim",
                          pass_configs={"tilec.persistent": False})
    assert "tilec.persistent" not in plain.get_ir("thread")
    off = tilec.compile(gemm_tiles(256, 256, 128, 64, 64, 64, "float16"), out_idx=[2], target="sim",
                        pass_configs={"tilec.pingpong": False})
    assert "consumer_groups" not in off.get_ir("tile-opt")
    attn = tilec.compile(attention(1, 2, 256, 64, False, 128, 64, 2, 256), out_idx=[3], target="sim")
    assert "tile.warp_specialize" in attn.get_ir("tile-opt") and "tilec.persistent" not in attn.get_ir("thread")


def _assemble(case):
    from tilec.compiler.lower import lower_to_thread
    from tilec.frontend import build_prim_func
    from tilec.target import resolve_target
    from tilec.targets.nvptx import assemble, emit_ptx

    lowered = lower_to_thread(build_prim_func(case.prim, case.out_idx), resolve_target("sm_90a"), {})
    ptx = emit_ptx(lowered.thread, "sm_90a")
    _, report = assemble(ptx, "sm_90a")
    return ptx, report, lowered.spec.kernel_name


def test_pingpong_gemm_assembles(ptxas):
    """Registers under the launch bound of 384 threads, no spills, no wgmma serialization; the turn
    is a bar.arrive / bar.sync pair on named barriers 5 and 6."""
    for case in PINGPONG_CASES:
        ptx, report, name = _assemble(case)
        assert "bar.arrive" in ptx and ".maxntid 384, 1, 1" in ptx, case.name
        assert not report.kernels[name].spills, case.name
        assert "C75" not in report.log, report.log


@pytest.mark.gpu
@pytest.mark.parametrize("case", PINGPONG_CASES, ids=[c.name for c in PINGPONG_CASES])
def test_pingpong_on_the_gpu(case):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("warp specialization needs sm_90a")
    for _ in range(2):
        run_case(case, "cuda", "cuda", expect_ir="nvvm.barrier.arrive")


def test_three_consumer_warpgroups_get_registers_the_file_holds():
    """setmaxnreg 232 for 384 consumer threads plus the producer's 128 x 40 would ask for ~94K of
    the 64K registers: the producer keeps 32 and three consumer warpgroups take 160 each
    (FlashAttention-3's split; 128 x 32 + 384 x 160 = 64K)."""
    kernel = tilec.compile(gemm_tiles(192, 128, 128, 192, 128, 64, "float16", threads=384), out_idx=[2], target="sim")
    ir = kernel.get_ir("tile-opt")
    assert "consumer_regs = 160 : i64" in ir and "producer_regs = 32 : i64" in ir


def gemm_rowmax(m, n, k, bm=64, bn=64, bk=64):
    """A reduction in the epilogue: it exchanges partial maxima through shared memory, which each
    consumer group must do in an exchange buffer of its own."""

    @T.prim_func
    def main(A: T.Tensor((m, k), T.float16), B: T.Tensor((k, n), T.float16), Y: T.Tensor((m, n // bn), T.float32)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            a = T.alloc_shared((bm, bk), T.float16)
            b = T.alloc_shared((bk, bn), T.float16)
            c = T.alloc_fragment((bm, bn), T.float32)
            mx = T.alloc_fragment((bm,), T.float32)
            T.clear(c)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], a)
                T.copy(B[ko * bk, bx * bn], b)
                T.gemm(a, b, c)
            T.reduce_max(c, mx, dim=1)
            for i in T.Parallel(bm):
                Y[by * bm + i, bx] = mx[i]

    return main


def test_pingpong_groups_reduce_in_exchange_buffers_of_their_own():
    m, n, k = 384, 256, 128
    kernel = tilec.compile(gemm_rowmax(m, n, k), out_idx=[2], target="sim")
    assert "consumer_groups = 2" in kernel.get_ir("tile-opt")
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    ref = (a.float() @ b.float()).view(m, n // 64, 64).amax(-1)
    assert (kernel(a, b) - ref).abs().max() < 1e-3


def triangular_gemm(m=384, bm=64, bk=64):
    """Row block by of C = A[rows, :(by + 1) bk] @ B[:(by + 1) bk, :]: a loop whose trip count grows
    with the block index (tiles of different lengths)."""

    @T.prim_func
    def main(A: T.Tensor((m, m), T.float16), B: T.Tensor((m, 64), T.float16), C: T.Tensor((m, 64), T.float32)):
        with T.Kernel(1, m // bm, threads=128) as (bx, by):
            a = T.alloc_shared((bm, bk), T.float16)
            b = T.alloc_shared((bk, 64), T.float16)
            c = T.alloc_fragment((bm, 64), T.float32)
            T.clear(c)
            for ko in T.Pipelined(T.min(by + 1, m // bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], a)
                T.copy(B[ko * bk, bx * 64], b)
                T.gemm(a, b, c)
            T.copy(c, C[by * bm, bx * 64])

    return main


@pytest.mark.parametrize("asked", [False, True], ids=["default", "persistent"])
def test_tiles_of_different_lengths_run_persistent_only_when_asked(asked):
    """A gemm loop whose trip count depends on the block index is persistent only with
    tilec.persistent=True (the static tile order balances such tiles worse than the hardware's
    dispatch: causal attention 8-14 % slower, run s8c); asked, it counts its ring positions."""
    m, bm = 384, 64
    configs = {"tilec.persistent": True, "tilec.pingpong": False} if asked else {}  # (ping-pong groups: no count)

    def ref(a, b):
        out = torch.zeros(m, 64)
        for by in range(m // bm):
            k = (by + 1) * bm
            out[by * bm:(by + 1) * bm] = a[by * bm:(by + 1) * bm, :k].float() @ b[:k].float()
        return out

    case = Case("triangular_gemm", triangular_gemm(m, bm), [2],
                lambda d: [torch.randn(m, m, device=d).half(), torch.randn(m, 64, device=d).half()], ref, tol=1e-2)
    tile_ir = tilec.compile(case.prim, out_idx=[2], target="sim", pass_configs=configs).get_ir("tile-opt")
    assert ("tile.persistent" in tile_ir) == asked and ("%consumed = tile.alloc" in tile_ir) == asked
    run_case(case, "sim", "cpu", pass_configs=configs)
