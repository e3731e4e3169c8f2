"""tile-alternate-k on the simulator: a persistent gemm's blocks load their odd rounds' k-tiles
last to first (the consumers unchanged), and the results stay right in every schedule that takes
it: the cooperative persistent kernel with tails, ping-pong, and the per-copy producer (cp.async
for an operand TMA cannot take). On by default: these tests pass no `tilec.alternate_k` but
where they compare with it off."""

import pytest
import torch
from kernel_cases import gemm_tiles

import tilec
import tilec.language as T

_PERSISTENT = {"tilec.persistent": True, "tilec.pingpong": False}  # tilec.alternate_k by default


def test_odd_rounds_sum_backwards():
    """The order is visible in f32: A's and B's first k-tile hold 2048 (products 2^22, a k-tile
    sums to 2^28), the other three hold 1. Forwards, each later 16-wide chunk adds 16, half an ulp
    of 2^28, and rounds away (to even); backwards the ones are summed first and 2^28 + 192 is
    exact. 12 tiles on the simulator's 3 multiprocessors: block b runs tiles b, b + 3, b + 6,
    b + 9, so tiles 3-5 and 9-11 (rounds 1 and 3) are summed backwards; without the pass, none."""
    m, n, k = 128 * 6, 128 * 2, 256
    prim = gemm_tiles(m, n, k, 128, 128, 64, T.float16, threads=256, stages=2, out_dtype=T.float32)
    a, b = torch.ones(m, k).half(), torch.ones(k, n).half()
    a[:, :64] = 2048
    b[:64, :] = 2048
    backwards = torch.tensor([(t // 3) % 2 == 1 for t in range(12)]).reshape(6, 2)  # tile t = (by, bx) = divmod(t, 2)
    for alternate in (True, False):
        kernel = tilec.compile(prim, out_idx=[2], target="sim", pass_configs={**_PERSISTENT, "tilec.alternate_k": alternate})
        assert ("tilec.alternate_k" in kernel.get_ir("tile-opt")) == alternate
        excess = (kernel(a, b) - 2.0**28).reshape(6, 128, 2, 128)
        expected = torch.where(backwards & alternate, 192.0, 0.0)
        assert torch.equal(excess, expected[:, None, :, None].expand_as(excess)), excess[:, 0, :, 0]


@pytest.mark.parametrize("case", [
    # (m, n, k), tiles (bm, bn, bk), threads, configs: tails in M, N and K (the partial k-tile comes first backwards)
    ((300, 600, 200), (128, 256, 64), 256, _PERSISTENT),
    ((384, 384, 320), (128, 128, 64), 128, {"tilec.pingpong": True}),  # two consumer groups on alternate tiles
    ((256, 256, 204), (128, 128, 64), 256, _PERSISTENT),  # A's rows 408 bytes apart: cp.async by the producer
], ids=["persistent-tails", "pingpong", "per-copy"])
def test_alternating_schedules_stay_right(case):
    (m, n, k), (bm, bn, bk), threads, configs = case
    prim = gemm_tiles(m, n, k, bm, bn, bk, T.float16, threads=threads, stages=3, out_dtype=T.float32)
    kernel = tilec.compile(prim, out_idx=[2], target="sim", pass_configs=configs)
    ir = kernel.get_ir("tile-opt")
    assert "tilec.alternate_k" in ir and "tilec.not_alternated" not in ir
    torch.manual_seed(0)
    a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
    ref = a.double() @ b.double()
    assert float((kernel(a, b).double() - ref).norm() / ref.norm()) < 1e-5



def test_run_time_grid_alternates():
    """Sizes M and N known at the call (T.dynamic): a persistent grid counted at run time, the
    rounds' parity with it (tails in M, N and K; several rounds on 3 simulated multiprocessors)."""
    prim = gemm_tiles(T.dynamic("m"), T.dynamic("n"), 328, 128, 128, 64, "float16", threads=256, stages=3)
    kernel = tilec.compile(prim, out_idx=[2], target="sim", pass_configs=_PERSISTENT)
    torch.manual_seed(0)
    for m, n in ((520, 264), (256, 640)):
        a, b = torch.randn(m, 328).half(), torch.randn(328, n).half()
        ref = a.double() @ b.double()
        assert float((kernel(a, b).double() - ref).norm() / ref.norm()) < 1e-5
    assert "tilec.alternate_k" in kernel.get_ir("tile-opt")
