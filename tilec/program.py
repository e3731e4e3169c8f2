"""Temporary re-export: `KernelProgram` and `Param` live in `tilec.compiler.kernel_program`.

Remove when tilec/frontend imports `tilec.compiler.kernel_program` (the frontend's owner
updates that import; this file only keeps it working meanwhile).
"""

from tilec.compiler.kernel_program import KernelProgram, Param

__all__ = ["KernelProgram", "Param"]
