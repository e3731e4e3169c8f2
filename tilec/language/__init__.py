"""The kernel language: `import tilec.language as T`.

The names and their meaning follow TileLang 0.1.x (shared/TILELANG_SURFACE.md
is the contract).  These functions only carry signatures and documentation;
the frontend (`tilec.frontend`) turns calls to them into tile IR.
"""

from .alloc import alloc_barrier, alloc_fragment, alloc_global, alloc_local, alloc_shared, alloc_var, reshape, view
from . import dtypes, fp8
from .copy import (
    clear, copy, cp_async_barrier_noinc, fill, im2col, ptx_commit_group, ptx_cp_async, ptx_wait_group, tma_copy,
)
from .dtypes import (
    bfloat16, bool, double, dtype, float, float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e4m3, float8_e4m3fn,
    float8_e5m2, float8_e8m0fnu, float16, float32, float64, half, int, int4, int8, int16, int32, int64, long, ptr, short,
    PointerType, tfloat32, uint, uint8, uint16, uint32, uint64,
)
from .extern import access_ptr, address_of, attr, call_extern, comm_reducer, evaluate, import_source, tvm_thread_allreduce
from .gemm import GemmWarpPolicy, gemm, wait_wgmma, wgmma_gemm
from .hints import (
    annotate_consumer_reg_alloc, annotate_producer_reg_dealloc, dec_max_nreg, disable_warp_group_reg_alloc,
    inc_max_nreg, no_set_max_nreg, set_max_nreg,
)
from .pointers import make_tensor, make_tensor_from_addr
from .loop import Parallel, Pipelined, Serial, serial, unroll, vectorized
from .math import (
    Cast, abs, cast, ceil, ceildiv, clamp, cos, erf, exp, exp2, floor, floordiv, floormod, if_then_else, infinity,
    log, log2, max, min, pow, reinterpret, rsqrt, sigmoid, sin, sqrt, tanh,
)
from .structure import (
    Buffer, FragmentBuffer, Kernel, LocalBuffer, Macro, SharedBuffer, PrimFunc, Symbol, Tensor, const, dynamic, empty, get_block_binding,
    get_thread_binding, macro, prim_func, symbolic, thread_binding,
)
from .reduce import cummax, cumsum, reduce_absmax, reduce_abssum, reduce_max, reduce_min, reduce_sum
from .sync import (
    Layout, annotate_layout, atomic_add, atomic_addx2, atomic_addx4, atomic_max, atomic_min, barrier_arrive, barrier_wait, device_assert,
    fence_proxy_async,
    mbarrier_arrive, mbarrier_wait_parity, print, sync_threads, use_swizzle, ws,
)

__all__ = [
    "access_ptr", "address_of", "alloc_global", "atomic_addx2", "atomic_addx4", "attr", "call_extern", "comm_reducer", "evaluate",
    "FragmentBuffer", "import_source", "LocalBuffer", "SharedBuffer", "tvm_thread_allreduce", "wait_wgmma",
    "wgmma_gemm",
    "annotate_consumer_reg_alloc", "annotate_producer_reg_dealloc", "dec_max_nreg", "disable_warp_group_reg_alloc",
    "inc_max_nreg", "no_set_max_nreg", "set_max_nreg",
    "abs", "alloc_barrier", "alloc_fragment", "alloc_local", "alloc_shared", "alloc_var",
    "annotate_layout", "atomic_add", "atomic_max", "atomic_min", "barrier_arrive", "barrier_wait", "bfloat16",
    "bool", "Buffer",
    "Cast", "cast", "ceil", "ceildiv", "clamp", "clear", "const", "copy", "cos", "cp_async_barrier_noinc",
    "cummax", "cumsum",
    "device_assert", "double", "dtype", "dtypes", "dynamic", "empty", "erf", "exp", "exp2", "fence_proxy_async", "fill",
    "float", "float16", "float32", "float4_e2m1fn", "float64", "float6_e2m3fn", "float6_e3m2fn",
    "float8_e4m3", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "floor", "floordiv",
    "floormod", "fp8", "gemm", "GemmWarpPolicy", "get_block_binding", "get_thread_binding", "half",
    "if_then_else", "im2col", "infinity", "int", "Layout", "int16", "int32", "int4", "int64", "int8", "Kernel", "log",
    "log2", "long", "Macro", "macro", "make_tensor", "make_tensor_from_addr", "max", "mbarrier_arrive", "mbarrier_wait_parity", "min",
    "Parallel", "Pipelined", "PointerType", "pow", "ptr", "ptx_commit_group", "ptx_cp_async", "ptx_wait_group", "prim_func", "PrimFunc", "print", "reduce_absmax",
    "reduce_abssum", "reduce_max", "reduce_min", "reduce_sum", "reinterpret", "reshape", "rsqrt",
    "Serial", "serial", "short", "sigmoid", "sin", "sqrt", "Symbol", "symbolic", "sync_threads",
    "tanh", "Tensor", "tfloat32", "thread_binding", "tma_copy", "uint", "uint16", "uint32", "uint64", "uint8",
    "unroll", "use_swizzle", "vectorized", "view", "ws",
]
