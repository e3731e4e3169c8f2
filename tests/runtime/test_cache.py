"""tilec.compiler.cache: content-addressed entries, atomic whole-entry installs, the disable flag, the memo;
and integrity: every kind of damaged entry (blobs, meta.json, schema, files and folders) is a
miss that the next put replaces, also on the real build path (CudaBackend through tilec.jit's
memo, PTX and a cubin from ptxas, the loader replaced), where nothing damaged reaches the driver."""

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
from tilec.compiler import cache
import tilec.language as T


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
            from tilec.compiler import cache
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


# ---- the real build path: CudaBackend (PTX, and a cubin from ptxas) through tilec.jit's memo ----


def add_fn(A, B, block: int = 128):
    N = T.dynamic("N")
    A: T.Tensor((N,), T.float16)
    B: T.Tensor((N,), T.float16)
    C = T.empty((N,), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return C


def mul_fn(A, B, block: int = 128):
    N = T.dynamic("N")
    A: T.Tensor((N,), T.float16)
    B: T.Tensor((N,), T.float16)
    C = T.empty((N,), T.float16)
    with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = A[bx * block + i] * B[bx * block + i]
    return C


def test_memo_entry_records_the_fingerprint():
    import tilec

    program = tilec.jit(target="sm_90a")(add_fn).build_program()
    mk = cache.key("memo", "fingerprint")
    assert cache.memo_put(mk, program, "e" * 64)
    hit = cache.memo_get(mk)
    assert hit["fingerprint"] == cache.program_fingerprint(program)
    assert cache.program_fingerprint(cache.program_from_json(hit["program"])) == hit["fingerprint"]


MEMO_DAMAGE = {  # memo entries with valid hashes that memo_get must still refuse
    "build_key_not_a_key": lambda e: e.update(build_key="../x"),
    "build_key_missing": lambda e: e.pop("build_key"),
    "fingerprint_of_another_program": lambda e: e.update(fingerprint="0" * 64),
    "program_missing": lambda e: e.pop("program"),
    "program_without_params": lambda e: e["program"].pop("params"),
    "param_unknown_dtype": lambda e: e["program"]["params"][0].update(dtype="float7"),
    "param_shape_a_string": lambda e: e["program"]["params"][0].update(shape="N"),
    "size_symbol_an_int": lambda e: e["program"]["params"][0]["shape"][0].update(symbol=3),
    "returns_out_of_range": lambda e: e["program"].update(returns=[9]),
    "returns_a_bool": lambda e: e["program"].update(returns=[True]),
    "loc_too_short": lambda e: e["program"].update(loc=["f.py", 1]),
    "name_a_list": lambda e: e["program"].update(name=["add"]),
}


@pytest.mark.parametrize("how", sorted(MEMO_DAMAGE))
def test_malformed_memo_is_a_miss(how):
    import tilec

    program = tilec.jit(target="sm_90a")(add_fn).build_program()
    mk = cache.key("memo", how)
    assert cache.memo_put(mk, program, "e" * 64)
    entry = cache.get(mk)
    MEMO_DAMAGE[how](entry)
    assert cache.put(mk, entry)
    assert cache.memo_get(mk) is None


@pytest.fixture
def counts(monkeypatch):
    """How often the frontend and the lowering ran (both real, only counted)."""
    import tilec.compiler.lower
    import tilec.frontend

    counts = {"frontend": 0, "lower": 0}

    def counted(name, real):
        def run(*args, **kwargs):
            counts[name] += 1
            return real(*args, **kwargs)
        return run

    monkeypatch.setattr(tilec.frontend, "build_eager", counted("frontend", tilec.frontend.build_eager))
    monkeypatch.setattr(tilec.compiler.lower, "lower_to_thread", counted("lower", tilec.compiler.lower.lower_to_thread))
    return counts


def compile_kernel(fn=add_fn):
    """A fresh `@tilec.jit` (no in-process kernel table): what a new process's first call does."""
    import tilec

    return tilec.jit(target="sm_90a")(fn).compile()._backend


def memo_entries(cache_dir):
    found = {}
    for meta in cache_dir.glob("*/*/meta.json"):
        entry = cache.get(meta.parent.name)
        if entry is not None and "build_key" in entry:
            found[meta.parent.name] = entry
    return found


def driver_image(backend, monkeypatch):
    """What `_loaded` would hand to the CUDA driver (the loader is replaced; no GPU needed)."""
    from tilec.targets.cuda import loader

    seen = []
    monkeypatch.setattr(loader, "load", lambda image, name, **kw: seen.append((image, name)) or object())
    backend._kernels.clear()
    backend._loaded(0)
    return seen


def test_real_build_is_a_hit_through_the_memo(cache_dir, counts):
    first = compile_kernel()
    again = compile_kernel()
    assert not first.from_cache and again.from_cache
    assert counts == {"frontend": 1, "lower": 1}  # the second build skipped the frontend too
    assert again.program.module is None and again.ptx == first.ptx and again.cubin == first.cubin
    memos = memo_entries(cache_dir)
    assert [m["build_key"] for m in memos.values()] == [first.build_key]


def test_ir_stages_of_a_kernel_restored_through_the_memo(cache_dir, counts):
    """A kernel the memo restored (no tile IR in memory) still shows every IR stage: the frontend
    runs again when one needs it (it used to be "unknown IR stage 'tile-opt'")."""
    import tilec

    first = tilec.jit(target="sm_90a")(add_fn).compile()
    again = tilec.jit(target="sm_90a")(add_fn).compile()
    assert again._backend.from_cache and again.program.module is None and counts["frontend"] == 1
    for stage in ("tile-opt", "thread", "tile", "llvm", "ptx"):
        assert again.get_ir(stage) == first.get_ir(stage), stage
    assert counts["frontend"] == 2


def _rewrite(field_change):
    def change(folder, k):
        entry = cache.get(k)
        before = dict(entry)
        field_change(entry)
        assert entry != before, "the damage must change the entry"
        assert cache.put(k, entry)  # valid hashes: only the backend's checks can refuse it
    return change


def _file(name, edit):
    def change(folder, k):
        path = folder / name
        data = path.read_bytes()
        assert edit(data) != data, "the damage must change the file"
        path.write_bytes(edit(data))
    return change


def _flip(data: bytes) -> bytes:
    data = bytearray(data)
    data[len(data) // 2] ^= 0x40
    return bytes(data)


def _launch(change):
    def edit(entry):
        launch = json.loads(entry["launch"])
        change(launch)
        entry["launch"] = json.dumps(launch)
    return edit


BUILD_DAMAGE = {
    # damage that cache.get's hashes catch
    "cubin_flipped_byte": _file("cubin.bin", _flip),
    "cubin_truncated": _file("cubin.bin", lambda d: d[:100]),
    "ptx_truncated": _file("ptx.bin", lambda d: d[: len(d) // 2]),
    "meta_garbage": _file("meta.json", lambda d: b"\x00garbage"),
    "meta_flipped_byte": _file("meta.json", lambda d: d.replace(b'\\"block\\": [128', b'\\"block\\": [129')),
    "cubin_missing": lambda folder, k: (folder / "cubin.bin").unlink(),
    "entry_is_a_file": lambda folder, k: (shutil.rmtree(folder), folder.write_bytes(b"x")),
    # intact bytes, wrong content: the backend's own checks
    "cubin_not_elf": _rewrite(lambda e: e.update(cubin=b"MZ" + e["cubin"][2:])),
    "cubin_wrong_type": _rewrite(lambda e: e.update(cubin="text")),
    "ptx_wrong_type": _rewrite(lambda e: e.update(ptx=e["ptx"].decode())),
    "ptx_not_utf8": _rewrite(lambda e: e.update(ptx=b"\xff" + e["ptx"])),
    "ptx_without_the_entry": _rewrite(lambda e: e.update(ptx=e["ptx"].replace(b".entry", b".func"))),
    "launch_missing": _rewrite(lambda e: e.pop("launch")),
    "launch_not_json": _rewrite(lambda e: e.update(launch="{")),
    "launch_block_strings": _rewrite(_launch(lambda s: s.update(block=["128", 1, 1]))),
    "launch_block_zero": _rewrite(_launch(lambda s: s.update(block=[0, 1, 1]))),
    "launch_smem_negative": _rewrite(_launch(lambda s: s.update(smem_bytes=-4))),
    "launch_tensor_out_of_range": _rewrite(_launch(lambda s: s.update(args=[["tensor", 7]]))),
    "launch_grid_unknown_op": _rewrite(_launch(lambda s: s.update(
        grid=json.dumps({"program": [["const", 1], ["const", 2], ["os.system", 0, 1]], "outputs": [2]})))),
    "launch_grid_forward_reference": _rewrite(_launch(lambda s: s.update(
        grid=json.dumps({"program": [["copy", 0]], "outputs": [0]})))),
    "kernel_name_differs": _rewrite(lambda e: e.update(kernel_name="other")),
    "ir_wrong_type": _rewrite(lambda e: e.update(ir=["tile"])),
    "report_malformed": _rewrite(lambda e: e.update(report={"arch": "sm_90a", "log": "", "kernels": {"k": {"registers": "many"}}})),
    "report_unknown_field": _rewrite(lambda e: e.update(report={"arch": "sm_90a", "log": "", "kernels": {"k": {"name": "k", "regs": 1}}})),
    "another_programs_build": _rewrite(lambda e: e.update(program="0" * 64)),
    "another_archs_build": _rewrite(lambda e: e.update(arch="sm_80")),
}


@pytest.fixture(scope="module")
def built_cache(tmp_path_factory):
    """A cache holding add_fn's build and memo, built once for the module; tests copy it."""
    folder = tmp_path_factory.mktemp("built") / "cache"
    saved = config.CACHE_DIR, config.DISABLE_CACHE
    config.CACHE_DIR, config.DISABLE_CACHE = str(folder), False
    try:
        compile_kernel()
    finally:
        config.CACHE_DIR, config.DISABLE_CACHE = saved
    return folder


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not found")
@pytest.mark.parametrize("how", list(BUILD_DAMAGE))
def test_damaged_build_is_rebuilt_replaced_and_never_reaches_the_driver(built_cache, cache_dir, counts,
                                                                        monkeypatch, how):
    shutil.copytree(built_cache, cache_dir)
    good = compile_kernel()
    assert good.from_cache and good.cubin[:4] == b"\x7fELF" and counts == {"frontend": 0, "lower": 0}
    folder = cache_dir / good.build_key[:2] / good.build_key
    BUILD_DAMAGE[how](folder, good.build_key)
    rebuilt = compile_kernel()  # the memo's build is unusable: frontend, lowering, ptxas again
    assert not rebuilt.from_cache and counts == {"frontend": 1, "lower": 1}
    assert (rebuilt.cubin, rebuilt.ptx, rebuilt.spec) == (good.cubin, good.ptx, good.spec)
    assert driver_image(rebuilt, monkeypatch) == [(good.cubin, good.spec.kernel_name)]
    hit = compile_kernel()  # replaced: the next run is a hit again, through the memo
    assert hit.from_cache and counts == {"frontend": 1, "lower": 1}
    assert driver_image(hit, monkeypatch) == [(good.cubin, good.spec.kernel_name)]


def test_memo_pointing_at_a_missing_build(cache_dir, counts):
    good = compile_kernel()
    shutil.rmtree(cache_dir / good.build_key[:2] / good.build_key)
    again = compile_kernel()
    assert not again.from_cache and counts["lower"] == 2 and again.cubin == good.cubin
    assert compile_kernel().from_cache and counts == {"frontend": 2, "lower": 2}


def test_memo_pointing_at_another_programs_build(cache_dir, counts, monkeypatch):
    add, mul = compile_kernel(add_fn), compile_kernel(mul_fn)
    assert add.build_key != mul.build_key
    (mk, memo), = [(k, m) for k, m in memo_entries(cache_dir).items() if m["build_key"] == add.build_key]
    memo["build_key"] = mul.build_key  # an intact memo whose build is mul's, not add's
    assert cache.put(mk, memo)
    again = compile_kernel(add_fn)
    assert again.from_cache and counts["frontend"] == 3  # slow path; add's own build is still there
    assert again.build_key == add.build_key and again.ptx == add.ptx != mul.ptx
    assert memo_entries(cache_dir)[mk]["build_key"] == add.build_key  # the memo is rewritten
    assert compile_kernel(add_fn).from_cache and counts["frontend"] == 3


@pytest.mark.parametrize("how", ["meta_garbage", "program_malformed"])
def test_damaged_memo_takes_the_slow_path_and_is_rewritten(cache_dir, counts, how):
    good = compile_kernel()
    (mk, memo), = memo_entries(cache_dir).items()
    folder = cache_dir / mk[:2] / mk
    if how == "meta_garbage":
        (folder / "meta.json").write_bytes(b"[")
    else:
        memo["program"]["params"] = "A, B"
        assert cache.put(mk, memo)
    again = compile_kernel()
    assert again.from_cache and counts == {"frontend": 2, "lower": 1} and again.cubin == good.cubin
    assert memo_entries(cache_dir)[mk]["build_key"] == good.build_key
    assert compile_kernel().from_cache and counts["frontend"] == 2


def test_report_fields_match_ptxas_kernel_resources():
    import dataclasses

    from tilec.compiler import cache_entry
    from tilec.targets.nvptx import KernelResources

    assert cache_entry.RESOURCE_FIELDS == tuple(f.name for f in dataclasses.fields(KernelResources))


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not found")
def test_a_flipped_cubin_byte_costs_one_rebuild_across_processes(tmp_path, cache_dir):
    """New processes: the damaged entry is rebuilt once, then every later run hits."""
    (tmp_path / "kmod.py").write_text(textwrap.dedent('''
        import tilec, tilec.language as T

        @tilec.jit(target="sm_90a")
        def add(A, B, block: int = 128):
            N = T.dynamic("N")
            A: T.Tensor((N,), T.float16)
            B: T.Tensor((N,), T.float16)
            C = T.empty((N,), T.float16)
            with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
                for i in T.Parallel(block):
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
            return C
    '''))
    script = textwrap.dedent(f"""
        import hashlib, sys; sys.path.insert(0, {str(tmp_path)!r})
        import kmod
        b = kmod.add.compile()._backend
        print(b.from_cache, b.build_key, hashlib.sha256(b.cubin).hexdigest())
    """)
    env = {**os.environ, "TILEC_CACHE_DIR": str(cache_dir)}

    def run():
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        hit, build_key, digest = out.stdout.split()
        return hit == "True", build_key, digest

    first = run()
    cubin = cache_dir / first[1][:2] / first[1] / "cubin.bin"
    cubin.write_bytes(_flip(cubin.read_bytes()))
    assert run() == (False, first[1], first[2])  # rebuilt, the same cubin as the first build
    assert run() == (True, first[1], first[2])
    assert hashlib.sha256(cubin.read_bytes()).hexdigest() == first[2]
