"""Integer helpers for sizes outside kernels (`tilelang.math`): `cdiv`, `next_power_of_2`."""

from __future__ import annotations

__all__ = ["cdiv", "next_power_of_2"]


def next_power_of_2(x: int) -> int:
    """The smallest power of two >= x, for x >= 1 (TileLang's formula: 2 for 0)."""
    return 1 << (int(x) - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    """a / b rounded up, on Python integers."""
    return -(-a // b)
