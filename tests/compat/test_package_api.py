"""The TileLang package API in tilec proper (issue 11, items 1, 2, 3, 6): names, dtypes, helpers, the mapping."""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch

import tilec
import tilec.language as T
from tilec.errors import TilecError, TilecWarning


# --- the module mapping ------------------------------------------------------------------


def test_python_m_tilec_compat_runs_a_tilelang_script(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import sys
        import tilelang
        import tilelang.language as T
        from tilelang.autotuner import autotune, set_autotune_inputs
        from tilelang import tvm as tvm
        assert tilelang is sys.modules["tilec"]
        assert T is sys.modules["tilec.language"]
        print("ok", tilelang.cdiv(7, 2), T.float, sys.argv[1:])
    """))
    out = subprocess.run([sys.executable, "-m", "tilec.compat", str(script), "a", "b"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok 4 float32 ['a', 'b']"


def test_a_tilelang_module_tilec_lacks_says_so():
    code = "import tilec.compat; tilec.compat.install(); import tilelang.no_such_module"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "tilec does not provide this TileLang module" in out.stderr


def test_install_maps_submodules_to_the_same_objects():
    from tilec import compat

    compat.install()
    try:
        import tilelang.language  # noqa: F401
        import tilelang.profiler

        assert sys.modules["tilelang.language"] is T
        assert tilelang.profiler is tilec.profiler
    finally:
        compat.uninstall()
        for name in [n for n in sys.modules if n == "tilelang" or n.startswith("tilelang.")]:
            del sys.modules[name]


# --- package-level names -------------------------------------------------------------------


def test_pass_config_keys_are_strings_tilec_accepts():
    key = tilec.PassConfigKey.TL_ENABLE_FAST_MATH
    assert key == "tl.enable_fast_math" and isinstance(key, str)
    from tilec.transform import PassConfigKey

    assert PassConfigKey is tilec.PassConfigKey
    assert tilec.PassConfigKey.TL_DISABLE_TMA_LOWER.value == "tl.disable_tma_lower"


def test_cdiv_and_next_power_of_2_follow_tilelang():
    assert tilec.cdiv(7, 2) == 4 and tilec.cdiv(8, 2) == 4
    from tilec.math import next_power_of_2

    assert [next_power_of_2(x) for x in (1, 2, 3, 5, 64, 65)] == [1, 2, 4, 8, 64, 128]
    assert tilec.next_power_of_2 is next_power_of_2


def test_disable_cache_turns_the_kernel_cache_off(monkeypatch):
    from tilec import config
    from tilec.compiler import cache

    monkeypatch.setattr(config, "DISABLE_CACHE", False)
    assert tilec.is_cache_enabled() and cache.enabled()
    tilec.disable_cache()
    assert not tilec.is_cache_enabled() and not cache.enabled()
    assert tilec.env.TILELANG_CACHE_DIR == config.CACHE_DIR
    tilec.enable_cache()
    assert cache.enabled()


def test_tensor_supply_type_is_one_enum():
    from tilec.profiler import TensorSupplyType
    from tilec.utils.tensor import TensorSupplyType as FromUtils

    assert tilec.TensorSupplyType is TensorSupplyType is FromUtils


def test_torch_assert_close_counts_mismatches():
    from tilec.testing import torch_assert_close

    a = torch.zeros(1000)
    b = a.clone()
    b[0] = 1.0
    assert torch_assert_close(a, b, max_mismatched_ratio=0.01)
    with pytest.raises(AssertionError, match="Too many mismatched elements: 1 > 0"):
        torch_assert_close(a, b, max_mismatched_ratio=0.0)


def test_small_helpers():
    from tilec.carver.arch import driver
    from tilec.contrib import nvcc
    from tilec.language.fp8 import determine_fp8_type

    assert nvcc.parse_compute_version("9.0") == (9, 0)
    assert nvcc.get_target_compute_version("sm_90a") == "9.0"
    assert determine_fp8_type("e5m2") is T.float8_e5m2
    assert callable(driver.get_num_sms)


def test_a_cuda_postprocessor_is_reported_not_dropped_silently():
    from tilec.engine.callback import register_cuda_postproc_callback

    with pytest.warns(TilecWarning, match="tweak is registered but never called"):
        @register_cuda_postproc_callback
        def tweak(code, target):
            return code


def test_tvm_imports_but_refuses_when_used():
    from tilec.refused import NotEmulated
    from tilec.tvm import DataType, tirx

    assert DataType("float16").bits == 16

    def annotated(x: tirx.PrimExpr):  # an annotation evaluates: fine
        return x

    with pytest.raises(NotEmulated, match="tvm.tirx.const: tilec builds no TVM TIR expressions"):
        tirx.const(1, "int32")
    assert not isinstance(3, tirx.Var)


# --- dtypes ------------------------------------------------------------------------------


def test_dtypes_are_strings_as_in_tilelang():
    assert isinstance(T.bfloat16, str)
    assert getattr(torch, T.bfloat16) is torch.bfloat16
    assert T.float == "float32" and T.float is T.float32
    assert T.int is T.int32 and T.uint is T.uint32 and T.half is T.float16
    assert f"{T.float16}" == "float16" and repr(T.float16) == "T.float16"
    assert T.float16 == "half" and T.float16 == torch.float16


def test_t_dtype_normalizes_and_has_bits_and_torch():
    assert T.dtype("half") is T.float16
    assert T.dtype(torch.bfloat16) is T.bfloat16
    assert T.dtype(int) is T.int32 and T.dtype(float) is T.float32 and T.dtype(bool) is T.bool
    assert T.dtype(T.uint16).bits == 16 and T.uint64.bits == 64
    assert T.dtype("float32").as_torch() is torch.float32
    assert T.int4.as_torch() is torch.int8  # storage
    with pytest.raises(TypeError, match="Invalid DataType"):
        T.dtype("float7")


def test_new_dtype_names_exist():
    for name in ("uint16", "uint32", "uint64", "tfloat32", "int4", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
                 "float4_e2m1fn", "float8_e8m0fnu"):
        assert getattr(T, name).name in (name, "float8_e4m3fn")


def test_math_builtins_compute_on_python_numbers_outside_kernels():
    assert T.max(3, 4) == 4 and T.min(3, 4) == 3
    assert T.ceildiv(10, 3) == 4 and T.floordiv(-7, 2) == -4 and T.floormod(-7, 2) == 1
    assert T.clamp(5, 0, 3) == 3 and T.exp(0.0) == 1.0 and T.abs(-2) == 2
    with pytest.raises(RuntimeError, match="only usable inside"):
        T.copy(1, 2)


# --- testing requirements ------------------------------------------------------------------


def test_requirements_skip_as_pytest_marks():
    from tilec import testing

    def f():
        pass

    marked = testing.requires_cuda_compute_version_ge(99, 0)(f)
    marks = {m.name: m for m in marked.pytestmark}
    assert "skipif" in marks
    reasons = [m.kwargs["reason"] for m in marked.pytestmark]
    assert any("Requires CUDA compute ge 99.0" in r for r in reasons)
    with pytest.raises(ValueError, match="Invalid mode"):
        testing.requires_cuda_compute_version(9, 0, mode="approx")


def test_cuda_on_cpu_maps_torch_cuda_to_the_cpu():
    from tilec.testing import cuda_on_cpu

    if torch.cuda.is_available():
        pytest.skip("a real GPU is visible")
    cuda_on_cpu.install()
    try:
        x = torch.randn(4, device="cuda")
        assert x.device.type == "cpu" and x.cuda() is x and x.to("cuda:0").device.type == "cpu"
        assert torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        end.record()
        torch.cuda.synchronize()
        assert start.elapsed_time(end) >= 0
        from tilec.target import resolve_target

        assert resolve_target("auto").kind == "interp"
    finally:
        cuda_on_cpu.uninstall()
    assert not torch.cuda.is_available()
    assert torch.randn(2).device.type == "cpu"


def test_torch_dtype_table_tilelangs_examples_import():
    torch = pytest.importorskip("torch")
    from tilec.language.dtypes import _TORCH_DTYPE_TO_STR, dtype  # `tilelang.language.dtypes` under tilec.compat

    assert _TORCH_DTYPE_TO_STR[torch.float16] == "float16" and _TORCH_DTYPE_TO_STR[torch.bfloat16] == "bfloat16"
    assert dtype(_TORCH_DTYPE_TO_STR[torch.int8]) == "int8"
    import tilec.language.dtypes as dtypes

    with pytest.raises(AttributeError, match="no attribute '_NOT_THERE'"):
        dtypes._NOT_THERE  # noqa: B018
