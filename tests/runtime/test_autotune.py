"""tilec.autotune on the interpreter: configs are compiled, checked against a reference, timed,
and the best is kept in memory and on disk; wrong configs are skipped, bad use is a TilecError."""

import pytest
import torch

import tilec
import tilec.language as T
from tilec import config


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(config, "DISABLE_CACHE", False)
    monkeypatch.setattr(config, "AUTO_TUNING_DISABLE_CACHE", False)


def make_scale(wrong_block=None):
    @tilec.autotune(configs=[{"block": 32}, {"block": 64}, {"block": 128}], warmup=1, rep=5,
                    ref_prog=lambda a: a * 2.0)
    @tilec.jit(out_idx=[1], target="interp")
    def scale(n, block=32):
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
            with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
                for i in T.Parallel(block):
                    if bx * block + i < n:
                        # one configuration computes the wrong thing: the check must reject it
                        B[bx * block + i] = A[bx * block + i] * (3.0 if block == wrong_block else 2.0)

        return main

    return scale


def test_best_config_is_a_checked_one_and_is_remembered():
    scale = make_scale(wrong_block=64)
    kernel = scale(300)
    a = torch.randn(300)
    assert torch.allclose(kernel(a), a * 2)
    by_config = {r["config"]["block"]: r for r in scale.results}
    assert "error" in by_config[64] and "ms" in by_config[32] and "ms" in by_config[128]
    assert scale(300) is kernel  # the choice is kept in memory


def test_choice_comes_back_from_disk():
    first = make_scale()
    first(200)
    again = make_scale()
    again(200)
    assert again.results == []  # nothing was measured: the disk cache answered


def test_autotune_must_wrap_a_jit_function():
    with pytest.raises(tilec.TilecError, match="stacked on a @tilec.jit"):
        tilec.autotune(configs=[{"block": 1}])(lambda n: None)


def test_unknown_config_key_is_an_error():
    @tilec.autotune(configs=[{"blok": 32}])
    @tilec.jit(out_idx=[1], target="interp")
    def scale(n, block=32):
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
            with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
                for i in T.Parallel(block):
                    B[bx * block + i] = A[bx * block + i]

        return main

    with pytest.raises(tilec.TilecError, match="blok"):
        scale(64)


def test_no_passing_config_is_an_error_naming_each():
    scale = make_scale(wrong_block=None)
    scale.configs = [{"block": 32}]
    scale.check["ref_prog"] = lambda a: a * 5.0  # nothing can match
    with pytest.raises(tilec.TilecError, match=r"no configuration of scale compiled and passed the check \(\{'block': 32\}"):
        scale(64)


def test_unknown_target_is_an_error():
    from tilec.target import resolve_target

    with pytest.raises(tilec.TilecError, match="unknown target 'sm_42'"):
        resolve_target("sm_42")
    with pytest.raises(tilec.TilecError, match="ROCm"):
        resolve_target("gfx942")
