"""Content-addressed disk cache for compiled kernels, and the memo that skips the frontend.

Layout: `TILEC_CACHE_DIR/<key[:2]>/<key>/` holds `meta.json` (any JSON-serializable dict)
and one file per binary blob (`<name>.bin`; a `put` entry's `bytes` values become blobs).

    key = cache.key(tile_ir_text, target.name, pass_configs, ...)   # sha256 hex; tilec and
    entry = cache.get(key)                                          # llvmlite versions included
    if entry is None:
        cache.put(key, {"ptx": ptx_text, "cubin": cubin_bytes, "launch": {...}})

**Integrity.** `meta.json` is `{"sha256": H, "header": {...}}` where H is the sha256 of the
header's exact bytes; the header holds the format version, the key, every blob's size and
sha256, and the entry's JSON values. `get` checks all of it: any mismatch, truncation, bad
JSON, a field of the wrong type, a missing or unreadable file, an entry folder that is not a
folder reads as a **miss**, never an exception and never damaged bytes.

**Atomicity.** `put` writes the whole entry into a fresh temporary folder next to it, then
renames it into place (moving an old or damaged entry, or a file in its way, aside first and
deleting it): a reader sees a whole entry, or none. A write that fails (read-only or full
disk) returns False and leaves the old entry as it was; leftovers of a killed writer are
swept by later puts after an hour.

`TILEC_DISABLE_CACHE=1` (`tilec.config.DISABLE_CACHE`) turns `get` into a miss and `put`
into a no-op.

**The memo** (for the JIT layer; `memo_key` / `memo_get` / `memo_put`): the build key above
needs the tile IR, i.e. running the frontend, which costs tens of milliseconds. The memo maps
what the user *wrote and passed* to the build key, so a cached kernel's second build in a new
process skips the frontend as well:

    mk = cache.memo_key(fn, args, kwargs, target.name, pass_configs)   # None: not memoizable
    hit = cache.memo_get(mk) if mk else None
    if hit:   # {"program": {...}, "fingerprint": "...", "build_key": "..."}
        program = cache.program_from_json(hit["program"])   # module=None: no tile IR in memory
        backend = CudaBackend(program, target, configs, build_key=hit["build_key"])
    else:
        program = <frontend>; backend = CudaBackend(program, target, configs)
        if mk: cache.memo_put(mk, program, backend.build_key)

`memo_get` returns only a memo whose program reads back (`program_from_json` cannot fail on
it) and matches its recorded `program_fingerprint`; the build entry records the fingerprint
of the program it was built for, and the backend takes a build from the memo only when the
two agree (else `CacheMissError`: the caller takes the slow path and rewrites the memo).

`memo_key` hashes the kernel function's source text, its file's path and mtime, the repr of
its arguments, of the closure cells' contents and of the globals the function names (only
those whose repr is stable: no `<... at 0x...>` addresses; otherwise it returns None and the
caller takes the slow, always-correct path). A change to a helper *module* the kernel calls
into is not seen by the memo unless its mtime is part of `extra`; the build cache behind it
is still keyed on the real tile IR.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import marshal
import os
import re
import shutil
import stat
import tempfile
import time
import types

from tilec import config

__all__ = ["FORMAT", "cache_dir", "enabled", "entry_dir", "get", "key", "memo_get", "memo_key", "memo_put",
           "program_fingerprint", "program_from_json", "program_to_json", "put"]

FORMAT = 2  # bump when the entry layout changes (2: content hashes, whole-folder installs)
_META = "meta.json"


def enabled() -> bool:
    return not config.DISABLE_CACHE


def cache_dir() -> str:
    return config.CACHE_DIR


@functools.lru_cache(maxsize=1)
def _compiler_fingerprint() -> str:
    """A digest of the compiler's own files (path, size, mtime): an edited compiler misses the cache."""
    import importlib.util

    digest = hashlib.sha256()
    roots = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]  # the tilec package
    for package in ("tilec.dialects", "tilec.passes", "tilec.targets"):  # found, not imported
        spec = importlib.util.find_spec(package)
        roots += list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        for folder, _, files in sorted(os.walk(root)):
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(folder, name))
                    digest.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


def _versions() -> str:
    from tilec._version import __version__

    try:
        import llvmlite

        llvm = llvmlite.__version__
    except ImportError:  # pragma: no cover - llvmlite is a dependency
        llvm = "none"
    return f"tilec={__version__};code={_compiler_fingerprint()};llvmlite={llvm};format={FORMAT}"


