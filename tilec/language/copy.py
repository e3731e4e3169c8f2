"""Data movement and initialization of tiles."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def copy(src, dst, *, coalesced_width=None, disable_tma=False, eviction_policy=None):
    """Copies a tile between any two scopes, converting the element type.

    `A[i, j]` (a point) means the region of the other side's shape starting
    there; `A[i0:i1, j0:j1]` is an explicit region.  Out-of-bounds parts of
    global tensors are neither read nor written.
    """


@builtin
def fill(buffer, value):
    """Sets every element of a tile to `value`."""


@builtin
def clear(buffer):
    """Sets every element of a tile to zero."""


@builtin
def tma_copy(src, dst, barrier=None):
    """A TMA copy on sm_90 (lowered as `T.copy` where TMA is unavailable)."""


@builtin
def im2col(img, col, nhw_step, c_step, kernel, stride=1, dilation=1, pad=0):
    """Fills `col` [bm, bk] with the im2col patch of NHWC `img` for output pixels nhw_step*bm.. and patch
    elements c_step*bk.. of a `kernel`×`kernel` convolution (zeros outside the image)."""


@builtin
def ptx_commit_group():
    """Closes the calling thread's group of asynchronous (cp.async) copies issued since the last
    commit (PTX `cp.async.commit_group`)."""


@builtin
def ptx_wait_group(num):
    """Waits until at most `num` (a compile-time int) of the calling thread's committed cp.async
    groups are unfinished (PTX `cp.async.wait_group`). Other threads' copies are visible after the
    barrier that tilec inserts before shared memory is read."""
