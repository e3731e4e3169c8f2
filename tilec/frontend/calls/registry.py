"""The call registry: which IR builder handles which T.* builtin, and the dispatch of a call.

Each op family's module registers its builders with `@handles("copy")` (one builder, one or
more builtin names) or `@handles_each({"reduce_sum": "sum", ...})` (a builder factory called
once per name with the name and its value), as `passes/convert_tile_to_thread/registry.py`
registers lowerings and `targets/nvptx` registers translations.

`call()` dispatches a call expression inside a kernel: T.* builtins through `HANDLERS` (by
the builtin's name, after binding the arguments against its documented signature), macros
by inlining, dtypes as casts, plain Python callables by calling them when every argument is
a compile-time value, and plain Python functions (`def`) called with run-time values by
inlining them as macros (TileLang traces such helpers).
"""

from __future__ import annotations

import difflib
import inspect
import math
from collections.abc import Callable

import tilec.language as T
from tilec.dtypes import DType
from tilec.language.structure import Macro, PrimFunc

from ..values import Access, BarrierRef, BoundMethod, Scalar, SwizzleLayout, TensorData, TileRef, VarRef
from .operands import describe_

Handler = Callable[..., object]
HANDLERS: dict[str, Handler] = {}
"""T.* builtin name → builder `fn(visitor, **bound_arguments)`."""

LOOPS = ("Parallel", "Pipelined", "serial", "unroll", "vectorized")
"""Builtins that are the iterable of a `for` loop (built by `loops.emit_loop`), never called."""

_PY_TO_T = {max: "max", min: "min", abs: "abs"}


def handles(*names: str):
    """Register the decorated builder for the T.* builtins `names`."""

    def register(fn: Handler) -> Handler:
        for name in names:
            assert name not in HANDLERS, f"two builders for T.{name}"
            HANDLERS[name] = fn
        return fn

    return register


def handles_each(table: dict[str, object]):
    """Register `factory(name, value)` as the builder of each builtin `name` of `table`."""

    def register(factory: Callable[[str, object], Handler]):
        for name, value in table.items():
            handles(name)(factory(name, value))
        return factory

    return register


def builtin_name(func) -> str | None:
    return getattr(func, "__tilec_builtin__", None)


def closest_language_name(name: str) -> str:
    close = difflib.get_close_matches(name, T.__all__, n=3)
    return f"did you mean {', '.join('T.' + c for c in close)}?" if close else "see the T.* names in TILELANG_SURFACE.md"


_BLACKWELL = ("a Blackwell (sm_100) feature: tilec targets sm_80 and sm_90a",
              "on Hopper, T.gemm runs on wgmma and T.copy on TMA")
_TILELANG_ONLY = {
    **dict.fromkeys(("tcgen05_gemm", "tcgen05_gemm_blockscaled", "tcgen05_mma_arrive", "tcgen05_cp_warpx4",
                     "tcgen05_sf_warp_transpose", "alloc_tmem", "mma_gemm_blockscaled", "clc_try_cancel_multicast",
                     "clc_is_canceled", "clc_get_first_ctaid_x"), _BLACKWELL),
    **dict.fromkeys(("ClusterKernel", "alloc_cluster_barrier", "block_rank_in_cluster"),
                    ("TileLang's explicit thread-block clusters, which tilec does not provide",
                     "tilec forms clusters of a warp-specialized gemm itself: pass config tilec.cluster")),
    **dict.fromkeys(("WSID", "WSPipeline", "WSRole", "WSSchedule", "WSScope", "WSSync", "annotate_ws_schedule",
                     "ws_op"),
                    ("TileLang's warp-specialization scheduling API, which tilec does not provide",
                     "tilec warp-specializes T.Pipelined gemm loops itself; a hand-written split is `with T.ws(0)` / "
                     "`with T.ws(1)` blocks or `if T.get_thread_binding() >= 128:`")),
    **dict.fromkeys(("Persistent", "PersistentTileScheduler"),
                    ("TileLang's persistent tile scheduler, which tilec does not provide",
                     "tilec makes a warp-specialized gemm kernel persistent itself: pass config tilec.persistent")),
    "sync_grid": ("a grid-wide barrier (a cooperative launch), which tilec does not launch",
                  "split the kernel in two at the barrier"),
}
"""TileLang builtins tilec does not provide, with what they are and what to write instead."""


def unknown_language_name(name: str) -> tuple[str, str]:
    """The error message and hint for `T.<name>` that tilec's language lacks: TileLang's own names
    say what they are and what tilec offers instead."""
    if name in _TILELANG_ONLY:
        what, hint = _TILELANG_ONLY[name]
        return f"T.{name} is {what}", hint
    return f"unknown name `T.{name}` in the kernel language", closest_language_name(name)


def _is_runtime(value) -> bool:
    return isinstance(value, Scalar | TileRef | Access | VarRef | SwizzleLayout | BarrierRef)


