"""NVPTX backend: thread-level IR → LLVM IR (llvmlite.ir) → PTX → cubin (ptxas)."""

from .emit import compile_llvm_ir, emit_llvm_ir, emit_ptx, kernel_names
from .ptxas import (
    KernelResources,
    PtxasError,
    PtxasNotFoundError,
    PtxasReport,
    assemble,
    find_ptxas,
)
from .translate import TranslateOptions, TranslationError, translate_module

__all__ = [
    "KernelResources",
    "PtxasError",
    "PtxasNotFoundError",
    "PtxasReport",
    "TranslateOptions",
    "TranslationError",
    "assemble",
    "compile_llvm_ir",
    "emit_llvm_ir",
    "emit_ptx",
    "find_ptxas",
    "kernel_names",
    "translate_module",
]
