"""TileLang's raw per-thread cp.async: `T.ptx_cp_async` (`tile.cp_async`) and
`T.cp_async_barrier_noinc` (`tile.cp_async_arrive`).

    T.ptx_cp_async(T.access_ptr(S[i, j], "w", 8), T.access_ptr(A[b, k, c], "r", 8), 8)

`T.access_ptr` is taken only written as an operand of `T.ptx_cp_async` (anywhere else it stays the
refusal of extern.py): the visitor gathers the arguments of a `T.ptx_cp_async` call with
`pointer_arguments`, which makes each `T.access_ptr(...)` among them the `ElementPointer` it
names. Both ops run on each thread that reaches them, so they are refused inside T.Parallel and
in a warp-specialized producer that tilec runs on one thread.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass

from xdsl.dialects.builtin import i1

from tilec.dialects import tile

from ..values import Access, SliceIndex, TileRef
from .operands import describe_, require_kernel, static_int
from .registry import builtin_name, handles
from .sync import barrier_ref

_ACCESS_TYPES = ("r", "w", "rw", 1, 2, 3)


@dataclass(frozen=True)
class ElementPointer:
    """`T.access_ptr(base, ...)` as an operand of T.ptx_cp_async: element `indices` of `tile`."""

    tile: TileRef
    indices: tuple


def pointer_arguments(v, node: ast.Call) -> tuple[list, dict]:
    """The positional and keyword arguments of a T.ptx_cp_async call, each `T.access_ptr(...)`
    among them the ElementPointer it names."""
    args = []
    for a in node.args:
        args.extend(v.visit(a.value) if isinstance(a, ast.Starred) else [_argument(v, a)])
    kwargs = {}
    for k in node.keywords:
        kwargs.update({k.arg: _argument(v, k.value)} if k.arg is not None else v._keywords([k]))
    return args, kwargs


def _argument(v, node: ast.expr):
    # (a name or an attribute, `T.access_ptr`, is looked up twice; anything else is visited once)
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
            and builtin_name(v.visit(node.func)) == "access_ptr"):
        return v.visit(node)
    saved, v.b.loc = v.b.loc, v.loc_of(node)  # its errors point at the T.access_ptr(...) written
    try:
        return _element_pointer(v, node)
    finally:
        v.b.loc = saved


def _element_pointer(v, node: ast.Call) -> ElementPointer:
    func = v.visit(node.func)
    args, kwargs = v._arguments(node)
    try:
        bound = inspect.signature(func.__wrapped__).bind(*args, **kwargs)
    except TypeError as e:
        raise v.b.error(f"bad arguments to T.access_ptr: {e}") from None
    bound.apply_defaults()
    a = bound.arguments
    if a["access_type"] not in _ACCESS_TYPES:
        raise v.b.error(f"T.access_ptr: access_type {a['access_type']!r} is none of \"r\", \"w\", \"rw\" (1, 2, 3)")
    ref, indices = _element(v, a["base"])
    offset = v.rvalue(a["offset"])
    if not (isinstance(offset, int) and offset == 0):
        if len(indices) != 1:
            raise v.b.error(f"T.access_ptr(offset=...) moves along a 1-D buffer, not the {len(indices)}-D {ref}",
                            hint="index the element itself, e.g. A[i, j + off]")
        indices = (v.b.binop("+", v.rvalue(indices[0]), offset),)
    ignored = static_int(v, v.rvalue(a["ignore_last_ndim"]), "T.access_ptr's ignore_last_ndim")
    if ignored:
        indices = indices[:max(0, len(indices) - ignored)] + (0,) * min(ignored, len(indices))
    return ElementPointer(ref, indices)


def _element(v, base) -> tuple[TileRef, tuple]:
    """The tile and the indices of the element `base` (an element, a region or a whole tile) starts at."""
    if isinstance(base, TileRef):
        return base, (0,) * len(base.shape)
    if not isinstance(base, Access):
        raise v.b.error(f"T.access_ptr takes a tile element `A[i, j]`, a region or a tile, got {describe_(base)}")
    rank = len(base.tile.shape)
    if len(base.indices) != rank:
        raise v.b.error(f"{base.tile} has {rank} dimensions but T.access_ptr indexes {len(base.indices)}")
    starts = tuple((0 if i.start is None else i.start) if isinstance(i, SliceIndex) else i for i in base.indices)
    return base.tile, starts


def _per_thread(v, what: str) -> None:
    """`what` is issued by each thread that runs it: inside the kernel, not per element of T.Parallel,
    not in a producer that tilec runs on one thread."""
    require_kernel(v, what)
    if v.parallel_loops:
        raise v.b.error(f"{what} is issued by each thread at its own indices, not by the iterations of T.Parallel",
                        hint="call it outside the loop, at indices computed from T.get_thread_binding()")
    if v.ws is not None and v.ws.role == "producer":
        raise v.b.error(f"{what} in a warp-specialized producer, which tilec runs on one thread of its warpgroup: "
                        "the other threads would not issue theirs",
                        hint="load the producer's tiles with T.tma_copy(src, dst, barrier=b), or T.copy")


def _pointer(v, value, what: str, scope: str) -> ElementPointer:
    if not isinstance(value, ElementPointer):
        raise v.b.error(f"T.ptx_cp_async: the {what} is written T.access_ptr(A[i, j], ...), got {describe_(value)}")
    if value.tile.scope != scope:
        raise v.b.error(f"T.ptx_cp_async copies from global to shared memory: its {what} {value.tile} is a "
                        f"{value.tile.scope} {'tensor' if value.tile.scope == 'global' else 'buffer'}",
                        hint='T.ptx_cp_async(T.access_ptr(S[i, j], "w", n), T.access_ptr(A[k, j], "r", n), n) '
                             "with S from T.alloc_shared and A a kernel tensor")
    return value


def _check_run(v, dst: ElementPointer, n: int) -> None:
    """`n` elements of the destination's type are one cp.async, and its rows hold whole runs of them."""
    esize = tile.element_bytes(dst.tile.type.element_type)
    if n <= 0 or n * esize not in tile.CP_ASYNC_BYTES:
        counts = ", ".join(str(b // esize) for b in tile.CP_ASYNC_BYTES if b >= esize)
        raise v.b.error(f"T.ptx_cp_async copies 4, 8 or 16 bytes a thread: {n} elements of {dst.tile.dtype.name} "
                        f"are {n * esize} bytes", hint=f"num_elems = {counts} for {dst.tile.dtype.name}")
    row = dst.tile.shape[-1]
    if row % n:
        raise v.b.error(f"T.ptx_cp_async: the rows of {dst.tile} ({row} elements) do not hold whole runs of {n}",
                        hint=f"copy runs that divide the row, or a buffer whose last dim is a multiple of {n}")
    for d, (i, size) in enumerate(zip(dst.indices, dst.tile.shape)):
        reach = n if d == len(dst.indices) - 1 else 1
        if isinstance(i, int) and not 0 <= i <= size - reach:
            raise v.b.error(f"T.ptx_cp_async writes outside {dst.tile}: index {i} of dim {d} (size {size})")


@handles("ptx_cp_async")
def ptx_cp_async(v, dst_access_ptr, src_access_ptr, num_elems, predicate):
    _per_thread(v, "T.ptx_cp_async")
    dst = _pointer(v, dst_access_ptr, "destination (first argument)", "shared")
    src = _pointer(v, src_access_ptr, "source (second argument)", "global")
    if src.tile.dtype != dst.tile.dtype:
        raise v.b.error(f"T.ptx_cp_async copies bits: the source {src.tile} is {src.tile.dtype.name}, the "
                        f"destination {dst.tile} {dst.tile.dtype.name}", hint="copy between tiles of one dtype")
    if v.custom_layouts:  # custom_layout.py loads with the first T.Layout
        from ..custom_layout import refuse_tile_operand

        refuse_tile_operand(v, src.tile, "T.ptx_cp_async source")
    n = static_int(v, v.rvalue(num_elems), "T.ptx_cp_async's num_elems")
    _check_run(v, dst, n)
    pred = None
    if predicate is not None:
        pred = v.b.to_ssa(v.condition(predicate, "T.ptx_cp_async's predicate"), i1)
    v.b.emit(tile.CpAsyncOp(src.tile.ssa, [v.index_ssa(i) for i in src.indices], dst.tile.ssa,
                            [v.index_ssa(i) for i in dst.indices], n, pred))


@handles("cp_async_barrier_noinc")
def cp_async_barrier_noinc(v, barrier):
    _per_thread(v, "T.cp_async_barrier_noinc")
    b = barrier_ref(v, barrier, "T.cp_async_barrier_noinc")
    v.b.emit(tile.CpAsyncArriveOp(b.ssa, b.index))
