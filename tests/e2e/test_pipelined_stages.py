"""TileLang's `T.Pipelined(..., stage=)` on attention's loop is honoured: P V one stage after
Q K^T asks for the rotated loop (FA3's overlap), whatever `tilec.softmax_overlap` says; both
gemms in one stage keep the loop as written. Simulated against torch both ways."""

import pytest
import torch
from kernel_cases import _attention_inputs, _attention_ref

import tilec
import tilec.language as T
from tilec.errors import TilecError

B, H, S, D = 1, 1, 200, 64  # 200: a tail the 64-key blocks do not divide
ROTATED = [0] * 11 + [1, 1]  # the copy of V and P V a stage after the rest
AS_WRITTEN = [0] * 13


def attention(stage, group=None, block_M=128, block_N=64, threads=256, dtype="float16"):
    """kernel_cases.attention (non-causal, tails masked) with a hand schedule on its loop."""
    scale = (1.0 / D) ** 0.5 * 1.44269504
    shape = [B, S, H, D]
    accum = T.float32

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
             Out: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(S, block_M), H, B, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared([block_M, D], dtype)
            K_s = T.alloc_shared([block_N, D], dtype)
            V_s = T.alloc_shared([block_N, D], dtype)
            s = T.alloc_fragment([block_M, block_N], accum)
            p = T.alloc_fragment([block_M, block_N], dtype)
            o = T.alloc_fragment([block_M, D], accum)
            m_old = T.alloc_fragment([block_M], accum)
            m_new = T.alloc_fragment([block_M], accum)
            alpha = T.alloc_fragment([block_M], accum)
            p_sum = T.alloc_fragment([block_M], accum)
            l = T.alloc_fragment([block_M], accum)
            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m_new, -T.infinity(accum))
            for k in T.Pipelined(T.ceildiv(S, block_N), num_stages=2, stage=stage, group=group):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_s)
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = T.if_then_else(k * block_N + j < S, 0, -T.infinity(accum))
                T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m_new, m_old)
                T.reduce_max(s, m_new, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    alpha[i] = T.exp2((m_old[i] - m_new[i]) * scale)
                for i, j in T.Parallel(block_M, D):
                    o[i, j] *= alpha[i]
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = T.exp2(s[i, j] * scale - m_new[i] * scale)
                T.reduce_sum(s, p_sum, dim=1)
                for i in T.Parallel(block_M):
                    l[i] = l[i] * alpha[i] + p_sum[i]
                T.copy(s, p)
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_s)
                T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, D):
                o[i, j] /= l[i]
            T.copy(o, Out[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return main


def _run(prim, configs):
    kernel = tilec.compile(prim, out_idx=[3], target="sim", pass_configs=configs)
    q, k, v = _attention_inputs(B, H, S, D, "float16")("cpu")
    ref = _attention_ref(False)(q, k, v)
    out = kernel(q, k, v)
    assert float((out.float() - ref.float()).norm() / ref.float().norm()) < 1e-2
    return kernel.get_ir("tile-opt")


def test_p_v_a_stage_later_rotates_the_loop_even_with_the_overlap_off():
    ir = _run(attention(ROTATED), {"tilec.softmax_overlap": False})
    assert 'tilec.stages_asked = "rotated"' in ir and "in_flight = 2" in ir


def test_the_same_schedule_by_groups():
    ir = _run(attention([0, 1], group=[list(range(11)), [11, 12]]), {"tilec.softmax_overlap": False})
    assert "in_flight = 2" in ir


def test_one_stage_keeps_the_loop_as_written_even_with_the_overlap_on():
    ir = _run(attention(AS_WRITTEN), {"tilec.softmax_overlap": True})
    assert "in_flight = 2" not in ir
    assert 'tilec.not_softmax_overlap = "T.Pipelined(stage=...) keeps the two gemms in one stage"' in ir


def test_stages_and_groups_of_different_lengths_are_a_located_error():
    with pytest.raises(TilecError, match="T.Pipelined has 2 stage= entries for 3 group= entries") as e:
        tilec.compile(attention([0, 1], group=[[0], [1], [2]]), out_idx=[3], target="sim")
    line = next(i for i, text in enumerate(open(__file__), 1) if "for k in T.Pipelined(T.ceildiv(S, block_N)" in text)
    assert f"test_pipelined_stages.py:{line}:" in str(e.value)
