"""TileLang programs unmodified: the module names `tilelang` (and `tvm`) mapped to tilec.

    python -m tilec.compat script.py args...          # run a TileLang script
    python -m tilec.compat -m pytest tests/...          # run a module (pytest) the same way
    python -m tilec.compat --cuda-on-cpu -m pytest ...  # no GPU: torch's CUDA calls run on the CPU

    import tilec.compat; tilec.compat.install()         # the same mapping, in-process

`install()` puts one finder at the front of `sys.meta_path`: `import tilelang.X` gives the
module `tilec.X` itself (one module object under two names), and `import tvm.X` gives the
stand-in `tilec.tvm.X` when no real TVM is installed. Everything a TileLang program uses
lives in tilec proper (`tilec.PassConfigKey`, `tilec.autotuner`, `tilec.testing`, ...), so a
user who edits the imports gets the same: this mapping is only a convenience. A TileLang
module tilec does not provide fails to import with a message saying so.

`--cuda-on-cpu` installs `tilec.testing.cuda_on_cpu` first: tensors a program puts on "cuda"
stay on the CPU, `torch.cuda` answers as one GPU would, and kernels run on the interpreter.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys

ALIASES = {"tilelang": "tilec", "tvm": "tilec.tvm"}
"""Top-level TileLang names → the tilec packages that stand for them."""


def real_name(fullname: str) -> str | None:
    """The tilec module that stands for `fullname` (None: not a mapped name)."""
    top, _, rest = fullname.partition(".")
    base = ALIASES.get(top)
    if base is None:
        return None
    return f"{base}.{rest}" if rest else base


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `tilelang.X` as the already-imported module `tilec.X`."""

    def find_spec(self, fullname, path=None, target=None):
        real = real_name(fullname)
        if real is None or (fullname.partition(".")[0] == "tvm" and _real_tvm_installed()):
            return None
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as e:
            if e.name is not None and not (real == e.name or real.startswith(e.name + ".")):
                raise  # a module tilec itself imports is missing: not a mapping question
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: tilec does not provide this TileLang module "
                f"(looked for {real!r}); see shared/TILELANG_SURFACE.md for what tilec implements",
                name=fullname) from None
        spec = importlib.machinery.ModuleSpec(fullname, self, origin=getattr(module, "__file__", None),
                                              is_package=hasattr(module, "__path__"))
        spec._tilec_module = module
        return spec

    def create_module(self, spec):
        module = spec._tilec_module
        spec._tilec_saved = (module.__spec__, getattr(module, "__loader__", None))
        return module

    def exec_module(self, module):
        # module_from_spec stamped the alias spec on the real module: give it back its own.
        spec = module.__spec__
        module.__spec__, module.__loader__ = spec._tilec_saved


_FINDER = _AliasFinder()
_TVM: list[bool] = []


def _real_tvm_installed() -> bool:
    if not _TVM:
        try:
            sys.meta_path.remove(_FINDER)
            found = importlib.util.find_spec("tvm") is not None
        finally:
            sys.meta_path.insert(0, _FINDER)
        _TVM.append(found)
    return _TVM[0]


def install() -> None:
    """Maps `tilelang` (and `tvm`, when no real TVM is installed) to tilec in this process."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in list(sys.modules):  # a TileLang module imported before install() is not tilec's
        if real_name(name) is not None and not getattr(sys.modules[name], "__name__", "").startswith("tilec"):
            raise RuntimeError(f"tilec.compat.install(): {name} is already imported from elsewhere "
                               f"({getattr(sys.modules[name], '__file__', '?')}); install before importing it")


def uninstall() -> None:
    """Removes the mapping (modules imported through it stay imported under both names)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


_USAGE = """usage: python -m tilec.compat [--cuda-on-cpu] script.py [args...]
       python -m tilec.compat [--cuda-on-cpu] -m module [args...]

Runs a TileLang program with `tilelang` mapped to tilec.
  --cuda-on-cpu   no GPU: torch's CUDA calls run on the CPU and kernels on the interpreter"""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--cuda-on-cpu":
        argv.pop(0)
        from tilec.testing import cuda_on_cpu

        cuda_on_cpu.install()
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(_USAGE, file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
