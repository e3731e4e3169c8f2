"""Tile reductions and scans."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def reduce_sum(src, dst, dim=-1, clear=True):
    """dst = sum of src along `dim` (plus dst's old value unless `clear`)."""


@builtin
def reduce_max(src, dst, dim=-1, clear=True):
    """dst = max of src along `dim`."""


@builtin
def reduce_min(src, dst, dim=-1, clear=True):
    """dst = min of src along `dim`."""


@builtin
def reduce_abssum(src, dst, dim=-1, clear=True):
    """dst = sum of |src| along `dim`."""


@builtin
def reduce_absmax(src, dst, dim=-1, clear=True):
    """dst = max of |src| along `dim`."""


@builtin
def cumsum(src, dst=None, dim=0, reverse=False):
    """Inclusive prefix sum along `dim` (in place when dst is None)."""


@builtin
def cummax(src, dst=None, dim=0, reverse=False):
    """Inclusive running maximum along `dim`."""
