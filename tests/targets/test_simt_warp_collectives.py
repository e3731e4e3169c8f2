"""The simulator's rule for warp-collective ops (mma.sync, ldmatrix): a branch may leave whole
warps out (a warp-specialized role is one), a branch that splits a warp is an error."""

import numpy as np
import pytest

from tilec import TilecError
from tilec.targets.interp import simt


class _State:
    def __init__(self, mask):
        self.mask = mask
        self.lanes = [np.arange(len(mask))]


def test_a_warp_uniform_branch_runs_the_warps_it_takes():
    mask = np.zeros(256, bool)
    mask[128:] = True  # the warps of a warpgroup: 4 to 7
    assert simt._whole_warps(None, _State(mask), 256).tolist() == [4, 5, 6, 7]


def test_a_branch_that_splits_a_warp_is_an_error():
    mask = np.zeros(128, bool)
    mask[:16] = True  # half of warp 0
    with pytest.raises(TilecError, match="splits a warp .* all 32 lanes of a warp must take part"):
        simt._whole_warps(_FakeOp(), _State(mask), 128)


class _FakeOp:
    name = "nvvm.mma.sync"
    location = None
