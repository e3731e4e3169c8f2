"""`set_autotune_inputs(*tensors)`: the inputs autotuning times and checks with, instead of random ones.

    with set_autotune_inputs(a, b):
        kernel = matmul(M, N, K)        # tunes on a, b

The inputs are a per-thread stack: the innermost `with` wins.
"""

from __future__ import annotations

import threading

_local = threading.local()


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


class set_autotune_inputs:  # noqa: N801 - TileLang's name
    """Context manager: autotuning inside uses `tensors` as the kernel's inputs."""

    def __init__(self, *tensors):
        self.tensors = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], list | tuple) else \
            list(tensors)

    def __enter__(self):
        _stack().append(self.tensors)
        return self

    def __exit__(self, *exc):
        _stack().pop()
        return False


def get_autotune_inputs() -> list | None:
    """The innermost `set_autotune_inputs` tensors, or None."""
    stack = _stack()
    return stack[-1] if stack else None
