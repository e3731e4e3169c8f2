"""pass_configs (issue 8, item 4): every key tilec accepts is honoured, or reported by name as
not applicable (a TilecWarning and the `tilec` logger), or refused with a located error; an
unknown key is an error. One test per fate, and one per key tilec acts on."""

import inspect
import os
import shutil
import subprocess
import sys
import textwrap
import warnings

import pytest

import tilec
import tilec.language as T
from tilec import TilecError, config
from tilec.compiler import pass_configs
from tilec.compiler.pass_configs import (
    HONOURED,
    KEYS,
    NOT_APPLICABLE,
    REFUSED,
    check_pass_configs,
)
from tilec.errors import SourceLoc, TilecWarning

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import kernel_cases as kc  # noqa: E402

LOC = SourceLoc(__file__, 1, 1)
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not found")


def exp_kernel():
    @T.prim_func
    def main(A: T.Tensor((128,), T.float32), B: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                B[i] = T.exp2(A[i])

    return main


@pytest.fixture
def no_cache(monkeypatch):
    monkeypatch.setattr(config, "DISABLE_CACHE", True)
    monkeypatch.setattr(config, "DUMP_IR", None)


# --------------------------------------------------------------------------- #
# The table
# --------------------------------------------------------------------------- #


def test_every_key_has_a_fate_and_a_reason():
    assert {k.fate for k in KEYS.values()} == {HONOURED, NOT_APPLICABLE, REFUSED}
    for key in KEYS.values():
        assert key.why and key.attr.isupper(), key
        assert key.name.startswith(("tl.", "tilec.", "tir.", "tirx.", "cuda.")), key


def test_the_keys_tilelang_examples_use_are_known():
    used = ["tl.enable_fast_math", "tl.disable_warp_specialized", "tl.disable_tma_lower",
            "tl.disable_thread_storage_sync", "tl.ptxas_register_usage_level", "tl.layout_visualization_enable",
            "tl.layout_visualization_formats", "tl.enable_ptxas_verbose_output",
            "tl.enable_aggressive_shared_memory_merge", "tl.disable_fast_math"]
    assert set(used) <= set(KEYS)


def test_enum_keys_are_read_by_their_value():
    class Key(str):
        value = "tl.enable_fast_math"

    assert check_pass_configs({Key("TL_ENABLE_FAST_MATH"): True}, LOC) == {"tl.enable_fast_math": True}


# --------------------------------------------------------------------------- #
# Fates
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("name", [k.name for k in KEYS.values() if k.fate == HONOURED and k.values == (True, False)])
def test_honoured_keys_are_accepted_without_a_warning(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_pass_configs({name: True}, LOC) == {name: True}


def test_a_value_an_honoured_key_cannot_take_is_an_error():
    with pytest.raises(TilecError, match=r"'tl.config_index_bitwidth' = 16: the value must be one of 32, 64"):
        check_pass_configs({"tl.config_index_bitwidth": 16}, LOC)
    with pytest.raises(TilecError, match=r"'tl.ptxas_register_usage_level' = 11"):
        check_pass_configs({"tl.ptxas_register_usage_level": 11}, LOC)


def test_a_not_applicable_key_warns_by_name_at_the_kernel(caplog):
    def factory():
        pass

    with pytest.warns(TilecWarning, match="'tl.disable_thread_storage_sync' = True is not applicable to tilec and "
                                          "is ignored: tilec still inserts the barriers") as record:
        tilec.jit(pass_configs={"tl.disable_thread_storage_sync": True})(factory)
    line = inspect.getsourcelines(factory)[1]
    assert record[0].filename == __file__ and record[0].lineno == line
    assert any("tl.disable_thread_storage_sync" in r.getMessage() and r.name == "tilec" for r in caplog.records)


@pytest.mark.parametrize("name, value", [("tl.disable_thread_storage_sync", False), ("tl.enable_async_copy", True),
                                         ("tir.disable_vectorize", False), ("tl.layout_visualization_formats", "")])
def test_a_not_applicable_key_at_its_inert_value_is_silent(name, value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_pass_configs({name: value}, LOC)


def test_a_refused_key_is_a_located_error():
    with pytest.raises(TilecError, match=r"'tl.device_compile_flags' = '-DX=1' is not supported: tilec compiles "
                                         r"no CUDA C") as info:
        check_pass_configs({"tl.device_compile_flags": "-DX=1"}, LOC)
    assert info.value.loc == LOC and "tl.enable_fast_math" in info.value.hint
    with pytest.raises(TilecError, match="'tir.add_lower_pass'"):
        check_pass_configs({"tir.add_lower_pass": [(1, lambda mod: mod)]}, LOC)
    check_pass_configs({"tl.device_compile_flags": None, "tir.add_lower_pass": []}, LOC)  # inert


def test_an_unknown_key_is_an_error_with_the_closest_name():
    with pytest.raises(TilecError, match=r"unknown pass-config key 'tl.enable_fast_maths'") as info:
        check_pass_configs({"tl.enable_fast_maths": True}, LOC)
    assert "did you mean 'tl.enable_fast_math'?" in info.value.hint


def test_tilec_log_prints_the_warning_on_stderr(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(textwrap.dedent("""
        import warnings
        import tilec
        warnings.simplefilter("ignore")
        def f():
            pass
        tilec.jit(pass_configs={"tl.enable_lower_ldgstg": True})(f)
    """))
    env = dict(os.environ, TILEC_LOG="info")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=True)
    assert "[tilec WARNING]" in out.stderr and "'tl.enable_lower_ldgstg' = True is not applicable" in out.stderr
    quiet = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k not in ("TILEC_LOG", "TILELANG_LOG")})
    assert quiet.returncode == 0 and quiet.stderr == ""


# --------------------------------------------------------------------------- #
# What the honoured keys do
# --------------------------------------------------------------------------- #


def test_disable_wgmma_overrides_enable_wgmma(no_cache):
    case = kc.WGMMA_CASES[0]
    on = tilec.compile(case.prim, out_idx=case.out_idx, target="sim", pass_configs={"tilec.enable_wgmma": True})
    off = tilec.compile(case.prim, out_idx=case.out_idx, target="sim",
                        pass_configs={"tilec.enable_wgmma": True, "tl.disable_wgmma": True})
    assert "wgmma" in on.get_ir("thread")
    assert "wgmma" not in off.get_ir("thread") and "nvvm.mma.sync" in off.get_ir("thread")


def test_fast_math_and_its_override(no_cache):
    def ptx(configs):
        return tilec.compile(exp_kernel(), out_idx=[1], target="sm_90a", pass_configs=configs).get_kernel_source()

    assert "ex2.approx.ftz.f32" in ptx({"tl.enable_fast_math": True})
    assert "ex2.approx.ftz.f32" not in ptx({})
    assert "ex2.approx.ftz.f32" not in ptx({"tl.enable_fast_math": True, "tl.disable_fast_math": True})


@needs_ptxas
def test_register_usage_level_and_verbose_output_reach_ptxas(no_cache, monkeypatch, capfd):
    from tilec.targets import nvptx

    seen = []
    real = nvptx.assemble
    monkeypatch.setattr(nvptx, "assemble", lambda ptx, arch, **kw: seen.append(kw) or real(ptx, arch, **kw))
    kernel = tilec.compile(exp_kernel(), out_idx=[1], target="sm_90a",
                           pass_configs={"tl.ptxas_register_usage_level": 5, "tl.enable_ptxas_verbose_output": True})
    assert [kw["extra_args"] for kw in seen] == [("--register-usage-level=5",)]
    assert kernel._backend.cubin.startswith(b"\x7fELF")
    assert "registers" in capfd.readouterr().err  # ptxas -v's report
    tilec.compile(exp_kernel(), out_idx=[1], target="sm_90a", pass_configs={})
    assert seen[-1]["extra_args"] == () and "registers" not in capfd.readouterr().err


def test_without_ptxas_the_ptxas_keys_warn(no_cache, monkeypatch):
    from tilec.targets import nvptx

    monkeypatch.setattr(nvptx, "find_ptxas", lambda: None)
    with pytest.warns(TilecWarning, match="'tl.ptxas_register_usage_level' is not applied to kernel main: no ptxas"):
        tilec.compile(exp_kernel(), out_idx=[1], target="sm_90a", pass_configs={"tl.ptxas_register_usage_level": 3})


@pytest.mark.parametrize("target", ["sm_90a", "sim"])
def test_enable_dump_ir_writes_every_stage(no_cache, tmp_path, target):
    folder = tmp_path / "dump"
    tilec.compile(exp_kernel(), out_idx=[1], target=target,
                  pass_configs={"tl.enable_dump_ir": True, "tl.dump_ir_path": str(folder)})
    names = {p.name for p in folder.iterdir()}
    assert {"main.tile-legalize-bounds.mlir", "main.tile-plan-shared-memory.mlir", "main.thread.mlir"} <= names
    if target == "sm_90a":
        assert {"main.0-tile.mlir", "main.1-tile-opt.mlir", "main.2-thread.mlir", "main.4-ptx.ptx"} <= names


def test_dump_dir_prefers_the_environment(monkeypatch):
    monkeypatch.setattr(config, "DUMP_IR", "/from/env")
    assert pass_configs.dump_dir({"tl.enable_dump_ir": True, "tl.dump_ir_path": "x"}) == "/from/env"
    monkeypatch.setattr(config, "DUMP_IR", None)
    assert pass_configs.dump_dir({"tl.enable_dump_ir": True}) == "dump_ir"
    assert pass_configs.dump_dir({"tl.dump_ir_path": "x"}) is None


def test_setting_pass_configs_or_target_on_a_jit_function_builds_new_kernels():
    """`jit_fn.pass_configs = {...}` (as bench scripts do between variants) must not hand back the
    kernel built with the previous configs, and is checked like the decorator's argument."""

    @tilec.jit(out_idx=[-1], target="sm_90a")
    def gemm(m=256, n=256, k=128):
        return kc.gemm_tiles(m, n, k, 64, 64, 64, "float16")

    assert "bar.arrive" in gemm().get_kernel_source()  # ping-pong, the default for one warpgroup
    gemm.pass_configs = {"tilec.pingpong": False}
    assert "bar.arrive" not in gemm().get_kernel_source()
    gemm.target = "sm_80"
    assert "wgmma" not in gemm().get_kernel_source()
    with pytest.raises(TilecError, match="unknown pass-config key"):
        gemm.pass_configs = {"tilec.pingpongg": True}
