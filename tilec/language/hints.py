"""Register-allocation hints of warp-specialized kernels (TileLang's `setmaxnreg` family).

tilec builds no warp-specialized kernels yet, so it emits no `setmaxnreg`: the hints that ask
for none (`disable_warp_group_reg_alloc`, `no_set_max_nreg`) hold as they are; the ones that
ask for a register count are accepted and reported, at the call, as not applied.
"""

from __future__ import annotations

from ._builtin import builtin


@builtin
def disable_warp_group_reg_alloc():
    """No automatic per-warpgroup register reallocation (tilec does none)."""


@builtin
def no_set_max_nreg():
    """No `setmaxnreg` in this kernel (tilec emits none)."""


@builtin
def set_max_nreg(reg_count: int, is_inc: int):
    """`setmaxnreg.inc` / `.dec` to `reg_count` registers per thread (sm_90a warp specialization)."""


@builtin
def inc_max_nreg(reg_count: int):
    """`setmaxnreg.inc` to `reg_count`."""


@builtin
def dec_max_nreg(reg_count: int):
    """`setmaxnreg.dec` to `reg_count`."""


@builtin
def annotate_producer_reg_dealloc(reg_count: int = 24):
    """The producer warpgroup's register count."""


@builtin
def annotate_consumer_reg_alloc(reg_count: int = 240):
    """The consumer warpgroups' register count."""
