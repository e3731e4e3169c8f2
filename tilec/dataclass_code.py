"""The code that `dataclasses` generates, compiled once per distinct text in a process.

`@dataclass` writes the source of the methods it adds (`__init__`, `__repr__`, `__eq__`,
`__hash__`, a frozen class's `__setattr__` and `__delattr__`) and `exec`s it: 1462 texts for the
313 dataclasses a cold build of the reference gemm defines (xDSL's attributes, tilec's own),
~0.16 s of compiling on this machine. 850 of them are distinct: attributes with the same fields
get the same `__eq__`, `__hash__` and `__setattr__`. `install()`, run by `import tilec`, puts
`_exec` in the `dataclasses` module as its global `exec` (the one name it looks up to run those
texts, CPython 3.10 to 3.13): `_exec` keeps the code object compiled from each text and runs that
when the text comes again, with the class's own globals and namespace as before. The functions
are those `dataclasses` makes (a code object is immutable; the function, its closure and its
defaults are made anew for every class).

The text is compiled as `exec` compiles it in `dataclasses`, with no `__future__` flag
(`dont_inherit`: this module's `annotations` would turn the generated `__init__`'s annotations
into strings that name nothing, `typing.get_type_hints` failing on them).
"""

from __future__ import annotations

import builtins
import dataclasses

_CODE: dict = {}  # a text `dataclasses` ran → its code object


def _exec(source, globals=None, locals=None, /):
    """`exec`, with a string source compiled once per process."""
    if isinstance(source, str):
        code = _CODE.get(source)
        if code is None:
            code = _CODE[source] = compile(source, "<string>", "exec", dont_inherit=True)
        source = code
    return builtins.exec(source, globals, locals)


def install() -> None:
    """Makes `dataclasses` run its generated texts through `_exec` (see the module docstring)."""
    if "exec" not in vars(dataclasses):  # not shadowed already (by us or by another tool)
        dataclasses.exec = _exec


def is_installed() -> bool:
    return vars(dataclasses).get("exec") is _exec
