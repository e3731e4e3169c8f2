"""The marker that turns a documented signature into a kernel builtin."""

from __future__ import annotations

import functools


def builtin(fn):
    """Marks `fn` as a T.* builtin: the frontend builds IR for it; Python calls fail.

    The frontend finds the builtin by `fn.__tilec_builtin__` (its name), binds
    the call's arguments against `fn`'s signature, and emits the IR.
    """

    @functools.wraps(fn)
    def outside_kernel(*args, **kwargs):
        raise RuntimeError(
            f"T.{fn.__name__} is only usable inside @tilec.jit / @T.prim_func kernels"
        )

    outside_kernel.__tilec_builtin__ = fn.__name__
    return outside_kernel
