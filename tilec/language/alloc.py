"""Buffers of a block: shared, fragment (registers), local and scalar variables."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def alloc_shared(shape, dtype, scope="shared.dyn"):
    """A tile in the block's shared memory."""


@builtin
def alloc_global(shape, dtype):
    """A global scratch tensor of the kernel function, outside `T.Kernel`: allocated by the runtime
    at each call (its contents start undefined), shared by the function's kernels, which run one
    after the other (a split kernel writes partial results there, a combine kernel reads them)."""


@builtin
def alloc_fragment(shape, dtype, scope="local.fragment"):
    """A register tile spread over the block's threads; its layout is inferred."""


@builtin
def alloc_local(shape, dtype, scope="local"):
    """A per-thread array."""


@builtin
def alloc_var(dtype, init=None, scope="local.var"):
    """A per-thread scalar variable: read it by name, assign it with `=`."""


@builtin
def alloc_barrier(arrive_count):
    """An mbarrier in shared memory expecting `arrive_count` arrivals per phase; with a list of counts, an
    array of mbarriers (`bars[i]`), one per count."""


@builtin
def reshape(buffer, shape):
    """The same buffer seen with another shape."""


@builtin
def view(buffer, shape=None, dtype=None):
    """The same buffer seen with another shape (a dtype change is not supported yet)."""
