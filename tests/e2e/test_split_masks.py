"""tile-split-masks end to end: a mask versioned at its run-time split point gives what the
interpreter (which runs the kernel as written) gives, and bit for bit what the same CUDA
lowering without the pass (`tilec.split_masks=False`) gives, on the simulator."""

import pytest
import torch
from kernel_cases import attention

import tilec
import tilec.language as T

_NO_WS = {"tl.disable_warp_specialized": True}
_OFF = {"tilec.split_masks": False}


def _run(prim, out_idx, inputs, target, configs=None):
    kernel = tilec.compile(prim, out_idx=out_idx, target=target, pass_configs=configs or {})
    return kernel, kernel(*[t.clone() for t in inputs])


# Causal attention: block 0 has only its diagonal block, block 1 one unmasked block first, block 2 two;
# at S = 200 with 128-row blocks, the diagonal spans two 64-key blocks and the last one a tail.
_CAUSAL = [(192, 64, 64, 128, "float16"), (200, 128, 64, 256, "float16"), (192, 128, 64, 128, "bfloat16")]


@pytest.mark.parametrize("configs", [{}, _NO_WS], ids=["ws", "cp_async"])
@pytest.mark.parametrize("seq,bm,bn,threads,dtype", _CAUSAL, ids=[f"s{c[0]}_{c[1]}x{c[2]}_{c[4]}" for c in _CAUSAL])
def test_causal_attention_split_matches_interp_and_unsplit(seq, bm, bn, threads, dtype, configs):
    prim = attention(1, 2, seq, 64, True, bm, bn, 2, threads, dtype)
    torch_dtype = getattr(torch, dtype)
    torch.manual_seed(seq + bm)
    inputs = [torch.randn(1, seq, 2, 64).to(torch_dtype) for _ in range(3)]
    kernel, split = _run(prim, [3], inputs, "sim", configs)
    assert 'tilec.split_mask = "prefix"' in kernel.get_ir("tile-opt")
    unsplit_kernel, unsplit = _run(prim, [3], inputs, "sim", configs | _OFF)
    assert "tilec.split_mask" not in unsplit_kernel.get_ir("tile-opt")
    _, expected = _run(prim, [3], inputs, "interp")
    assert torch.equal(split, unsplit)
    err = ((split.double() - expected.double()).norm() / expected.double().norm()).item()
    assert err < 1e-2, err


def suffix_mask():
    """A mask that holds from a run-time k on (k * 16 + i >= 24 + 8 bx), selecting loaded values:
    the unmasked copy keeps a tile.parallel."""

    @T.prim_func
    def main(X: T.Tensor((64, 64), T.float32), Y: T.Tensor((64, 64), T.float32)):
        with T.Kernel(2, threads=128) as bx:
            x = T.alloc_fragment((32, 64), T.float32)
            acc = T.alloc_fragment((32, 64), T.float32)
            T.clear(acc)
            T.copy(X[bx * 32, 0], x)
            for k in T.serial(4):
                for i, j in T.Parallel(32, 64):
                    acc[i, j] += T.if_then_else(k * 16 + i >= 24 + bx * 8, x[i, j] * (k + 1), 0.5)
            T.copy(acc, Y[bx * 32, 0])

    return main


def test_suffix_mask_matches_interp_and_unsplit():
    x = torch.randn(64, 64)
    kernel, split = _run(suffix_mask(), [1], [x], "sim")
    assert 'tilec.split_mask = "suffix"' in kernel.get_ir("tile-opt")
    _, unsplit = _run(suffix_mask(), [1], [x], "sim", _OFF)
    _, expected = _run(suffix_mask(), [1], [x], "interp")
    assert torch.equal(split, unsplit)
    torch.testing.assert_close(split, expected, rtol=1e-6, atol=1e-6)
