"""Content-addressed disk cache for compiled kernels, and the memo that skips the frontend.

Layout: `TILEC_CACHE_DIR/<key[:2]>/<key>/` holds `meta.json` (any JSON-serializable dict)
and one file per binary blob (`<name>.bin`; a `put` entry's `bytes` values become blobs).

    key = cache.key(tile_ir_text, target.name, pass_configs, ...)   # sha256 hex; tilec and
    entry = cache.get(key)                                          # llvmlite versions included
    if entry is None:
        cache.put(key, {"ptx": ptx_text, "cubin": cubin_bytes, "launch": {...}})

- Writes are atomic: each file goes to a temporary file in the same folder, then
  `os.replace`; `meta.json` is written last, so a reader sees a whole entry or none.
- A missing or corrupted entry (bad JSON, missing blob, wrong key, wrong format version)
  reads as a miss; the next `put` rewrites it.
- `TILEC_DISABLE_CACHE=1` (`tilec.config.DISABLE_CACHE`) turns `get` into a miss and `put`
  into a no-op.

**The memo** (for the JIT layer; `memo_key` / `memo_get` / `memo_put`): the build key above
needs the tile IR, i.e. running the frontend, which costs tens of milliseconds. The memo maps
what the user *wrote and passed* to the build key, so a cached kernel's second build in a new
process skips the frontend as well:

    mk = cache.memo_key(fn, args, kwargs, target.name, pass_configs)   # None: not memoizable
    hit = cache.memo_get(mk) if mk else None
    if hit:   # {"program": {...}, "build_key": "..."}
        program = cache.program_from_json(hit["program"])   # module=None: no tile IR in memory
        backend = CudaBackend(program, target, configs, build_key=hit["build_key"])
    else:
        program = <frontend>; backend = CudaBackend(program, target, configs)
        if mk: cache.memo_put(mk, program, backend.build_key)

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
import tempfile
import types

from tilec import config

__all__ = ["FORMAT", "cache_dir", "enabled", "entry_dir", "get", "key", "memo_get", "memo_key", "memo_put",
           "program_from_json", "program_to_json", "put"]

FORMAT = 1  # bump when the entry layout changes
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
    roots = [os.path.dirname(os.path.abspath(__file__))]
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


def _atomic_write(path: str, data: bytes) -> None:
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix="-" + os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def put(k: str, entry: dict) -> bool:
    """Store `entry` (JSON values; `bytes` values become blobs) under key `k`. False if not stored."""
    if not enabled():
        return False
    folder = entry_dir(k)
    meta, blobs = {}, {}
    for name, value in entry.items():
        if isinstance(value, bytes | bytearray | memoryview):
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
                raise ValueError(f"cache blob name {name!r} must be a plain file name")
            blobs[name] = bytes(value)
        else:
            meta[name] = value
    try:
        os.makedirs(folder, exist_ok=True)
        for name, data in blobs.items():
            _atomic_write(os.path.join(folder, name + ".bin"), data)
        header = {"format": FORMAT, "key": k, "blobs": {n: len(d) for n, d in blobs.items()}, "entry": meta}
        _atomic_write(os.path.join(folder, _META), json.dumps(header, sort_keys=True).encode())
    except OSError:
        return False  # a read-only or full disk never fails a compile
    return True


def get(k: str) -> dict | None:
    """The entry stored under `k` (blobs as bytes), or None if missing, corrupted or disabled."""
    if not enabled():
        return None
    folder = entry_dir(k)
    try:
        with open(os.path.join(folder, _META), "rb") as f:
            header = json.loads(f.read())
        if header.get("format") != FORMAT or header.get("key") != k or not isinstance(header.get("entry"), dict):
            return None
        entry = dict(header["entry"])
        for name, size in header.get("blobs", {}).items():
            with open(os.path.join(folder, name + ".bin"), "rb") as f:
                data = f.read()
            if len(data) != size:
                return None
            entry[name] = data
    except (OSError, ValueError, TypeError, AttributeError):
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
    entry = get(mk)
    if entry is None or not isinstance(entry.get("program"), dict) or not isinstance(entry.get("build_key"), str):
        return None
    return entry


def memo_put(mk: str, program, build_key: str) -> bool:
    return put(mk, {"program": program_to_json(program), "build_key": build_key})


def program_to_json(program) -> dict:
    """A KernelProgram's calling convention (not its IR) as JSON."""
    def dim(d):
        return d if isinstance(d, int) else {"symbol": d.name, "dynamic": d.dynamic, "dtype": d.dtype}

    return {
        "name": program.name,
        "returns": list(program.returns),
        "loc": [program.loc.file, program.loc.line, program.loc.col] if program.loc else None,
        "params": [{"name": p.name, "dtype": p.dtype.name, "is_output": p.is_output,
                    "shape": None if p.shape is None else [dim(d) for d in p.shape]} for p in program.params],
    }


def program_from_json(data: dict, module=None):
    """The KernelProgram for `program_to_json`'s output; its module is `module` (None: unknown)."""
    from tilec.dtypes import as_dtype
    from tilec.errors import SourceLoc
    from tilec.program import KernelProgram, Param
    from tilec.language.program import Symbol

    def dim(d):
        return d if isinstance(d, int) else Symbol(d["symbol"], d["dynamic"], d["dtype"])

    params = [Param(p["name"], as_dtype(p["dtype"]), None if p["shape"] is None else tuple(dim(d) for d in p["shape"]),
                    p["is_output"]) for p in data["params"]]
    loc = SourceLoc(*data["loc"]) if data.get("loc") else None
    return KernelProgram(module, data["name"], params, list(data["returns"]), loc)
