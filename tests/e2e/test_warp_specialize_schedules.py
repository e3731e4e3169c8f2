"""Schedules of tile-warp-specialize beyond the plain gemm loop, run on the simulator (whose
mbarriers report a deadlock instead of hanging) and, marked gpu, on an H100/H200: a loop of
one stage, and a loop whose gemm result is read in the loop (each gemm waited for, each
iteration releasing its own stage)."""

import pytest
import torch
from kernel_cases import Case, _gemm_inputs, _gemm_ref, gemm_tiles, run_case

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
