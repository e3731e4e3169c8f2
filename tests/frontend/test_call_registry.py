"""The call registry: every T.* builtin has exactly one IR builder (or is a loop), and no builder is orphaned."""

import pytest

import tilec.language as T
from tilec import layout
from tilec.frontend.calls import HANDLERS, LOOPS, builtin_name, handles


def _builtins() -> set[str]:
    names = {builtin_name(getattr(T, n)) for n in T.__all__}
    names |= {builtin_name(getattr(layout, n)) for n in layout.__all__}
    return {n for n in names if n is not None}


def test_every_builtin_has_a_builder_or_is_a_loop():
    missing = _builtins() - set(HANDLERS) - set(LOOPS)
    assert not missing, f"T.* builtins without an IR builder: {sorted(missing)}"


def test_every_builder_serves_a_builtin():
    orphans = set(HANDLERS) - _builtins()
    assert not orphans, f"builders registered for names that are not T.* builtins: {sorted(orphans)}"


def test_a_second_builder_for_a_name_is_refused():
    with pytest.raises(AssertionError, match="two builders for T.copy"):
        handles("copy")(lambda v, **_: None)
