"""IR building for the T.* builtins: calls, loops, the kernel launch.

`call()` dispatches a call expression: T.* builtins through `_HANDLERS` (by
the builtin's name, after binding the arguments against its documented
signature), macros by inlining, and plain Python callables by calling them
when every argument is a compile-time value.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, i1

import tilec.language as T
from tilec.dialects import tile
from tilec.dtypes import DType, as_dtype
from tilec.language.program import Macro, PrimFunc, Tensor

from .parallel_vars import check_reads_after, privatize
from .semantic import is_compile_time
from .values import Access, BoundMethod, Scalar, SliceIndex, SwizzleLayout, TileRef, VarRef

TensorSpecs = Tensor
LOOPS = ("Parallel", "Pipelined", "serial", "unroll", "vectorized")
INDEX = IndexType()
_REDUCE = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min", "reduce_abssum": "abssum",
           "reduce_absmax": "absmax"}
_UNARY = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "abs", "floor", "ceil", "sin",
          "cos", "erf")
_PY_TO_T = {max: "max", min: "min", abs: "abs"}


def builtin_name(func) -> str | None:
    return getattr(func, "__tilec_builtin__", None)


def closest_language_name(name: str) -> str:
    close = difflib.get_close_matches(name, T.__all__, n=3)
    return f"did you mean {', '.join('T.' + c for c in close)}?" if close else "see the T.* names in TILELANG_SURFACE.md"


def _is_runtime(value) -> bool:
    return isinstance(value, Scalar | TileRef | Access | VarRef | SwizzleLayout)


# --------------------------------------------------------------------------- #
# Dispatch
# --------------------------------------------------------------------------- #


def call(v, node, func, args: list, kwargs: dict):
    name = builtin_name(func)
    if name is not None:
        handler = _HANDLERS.get(name)
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
    args = [v.rvalue(a) for a in args]
    kwargs = {k: v.rvalue(x) for k, x in kwargs.items()}
    if func in _PY_TO_T and any(isinstance(a, Scalar) for a in args):
        return v.b.math_call(_PY_TO_T[func], *args)
    if func in (float, int, bool) and len(args) == 1 and isinstance(args[0], Scalar):
        return v.b.cast(args[0], {float: T.float32, int: T.int32, bool: T.bool}[func])
    if any(_is_runtime(a) for a in [*args, *kwargs.values()]):
        fname = getattr(func, "__name__", repr(func))
        raise v.b.error(f"cannot call Python function `{fname}` with run-time values",
                        hint=f"decorate `{fname}` with @T.macro to inline it into the kernel")
    if not callable(func):
        raise v.b.error(f"{func!r} is not callable")
    return func(*args, **kwargs)


def _method(v, method: BoundMethod, args, kwargs):
    if method.name == "astype":
        (dtype,) = args or [kwargs.get("dtype")]
        return v.b.cast(v.rvalue(method.receiver), dtype)
    raise v.b.error(f"unknown method `{method.name}`")


def attribute(v, base, name: str):
    if isinstance(base, TileRef):
        if name == "shape":
            return base.shape
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


# --------------------------------------------------------------------------- #
# Shapes, dtypes, regions
# --------------------------------------------------------------------------- #


def _shape(v, shape, what: str) -> tuple[int, ...]:
    if isinstance(shape, int | Scalar):
        shape = (shape,)
    if not isinstance(shape, tuple | list):
        raise v.b.error(f"{what}: shape must be an int or a list of ints, got {shape!r}")
    out = []
    for d in shape:
        if isinstance(d, Scalar) or isinstance(d, T.Symbol):
            raise v.b.error(f"{what}: buffer sizes must be compile-time integers, got a run-time size",
                            hint="use a constant tile size; dynamic sizes belong to global tensors")
        if not isinstance(d, int) or d <= 0:
            raise v.b.error(f"{what}: buffer sizes must be positive integers, got {d!r}")
        out.append(int(d))
    return tuple(out)


def _dtype(v, dtype, what: str) -> DType:
    d = as_dtype(dtype)
    if d is None:
        raise v.b.error(f"{what}: unknown dtype {dtype!r}",
                        hint="use T.float16, T.bfloat16, T.float32, T.int32, ... or a name like 'float16'")
    return d


def _static(v, value, what: str) -> int:
    if isinstance(value, Scalar) and value.ssa in v.b.constants:
        return int(v.b.constants[value.ssa])
    if not isinstance(value, int):
        raise v.b.error(f"{what} must be a compile-time integer")
    return value


def explicit_shape(v, value) -> tuple[int, ...] | None:
    """The shape a tile operand has on its own; None for a point access `A[i, j]`."""
    if isinstance(value, TileRef):
        return value.shape
    if isinstance(value, Access) and not value.is_point:
        return tuple(_extent(v, value.tile, d, i) for d, i in enumerate(value.indices))
    return None


def _extent(v, ref: TileRef, dim: int, index) -> int:
    if not isinstance(index, SliceIndex):
        return 1
    start = 0 if index.start is None else index.start
    if index.stop is None:
        size = ref.shape[dim]
        if size == tile.DYNAMIC:
            raise v.b.error(f"`:` on dynamic dimension {dim} of {ref} has no compile-time extent",
                            hint="slice with explicit bounds such as i * 64:(i + 1) * 64")
        stop = size
    else:
        stop = index.stop
    fa, fb = v.b.affine_of(start), v.b.affine_of(stop)
    diff = None if fa is None or fb is None else fb - fa
    if diff is None or diff.terms:
        raise v.b.error(f"the extent of slice {dim} of {ref} is not a compile-time constant",
                        hint="write slices as start:start + size with a constant size")
    if diff.const <= 0:
        raise v.b.error(f"slice {dim} of {ref} is empty ({diff.const} elements)")
    return diff.const


def region(v, value, hint: tuple[int, ...] | None, what: str):
    """The SSA tile for an operand: a whole tile, or a `tile.region` of it."""
    if isinstance(value, TileRef):
        return value.ssa
    if isinstance(value, VarRef):
        return value.tile.ssa
    if not isinstance(value, Access):
        raise v.b.error(f"{what} must be a tile (a tensor, a buffer or a region of one), got {describe_(value)}")
    ref = value.tile
    rank = len(ref.shape)
    if len(value.indices) != rank:
        raise v.b.error(f"{ref} has {rank} dimensions but {what} indexes {len(value.indices)}")
    if value.is_point:
        if hint is None:
            raise v.b.error(f"{what} is a single element; the other operand does not give a region shape",
                            hint="write the region as a slice, e.g. A[i:i + 64, j:j + 64]")
        hint = tuple(hint)
        while len(hint) > rank and hint[0] == 1:
            hint = hint[1:]
        if len(hint) > rank:
            raise v.b.error(f"{what}: a {len(hint)}-D region cannot start at an element of {rank}-D {ref}")
        extents = (1,) * (rank - len(hint)) + hint
        offsets = list(value.indices)
    else:
        extents = tuple(_extent(v, ref, d, i) for d, i in enumerate(value.indices))
        offsets = [(0 if i.start is None else i.start) if isinstance(i, SliceIndex) else i for i in value.indices]
    if ref.scope != "global":
        for d, (off, ext) in enumerate(zip(offsets, extents)):
            if isinstance(off, int) and off + ext > ref.shape[d]:
                raise v.b.error(f"{what}: region [{off}, {off + ext}) exceeds dimension {d} of {ref} "
                                f"(size {ref.shape[d]})")
    if extents == ref.shape and all(isinstance(o, int) and o == 0 for o in offsets):
        return ref.ssa
    offsets = [v.index_ssa(o) for o in offsets]
    typ = ref.type
    rtype = tile.TensorType(extents, typ.element_type) if typ.scope == "global" else \
        tile.BufferType(extents, typ.element_type, typ.scope)
    return v.b.emit(tile.RegionOp(ref.ssa, offsets, rtype)).results[0]


def describe_(value) -> str:
    from .semantic import describe

    return describe(value)


def _tile_operand(v, value, what: str, scopes: tuple[str, ...], hint=None):
    ssa = region(v, value, hint, what)
    scope = ssa.type.scope
    if scope not in scopes:
        raise v.b.error(f"{what} must be in {' or '.join(scopes)} scope, got a {scope} tile",
                        hint="copy global data to T.alloc_shared or T.alloc_fragment first" if scope == "global" else None)
    return ssa


def _require_kernel(v, what: str, *, whole_tiles: bool = False) -> None:
    """`what` must be inside the kernel; with `whole_tiles`, also outside any T.Parallel loop."""
    if v.kernel is None:
        raise v.b.error(f"{what} is only usable inside `with T.Kernel(...)`",
                        hint="move it into the kernel body")
    if whole_tiles and v.parallel_loops:
        raise v.b.error(f"{what} works on whole tiles (or the whole block) and cannot be used inside T.Parallel",
                        hint="move it before or after the T.Parallel loop; inside the loop, work on one element "
                             "per iteration")


# --------------------------------------------------------------------------- #
# Handlers, one per builtin
# --------------------------------------------------------------------------- #


def _const(v, names):
    if not isinstance(names, str) or not names.strip():
        raise v.b.error(f"T.const takes the size names as a string, got {describe_(names)}",
                        hint='e.g. N = T.const("N") or M, N = T.const("M, N")')
    values = tuple(v.program.const_value(v, n.strip()) for n in names.split(","))
    return values[0] if len(values) == 1 else values


def _empty(v, shape, dtype):
    return v.program.declare_output(v, shape, _dtype(v, dtype, "T.empty"))


def _kernel(v, **_):
    raise v.b.error("T.Kernel opens a block: use `with T.Kernel(...) as bx:`")


def _alloc(scope: str):
    def handler(v, shape, dtype, scope_=None, **_):
        what = f"T.alloc_{ {'shared': 'shared', 'fragment': 'fragment', 'local': 'local'}[scope]}"
        _require_kernel(v, what)
        if scope != "local" and v.parallel_loops:
            raise v.b.error(f"{what}: {scope} buffers cannot be allocated inside T.Parallel: they belong to the "
                            "whole block",
                            hint="allocate it before the loop (per-element temporaries are T.alloc_var or "
                                 "T.alloc_local)")
        typ = tile.BufferType(_shape(v, shape, what), _dtype(v, dtype, what).ir, scope)
        return TileRef(v.b.emit(tile.AllocOp(typ)).results[0])

    return handler


def _alloc_var(v, dtype, init, scope):
    _require_kernel(v, "T.alloc_var")
    d = _dtype(v, dtype, "T.alloc_var")
    ref = TileRef(v.b.emit(tile.AllocOp(tile.BufferType((1,), d.ir, "local"))).results[0])
    var = VarRef(ref)
    if init is not None:
        v.store_var(var, init)
    return var


def _alloc_barrier(v, arrive_count):
    _require_kernel(v, "T.alloc_barrier", whole_tiles=True)
    return Scalar(v.b.emit(tile.AllocBarrierOp(_static(v, arrive_count, "arrive_count"))).results[0])


def _reshape(v, buffer, shape, dtype=None):
    _require_kernel(v, "T.reshape / T.view", whole_tiles=True)
    if not isinstance(buffer, TileRef):
        raise v.b.error(f"T.reshape needs a whole buffer, got {describe_(buffer)}")
    if dtype is not None and as_dtype(dtype) != buffer.dtype:
        raise v.b.error("T.view with a different dtype is not supported yet")
    shape = buffer.shape if shape is None else _shape(v, shape, "T.reshape")
    typ = buffer.type
    new = tile.TensorType(shape, typ.element_type) if typ.scope == "global" else \
        tile.BufferType(shape, typ.element_type, typ.scope)
    return TileRef(v.b.emit(tile.ReshapeOp(buffer.ssa, new)).results[0])


def _copy(v, src, dst, **_):
    _require_kernel(v, "T.copy", whole_tiles=True)
    src_shape, dst_shape = explicit_shape(v, src), explicit_shape(v, dst)
    if src_shape is None and dst_shape is None:
        raise v.b.error("T.copy between two single elements: neither side gives the region's shape",
                        hint="give one side as a buffer or a slice")
    s = region(v, src, dst_shape, "T.copy source")
    d = region(v, dst, src_shape, "T.copy destination")
    ss, ds = s.type.shape, d.type.shape
    if tile.squeezed(ss) != tile.squeezed(ds):
        raise v.b.error(f"T.copy shapes differ: src {ss} vs dst {ds}", hint="make both sides the same shape")
    v.b.emit(tile.CopyOp(s, d))


def _fill(v, buffer, value):
    _require_kernel(v, "T.fill", whole_tiles=True)
    dst = region(v, buffer, None, "T.fill destination")
    value = v.rvalue(value)
    if isinstance(value, TileRef | Access):
        raise v.b.error(f"T.fill needs a scalar value, got {describe_(value)}")
    v.b.emit(tile.FillOp(dst, v.b.to_ssa(value, dst.type.element_type)))


def _clear(v, buffer):
    _fill(v, buffer, 0)


def _gemm(v, A, B, C, transpose_A, transpose_B, policy, clear_accum, k_pack, wg_wait):
    _require_kernel(v, "T.gemm", whole_tiles=True)
    a = _tile_operand(v, A, "T.gemm operand A", ("shared", "fragment"))
    b = _tile_operand(v, B, "T.gemm operand B", ("shared", "fragment"))
    c = _tile_operand(v, C, "T.gemm accumulator C", ("fragment",))
    for what, x in (("A", a), ("B", b), ("C", c)):
        if len(x.type.shape) != 2:
            raise v.b.error(f"T.gemm operand {what} must be 2-D, got shape {x.type.shape}")
    (m, k) = a.type.shape[::-1] if transpose_A else a.type.shape
    (kb, n) = b.type.shape[::-1] if transpose_B else b.type.shape
    if k != kb:
        raise v.b.error(f"T.gemm K differs: A {a.type.shape} gives K={k}, B {b.type.shape} gives K={kb}",
                        hint="check transpose_A / transpose_B")
    if c.type.shape != (m, n):
        raise v.b.error(f"T.gemm C must be {(m, n)} for A {a.type.shape} and B {b.type.shape}, got {c.type.shape}")
    policy = policy.ir_name if isinstance(policy, T.GemmWarpPolicy) else str(policy).lower()
    v.b.emit(tile.GemmOp(a, b, c, transpose_a=bool(transpose_A), transpose_b=bool(transpose_B),
                         clear_accum=bool(clear_accum), policy=policy, k_pack=int(k_pack)))


def _reduce(kind: str):
    def handler(v, src, dst, dim, clear):
        _require_kernel(v, f"T.reduce_{kind}", whole_tiles=True)
        s = _tile_operand(v, src, f"T.reduce_{kind} source", ("fragment", "shared", "local"))
        d = _tile_operand(v, dst, f"T.reduce_{kind} destination", ("fragment", "shared", "local"))
        rank = len(s.type.shape)
        dim = _static(v, dim, "dim")
        if not -rank <= dim < rank:
            raise v.b.error(f"T.reduce_{kind}: dim {dim} is out of range for a {rank}-D source {s.type.shape}")
        dim %= rank
        want = tile.reduced_shape(s.type.shape, dim)
        if d.type.shape != want:
            raise v.b.error(f"T.reduce_{kind}: reducing {s.type.shape} along dim {dim} gives {want}, "
                            f"but the destination is {d.type.shape}")
        v.b.emit(tile.ReduceOp(s, d, kind, dim, bool(clear)))

    return handler


def _scan(op_class, name: str):
    def handler(v, src, dst, dim, reverse):
        _require_kernel(v, f"T.{name}", whole_tiles=True)
        s = _tile_operand(v, src, f"T.{name} source", ("fragment", "shared", "local"))
        d = s if dst is None else _tile_operand(v, dst, f"T.{name} destination", ("fragment", "shared", "local"))
        rank = len(s.type.shape)
        dim = _static(v, dim, "dim")
        if not -rank <= dim < rank:
            raise v.b.error(f"T.{name}: dim {dim} is out of range for a {rank}-D source")
        v.b.emit(op_class(s, d, dim % rank, bool(reverse)))

    return handler


def _ceildiv(v, a, b):
    a, b = v.rvalue(a), v.rvalue(b)
    if is_compile_time(b) and b <= 0:
        what = "division by zero" if b == 0 else "the divisor must be positive"
        raise v.b.error(f"T.ceildiv({a if is_compile_time(a) else describe_(a)}, {b}): {what}",
                        hint="the divisor (often a block size passed as an argument) must be positive")
    if is_compile_time(a) and is_compile_time(b):
        return -(-a // b)
    x, y = v.b.to_ssa(a, INDEX), v.b.to_ssa(b, INDEX)
    return Scalar(v.b.emit(arith.CeilDivSIOp(x, y)).results[0])


def _if_then_else(v, cond, then_value, else_value):
    cond = v.condition(cond, "T.if_then_else")
    if not isinstance(cond, Scalar):
        return v.rvalue(then_value if cond else else_value)
    return v.b.select(cond, v.rvalue(then_value), v.rvalue(else_value))


def _infinity(v, dtype):
    d = _dtype(v, dtype, "T.infinity")
    if not d.is_float:
        raise v.b.error(f"T.infinity needs a floating-point dtype, got {d.name}")
    return Scalar(v.b.const(math.inf, d.ir))


def _cast(v, value, dtype):
    return v.b.cast(v.rvalue(value), dtype)


def _unary(name: str):
    def handler(v, x):
        x = v.rvalue(x)
        if not isinstance(x, Scalar | int | float):
            raise v.b.error(f"T.{name} takes a scalar, got {describe_(x)}",
                            hint="apply it element-wise inside T.Parallel")
        return v.b.math_call(name, x)

    return handler


def _binary(name: str):
    def handler(v, a, b):
        return v.b.math_call(name, v.rvalue(a), v.rvalue(b))

    return handler


def _sync_threads(v):
    _require_kernel(v, "T.sync_threads", whole_tiles=True)
    v.b.emit(tile.BarrierOp())


def _mbarrier_arrive(v, barrier):
    _require_kernel(v, "T.mbarrier_arrive", whole_tiles=True)
    v.b.emit(tile.MBarrierArriveOp(barrier.ssa))


def _mbarrier_wait_parity(v, barrier, parity):
    _require_kernel(v, "T.mbarrier_wait_parity", whole_tiles=True)
    v.b.emit(tile.MBarrierWaitParityOp(barrier.ssa, v.index_ssa(parity)))


def _atomic(kind: str):
    def handler(v, dst, value, memory_order, return_prev):
        _require_kernel(v, f"T.atomic_{kind}")
        if return_prev:
            raise v.b.error(f"T.atomic_{kind}(return_prev=True) is not supported yet")
        value = v.rvalue(value) if not isinstance(value, Access) or value.is_point else value
        if isinstance(dst, Access) and dst.is_point and not isinstance(value, TileRef | Access):
            v.check_point(dst)
            indices = [v.index_ssa(i) for i in dst.indices]
            ssa = v.b.to_ssa(value, dst.tile.type.element_type)
            v.check_fragment_write(dst.tile, indices)
            v.b.emit(tile.AtomicOp(dst.tile.ssa, indices, ssa, kind))
            return
        _require_kernel(v, f"a tile-wide T.atomic_{kind}", whole_tiles=True)
        src = region(v, value, explicit_shape(v, dst), f"T.atomic_{kind} value")
        d = region(v, dst, src.type.shape, f"T.atomic_{kind} destination")
        v.b.emit(tile.AtomicOp(d, [], src, kind))

    return handler


def _use_swizzle(v, panel_size, order, enable):
    _require_kernel(v, "T.use_swizzle", whole_tiles=True)
    if enable:
        v.b.emit(tile.UseSwizzleOp(_static(v, panel_size, "panel_size"), str(order)))


def _annotate_layout(v, layout_map):
    _require_kernel(v, "T.annotate_layout", whole_tiles=True)
    if not isinstance(layout_map, dict):
        raise v.b.error("T.annotate_layout takes a dict {buffer: layout}")
    for buf, layout in layout_map.items():
        if not isinstance(buf, TileRef) or not isinstance(layout, SwizzleLayout):
            raise v.b.error("T.annotate_layout: each entry must be buffer: make_swizzled_layout(buffer)")
        v.b.emit(tile.AnnotateLayoutOp(buf.ssa, tile.SwizzleLayoutAttr(layout.nbytes)))


def _make_swizzled_layout(v, buffer, swizzle_bytes):
    if swizzle_bytes not in (32, 64, 128):
        raise v.b.error(f"make_swizzled_layout: swizzle_bytes must be 32, 64 or 128, got {swizzle_bytes!r}")
    if not isinstance(buffer, TileRef) or buffer.scope != "shared":
        raise v.b.error(f"make_swizzled_layout needs a shared buffer, got {describe_(buffer)}")
    return SwizzleLayout(buffer, int(swizzle_bytes))


def _print(v, obj, msg):
    _require_kernel(v, "T.print")
    values = [] if obj is None else [region(v, obj, None, "T.print") if isinstance(obj, TileRef | Access) and
                                     not (isinstance(obj, Access) and obj.is_point) else
                                     _scalar_ssa(v, obj)]
    v.b.emit(tile.PrintOp(values, str(msg)))


def _scalar_ssa(v, value):
    value = v.rvalue(value)
    return value.ssa if isinstance(value, Scalar) else v.b.to_ssa(value, INDEX if isinstance(value, int) else
                                                                   T.float32.ir)


def _device_assert(v, cond, msg):
    _require_kernel(v, "T.device_assert")
    v.b.emit(tile.DeviceAssertOp(v.b.to_ssa(v.rvalue(cond), i1), str(msg)))


def _thread_binding(v, dim):
    _require_kernel(v, "T.get_thread_binding")
    return Scalar(v.b.emit(tile.ThreadIdOp(_static(v, dim, "dim"))).results[0])


def _block_binding(v, dim):
    _require_kernel(v, "T.get_block_binding")
    dim = _static(v, dim, "dim")
    if not 0 <= dim < len(v.block_indices):
        raise v.b.error(f"T.get_block_binding({dim}): the grid has {len(v.block_indices)} dimensions")
    return v.block_indices[dim]


_HANDLERS = {
    "const": _const, "empty": _empty, "Kernel": _kernel,
    "alloc_shared": _alloc("shared"), "alloc_fragment": _alloc("fragment"), "alloc_local": _alloc("local"),
    "alloc_var": _alloc_var, "alloc_barrier": _alloc_barrier, "reshape": _reshape, "view": _reshape,
    "copy": _copy, "tma_copy": lambda v, src, dst, barrier: _copy(v, src, dst), "fill": _fill, "clear": _clear,
    "gemm": _gemm, **{name: _reduce(kind) for name, kind in _REDUCE.items()},
    "cumsum": _scan(tile.CumsumOp, "cumsum"), "cummax": _scan(tile.CummaxOp, "cummax"),
    "ceildiv": _ceildiv, "if_then_else": _if_then_else, "infinity": _infinity, "cast": _cast,
    **{name: _unary(name) for name in _UNARY}, "max": _binary("max"), "min": _binary("min"),
    "pow": _binary("pow"), "sync_threads": _sync_threads, "mbarrier_arrive": _mbarrier_arrive,
    "mbarrier_wait_parity": _mbarrier_wait_parity, "atomic_add": _atomic("add"),
    "atomic_max": _atomic("max"), "atomic_min": _atomic("min"), "use_swizzle": _use_swizzle,
    "annotate_layout": _annotate_layout, "make_swizzled_layout": _make_swizzled_layout, "print": _print,
    "device_assert": _device_assert, "get_thread_binding": _thread_binding,
    "get_block_binding": _block_binding,
}


# --------------------------------------------------------------------------- #
# Loops and the kernel launch
# --------------------------------------------------------------------------- #


def _loop_targets(v, target, count: int, what: str) -> list[str]:
    if isinstance(target, ast.Name):
        names = [target.id]
    elif isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        names = [e.id for e in target.elts]
    else:
        raise v.b.error(f"the targets of {what} must be names")
    if len(names) != count:
        raise v.b.error(f"{what} has {count} dimension{'s' if count != 1 else ''} but the loop names {len(names)}")
    return names


def emit_loop(v, node, kind: str, args: list, kwargs: dict) -> None:
    _require_kernel(v, f"T.{kind}" if kind != "serial" else "a loop")
    if kind in ("Parallel", "Pipelined") and v.parallel_loops:
        raise v.b.error(f"T.{kind} cannot be used inside T.Parallel" +
                        (": T.Parallel loops do not nest" if kind == "Parallel" else ""),
                        hint="merge the loops into one T.Parallel with more extents, e.g. "
                             "`for i, j in T.Parallel(m, n)`" if kind == "Parallel" else
                             "loop over the inner dimension with T.serial")
    if kind == "Parallel":
        kwargs.pop("coalesced_width", None)
        if kwargs:
            raise v.b.error(f"T.Parallel got unexpected arguments {sorted(kwargs)}")
        extents = [v.rvalue(a) for a in args]
        for e in extents:
            if not isinstance(e, int) or isinstance(e, bool) or e <= 0:
                raise v.b.error(f"T.Parallel extents must be positive compile-time integers, got {describe_(e)}",
                                hint="T.Parallel covers a tile; loop over run-time sizes with T.serial")
        names = _loop_targets(v, node.target, len(extents), "T.Parallel")
        op = v.b.emit(tile.ParallelOp(extents))
        v.parallel_loops.append(op)
        v.parallel_names.append(names)
        try:
            with v.runtime_region(op.body.block):
                for name, arg in zip(names, op.body.block.args):
                    v.bind(name, Scalar(arg))
                v.visit_body(node.body)
        finally:
            v.parallel_loops.pop()
            v.parallel_names.pop()
        v.privatized.extend(privatize(op, v.b.stamp(v.b.loc)))
        v.b.verify(op)
        return
    opts = {}
    if kind == "Pipelined":
        bound = inspect.signature(T.Pipelined.__wrapped__).bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        start, stop, step = (0, a["start"], 1) if a["stop"] is None else (a["start"], a["stop"], 1)
        opts = {"num_stages": _static(v, a["num_stages"], "num_stages")}
        if a["order"] is not None:
            opts["order"] = list(a["order"])
        if a["stage"] is not None:
            opts["stage"] = list(a["stage"])
        kind = "pipelined"
    else:
        if kwargs.pop("explicit", False) or kwargs:
            kwargs.pop("explicit", None)
        if kwargs:
            raise v.b.error(f"loop got unexpected arguments {sorted(kwargs)}")
        args = [v.rvalue(a) for a in args if a is not None]
        if not 1 <= len(args) <= 3:
            raise v.b.error(f"a loop takes 1 to 3 bounds, got {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
    if isinstance(step, int) and step <= 0:
        raise v.b.error(f"loop step must be positive, got {step}")
    (name,) = _loop_targets(v, node.target, 1, "a loop")
    bounds = [v.index_ssa(x) for x in (v.rvalue(start), v.rvalue(stop), v.rvalue(step))]
    if v.parallel_loops and tile.varies_per_element(bounds, v.parallel_loops[-1]):
        raise v.b.error("the bounds of a loop inside T.Parallel must be the same for every element, but these "
                        "depend on the T.Parallel variables (or on per-element values)",
                        hint="loop up to the largest bound and guard the body with an `if` on the element's own "
                             "bound")
    op = v.b.emit(tile.ForOp(*bounds, kind, **opts))
    with v.runtime_region(op.body.block):
        v.bind(name, Scalar(op.induction_var))
        v.visit_body(node.body)
    v.b.verify(op)


def emit_kernel(v, node, target, grid: list, kwargs: dict) -> None:
    if v.kernel is not None:
        raise v.b.error("T.Kernel cannot be nested inside another T.Kernel")
    if v.runtime_depth:
        raise v.b.error("T.Kernel cannot be opened inside a run-time `if` or loop",
                        hint="open it at the top of the kernel function; decide with compile-time values, or "
                             "test the sizes inside the kernel")
    v.kernels += 1  # several run one after the other (TileLang's split + combine kernels)
    bound = inspect.signature(T.Kernel.__wrapped__).bind(*grid, **kwargs)
    bound.apply_defaults()
    grid = list(bound.arguments["grid"])
    if not 1 <= len(grid) <= 3:
        raise v.b.error(f"T.Kernel takes 1 to 3 grid dimensions, got {len(grid)}")
    for g in grid:
        if not isinstance(g, int | Scalar) or isinstance(g, bool) or (isinstance(g, int) and g <= 0):
            raise v.b.error(f"T.Kernel grid sizes must be positive integers, got {describe_(g)}",
                            hint="a grid size counts blocks, e.g. T.ceildiv(N, block) with positive N and block")
    threads = bound.arguments["threads"]
    threads = [threads] if not isinstance(threads, list | tuple) else list(threads)
    if not 1 <= len(threads) <= 3 or not all(isinstance(t, int) and not isinstance(t, bool) and t > 0
                                             for t in threads):
        raise v.b.error(f"T.Kernel threads must be a positive int or a list of up to 3, got {threads!r}")
    threads += [1] * (3 - len(threads))
    if threads[0] * threads[1] * threads[2] > 1024:
        raise v.b.error(f"T.Kernel: {threads[0] * threads[1] * threads[2]} threads per block exceed the limit of 1024")
    grid_ssa = [v.index_ssa(g) for g in grid]
    op = v.b.emit(tile.KernelOp(grid_ssa, threads))
    v.kernel = op
    v.block_indices = [Scalar(a) for a in op.body.block.args]
    try:
        with v.runtime_region(op.body.block, carried=False):
            if isinstance(target, ast.Name):
                v.bind(target.id, v.block_indices[0] if len(grid) == 1 else tuple(v.block_indices))
            elif target is not None:
                names = [e.id for e in target.elts if isinstance(e, ast.Name)] if isinstance(target, ast.Tuple) else []
                if len(names) != len(grid) or len(names) != len(getattr(target, "elts", [])):
                    raise v.b.error(f"T.Kernel has {len(grid)} grid dimension{'s' if len(grid) != 1 else ''} "
                                    f"but `as {ast.unparse(target)}` names {len(getattr(target, 'elts', [])) or 1} "
                                    "block indices", hint="name one block index per grid dimension")
                for name, idx in zip(names, v.block_indices):
                    v.bind(name, idx)
            v.visit_body(node.body)
        for record in v.privatized:
            check_reads_after(record)
    finally:
        v.kernel = None
        v.privatized = []
    v.b.verify(op)
