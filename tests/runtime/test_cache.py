"""tilec.cache: content-addressed entries, atomic writes, the disable flag, corruption, the memo."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

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


def test_disable_flag(monkeypatch, cache_dir):
    k = cache.key("off")
    monkeypatch.setattr(config, "DISABLE_CACHE", True)
    assert cache.put(k, {"a": 1}) is False
    assert not cache_dir.exists()
    monkeypatch.setattr(config, "DISABLE_CACHE", False)
    assert cache.put(k, {"a": 1})
    monkeypatch.setattr(config, "DISABLE_CACHE", True)
    assert cache.get(k) is None


def test_blob_names_must_be_file_names():
    with pytest.raises(ValueError):
        cache.put(cache.key("x"), {"../evil": b"x"})


def test_failed_write_keeps_old_entry(cache_dir, monkeypatch):
    k = cache.key("keep")
    assert cache.put(k, {"n": 1, "blob": b"old"})

    def broken_rename(src, dst):
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(os, "rename", broken_rename)
        assert cache.put(k, {"n": 2, "blob": b"new"}) is False  # never raises into a compile
    assert cache.get(k) == {"n": 1, "blob": b"old"}
    assert leftovers(cache_dir / k[:2]) == []


def test_failed_swap_puts_the_old_entry_back(cache_dir, monkeypatch):
    k = cache.key("swap")
    assert cache.put(k, {"n": 1, "blob": b"old"})
    real = os.rename

    def rename(src, dst):  # moving the old entry aside works; installing the new one fails
        if os.path.basename(dst) == k and ".tmp-" in src:
            raise OSError("injected")
        return real(src, dst)

    with monkeypatch.context() as m:
        m.setattr(os, "rename", rename)
        assert cache.put(k, {"n": 2, "blob": b"new"}) is False
    assert cache.get(k) == {"n": 1, "blob": b"old"}
    assert leftovers(cache_dir / k[:2]) == []


# ---- integrity: every damaged entry is a miss, and the next put replaces it ---------------------


def leftovers(parent):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith((".tmp-", ".old-"))) if parent.exists() else []


def write_meta(folder, header):
    """meta.json for `header` with a *correct* hash: what only a schema check can reject."""
    body = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    (folder / "meta.json").write_bytes(b'{"sha256":"' + hashlib.sha256(body).hexdigest().encode() +
                                       b'","header":' + body + b"}")


def test_meta_json_records_the_hashes(cache_dir):
    k = cache.key("hashes")
    assert cache.put(k, {"a": 1, "ptx": b"0123456789"})
    raw = (cache_dir / k[:2] / k / "meta.json").read_bytes()
    meta = json.loads(raw)
    body = json.dumps(meta["header"], sort_keys=True, separators=(",", ":")).encode()
    assert meta["sha256"] == hashlib.sha256(body).hexdigest() and body in raw
    assert meta["header"]["blobs"] == {"ptx": {"size": 10, "sha256": hashlib.sha256(b"0123456789").hexdigest()}}
    assert meta["header"]["key"] == k and meta["header"]["format"] == cache.FORMAT


def _schema(header, change):
    header = json.loads(json.dumps(header))
    change(header)
    return header


SCHEMA_DAMAGE = {  # meta.json with a valid hash over a header of the wrong shape
    "old_format": lambda h: h.update(format=cache.FORMAT - 1),
    "format_as_bool": lambda h: h.update(format=True),
    "other_key": lambda h: h.update(key="0" * 64),
    "entry_is_a_list": lambda h: h.update(entry=[1, 2]),
    "blobs_is_a_list": lambda h: h.update(blobs=["ptx"]),
    "blob_size_is_a_string": lambda h: h["blobs"]["ptx"].update(size="10"),
    "blob_size_negative": lambda h: h["blobs"]["ptx"].update(size=-1),
    "blob_hash_missing": lambda h: h["blobs"]["ptx"].pop("sha256"),
    "blob_hash_wrong": lambda h: h["blobs"]["ptx"].update(sha256="0" * 64),
    "blob_spec_is_an_int": lambda h: h["blobs"].update(ptx=10),
    "blob_name_is_a_path": lambda h: h["blobs"].update({"../ptx": h["blobs"].pop("ptx")}),
    "blob_name_shadows_a_field": lambda h: h["blobs"].update(a=h["blobs"]["ptx"]),
    "extra_blob_missing": lambda h: h["blobs"].update(cubin={"size": 1, "sha256": "0" * 64}),
}


def _damage(folder, how, monkeypatch):
    blob, meta = folder / "ptx.bin", folder / "meta.json"
    raw = meta.read_bytes()
    if how in SCHEMA_DAMAGE:
        write_meta(folder, _schema(json.loads(raw)["header"], SCHEMA_DAMAGE[how]))
    elif how == "blob_flipped_byte":
        data = bytearray(blob.read_bytes())
        data[3] ^= 0x01
        blob.write_bytes(bytes(data))  # same size: only the hash sees it
    elif how == "blob_truncated":
        blob.write_bytes(blob.read_bytes()[:4])
    elif how == "blob_extended":
        blob.write_bytes(blob.read_bytes() + b"\0")
    elif how == "blob_missing":
        blob.unlink()
    elif how == "blob_is_a_folder":
        blob.unlink()
        blob.mkdir()
    elif how == "meta_garbage":
        meta.write_bytes(b"{not json")
    elif how == "meta_empty":
        meta.write_bytes(b"")
    elif how == "meta_truncated":
        meta.write_bytes(raw[: len(raw) // 2])
    elif how == "meta_flipped_byte":  # still valid JSON, another value: only the hash sees it
        assert b'"a":1' in raw
        meta.write_bytes(raw.replace(b'"a":1', b'"a":7'))
    elif how == "meta_not_utf8":
        meta.write_bytes(b"\xff\xfe" + raw[2:])
    elif how == "meta_deeply_nested":
        write_meta(folder, {})
        meta.write_bytes(meta.read_bytes().replace(b'"header":{}', b'"header":' + b"[" * 200000 + b"]" * 200000))
    elif how == "meta_header_is_a_list":
        body = b"[1,2]"
        meta.write_bytes(b'{"sha256":"' + hashlib.sha256(body).hexdigest().encode() + b'","header":' + body + b"}")
    elif how == "meta_missing":
        meta.unlink()
    elif how == "meta_is_a_folder":
        meta.unlink()
        meta.mkdir()
    elif how == "meta_is_a_fifo":  # opening it for reading must not block
        meta.unlink()
        os.mkfifo(meta)
    elif how == "entry_is_a_file":
        shutil.rmtree(folder)
        folder.write_bytes(b"not a folder")
    elif how == "fan_out_folder_is_a_file":
        shutil.rmtree(folder.parent)
        folder.parent.write_bytes(b"not a folder")
    elif how == "unreadable":  # root ignores file modes, so the permission error is injected
        real = os.open

        def deny(path, *args, **kwargs):
            if str(folder) in str(path):
                raise PermissionError(13, "Permission denied", str(path))
            return real(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", deny)
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", [
    "blob_flipped_byte", "blob_truncated", "blob_extended", "blob_missing", "blob_is_a_folder",
    "meta_garbage", "meta_empty", "meta_truncated", "meta_flipped_byte", "meta_not_utf8", "meta_deeply_nested",
    "meta_header_is_a_list", "meta_missing", "meta_is_a_folder", "meta_is_a_fifo",
    "entry_is_a_file", "fan_out_folder_is_a_file", "unreadable", *SCHEMA_DAMAGE])
def test_damaged_entry_is_a_miss_and_the_next_put_replaces_it(cache_dir, monkeypatch, how):
    k = cache.key("damage", how)
    assert cache.put(k, {"a": 1, "ptx": b"0123456789"})
    folder = cache_dir / k[:2] / k
    with monkeypatch.context() as m:
        _damage(folder, how, m)
        assert cache.get(k) is None  # no exception, no damaged bytes
    assert cache.put(k, {"a": 2, "ptx": b"abcdefghij"})
    assert cache.get(k) == {"a": 2, "ptx": b"abcdefghij"}
    assert sorted(os.listdir(folder)) == ["meta.json", "ptx.bin"]
    assert leftovers(folder.parent) == []


def test_keys_must_be_digests(cache_dir):
    with pytest.raises(ValueError, match="sha256"):
        cache.put("../../etc", {"a": 1})
    assert cache.get("../../etc") is None and cache.get("") is None


def test_the_cache_root_being_a_file_fails_the_put_only(tmp_path, monkeypatch):
    root = tmp_path / "rootfile"
    root.write_bytes(b"the user's file")
    monkeypatch.setattr(config, "CACHE_DIR", str(root))
    assert cache.put(cache.key("x"), {"a": 1}) is False
    assert cache.get(cache.key("x")) is None
    assert root.read_bytes() == b"the user's file"  # never deleted: it is not the cache's


def test_stale_temporaries_are_swept(cache_dir):
    k = cache.key("sweep")
    parent = cache_dir / k[:2]
    parent.mkdir(parents=True)
    for name in (".tmp-dead", ".old-dead", ".tmp-live"):
        (parent / name).mkdir()
        (parent / name / "meta.json").write_bytes(b"{}")
    hour_ago = time.time() - 2 * 3600
    for name in (".tmp-dead", ".old-dead"):
        os.utime(parent / name, (hour_ago, hour_ago))
    assert cache.put(k, {"a": 1})
    assert leftovers(parent) == [".tmp-live"]  # a writer may still be filling it


def _hammer(args):
    """Writes its own entry and reads whatever is there, `rounds` times; counts hits and bad reads."""
    writer, k, rounds = args
    hits = bad = 0
    for n in range(rounds):
        cache.put(k, {"writer": writer, "n": n, "blob": bytes([writer]) * 4096})
        entry = cache.get(k)
        if entry is not None:
            hits += 1
            w = entry.get("writer")
            bad += not (isinstance(w, int) and entry["blob"] == bytes([w]) * 4096)
    return hits, bad


def test_concurrent_writers_and_readers_never_see_a_mixed_entry(cache_dir):
    import multiprocessing

    k = cache.key("concurrent")
    with multiprocessing.get_context("fork").Pool(4) as pool:
        results = pool.map(_hammer, [(w, k, 150) for w in range(4)])
    assert sum(bad for _, bad in results) == 0
    assert sum(hits for hits, _ in results) > 0
    final = cache.get(k)
    assert final is not None and final["blob"] == bytes([final["writer"]]) * 4096
    assert leftovers(cache_dir / k[:2]) == []


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
