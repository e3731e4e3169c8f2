"""The kernel language: `import tilec.language as T`.

The names and their meaning follow TileLang 0.1.x (shared/TILELANG_SURFACE.md
is the contract).  These functions only carry signatures and documentation;
the frontend (`tilec.frontend`) turns calls to them into tile IR.
"""

from tilec.dtypes import BY_NAME as _DTYPES

from .alloc import alloc_barrier, alloc_fragment, alloc_local, alloc_shared, alloc_var, reshape, view
from .copy import clear, copy, fill, tma_copy
from .gemm import GemmWarpPolicy, gemm
from .loop import Parallel, Pipelined, Serial, serial, unroll, vectorized
from .math import (
    abs, cast, ceil, ceildiv, cos, erf, exp, exp2, floor, if_then_else, infinity, log, log2, max, min,
    pow, rsqrt, sigmoid, sin, sqrt, tanh,
)
from .structure import (
    Buffer, Kernel, Macro, PrimFunc, Symbol, Tensor, const, dynamic, empty, get_block_binding,
    get_thread_binding, macro, prim_func, symbolic,
)
from .reduce import cummax, cumsum, reduce_absmax, reduce_abssum, reduce_max, reduce_min, reduce_sum
from .sync import (
    annotate_layout, atomic_add, atomic_max, atomic_min, device_assert, mbarrier_arrive,
    mbarrier_wait_parity, print, sync_threads, use_swizzle,
)

float16 = _DTYPES["float16"]
bfloat16 = _DTYPES["bfloat16"]
float32 = _DTYPES["float32"]
float64 = _DTYPES["float64"]
float8_e4m3fn = _DTYPES["float8_e4m3fn"]
float8_e5m2 = _DTYPES["float8_e5m2"]
int8 = _DTYPES["int8"]
int16 = _DTYPES["int16"]
int32 = _DTYPES["int32"]
int64 = _DTYPES["int64"]
uint8 = _DTYPES["uint8"]
bool = _DTYPES["bool"]  # noqa: A001 - TileLang's name

__all__ = [
    "Buffer", "GemmWarpPolicy", "Kernel", "Macro", "Parallel", "Pipelined", "PrimFunc", "Serial",
    "Symbol", "Tensor", "abs", "alloc_barrier", "alloc_fragment", "alloc_local", "alloc_shared",
    "alloc_var", "annotate_layout", "atomic_add", "atomic_max", "atomic_min", "bfloat16", "bool",
    "cast", "ceil", "ceildiv", "clear", "const", "copy", "cos", "cummax", "cumsum",
    "device_assert", "dynamic", "empty", "erf", "exp", "exp2", "fill", "float16", "float32",
    "float64", "float8_e4m3fn", "float8_e5m2", "floor", "gemm", "get_block_binding",
    "get_thread_binding", "if_then_else", "infinity", "int16", "int32", "int64", "int8", "log",
    "log2", "macro", "max", "mbarrier_arrive", "mbarrier_wait_parity", "min", "pow", "prim_func",
    "print", "reduce_absmax", "reduce_abssum", "reduce_max", "reduce_min", "reduce_sum",
    "reshape", "rsqrt", "serial", "sigmoid", "sin", "sqrt", "symbolic", "sync_threads", "tanh",
    "tma_copy", "uint8", "unroll", "use_swizzle", "vectorized", "view",
]
