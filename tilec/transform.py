"""`PassConfigKey`: TileLang's names for the `pass_configs` keys (`tilelang.transform.PassConfigKey`).

A `str` enum, so `pass_configs={PassConfigKey.TL_ENABLE_FAST_MATH: True}` and
`{"tl.enable_fast_math": True}` are the same. The members are the keys of
`tilec.compiler.pass_configs.KEYS`, the one table of what tilec does with each key
(honoured, not applicable and reported, or refused); where TileLang spells a key in two
namespaces (`tir.` / `tirx.`), the member holds TileLang's current one and both are accepted.
"""

from __future__ import annotations

import enum

from tilec.compiler.pass_configs import KEYS


def _members() -> dict[str, str]:
    members: dict[str, str] = {}
    for key in KEYS.values():  # later spellings (tirx.*) win: TileLang's current namespace
        members[key.attr] = key.name
    return members


PassConfigKey = enum.Enum("PassConfigKey", _members(), type=str, module=__name__)
PassConfigKey.__doc__ = "TileLang's pass-config keys; `str` members, so they work wherever the string does."
PassConfigKey.__str__ = lambda self: self.value

__all__ = ["PassConfigKey"]
