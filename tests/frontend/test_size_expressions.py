"""Tensor sizes that are expressions of T.dynamic sizes (`T.Tensor((seq_len * 4, 64), ...)`, as
TileLang's fp8 lighting indexer writes them): the call's tensor binds an affine one's size
(seq_len = 40 / 4), every one is checked against its tensor, outputs are allocated from them, and
the kernel reads the size it computes from the tensor's extent."""

import pytest
import torch

import tilec
import tilec.language as T
from tilec.compiler.cache import program_from_json, program_to_json

SEQ = T.dynamic("seq_len")


def pairs():
    @T.prim_func
    def main(Q: T.Tensor((SEQ * 4, 64), T.float32), O: T.Tensor((SEQ, 64), T.float32)):
        with T.Kernel(SEQ, threads=64) as bx:
            for j in T.Parallel(64):
                O[bx, j] = Q[bx * 4, j] + Q[bx * 4 + 3, j]

    return main


def checked():
    """seq_len bound by X's plain dimension; Y's `seq_len * 2 + 1` is checked against it."""

    @T.prim_func
    def main(X: T.Tensor((SEQ,), T.float32), Y: T.Tensor((SEQ * 2 + 1,), T.float32), Z: T.Tensor((SEQ,), T.float32)):
        with T.Kernel(SEQ, threads=32) as i:
            Z[i] = X[i] + Y[2 * i + 1]

    return main


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_an_affine_size_binds_its_symbol(target):
    q = torch.randn(40, 64)
    out = tilec.compile(pairs(), out_idx=[-1], target=target)(q)
    assert out.shape == (10, 64)
    assert torch.equal(out, q[0::4] + q[3::4])


@pytest.mark.parametrize("target", ["interp", "sim"])
def test_an_expression_is_checked_against_a_plain_binding(target):
    kernel = tilec.compile(checked(), out_idx=[-1], target=target)
    x, y = torch.randn(7), torch.randn(15)
    assert torch.equal(kernel(x, y), x + y[1::2])
    with pytest.raises(tilec.TilecError, match=r"a dimension of `Y` is \(\(T.dynamic\('seq_len'\) \* 2\) \+ 1\) "
                                               r"= 15, got 16") as e:
        kernel(x, torch.randn(16))
    assert f"test_size_expressions.py:{_line('def main(X: T.Tensor((SEQ,)')}:" in str(e.value)


def _line(text: str) -> int:
    return next(i for i, line in enumerate(open(__file__), 1) if text in line)


def test_a_size_that_no_tensor_binds_is_a_located_error():
    """`seq_len * seq_len` is not affine: no tensor binds seq_len, so the call cannot size it."""

    @T.prim_func
    def main(X: T.Tensor((SEQ * SEQ,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            X[0] = 1.0

    kernel = tilec.compile(main, target="interp")
    with pytest.raises(tilec.TilecError, match=r"a dimension of `X` is \(T.dynamic\('seq_len'\) \* "
                                               r"T.dynamic\('seq_len'\)\), whose size seq_len no tensor binds") as e:
        kernel(torch.randn(16))
    assert f"test_size_expressions.py:{_line('def main(X: T.Tensor((SEQ * SEQ,)')}:" in str(e.value)
    assert "give a tensor a plain dimension seq_len" in str(e.value)


def test_an_extent_that_no_size_gives_is_a_located_error():
    kernel = tilec.compile(pairs(), out_idx=[-1], target="interp")
    with pytest.raises(tilec.TilecError, match=r"but 41 is not 4 \* seq_len \+ 0 for any size seq_len") as e:
        kernel(torch.randn(41, 64))
    line = next(i for i, text in enumerate(open(__file__), 1) if "def main(Q: T.Tensor((SEQ * 4" in text)
    assert f"test_size_expressions.py:{line}:" in str(e.value)


def test_an_expression_of_a_const_is_refused_where_it_is_written():
    from tilec.language.structure import Symbol

    n = Symbol("n", dynamic=False)  # what T.const("n") stands for

    @T.prim_func
    def main(X: T.Tensor((n * 2,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            X[0] = 1.0

    with pytest.raises(tilec.TilecError, match=r"tensor `X`: size \(T.const\('n'\) \* 2\) must be an expression "
                                               r"of T.dynamic sizes") as e:
        tilec.compile(main, target="interp")
    assert f"test_size_expressions.py:{_line('def main(X: T.Tensor((n * 2,)')}:" in str(e.value)


def test_the_calling_convention_round_trips_through_the_cache():
    program = tilec.compile(pairs(), out_idx=[-1], target="interp").program
    again = program_from_json(program_to_json(program))
    assert repr(again.params[0].shape[0]) == repr(program.params[0].shape[0]) == "(T.dynamic('seq_len') * 4)"


def test_it_builds_for_sm_90a(ptxas):
    ptx = tilec.compile(pairs(), out_idx=[-1], target="sm_90a").get_kernel_source()
    assert ".entry" in ptx
