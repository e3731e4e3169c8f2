"""tilec's passes: one pass a file, registered here by kebab-case name for `tilec opt`.

Each entry maps a pass name to a function returning the pass class, so that
listing the passes imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _canonicalize() -> type[ModulePass]:
    from xdsl.transforms.canonicalize import CanonicalizePass

    return CanonicalizePass


def _cse() -> type[ModulePass]:
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

    return CommonSubexpressionElimination


def _dce() -> type[ModulePass]:
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    return DeadCodeElimination


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "canonicalize": _canonicalize,
    "cse": _cse,
    "dce": _dce,
}
"""Every pass `tilec opt -p` knows, by name."""


def register(name: str, get: Callable[[], type[ModulePass]]) -> None:
    """Adds a pass to the registry (targets and plugins register theirs here)."""
    PASSES[name] = get
