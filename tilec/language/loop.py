"""Loops inside kernels."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def Parallel(*extents, coalesced_width=None, prefer_async=False, annotations=None):
    """An element-wise loop nest over a tile, partitioned over threads and vectorized."""


@builtin
def Pipelined(start, stop=None, num_stages=0, order=None, stage=None, sync=None, group=None):
    """A loop whose loads of later iterations overlap the compute of earlier ones."""


@builtin
def serial(start, stop=None, step=None):
    """A sequential loop."""


Serial = serial


@builtin
def unroll(start, stop=None, step=None, explicit=False):
    """A sequential loop the code generator unrolls."""


@builtin
def vectorized(start, stop=None):
    """A loop the code generator vectorizes."""
