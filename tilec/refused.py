"""Names TileLang programs may import but tilec does not provide: they import, and refuse when used.

TVM itself (`tvm.tirx` expression building, `tvm.target`, TVM's passes) and TileLang's tools
built on it are out of tilec's scope (issue 11, item 6). A program that only imports such a
name (or uses it in a type annotation) runs; calling it raises `NotEmulated`, a `TilecError`
naming the name and what to do instead.
"""

from __future__ import annotations

from tilec.errors import TilecError


class NotEmulated(TilecError, AttributeError):
    """A TVM (or TVM-based TileLang) facility tilec does not emulate was used."""


_HINT = ("tilec compiles TileLang kernels without TVM: write the computation with T.* inside the kernel; "
         "see shared/TILELANG_SURFACE.md for what tilec provides")


def refuse(what: str, why: str = "tilec does not emulate TVM") -> NotEmulated:
    return NotEmulated(f"{what}: {why}", hint=_HINT)


class _StandInMeta(type):
    def __call__(cls, *args, **kwargs):
        raise refuse(cls._tilec_what, cls._tilec_why)

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise refuse(f"{cls._tilec_what}.{name}", cls._tilec_why)

    def __repr__(cls):
        return f"<tilec stand-in for {cls._tilec_what}>"


def stand_in(what: str, why: str = "tilec does not emulate TVM") -> type:
    """A class that can be imported, named in annotations and isinstance-tested (never true), but not used."""
    return _StandInMeta(what.rsplit(".", 1)[-1], (), {"_tilec_what": what, "_tilec_why": why})


def module_getattr(prefix: str, why: str = "tilec does not emulate TVM"):
    """A module `__getattr__` that hands out stand-ins for every public name under `prefix`."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return stand_in(f"{prefix}.{name}", why)

    return __getattr__