def _canon(part) -> str:
    """A stable text for one key part: dicts sorted, bytes hashed, the rest repr'd."""
    if isinstance(part, str):
        return part
    if isinstance(part, bytes):
        return "bytes:" + hashlib.sha256(part).hexdigest()
    if isinstance(part, dict):
        return "{" + ",".join(f"{_canon(k)}:{_canon(v)}" for k, v in sorted(part.items(), key=lambda kv: str(kv[0]))) + "}"
    if isinstance(part, list | tuple):
        return "[" + ",".join(_canon(p) for p in part) + "]"
    return repr(part)


def key(*parts) -> str:
    """sha256 hex over the parts (source text, arguments, target, configs, ...) and the versions."""
    h = hashlib.sha256()
    for part in (*parts, _versions()):
        text = _canon(part).encode()
        h.update(len(text).to_bytes(8, "little"))
        h.update(text)
    return h.hexdigest()


def entry_dir(k: str) -> str:
    return os.path.join(cache_dir(), k[:2], k)


_KEY = re.compile(r"[0-9a-f]{64}")
_BLOB_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_STALE_SECONDS = 3600  # a temporary folder this old belongs to a writer that died
# meta.json is _HEAD + sha256 hex of the header bytes + _MID + the header bytes + b"}"
_HEAD, _MID = b'{"sha256":"', b'","header":'


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(path: str, data: bytes) -> None:
    with open(path, "xb") as f:
        f.write(data)


def _read(path: str, limit: int = -1) -> bytes:
    """A regular file's bytes (at most `limit`); OSError for anything else (a folder, a FIFO)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block us
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return f.read(limit)


def _remove(path: str) -> None:
    """Deletes a file or folder tree; what cannot be deleted stays (a later put retries)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _fan_out_dir(k: str) -> str:
    """`<cache>/<k[:2]>`, created, replacing a file in its way (the cache root itself is never touched)."""
    parent = os.path.dirname(entry_dir(k))
    if os.path.lexists(parent) and not os.path.isdir(parent):
        os.unlink(parent)
    os.makedirs(parent, exist_ok=True)
    return parent


def _sweep(parent: str) -> None:
    """Deletes temporary folders that killed writers left behind."""
    now = time.time()
    for name in os.listdir(parent):
        if name.startswith((".tmp-", ".old-")):
            path = os.path.join(parent, name)
            try:
                if now - os.lstat(path).st_mtime > _STALE_SECONDS:
                    _remove(path)
            except OSError:
                pass


def _install(tmp: str, folder: str) -> None:
    """Renames the finished entry `tmp` to `folder`, moving what is there (an old or damaged entry,
    a file) aside first and deleting it. OSError, with the old entry back in place, if that fails
    (or if a concurrent writer's entry took the place in between)."""
    try:
        os.rename(tmp, folder)  # nothing there (or an empty folder)
        return
    except OSError:
        if not os.path.lexists(folder):
            raise
    old = os.path.join(os.path.dirname(folder), f".old-{os.path.basename(folder)[:16]}-{os.urandom(8).hex()}")
    try:
        os.rename(folder, old)
    except FileNotFoundError:  # a concurrent writer moved it already
        old = None
    try:
        os.rename(tmp, folder)
    except OSError:
        if old is not None and not os.path.lexists(folder):
            os.rename(old, folder)
            old = None
        raise
    finally:
        if old is not None:
            _remove(old)


def _split(entry: dict) -> tuple[dict, dict]:
    meta, blobs = {}, {}
    for name, value in entry.items():
        if isinstance(value, bytes | bytearray | memoryview):
            if not isinstance(name, str) or not _BLOB_NAME.fullmatch(name):
                raise ValueError(f"cache blob name {name!r} must be a plain file name")
            blobs[name] = bytes(value)
        else:
            meta[name] = value
    return meta, blobs


def put(k: str, entry: dict) -> bool:
    """Store `entry` (JSON values; `bytes` values become blobs) under key `k`, replacing whatever
    is there. False if not stored (cache disabled, disk read-only or full, a concurrent writer)."""
    if not _KEY.fullmatch(k):
        raise ValueError(f"cache key {k!r} is not a sha256 hex digest")
    if not enabled():
        return False
    meta, blobs = _split(entry)
    header = {"format": FORMAT, "key": k, "entry": meta,
              "blobs": {n: {"size": len(d), "sha256": _sha256(d)} for n, d in blobs.items()}}
    body = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    try:
        parent = _fan_out_dir(k)
        _sweep(parent)
        tmp = tempfile.mkdtemp(dir=parent, prefix=f".tmp-{k[:16]}-")
        try:
            for name, data in blobs.items():
                _write(os.path.join(tmp, name + ".bin"), data)
            _write(os.path.join(tmp, _META), _HEAD + _sha256(body).encode() + _MID + body + b"}")
            _install(tmp, entry_dir(k))
        finally:
            if os.path.lexists(tmp):
                _remove(tmp)
    except OSError:
        return False  # never fails a compile
    return True


