"""tilec.cache: content-addressed entries, atomic writes, the disable flag, corruption, the memo."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tilec import config

from tilec import cache


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEC_DISABLE_CACHE", raising=False)
    monkeypatch.setattr(config, "DISABLE_CACHE", False)
    return tmp_path / "cache"


def test_key_is_stable_and_sensitive():
    k = cache.key("src", {"b": 1, "a": 2}, "sm_90a")
    assert len(k) == 64 and int(k, 16) >= 0
    assert k == cache.key("src", {"a": 2, "b": 1}, "sm_90a")  # dict order does not matter
    assert k != cache.key("src", {"a": 2, "b": 1}, "sm_80")
    assert k != cache.key("src2", {"a": 2, "b": 1}, "sm_90a")
    # parts are length-prefixed: moving a boundary changes the key
    assert cache.key("ab", "c") != cache.key("a", "bc")


def test_key_includes_versions(monkeypatch):
    k = cache.key("x")
    monkeypatch.setattr("tilec._version.__version__", "999.0")
    assert cache.key("x") != k


def test_put_get_roundtrip(cache_dir):
    k = cache.key("kernel")
    entry = {"kernel_name": "k", "launch": {"block": [128, 1, 1]}, "ptx": b".version 8.0\n", "cubin": b"\x7fELF\0\1"}
    assert cache.put(k, entry)
    folder = cache_dir / k[:2] / k
    assert sorted(os.listdir(folder)) == ["cubin.bin", "meta.json", "ptx.bin"]
    assert cache.get(k) == entry
    assert cache.get(cache.key("other")) is None


def test_writes_are_atomic_no_temp_files_left(cache_dir):
    k = cache.key("atomic")
    for i in range(3):  # overwrite in place
        assert cache.put(k, {"n": i, "blob": bytes([i]) * 100})
    assert cache.get(k)["n"] == 2
    leftovers = [f for f in os.listdir(cache_dir / k[:2] / k) if f.startswith(".tmp-")]
    assert leftovers == []


def test_failed_write_keeps_old_entry(cache_dir, monkeypatch):
    k = cache.key("keep")
    assert cache.put(k, {"n": 1, "blob": b"old"})

    def broken_replace(src, dst):
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(os, "replace", broken_replace)
        assert cache.put(k, {"n": 2, "blob": b"new"}) is False  # never raises into a compile
    assert cache.get(k) == {"n": 1, "blob": b"old"}
    assert not [f for f in os.listdir(cache_dir / k[:2] / k) if f.startswith(".tmp-")]


def test_disable_flag(monkeypatch, cache_dir):
    k = cache.key("off")
    monkeypatch.setattr(config, "DISABLE_CACHE", True)
    assert cache.put(k, {"a": 1}) is False
    assert not cache_dir.exists()
    monkeypatch.setattr(config, "DISABLE_CACHE", False)
    assert cache.put(k, {"a": 1})
    monkeypatch.setattr(config, "DISABLE_CACHE", True)
    assert cache.get(k) is None


@pytest.mark.parametrize("damage", ["bad_json", "wrong_key", "short_blob", "missing_blob", "old_format"])
def test_corrupted_entry_is_a_miss_and_is_rewritten(cache_dir, damage):
    k = cache.key("corrupt", damage)
    assert cache.put(k, {"a": 1, "ptx": b"0123456789"})
    folder = cache_dir / k[:2] / k
    meta = json.loads((folder / "meta.json").read_text())
    if damage == "bad_json":
        (folder / "meta.json").write_text("{not json")
    elif damage == "wrong_key":
        meta["key"] = "0" * 64
        (folder / "meta.json").write_text(json.dumps(meta))
    elif damage == "short_blob":
        (folder / "ptx.bin").write_bytes(b"0123")
    elif damage == "missing_blob":
        (folder / "ptx.bin").unlink()
    else:
        meta["format"] = cache.FORMAT - 1
        (folder / "meta.json").write_text(json.dumps(meta))
    assert cache.get(k) is None
    assert cache.put(k, {"a": 2, "ptx": b"abc"})
    assert cache.get(k) == {"a": 2, "ptx": b"abc"}


def test_blob_names_must_be_file_names():
    with pytest.raises(ValueError):
        cache.put(cache.key("x"), {"../evil": b"x"})


# ---- the memo -------------------------------------------------------------------------------


def _factory(M, N, dtype="float16"):
    return (M, N, dtype)


def test_memo_key_depends_on_arguments_and_target():
    k = cache.memo_key(_factory, (128, 64), {}, "sm_90a", {})
    assert k is not None
    assert k == cache.memo_key(_factory, (128, 64), {}, "sm_90a", {})
    assert k != cache.memo_key(_factory, (128, 32), {}, "sm_90a", {})
    assert k != cache.memo_key(_factory, (128, 64), {"dtype": "bfloat16"}, "sm_90a", {})
    assert k != cache.memo_key(_factory, (128, 64), {}, "sm_80", {})
    assert k != cache.memo_key(_factory, (128, 64), {}, "sm_90a", {"tl.enable_fast_math": True})


def test_memo_key_sees_closure_cells():
    def make(block):
        def kernel(n):
            return n * block
        return kernel

    assert cache.memo_key(make(64)) != cache.memo_key(make(128))


def test_memo_key_refuses_unstable_reprs():
    class Opaque:
        pass

    assert cache.memo_key(_factory, (Opaque(), 1)) is None


def test_memo_key_changes_with_the_source(tmp_path):
    src = tmp_path / "kmod.py"
    code = "def k(n):\n    return n + {}\n"
    keys = []
    for value in (1, 2):
        src.write_text(code.format(value))
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
            import sys; sys.path.insert(0, {str(tmp_path)!r})
            import kmod
            from tilec import cache
            print(cache.memo_key(kmod.k, (3,), {{}}, "sm_90a", {{}}))
        """)], capture_output=True, text=True, check=True).stdout.strip()
        keys.append(out)
    assert keys[0] != keys[1] and "None" not in keys


def test_memo_roundtrip_of_program():
    import tilec
    import tilec.language as T

    @tilec.jit
    def scale(A, block: int = 128):
        N = T.dynamic("N")
        A: T.Tensor((N, 4), T.float16)
        B = T.empty((N, 4), T.float16)
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i, j in T.Parallel(block, 4):
                B[bx * block + i, j] = A[bx * block + i, j] * 2
        return B

    program = scale.build_program(block=128)
    mk = cache.memo_key(scale.fn, (), {"block": 128}, "sm_90a", {})
    assert cache.memo_put(mk, program, "f" * 64)
    hit = cache.memo_get(mk)
    assert hit["build_key"] == "f" * 64
    back = cache.program_from_json(hit["program"])
    assert back.module is None
    assert (back.name, back.returns, back.loc) == (program.name, program.returns, program.loc)
    assert back.params == program.params
