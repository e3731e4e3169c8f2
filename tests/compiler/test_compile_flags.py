"""TileLang's `compile_flags` (nvcc's): the flags that change what a kernel computes become the pass
configs tilec honours (`--use_fast_math`, `--fmad=false`); flags with nothing to act on in tilec
are accepted; any other is reported by name, never dropped without a word. And the default FMA
contraction (nvcc's --fmad=true) that `--fmad=false` / `tilec.fp_contract=False` turns off."""

import warnings

import pytest

import tilec
import tilec.language as T
from tilec.compiler.pass_configs import compile_flag_configs
from tilec.errors import TilecError, TilecWarning


def test_flags_that_change_the_kernel_become_pass_configs():
    assert compile_flag_configs(["-O3", "--use_fast_math", "-DENABLE_BF16"], None) == {"tl.enable_fast_math": True}
    assert compile_flag_configs("-O3 --fmad=false", None) == {"tilec.fp_contract": False}
    assert compile_flag_configs(None, None) == {}


def test_flags_with_nothing_to_act_on_are_accepted_quietly():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compile_flag_configs(["-O3", "-Wno-deprecated-declarations", "-U__CUDA_NO_HALF_OPERATORS__",
                                     "-DNDEBUG", "-lineinfo", "-std=c++17"], None) == {}


def test_other_flags_are_reported_by_name():
    with pytest.warns(TilecWarning, match="compile flag '--ptxas-options=-v,--register-usage-level=10' is not "
                                          "applicable to tilec and is ignored"):
        compile_flag_configs(["-O3", "--ptxas-options=-v,--register-usage-level=10"], None)


def test_a_flag_that_is_not_a_string_is_an_error():
    with pytest.raises(TilecError, match="compile_flags holds 3, not a string"):
        compile_flag_configs(["-O3", 3], None)


def _axpy(n=256):
    @T.prim_func
    def main(X: T.Tensor((n,), T.float32), Y: T.Tensor((n,), T.float32), Z: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=n) as bx:
            for i in T.Parallel(n):
                Z[i] = X[i] * 3.0 + Y[i]

    return main


def _mul_add_ptx(**kw) -> str:
    ptx = tilec.compile(_axpy(), out_idx=[2], target="sm_90a", **kw).get_kernel_source()
    return ptx[ptx.index(".entry"):]


def test_a_multiply_feeding_an_add_contracts_to_an_fma_by_default():
    ptx = _mul_add_ptx()
    assert "fma.rn.f32" in ptx and "mul.rn.f32" not in ptx and "mul.f32" not in ptx


@pytest.mark.parametrize("how", [{"pass_configs": {"tilec.fp_contract": False}}, {"compile_flags": ["--fmad=false"]}],
                         ids=["pass_config", "compile_flag"])
def test_fmad_false_keeps_the_two_roundings(how):
    ptx = _mul_add_ptx(**how)
    assert "fma.rn.f32" not in ptx and ("mul.rn.f32" in ptx or "mul.f32" in ptx)


def test_jit_honours_compile_flags():
    @tilec.jit(out_idx=[2], target="sm_90a", compile_flags=["-O3", "--fmad=false"])
    def axpy(n: int = 256):
        return _axpy(n)

    assert axpy.pass_configs == {"tilec.fp_contract": False}


def test_jit_keeps_its_compile_flags_under_new_pass_configs():
    @tilec.jit(out_idx=[2], target="sm_90a", compile_flags=["--fmad=false"])
    def axpy(n: int = 256):
        return _axpy(n)

    axpy.pass_configs = {"tl.enable_fast_math": True}
    assert axpy.pass_configs == {"tilec.fp_contract": False, "tl.enable_fast_math": True}
    axpy.pass_configs = {"tilec.fp_contract": True}  # an explicit key wins over the flag
    assert axpy.pass_configs == {"tilec.fp_contract": True}


def test_a_bad_compile_flag_is_located_at_the_kernel():
    prim = _axpy()
    with pytest.raises(TilecError, match="compile_flags holds 3, not a string") as e:
        tilec.compile(prim, out_idx=[2], target="sm_90a", compile_flags=["-O3", 3])
    line = next(i for i, text in enumerate(open(__file__), 1) if "def main(X: T.Tensor((n,), T.float32)" in text)
    assert f"test_compile_flags.py:{line}" in str(e.value)


def test_an_ignored_compile_flag_is_reported_at_the_kernel():
    with pytest.warns(TilecWarning, match="compile flag '-maxrregcount=64' is not applicable") as caught:
        tilec.compile(_axpy(), out_idx=[2], target="sm_90a", compile_flags=["-maxrregcount=64"])
    line = next(i for i, text in enumerate(open(__file__), 1) if "def main(X: T.Tensor((n,), T.float32)" in text)
    hit = next(w for w in caught if issubclass(w.category, TilecWarning))
    assert hit.filename == __file__ and hit.lineno == line
