"""The code that `dataclasses` generates, compiled once per distinct text, and cached as bytecode is.

`@dataclass` writes the source of the methods it adds (`__init__`, `__repr__`, `__eq__`,
`__hash__`, a frozen class's `__setattr__` and `__delattr__`) and `exec`s it: 1462 texts for the
313 dataclasses a cold build of the reference gemm defines (xDSL's attributes, tilec's own),
~0.08-0.13 s of compiling on this machine. 865 of them are distinct: attributes with the same
fields get the same `__eq__`, `__hash__` and `__setattr__`. `install()`, run by `import tilec`,
puts `_exec` in the `dataclasses` module as its global `exec` (the one name it looks up to run
those texts, CPython 3.10 to 3.13): `_exec` runs the code object compiled from each text, compiled
once. The functions are those `dataclasses` makes (a code object is immutable; the function, its
closure and its defaults are made anew for every class, with the class's own globals).

The text is compiled as `exec` compiles it in `dataclasses`, with no `__future__` flag
(`dont_inherit`: this module's `annotations` would turn the generated `__init__`'s annotations
into strings that name nothing, `typing.get_type_hints` failing on them).

Across processes, the code objects are kept as Python keeps a module's bytecode: marshalled
beside this module's `.pyc` (`importlib.util.cache_from_source`, so `PYTHONPYCACHEPREFIX` holds),
read at the first text, written at exit when a text was new, never written under
`PYTHONDONTWRITEBYTECODE`, and ignored when unreadable or written by another interpreter
(the header is `importlib.util.MAGIC_NUMBER`). Keyed by the text itself, an entry is never stale.
Loading the gemm build's 865 takes ~4 ms where compiling them takes ~50-85.
"""

from __future__ import annotations

import builtins
import dataclasses
import sys

_CODE: dict = {}  # a text `dataclasses` ran → its code object
_USED: set = set()  # the texts this process ran (what the cache file keeps when it is full)
_LIMIT = 8192  # texts in the cache file at most
_TAG = b"tilec-dataclass-code-1\n"
_state = {"loaded": False, "new": 0}


def _exec(source, globals=None, locals=None, /):
    """`exec`, with a string source compiled once."""
    if isinstance(source, str):
        code = _CODE.get(source)
        if code is None:
            if not _state["loaded"]:
                _load()
                code = _CODE.get(source)
            if code is None:
                code = _CODE[source] = compile(source, "<string>", "exec", dont_inherit=True)
                _state["new"] += 1
        _USED.add(source)
        source = code
    return builtins.exec(source, globals, locals)


def _path() -> str | None:
    import importlib.util
    import os

    try:
        return os.path.splitext(importlib.util.cache_from_source(__file__))[0] + ".codes"
    except (NotImplementedError, ValueError, TypeError):  # no cache tag, no file name
        return None


def _header() -> bytes:
    import importlib.util

    return importlib.util.MAGIC_NUMBER + _TAG


def _load() -> None:
    import gc
    import marshal

    _state["loaded"] = True
    path = _path()
    if path is None:
        return
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return
    header = _header()
    if not data.startswith(header):
        return
    paused = gc.isenabled()
    gc.disable()  # marshal builds ~10^4 tuples: collections over the whole heap would triple its time
    try:
        codes = marshal.loads(memoryview(data)[len(header):])
    except (EOFError, ValueError, TypeError):
        return
    finally:
        if paused:
            gc.enable()
    code_type = type(_load.__code__)
    if isinstance(codes, dict) and all(type(k) is str and type(c) is code_type for k, c in codes.items()):
        for text, code in codes.items():
            _CODE.setdefault(text, code)


def _save() -> None:
    """Writes the code objects (at exit, when a text was new), as the import system writes a .pyc."""
    import marshal
    import os

    if not _state["new"] or sys.dont_write_bytecode:
        return
    path = _path()
    if path is None:
        return
    texts = _CODE if len(_CODE) <= _LIMIT else _USED
    tmp = f"{path}.{os.getpid()}"
    try:
        data = _header() + marshal.dumps({t: _CODE[t] for t in texts})
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # as importlib writes a .pyc: a new file (mode 0o666 less the umask), then renamed over
        fd = os.open(tmp, os.O_EXCL | os.O_CREAT | os.O_WRONLY, 0o666)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError):  # a read-only install, a full disk: the next process compiles
        pass


def install() -> None:
    """Makes `dataclasses` run its generated texts through `_exec` (see the module docstring)."""
    if "exec" not in vars(dataclasses):  # not shadowed already (by us or by another tool)
        import atexit

        dataclasses.exec = _exec
        atexit.register(_save)


def is_installed() -> bool:
    return vars(dataclasses).get("exec") is _exec
