"""Layout helpers of the surface: `tilec.layout.make_swizzled_layout(buf)`, `tilec.layout.Layout`
(`T.Layout`, a custom layout of a global tensor)."""

from __future__ import annotations

from tilec.language._builtin import builtin
from tilec.language.sync import Layout

__all__ = ["Layout", "make_swizzled_layout"]


@builtin
def make_swizzled_layout(buffer, swizzle_bytes: int = 128):
    """The 128-byte-swizzled shared-memory layout TMA and wgmma use, for `buffer`."""
