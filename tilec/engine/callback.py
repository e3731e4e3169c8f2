"""TileLang's CUDA-source post-processing hooks; tilec generates PTX, not CUDA C, so none can apply.

Registering one is accepted (programs import and register them at import time) and reported
with a `TilecWarning` naming the function: tilec never calls it.
"""

from __future__ import annotations

import warnings

from tilec.errors import TilecWarning

__all__ = ["register_c_postproc", "register_cuda_postproc", "register_cuda_postproc_callback",
           "register_hip_postproc", "register_hip_postproc_callback"]


def _report(kind: str, func) -> None:
    name = getattr(func, "__name__", repr(func))
    warnings.warn(f"{kind} post-processor {name} is registered but never called: tilec generates PTX with LLVM, "
                  "not CUDA C source to post-process", TilecWarning, stacklevel=3)


def register_cuda_postproc(func, override: bool = True):
    _report("CUDA", func)


def register_hip_postproc(func, override: bool = True):
    _report("HIP", func)


def register_c_postproc(func, override: bool = True):
    _report("C", func)


def _decorator(kind: str):
    def register(func=None, override: bool = True):
        if callable(func):
            _report(kind, func)
            return func

        def wrap(f):
            _report(kind, f)
            return f

        return wrap

    return register


register_cuda_postproc_callback = _decorator("CUDA")
register_hip_postproc_callback = _decorator("HIP")
