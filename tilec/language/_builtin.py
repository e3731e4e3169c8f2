"""The marker that turns a documented signature into a kernel builtin."""

from __future__ import annotations

import functools


def builtin(fn=None, *, py=None):
    """Marks `fn` as a T.* builtin: the frontend builds IR for it.

    The frontend finds the builtin by `fn.__tilec_builtin__` (its name), binds
    the call's arguments against `fn`'s signature, and emits the IR. Called from
    Python outside a kernel, the builtin computes `py(*args)` when `py` is given and
    every argument is a plain number (`T.max(3, 4)`, `T.ceildiv(n, 64)`, as TileLang's
    do on Python values); otherwise it raises.
    """
    if fn is None:
        return functools.partial(builtin, py=py)

    @functools.wraps(fn)
    def outside_kernel(*args, **kwargs):
        if py is not None and not kwargs and all(_is_number(a) for a in args):
            return py(*args)
        raise RuntimeError(
            f"T.{fn.__name__} is only usable inside @tilec.jit / @T.prim_func kernels"
        )

    outside_kernel.__tilec_builtin__ = fn.__name__
    return outside_kernel


def _is_number(value) -> bool:
    return isinstance(value, int | float) or type(value).__module__ == "numpy" and hasattr(value, "dtype")