def call(v, node, func, args: list, kwargs: dict):
    name = builtin_name(func)
    if name is not None:
        handler = HANDLERS.get(name)
        if handler is None:
            if name in LOOPS:
                raise v.b.error(f"T.{name} is only usable as the iterable of a `for` loop")
            raise v.b.error(f"T.{name} is not supported by tilec yet")
        try:
            bound = inspect.signature(func.__wrapped__).bind(*args, **kwargs)
        except TypeError as e:
            raise v.b.error(f"bad arguments to T.{name}: {e}") from None
        bound.apply_defaults()
        return handler(v, **bound.arguments)
    if isinstance(func, BoundMethod):
        return _method(v, func, args, kwargs)
    if isinstance(func, Macro):
        return v.inline_macro(func, node, args, kwargs)
    if isinstance(func, DType):
        if len(args) != 1 or kwargs:
            raise v.b.error(f"T.{func.name}(x) takes one value")
        value = v.rvalue(args[0])
        return v.b.cast(value, func) if isinstance(value, Scalar) else Scalar(v.b.to_ssa(value, func.ir))
    if isinstance(func, PrimFunc):
        raise v.b.error(f"cannot call prim_func {func.__name__} inside a kernel", hint="decorate helpers with @T.macro")
    if func is T.Tensor:  # an annotation's T.Tensor((n), dtype): sizes may be run-time dimensions
        data = args[2] if len(args) > 2 else kwargs.pop("data", None)
        if data is not None:
            return tensor_view(v, args[0] if args else kwargs.get("shape"),
                               args[1] if len(args) > 1 else kwargs.get("dtype", "float32"), data)
        return func(*args, **kwargs)
    if hasattr(func, "__tilec_lambda__") and any(_is_runtime(a) for a in [*args, *kwargs.values()]):
        return v.call_lambda(func, args, kwargs)
    if inspect.isfunction(func) and any(_is_runtime(a) for a in [*args, *kwargs.values()]):
        # A plain Python helper called with run-time values: TileLang traces it, so its body
        # builds IR where it is called, as a T.macro's does.
        return v.inline_macro(Macro(func), node, args, kwargs)
    args = [v.rvalue(a) for a in args]
    kwargs = {k: v.rvalue(x) for k, x in kwargs.items()}
    if func in _PY_TO_T and any(isinstance(a, Scalar) for a in args):
        return v.b.math_call(_PY_TO_T[func], *args)
    if func in (float, int, bool) and len(args) == 1 and isinstance(args[0], Scalar):
        return v.b.cast(args[0], {float: T.float32, int: T.int32, bool: T.bool}[func])
    if any(_is_runtime(a) for a in [*args, *kwargs.values()]):
        fname = getattr(func, "__name__", repr(func))
        raise v.b.error(f"cannot call Python function `{fname}` with run-time values",
                        hint="use the T.* equivalent (T.floor, T.max, ...), or a Python helper written with `def`, "
                             "which tilec inlines (as @T.macro)")
    if not callable(func):
        raise v.b.error(f"{func!r} is not callable")
    return func(*args, **kwargs)


def _method(v, method: BoundMethod, args, kwargs):
    if method.name == "astype":
        (dtype,) = args or [kwargs.get("dtype")]
        return v.b.cast(v.rvalue(method.receiver), dtype)
    raise v.b.error(f"unknown method `{method.name}`")


def tensor_view(v, shape, dtype, data):
    """`T.Tensor(shape, dtype, A.data)` in a kernel: global tensor A's elements seen with another shape."""
    from tilec.dialects import tile

    from .operands import dtype_of, shape_of

    if not isinstance(data, TensorData):
        raise v.b.error(f"T.Tensor(shape, dtype, data) views a tensor's data (`A.data`), got {describe_(data)}")
    ref = data.tensor
    shape = shape_of(v, shape, "T.Tensor view")
    d = dtype_of(v, dtype, "T.Tensor view")
    if d != ref.dtype:
        raise v.b.error(f"T.Tensor view of {ref}: dtype {d.name} differs from the tensor's {ref.dtype.name}")
    if any(n < 0 for n in ref.shape) or math.prod(shape) != math.prod(ref.shape):
        raise v.b.error(f"T.Tensor view of {ref}: shape {list(shape)} does not hold its {list(ref.shape)} elements",
                        hint="a view keeps every element: the product of the sizes must be the same")
    return TileRef(v.b.emit(tile.ReshapeOp(ref.ssa, tile.TensorType(shape, ref.type.element_type))).results[0])


def attribute(v, base, name: str):
    if isinstance(base, TileRef):
        if name == "shape":
            return base.shape
        if name == "data" and base.scope == "global":
            return TensorData(base)
        if name == "dtype":
            return base.dtype
        if name == "ndim":
            return len(base.shape)
    if isinstance(base, Scalar):
        if name == "dtype":
            return base.dtype
        if name == "astype":
            return BoundMethod(base, "astype")
    raise v.b.error(f"{describe_(base)} has no attribute `{name}` in a kernel")
