"""Data movement and initialization of tiles; TileLang's cp.async groups and raw per-thread cp.async."""

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


@builtin
def ptx_cp_async(dst_access_ptr, src_access_ptr, num_elems, predicate=None):
    """The calling thread copies `num_elems` elements from global memory to shared memory with
    PTX `cp.async` (TileLang's raw per-thread cp.async): every thread that runs it issues its own
    copy, at its own indices (computed from `T.get_thread_binding()`).

    Args:
        dst_access_ptr: `T.access_ptr(S[i, j], "w", n)`: the first element written, of a shared
            buffer. tilec addresses it under the buffer's layout (a swizzle it gives the buffer for
            T.gemm or `T.annotate_layout`).
        src_access_ptr: `T.access_ptr(A[b, k, c], "r", n)`: the first element read, of a global tensor.
        num_elems: a compile-time count; times the element size it is 4, 8 or 16 bytes (16: `.cg`).
            The elements run along the last dim of both, from a multiple of `num_elems` that tilec
            must be able to prove (e.g. a column `(tid % 8) * 8`), else a located error.
        predicate: optional boolean: where it is false the thread reads nothing and writes zeros.

    The copy is complete after the thread's `T.ptx_commit_group()` / `T.ptx_wait_group(n)`, or in
    the phase of its `T.cp_async_barrier_noinc(bar)`; a `T.sync_threads()` (or the mbarrier wait)
    then shows every thread's copies to the block. Source elements outside the tensor read as zero.
    """


@builtin
def cp_async_barrier_noinc(barrier):
    """The calling thread arrives on mbarrier `barrier` (of `T.alloc_barrier`, `bars[i]` of an
    array) once all of its earlier cp.async copies have landed (PTX
    `cp.async.mbarrier.arrive.noinc.shared.b64`): one of the phase's `arrive_count` arrivals, so
    that `T.barrier_wait(barrier, parity)` passes when every arriving thread's copies are there."""