def _header(folder: str, k: str) -> dict | None:
    """meta.json's header if its hash, format, key and field types check out, else None."""
    raw = _read(os.path.join(folder, _META))
    digest, body = raw[len(_HEAD):len(_HEAD) + 64], raw[len(_HEAD) + 64 + len(_MID):-1]
    if not (raw.startswith(_HEAD) and raw[len(_HEAD) + 64:].startswith(_MID) and raw.endswith(b"}")) \
            or digest.decode("ascii") != _sha256(body):
        return None
    header = json.loads(body)
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("key") != k:
        return None
    entry, blobs = header.get("entry"), header.get("blobs")
    if not isinstance(entry, dict) or not isinstance(blobs, dict):
        return None
    for name, spec in blobs.items():
        if not _BLOB_NAME.fullmatch(name) or name in entry or not isinstance(spec, dict) \
                or type(spec.get("size")) is not int or spec["size"] < 0 or not isinstance(spec.get("sha256"), str):
            return None
    return header


def get(k: str) -> dict | None:
    """The entry stored under `k` (blobs as bytes), or None if missing, damaged in any way, or disabled."""
    if not enabled() or not _KEY.fullmatch(k):
        return None
    folder = entry_dir(k)
    try:
        header = _header(folder, k)
        if header is None:
            return None
        entry = dict(header["entry"])
        for name, spec in header["blobs"].items():
            data = _read(os.path.join(folder, name + ".bin"), spec["size"] + 1)
            if len(data) != spec["size"] or _sha256(data) != spec["sha256"]:
                return None
            entry[name] = data
    except (OSError, ValueError, TypeError, RecursionError):  # ValueError: bad JSON or UTF-8
        return None
    return entry


# --------------------------------------------------------------------------- #
# The memo: (function source, arguments) -> build key, skipping the frontend
# --------------------------------------------------------------------------- #

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _stable_repr(value, depth: int = 0) -> str | None:
    """repr(value) if it is stable across processes, else None."""
    if depth > 4:
        return None
    if isinstance(value, types.ModuleType):
        return f"<module {value.__name__}>"
    if isinstance(value, types.FunctionType):
        try:
            src = inspect.getsource(value)
        except (OSError, TypeError):
            return None
        return f"<function {value.__module__}.{value.__qualname__} {hashlib.sha256(src.encode()).hexdigest()}>"
    if isinstance(value, list | tuple):
        items = [_stable_repr(v, depth + 1) for v in value]
        return None if None in items else f"{type(value).__name__}({','.join(items)})"
    if isinstance(value, dict):
        items = [(_stable_repr(k, depth + 1), _stable_repr(v, depth + 1)) for k, v in value.items()]
        if any(a is None or b is None for a, b in items):
            return None
        return "{" + ",".join(f"{a}:{b}" for a, b in sorted(items)) + "}"
    if type(value).__module__.startswith("torch") and hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"tensor({tuple(value.shape)},{value.dtype},{getattr(value, 'device', '')})"
    text = repr(value)
    return None if _ADDRESS.search(text) else f"{type(value).__qualname__}:{text}"


def memo_key(fn, args=(), kwargs=None, target: str = "", configs=None, extra=()) -> str | None:
    """A key for (kernel function, its arguments, target, configs), or None if not memoizable.

    For the eager style, `args` are the compile-time values the kernel is specialized on (the
    `T.const` sizes, dtypes and defaults) rather than the tensors; `_stable_repr` reduces a
    tensor to its shape, dtype and device.
    """
    fn = getattr(fn, "__wrapped__", fn)
    try:
        # the compiled code (nested kernels included) stands for the source: marshal is
        # deterministic for one Python version and far cheaper than re-reading the file
        code_bytes = hashlib.sha256(marshal.dumps(fn.__code__)).hexdigest()
        path = fn.__code__.co_filename
        mtime = os.stat(path).st_mtime_ns if os.path.exists(path) else 0
    except (OSError, TypeError, ValueError):
        return None
    parts = ["memo", code_bytes, path, str(mtime), target, configs or {}, list(extra)]
    for value in (tuple(args), dict(kwargs or {})):
        text = _stable_repr(value)
        if text is None:
            return None
        parts.append(text)
    code = fn.__code__
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            text = _stable_repr(cell.cell_contents)
        except ValueError:  # an empty cell
            text = "<empty>"
        if text is None:
            return None
        parts.append(f"cell {name}={text}")
    for name in sorted(_global_names(code)):
        if name in fn.__globals__:
            text = _stable_repr(fn.__globals__[name])
            if text is None:
                return None
            parts.append(f"global {name}={text}")
    return key(*parts)


