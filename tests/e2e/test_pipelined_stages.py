"""TileLang's `T.Pipelined(..., stage=)` on attention's loop (kernel_cases.attention, its 13
top-level statements) is honoured: P V one stage after Q K^T asks for the rotated loop (FA3's
overlap), whatever `tilec.softmax_overlap` says; both gemms in one stage keep the loop as
written. Simulated against torch both ways, with a tail."""

import pytest
from kernel_cases import _attention_inputs, _attention_ref, attention

import tilec
from tilec.errors import TilecError

B, H, S, D = 1, 1, 200, 64  # 200: a tail the 64-key blocks do not divide
ROTATED = [0] * 11 + [1, 1]  # the copy of V and P V a stage after the rest
AS_WRITTEN = [0] * 13


def _attention(stage, group=None):
    return attention(B, H, S, D, False, 128, 64, 2, 256, stage=stage, group=group)


def _run(prim, configs):
    kernel = tilec.compile(prim, out_idx=[3], target="sim", pass_configs=configs)
    q, k, v = _attention_inputs(B, H, S, D, "float16")("cpu")
    ref = _attention_ref(False)(q, k, v)
    out = kernel(q, k, v)
    assert float((out.float() - ref.float()).norm() / ref.float().norm()) < 1e-2
    return kernel.get_ir("tile-opt")


def test_p_v_a_stage_later_rotates_the_loop_even_with_the_overlap_off():
    ir = _run(_attention(ROTATED), {"tilec.softmax_overlap": False})
    assert 'tilec.stages_asked = "rotated"' in ir and "in_flight = 2" in ir


def test_the_same_schedule_by_groups():
    ir = _run(_attention([0, 1], group=[list(range(11)), [11, 12]]), {"tilec.softmax_overlap": False})
    assert "in_flight = 2" in ir


def test_one_stage_keeps_the_loop_as_written_even_with_the_overlap_on():
    ir = _run(_attention(AS_WRITTEN), {"tilec.softmax_overlap": True})
    assert "in_flight = 2" not in ir
    assert 'tilec.not_softmax_overlap = "T.Pipelined(stage=...) keeps the two gemms in one stage"' in ir


def test_stages_and_groups_of_different_lengths_are_a_located_error():
    with pytest.raises(TilecError, match="T.Pipelined has 2 stage= entries for 3 group= entries") as e:
        tilec.compile(_attention([0, 1], group=[[0], [1], [2]]), out_idx=[3], target="sim")
    import kernel_cases

    line = next(i for i, text in enumerate(open(kernel_cases.__file__), 1) if "stage=stage, group=group" in text)
    assert f"kernel_cases.py:{line}:" in str(e.value)
