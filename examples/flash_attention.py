"""FlashAttention forward with grouped-query heads and the log-sum-exp the backward pass needs.

Q is [batch, seq, heads, dim]; K and V are [batch, seq, kv_heads, dim], each KV head shared by
heads // kv_heads query heads (GQA; kv_heads == heads is plain multi-head attention). Online
softmax with exp2 and the scale folded in; keys past the end of the sequence are masked, so
any sequence length works. With `lse=True` the kernel also writes LSE[batch, heads, seq]
(float32, natural log): log(sum_j exp(scale * q_i . k_j)), as FlashAttention-2 returns it.
"""

import math

import torch

import tilec
import tilec.language as T


def flash_attention(batch, heads, kv_heads, seq_len, dim, is_causal, lse=False, block_M=128, block_N=128,
                    num_stages=2, threads=256, dtype="float16"):
    """The prim_func (call `tilec.compile(..., out_idx=[3] or [3, 4])`, or use `flash_fwd`)."""
    assert heads % kv_heads == 0, "every KV head serves the same number of query heads"
    groups = heads // kv_heads
    sm_scale = 1.0 / math.sqrt(dim)
    scale = sm_scale * 1.44269504  # log2(e) folded in, so exp2 can be used
    q_shape, kv_shape = [batch, seq_len, heads, dim], [batch, seq_len, kv_heads, dim]
    accum = T.float32

    @T.macro
    def body(Q, K, V, Out, LSE):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared([block_M, dim], dtype)
            K_s = T.alloc_shared([block_N, dim], dtype)
            V_s = T.alloc_shared([block_N, dim], dtype)
            s = T.alloc_fragment([block_M, block_N], accum)
            p = T.alloc_fragment([block_M, block_N], dtype)
            o = T.alloc_fragment([block_M, dim], accum)
            m_old = T.alloc_fragment([block_M], accum)
            m_new = T.alloc_fragment([block_M], accum)
            alpha = T.alloc_fragment([block_M], accum)
            p_sum = T.alloc_fragment([block_M], accum)
            l = T.alloc_fragment([block_M], accum)

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m_new, -T.infinity(accum))
            n_blocks = T.ceildiv(seq_len, block_N)
            if is_causal:
                n_blocks = T.min(n_blocks, T.ceildiv((bx + 1) * block_M, block_N))  # blocks above the diagonal: none
            for k in T.Pipelined(n_blocks, num_stages=num_stages):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by // groups, :], K_s)
                if is_causal:  # keys past the end lie above the diagonal of every row in the sequence
                    for i, j in T.Parallel(block_M, block_N):
                        s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity(accum))
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        s[i, j] = T.if_then_else(k * block_N + j < seq_len, 0, -T.infinity(accum))
                T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m_new, m_old)
                T.reduce_max(s, m_new, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    alpha[i] = T.exp2((m_old[i] - m_new[i]) * scale)
                for i, j in T.Parallel(block_M, dim):
                    o[i, j] *= alpha[i]
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = T.exp2(s[i, j] * scale - m_new[i] * scale)
                T.reduce_sum(s, p_sum, dim=1)
                for i in T.Parallel(block_M):
                    l[i] = l[i] * alpha[i] + p_sum[i]
                T.copy(s, p)
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by // groups, :], V_s)
                T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                o[i, j] /= l[i]
            T.copy(o, Out[bz, bx * block_M:(bx + 1) * block_M, by, :])
            if lse:
                for i in T.Parallel(block_M):
                    l[i] = T.log(l[i]) + m_new[i] * sm_scale
                T.copy(l, LSE[bz, by, bx * block_M:(bx + 1) * block_M])

    if lse:
        @T.prim_func
        def main(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                 Out: T.Tensor(q_shape, dtype), LSE: T.Tensor([batch, heads, seq_len], accum)):
            body(Q, K, V, Out, LSE)
    else:
        @T.prim_func
        def main(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                 Out: T.Tensor(q_shape, dtype)):
            body(Q, K, V, Out, Out)  # LSE unused (`lse` is False)

    return main


def flash_fwd(batch, heads, kv_heads, seq_len, dim, is_causal, lse=False, target="auto", pass_configs=None, **tiles):
    """The compiled kernel: (q, k, v) -> out, or (out, lse) with `lse=True`."""
    prim = flash_attention(batch, heads, kv_heads, seq_len, dim, is_causal, lse=lse, **tiles)
    return tilec.compile(prim, out_idx=[3, 4] if lse else [3], target=target, pass_configs=pass_configs)


def reference(q, k, v, causal):
    """float32 attention and its LSE (natural log), [batch, seq, heads, dim] in, KV heads repeated."""
    groups = q.shape[2] // k.shape[2]
    q, k, v = (t.float().transpose(1, 2) for t in (q, k, v))
    k, v = (t.repeat_interleave(groups, dim=1) for t in (k, v))
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[2]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return (scores.softmax(-1) @ v).transpose(1, 2), scores.logsumexp(-1)


def main(device: str) -> bool:
    ok = True
    for causal in (False, True):  # a sequence the blocks do not divide; 4 query heads on 2 KV heads
        q = torch.randn(1, 200, 4, 64, device=device).half()
        k, v = (torch.randn(1, 200, 2, 64, device=device).half() for _ in range(2))
        out, lse = flash_fwd(1, 4, 2, 200, 64, causal, lse=True, block_M=64, block_N=64, threads=128)(q, k, v)
        ref_out, ref_lse = reference(q, k, v, causal)
        ok &= torch.allclose(out.float(), ref_out, atol=1e-2, rtol=1e-2) and torch.allclose(lse, ref_lse, atol=1e-3)
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main("cuda" if torch.cuda.is_available() else "cpu") else 1)
