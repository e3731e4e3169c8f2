"""FlashAttention-3's consumer schedule on attention (issue 10): K and V on rings of their own
(`tilec.operand_rings`). Simulated against torch (the simulator checks the mbarrier parities and
the races), causal and not, sequence lengths the blocks do not divide, head dims 64 to 256, one
and two consumer warpgroups; assembled by ptxas without spills or wgmma serialization."""

import pytest
from kernel_cases import ATTENTION_CASES, Case, _attention_inputs, _attention_ref, attention, run_case

import tilec

_SHAPES = [  # (batch, heads, seq_len, dim, causal, block_M, block_N, stages, threads, dtype): two warpgroups
    (1, 1, 200, 128, False, 128, 64, 2, 256, "float16"),
    (1, 1, 200, 128, True, 128, 64, 2, 256, "float16"),
    (1, 2, 176, 64, True, 128, 128, 2, 256, "bfloat16"),
    (1, 1, 320, 128, False, 128, 128, 2, 256, "float16"),
]
TURN_CASES = [Case(f"attention_{dt}_h{h}s{s}d{d}{'_causal' if c else ''}_{bm}x{bn}", attention(b, h, s, d, c, bm, bn, st, th, dt),
                   [3], _attention_inputs(b, h, s, d, dt), _attention_ref(c), tol=1e-2)
              for (b, h, s, d, c, bm, bn, st, th, dt) in _SHAPES]

RINGS = {"tilec.operand_rings": True}


@pytest.mark.parametrize("case", ATTENTION_CASES + TURN_CASES[:1], ids=lambda c: c.name)
def test_operand_rings_on_the_simulator(case):
    kernel = tilec.compile(case.prim, out_idx=case.out_idx, target="sim", pass_configs=RINGS)
    tile_ir = kernel.get_ir("tile-opt")
    assert "%full_K = tile.alloc_barrier" in tile_ir and "%empty_V = tile.alloc_barrier" in tile_ir
    run_case(case, "sim", "cpu", pass_configs=RINGS)


@pytest.mark.parametrize("case", TURN_CASES, ids=lambda c: c.name)
def test_operand_rings_with_the_turns_on_the_simulator(case):
    run_case(case, "sim", "cpu", pass_configs={**RINGS, "tilec.warpgroup_pingpong": True})