def _global_names(code) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def memo_get(mk: str) -> dict | None:
    """The memo entry under `mk` if intact: its program reads back and matches its fingerprint,
    its build key is a key. (Whether the build is there and is this program's, the backend
    checks against `program_fingerprint` when it loads it.)"""
    entry = get(mk)
    if entry is None:
        return None
    build_key = entry.get("build_key")
    if not isinstance(build_key, str) or not _KEY.fullmatch(build_key):
        return None
    try:
        program = program_from_json(entry.get("program"))
    except ValueError:
        return None
    if entry.get("fingerprint") != program_fingerprint(program):
        return None
    return entry


def memo_put(mk: str, program, build_key: str) -> bool:
    return put(mk, {"program": program_to_json(program), "fingerprint": program_fingerprint(program),
                    "build_key": build_key})


def program_fingerprint(program) -> str:
    """A digest of a KernelProgram's calling convention (name, params, returns; not its source
    location) and of the compiler's versions: what a memo and the build it points to agree on."""
    convention = program_to_json(program)
    convention.pop("loc")
    return key("program", convention)


def program_to_json(program) -> dict:
    """A KernelProgram's calling convention (not its IR) as JSON."""
    from tilec.language.structure import SizeExpr

    def dim(d):
        if isinstance(d, SizeExpr):  # `seq_len * 32`
            return {"op": d.op, "args": [dim(a) for a in d.args]}
        return d if isinstance(d, int) else {"symbol": d.name, "dynamic": d.dynamic, "dtype": d.dtype}

    return {
        "name": program.name,
        "returns": list(program.returns),
        "loc": [program.loc.file, program.loc.line, program.loc.col] if program.loc else None,
        "params": [{"name": p.name, "dtype": p.dtype.name, "is_output": p.is_output,
                    "shape": None if p.shape is None else [dim(d) for d in p.shape]} for p in program.params],
    }


def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"malformed program JSON: {what}")


def _is(value, *types_) -> bool:
    """isinstance, except that a bool is not an int."""
    return isinstance(value, types_) and not (isinstance(value, bool) and bool not in types_)


def program_from_json(data: dict, module=None):
    """The KernelProgram for `program_to_json`'s output; its module is `module` (None: unknown).
    ValueError if `data` is not such an output (a missing field, a field of the wrong type)."""
    from tilec.compiler.kernel_program import KernelProgram, Param
    from tilec.dtypes import as_dtype
    from tilec.errors import SourceLoc
    from tilec.language.program import Symbol

    from tilec.language.structure import SizeExpr

    def dim(d):
        if _is(d, int):
            return d
        if _is(d, dict) and "op" in d:
            _expect(_is(d["op"], str) and _is(d.get("args"), list), f"size {d!r}")
            return SizeExpr(d["op"], tuple(dim(a) for a in d["args"]))
        _expect(_is(d, dict) and _is(d.get("symbol"), str) and _is(d.get("dynamic"), bool)
                and _is(d.get("dtype"), str), f"size {d!r}")
        return Symbol(d["symbol"], d["dynamic"], d["dtype"])

    def param(p):
        _expect(_is(p, dict) and _is(p.get("name"), str) and _is(p.get("is_output"), bool)
                and (p.get("shape") is None or _is(p["shape"], list)), f"param {p!r}")
        dtype = as_dtype(p["dtype"]) if _is(p.get("dtype"), str) else None
        _expect(dtype is not None, f"dtype of param {p['name']!r}")
        return Param(p["name"], dtype, None if p["shape"] is None else tuple(dim(d) for d in p["shape"]),
                     p["is_output"])

    _expect(_is(data, dict) and _is(data.get("name"), str) and _is(data.get("params"), list)
            and _is(data.get("returns"), list), "name, params and returns")
    params = [param(p) for p in data["params"]]
    returns = data["returns"]
    _expect(all(_is(i, int) and 0 <= i < len(params) for i in returns), f"returns {returns!r}")
    loc = data.get("loc")
    _expect(loc is None or (_is(loc, list) and len(loc) == 3 and _is(loc[0], str) and _is(loc[1], int)
                            and _is(loc[2], int)), f"loc {loc!r}")
    return KernelProgram(module, data["name"], params, list(returns), SourceLoc(*loc) if loc else None)
