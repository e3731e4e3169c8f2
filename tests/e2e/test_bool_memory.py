"""Bool tensors in memory are a byte per element. LLVM packs a vector of i1 into bits, so the
lowering never reads or writes bools as vectors: TileLang's block-sparse attention copies a row
of its bool block mask (4 elements) into a fragment and read the mask of block k, and with a
<4 x i1> load and store only the first element's byte moved (wrong results on the H200 only:
the simulator keeps elements, not bytes)."""

import re

import pytest
import torch

import tilec
import tilec.language as T


def mask_select(n=4, rows=8):
    @T.prim_func
    def main(M: T.Tensor((rows, n), T.bool), X: T.Tensor((rows, n), T.float32), Y: T.Tensor((rows, n), T.float32)):
        with T.Kernel(rows, threads=128) as bx:
            mask = T.alloc_fragment((n,), T.bool)
            T.copy(M[bx, :], mask)
            for k in T.serial(n):
                if mask[k]:
                    Y[bx, k] = X[bx, k]
                else:
                    Y[bx, k] = -1.0

    return main


def _inputs(device, rows=8, n=4):
    gen = torch.Generator().manual_seed(3)
    return (torch.rand(rows, n, generator=gen) > 0.5).to(device), torch.randn(rows, n, generator=gen).to(device)


def test_no_vector_of_bools_in_memory():
    ir = tilec.compile(mask_select(), out_idx=[2], target="sm_90a").get_ir("thread")
    assert not re.search(r"vector<\d+xi1>", ir), "a vector of i1 in memory"


@pytest.mark.parametrize("target", ["sim", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_bool_row_read_at_run_time_indices(target):
    if target == "cuda" and not torch.cuda.is_available():
        pytest.skip("no GPU")
    device = "cuda" if target == "cuda" else "cpu"
    m, x = _inputs(device)
    y = tilec.compile(mask_select(), out_idx=[2], target=target)(m, x)
    assert torch.equal(y.cpu(), torch.where(m, x, -1.0).cpu())
