"""xDSL's declarative assembly formats, parsed when an op is first printed or parsed, not at import.

xDSL parses the `assembly_format` string of every op class while defining the class
(`irdl_op_definition` → `FormatProgram.from_str`): some 280 formats in the dialects a build
loads (arith, memref, llvm, vector, gpu, ..., tile, nvvm), ~0.08 s of a cold build that prints
and parses only a handful of op kinds. `install()`, run by `import tilec`, makes
`FormatProgram.from_str` return a `LazyFormatProgram`, which parses its format on first use and
then behaves as the parsed program (xDSL calls only its `parse` and `print`). The parser has no
side effects on the op definition, so the printed and parsed IR is the same; a malformed format
(a bug in a dialect, caught by the FileCheck tests) fails at the first print instead of at import.

It must be in place before xDSL defines its ops, and `import tilec` must not load xDSL: so
`install()` patches the class if xDSL's module is loaded already, and otherwise puts a one-shot
import hook on `sys.meta_path` that patches it as soon as it is loaded (xDSL's builtin dialect,
the first to load it, defines its few formatted ops before that point; they stay eager).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

MODULE = "xdsl.irdl.declarative_assembly_format"


class LazyFormatProgram:
    """An op's assembly format, parsed (by xDSL's eager `from_str`) the first time it is used."""

    __slots__ = ("_eager", "_op_def", "_program", "_text")

    def __init__(self, text: str, op_def, eager):
        self._text, self._op_def, self._eager, self._program = text, op_def, eager, None

    @property
    def program(self):
        """The parsed `FormatProgram`."""
        if self._program is None:
            self._program = self._eager(self._text, self._op_def)
        return self._program

    def parse(self, parser, op_type):
        return self.program.parse(parser, op_type)

    def print(self, printer, op):
        return self.program.print(printer, op)


def _patch(module) -> None:
    program = getattr(module, "FormatProgram", None)
    eager = getattr(program, "from_str", None)
    if eager is None or getattr(eager, "lazy", False):
        return  # another xDSL than 0.75's layout: its formats stay eager (slower, same IR)

    def from_str(text: str, op_def):
        return LazyFormatProgram(text, op_def, eager)

    from_str.lazy = True
    program.from_str = staticmethod(from_str)


class _PatchOnLoad(importlib.abc.MetaPathFinder):
    """Finds xDSL's format module as the path finder does, and patches it once it has run."""

    def find_spec(self, name, path=None, target=None):
        if name != MODULE:
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


def install() -> None:
    """Makes the assembly formats of the xDSL ops defined from now on lazy (see the module docstring)."""
    if MODULE in sys.modules:
        _patch(sys.modules[MODULE])
    elif not any(isinstance(f, _PatchOnLoad) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnLoad())


def is_installed() -> bool:
    """Whether the formats of ops defined now are lazy (or will be, once xDSL loads)."""
    module = sys.modules.get(MODULE)
    if module is not None:
        return bool(getattr(getattr(getattr(module, "FormatProgram", None), "from_str", None), "lazy", False))
    return any(isinstance(f, _PatchOnLoad) for f in sys.meta_path)
