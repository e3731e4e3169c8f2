"""Layout helpers of the surface: `tilec.layout.make_swizzled_layout(buf)` and the swizzles named by
their width (`make_full_bank_swizzled_layout`, half, quarter), `tilec.layout.Layout` (`T.Layout`, a
custom layout of a global tensor)."""

from __future__ import annotations

from tilec.language._builtin import builtin
from tilec.language.sync import Layout

__all__ = ["Layout", "make_full_bank_swizzled_layout", "make_half_bank_swizzled_layout",
           "make_quarter_bank_swizzled_layout", "make_swizzled_layout"]


@builtin
def make_swizzled_layout(buffer, k_major: bool = True, allow_pad: bool = True, *, swizzle_bytes: int | None = None):
    """TileLang's swizzled shared-memory layout of `buffer` (`T.annotate_layout({buf: ...})`): the
    XOR swizzle of its row width, as TileLang's gemm layouts choose it: 128 bytes for rows of a
    multiple of 128 bytes (wider rows stored as 128-byte column chunks where wgmma reads them),
    else 64, else 32; a row of another width stays unswizzled. `swizzle_bytes` (32, 64 or 128)
    names the swizzle instead. `k_major` and `allow_pad` are TileLang's: they pick its padded
    layouts of 8-bit and 64-bit operands and of rows no swizzle fits, which tilec stores
    unswizzled (the values a kernel computes are the same in any layout)."""


@builtin
def make_full_bank_swizzled_layout(buffer):
    """The 128-byte XOR swizzle of `buffer`'s rows (TileLang's full-bank swizzle)."""


@builtin
def make_half_bank_swizzled_layout(buffer):
    """The 64-byte XOR swizzle of `buffer`'s rows (TileLang's half-bank swizzle)."""


@builtin
def make_quarter_bank_swizzled_layout(buffer):
    """The 32-byte XOR swizzle of `buffer`'s rows (TileLang's quarter-bank swizzle)."""
