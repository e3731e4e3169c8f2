"""Temporary re-export: the program-structure names live in `tilec.language.structure`.

Remove when tilec/cli.py, jit.py, runtime.py, profiler.py and tilec/compiler/ import
`tilec.language.structure` (or `tilec.language`) instead; their owners update those imports.
"""

from tilec.language.structure import (
    AnnotationError,
    Buffer,
    Macro,
    PrimFunc,
    Symbol,
    Tensor,
)

__all__ = ["AnnotationError", "Buffer", "Macro", "PrimFunc", "Symbol", "Tensor"]
