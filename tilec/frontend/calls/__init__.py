"""IR building for the T.* builtins, one module per op family behind one call registry.

    registry    `@handles` / `@handles_each`: which builder handles which builtin; `call()`
                dispatches a call (builtins, macros, dtype casts, compile-time Python calls)
    operands    shapes, dtypes, compile-time integers, regions of tiles
    structure   T.const, T.empty, the T.Kernel launch, block and thread indices
    alloc       shared / fragment / local buffers, T.alloc_var, barriers, reshape / view
    copy        copy, tma_copy, fill, clear          gemm      T.gemm
    raw_copy    TileLang's raw per-thread cp.async (T.ptx_cp_async, T.cp_async_barrier_noinc)
    reduce      reductions and scans                 atomic    T.atomic_*
    math        scalar math                          sync      barriers, mbarriers
    layout      swizzles and layout annotations      debug     T.print, T.device_assert
    hints       register-allocation hints (setmaxnreg)     conv      T.im2col
    pointers    T.make_tensor: global tensors at run-time addresses (pointer tables, T.ptr)
    extern      refusals of TileLang's TIR-only and foreign-source names (T.call_extern, T.attr, ...)
    loops       T.Parallel, T.Pipelined and the sequential loops
"""

from . import alloc, atomic, conv, copy, debug, extern, gemm, hints, layout, math, pointers, reduce, structure, sync  # noqa: F401  (builders register on import)
from .raw_copy import pointer_arguments
from .loops import emit_loop
from .registry import (HANDLERS, LOOPS, attribute, builtin_name, call, closest_language_name, handles, handles_each,
                       unknown_language_name)
from .structure import emit_kernel

__all__ = ["HANDLERS", "LOOPS", "attribute", "builtin_name", "call", "closest_language_name", "emit_kernel",
           "emit_loop", "handles", "handles_each", "pointer_arguments", "unknown_language_name"]
