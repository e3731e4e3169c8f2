"""T.reshape of a fragment (TileLang's fp8 lightning indexer: a gemm accumulator of N x (Q*H) seen
as N x Q x H, scaled per head and reduced over the heads): the view is the fragment's registers
with the layout reshaped (`Layout.reshaped`), so the T.Parallel over the view and the reduction
read them in place. Accesses the view's registers do not serve are located errors."""

# ruff: noqa: F841

import inspect

import pytest
import torch

import tilec
import tilec.language as T


def per_head_logits(N=64, Q=4, H=16, K=32, transposed=False):
    @T.prim_func
    def main(A: T.Tensor((N, K), T.float16), B: T.Tensor((Q * H, K), T.float16), W: T.Tensor((Q, H), T.float32),
             O: T.Tensor((Q, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((N, K), T.float16)
            b_s = T.alloc_shared((Q * H, K), T.float16)
            s = T.alloc_fragment((N, Q * H), T.float32)
            s3 = T.reshape(s, (N, Q, H))
            w = T.alloc_fragment((Q, H), T.float32)
            logits = T.alloc_fragment((N, Q), T.float32)
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.copy(W, w)
            T.gemm(a_s, b_s, s, transpose_B=True, clear_accum=True)
            if transposed:
                for n, h, q in T.Parallel(N, H, Q):
                    s3[n, q, h] = T.max(s3[n, q, h], 0) * w[q, h]  # ERR
            else:
                for n, q, h in T.Parallel(N, Q, H):
                    s3[n, q, h] = T.max(s3[n, q, h], 0) * w[q, h]
            T.reduce_sum(s3, logits, dim=-1, clear=True)
            for q, n in T.Parallel(Q, N):
                O[q, n] = logits[n, q]

    return main


def _inputs():
    torch.manual_seed(0)
    return torch.randn(64, 32).half(), torch.randn(64, 32).half(), torch.randn(4, 16)


def _reference(a, b, w):
    s = (a.double() @ b.double().T).reshape(64, 4, 16)
    return (s.clamp(min=0) * w.double()).sum(-1).T.float()


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_a_reshaped_accumulator_is_scaled_and_reduced_in_place(target):
    kernel = tilec.compile(per_head_logits(), out_idx=[3], target=target)
    if target == "sim":
        ir = kernel.get_ir("tile-opt")
        assert "tile.reshape %s " in ir and "%s_shared" not in ir and "%s_as0" not in ir  # no copy of the fragment
    a, b, w = _inputs()
    torch.testing.assert_close(kernel(a, b, w), _reference(a, b, w), atol=1e-3, rtol=1e-3)


def _marked_line(make) -> int:
    lines, first = inspect.getsourcelines(make)
    return first + next(k for k, line in enumerate(lines) if "# ERR" in line)


def test_an_access_the_view_does_not_hold_is_a_located_error():
    with pytest.raises(tilec.TilecError, match="not held by the thread that accesses it") as e:
        tilec.compile(per_head_logits(transposed=True), out_idx=[3], target="sim")
    assert f"test_fragment_reshape.py:{_marked_line(per_head_logits)}:" in str(e.value).splitlines()[0]


def written_through_the_view_in_a_loop():
    """A serial loop writes the fragment through its view, then reads the fragment at permuted rows
    (through its shared copy, which must be taken inside the loop, after the view's writes)."""

    @T.prim_func
    def main(O: T.Tensor((2, 8), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_fragment((8, 16), T.float32)
            s3 = T.reshape(s, (8, 4, 4))
            for k in T.serial(2):
                for i, a, b in T.Parallel(8, 4, 4):
                    s3[i, a, b] = k * 100 + i
                for i in T.Parallel(8):
                    O[k, i] = s[7 - i, 0]

    return main


def test_writes_through_the_view_reach_the_fragments_shared_copy():
    o = torch.zeros(2, 8)
    tilec.compile(written_through_the_view_in_a_loop(), target="sim")(o)
    want = torch.arange(7, -1, -1, dtype=torch.float32)
    torch.testing.assert_close(o, torch.stack([want, want + 100]))


def view_of_a_view():
    @T.prim_func
    def main(O: T.Tensor((8, 16), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_fragment((8, 16), T.float32)
            s3 = T.reshape(s, (8, 4, 4))
            s4 = T.reshape(s3, (8, 16))  # ERR
            T.fill(s, 1.0)
            for i, j in T.Parallel(8, 16):
                O[i, j] = s4[i, j]

    return main


def test_a_view_of_a_view_is_a_located_error():
    with pytest.raises(tilec.TilecError, match="T.reshape of a reshaped fragment") as e:
        tilec.compile(view_of_a_view(), target="sim")
    assert f"test_fragment_reshape.py:{_marked_line(view_of_a_view)}:" in str(e.value).splitlines()[0]


def a_shape_the_layout_does_not_split_into():
    @T.prim_func
    def main(X: T.Tensor((3, 128), T.float32), O: T.Tensor((2, 192), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((3, 128), T.float32)
            x2 = T.reshape(x, (2, 192))  # ERR
            T.copy(X, x)
            for i, j in T.Parallel(2, 192):
                O[i, j] = x2[i, j]

    return main


def test_a_shape_the_layout_does_not_split_into_is_a_located_error():
    with pytest.raises(tilec.TilecError, match=r"T.reshape of fragment x to 2x192: its layout .* does not split into "
                                               r"that shape") as e:
        tilec.compile(a_shape_the_layout_does_not_split_into(), target="sim")
    assert f"test_fragment_reshape.py:{_marked_line(a_shape_the_layout_does_not_split_into)}:" in \
        str(e.value).splitlines()[0]


def test_assembles_for_sm_90a(ptxas):
    tilec.compile(per_head_logits(), out_idx=[3], target="sm_90a")


@pytest.mark.gpu
def test_on_the_gpu():
    a, b, w = _inputs()
    kernel = tilec.compile(per_head_logits(), out_idx=[3], target="cuda")
    torch.testing.assert_close(kernel(a.cuda(), b.cuda(), w.cuda()).cpu(), _reference(a, b, w), atol=1e-3, rtol=1e-3)
