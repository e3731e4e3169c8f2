"""Synchronization, atomics, annotations and debugging inside kernels."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def sync_threads(barrier_id=None, arrive_count=None):
    """All threads of the block wait here. With `barrier_id` (a constant in [0, 16)): a named barrier,
    where the `arrive_count` threads (whole warps; default the block's) that reach it wait for each
    other (PTX `bar.sync barrier_id, arrive_count`)."""


@builtin
def fence_proxy_async():
    """Orders this thread's writes to shared memory before the asynchronous proxy's reads of them
    (a wgmma operand, a TMA store) that come after it (PTX `fence.proxy.async.shared::cta`): what a
    kernel writes with ordinary stores for a wgmma of another warpgroup, before it arrives on the
    barrier that warpgroup waits for. (tilec fences its own gemm operands where it writes them.)"""


@builtin
def mbarrier_arrive(mbarrier):
    """Arrives on an mbarrier (`bars[i]` for one of an array)."""


@builtin
def mbarrier_wait_parity(mbarrier, parity):
    """Waits for the mbarrier phase with `parity` to complete."""


@builtin
def barrier_arrive(barrier_id):
    """Arrives on an mbarrier of `T.alloc_barrier` (TileLang's spelling of `T.mbarrier_arrive`)."""


@builtin
def barrier_wait(barrier_id, parity=None):
    """Waits for the mbarrier's phase with `parity` (TileLang's spelling of `T.mbarrier_wait_parity`)."""


@builtin
def ws(*warp_group_ids):
    """`with T.ws(k):` — a block run by warpgroup k of a warp-specialized kernel (see
    tilec/frontend/warp_specialize.py for what tilec supports)."""


@builtin
def atomic_add(dst, value, memory_order=None, return_prev=False, use_tma=False):
    """Atomically adds `value` to `dst` (an element or a tile). `memory_order`: None or "relaxed" (tilec's
    atomics are relaxed); `use_tma` (TileLang's TMA reduction) is reported as not applied."""


@builtin
def atomic_addx2(dst, value, return_prev=False):
    """Atomically adds the 2 consecutive elements starting at element `value` to those starting at
    element `dst` (along the last dim): `T.atomic_addx2(dX[i, 2 * j], x[i, 2 * j])`."""


@builtin
def atomic_addx4(dst, value, return_prev=False):
    """Atomically adds the 4 consecutive elements starting at element `value` to those starting at
    element `dst` (along the last dim): `T.atomic_addx4(dX[i, 4 * j], x_shared[i, 4 * j])`."""


@builtin
def atomic_max(dst, value, memory_order=None, return_prev=False, use_tma=False):
    """Atomically takes the max of `value` and `dst`."""


@builtin
def atomic_min(dst, value, memory_order=None, return_prev=False, use_tma=False):
    """Atomically takes the min of `value` and `dst`."""


@builtin
def use_swizzle(panel_size, order="row", enable=True):
    """Rasterizes blocks in panels for L2 reuse."""


@builtin
def annotate_layout(layout_map):
    """Fixes buffers' layouts: `T.annotate_layout({A_s: make_swizzled_layout(A_s)})`."""


@builtin
def Layout(shape, forward_fn):  # noqa: N802 - TileLang's name
    """A custom layout of a global tensor for `T.annotate_layout`: element `idx` of a tensor of `shape`
    lives at the row-major position of `forward_fn(*idx)` (a list of integer expressions of the indices,
    with + - * and // % by constants) in a buffer of as many elements."""


@builtin
def print(obj=None, msg=""):  # noqa: A001 - TileLang's name
    """Prints a scalar or a tile from the device."""


@builtin
def device_assert(cond, msg=""):
    """Stops the kernel with `msg` when `cond` is false."""
