"""Program structure: `T.const` sizes, `T.empty` outputs, the `T.Kernel` launch, block and thread indices."""

from __future__ import annotations

import ast
import inspect

import tilec.language as T
from tilec.dialects import tile

from .. import thread_roles, warp_specialize
from ..values import Scalar
from .operands import describe_, dtype_of, require_kernel, static_int
from .registry import handles


@handles("const")
def const(v, names):
    if not isinstance(names, str) or not names.strip():
        raise v.b.error(f"T.const takes the size names as a string, got {describe_(names)}",
                        hint='e.g. N = T.const("N") or M, N = T.const("M, N")')
    values = tuple(v.program.const_value(v, n.strip()) for n in names.split(","))
    return values[0] if len(values) == 1 else values


@handles("empty")
def empty(v, shape, dtype):
    return v.program.declare_output(v, shape, dtype_of(v, dtype, "T.empty"))


@handles("alloc_global")
def alloc_global(v, shape, dtype):
    if v.kernel is not None:
        raise v.b.error("T.alloc_global declares a global scratch tensor of the kernel function: call it before "
                        "`with T.Kernel(...)`", hint="inside a kernel, use T.alloc_shared or T.alloc_fragment")
    return v.program.declare_workspace(v, shape, dtype_of(v, dtype, "T.alloc_global"))


@handles("Kernel")
def kernel_call(v, **_):
    raise v.b.error("T.Kernel opens a block: use `with T.Kernel(...) as bx:`")


@handles("get_thread_binding")
def thread_binding(v, dim):
    require_kernel(v, "T.get_thread_binding")
    if v.ws is not None and v.ws.role == "threads" and static_int(v, dim, "dim") == 0:
        return thread_roles.thread_index(v)  # the kernel's numbering, whatever warpgroup runs the role
    return Scalar(v.b.emit(tile.ThreadIdOp(static_int(v, dim, "dim"))).results[0])


_THREAD_AXES = {"threadIdx.x": 0, "threadIdx.y": 1, "threadIdx.z": 2}


@handles("thread_binding")
def thread_binding_var(v, start, stop, thread, annotations):
    """`kr = T.thread_binding(0, n, thread="threadIdx.x")`: the thread's index along that axis
    (plus `start`), which must span the block's `n` threads there."""
    require_kernel(v, "T.thread_binding")
    if stop is None:
        start, stop = 0, start
    if thread not in _THREAD_AXES:
        raise v.b.error(f"T.thread_binding binds a thread axis, one of {', '.join(_THREAD_AXES)}; got {thread!r}",
                        hint="block indices come from T.Kernel (or T.get_block_binding)")
    dim = _THREAD_AXES[thread]
    lo, hi = static_int(v, start, "T.thread_binding's start"), static_int(v, stop, "T.thread_binding's stop")
    extent = v.kernel.thread_extents[dim]
    if hi - lo != extent:
        raise v.b.error(f"T.thread_binding({lo}, {hi}, thread={thread!r}) spans {hi - lo} threads, but the block "
                        f"has {extent} along {thread}", hint=f"bind the whole axis: T.thread_binding(0, {extent}, ...)")
    tid = Scalar(v.b.emit(tile.ThreadIdOp(dim)).results[0])
    return tid if lo == 0 else v.b.binop("+", tid, lo)


@handles("get_block_binding")
def block_binding(v, dim):
    require_kernel(v, "T.get_block_binding")
    dim = static_int(v, dim, "dim")
    if not 0 <= dim < len(v.block_indices):
        raise v.b.error(f"T.get_block_binding({dim}): the grid has {len(v.block_indices)} dimensions")
    return v.block_indices[dim]


def emit_kernel(v, node, target, grid: list, kwargs: dict) -> None:
    """`with T.Kernel(*grid, threads=...) as target:` → `tile.kernel` with the body inside."""
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
    threads = _threads(v, bound.arguments["threads"])
    roles = None
    split = thread_roles.plan(v, node.body, threads)  # a chain of branches giving each warpgroup a role
    if split is not None:
        v.b.loc = v.loc_of(node)
        threads = [thread_roles.WARPGROUP, 1, 1]
    body = node.body if split is not None else warp_specialize.split_thread_roles(v, node.body, threads)
    if split is None and warp_specialize.uses_ws(body):  # TileLang's T.ws blocks: the tile kernel has the consumer's threads
        roles = warp_specialize.plan_roles(v, body, threads)
        v.b.loc = v.loc_of(node)
        threads = [warp_specialize.WARPGROUP, 1, 1]
    grid_ssa = [v.index_ssa(g) for g in grid]
    op = v.b.emit(tile.KernelOp(grid_ssa, threads))
    v.kernel = op
    v.block_indices = [Scalar(a) for a in op.body.block.args]
    try:
        with v.runtime_region(op.body.block, carried=False):
            _bind_block_indices(v, target, len(grid))
            if split is not None:
                thread_roles.emit(v, split)
            elif roles is None:
                v.visit_body(node.body)
            else:
                warp_specialize.emit(v, body, *roles)
        if v.fragment_growth:  # fragments T.Parallel indexes past their shape (fragment_growth.py)
            from ..fragment_growth import apply_fragment_growth

            apply_fragment_growth(v)
        if v.privatized:  # T.Parallel loops privatized per-thread scalars (parallel_vars.py, loaded by them)
            from ..parallel_vars import check_reads_after

            for record in v.privatized:
                check_reads_after(record)
    finally:
        v.kernel = None
        v.privatized = []
        v.fragment_growth = {}
    v.b.verify(op)


def _threads(v, threads) -> list[int]:
    threads = [threads] if not isinstance(threads, list | tuple) else list(threads)
    if not 1 <= len(threads) <= 3 or not all(isinstance(t, int) and not isinstance(t, bool) and t > 0
                                             for t in threads):
        raise v.b.error(f"T.Kernel threads must be a positive int or a list of up to 3, got {threads!r}")
    threads += [1] * (3 - len(threads))
    if threads[0] * threads[1] * threads[2] > 1024:
        raise v.b.error(f"T.Kernel: {threads[0] * threads[1] * threads[2]} threads per block exceed the limit of 1024")
    return threads


def _bind_block_indices(v, target, rank: int) -> None:
    if isinstance(target, ast.Name):
        v.bind(target.id, v.block_indices[0] if rank == 1 else tuple(v.block_indices))
        return
    if target is None:
        return
    names = [e.id for e in target.elts if isinstance(e, ast.Name)] if isinstance(target, ast.Tuple) else []
    if len(names) != rank or len(names) != len(getattr(target, "elts", [])):
        raise v.b.error(f"T.Kernel has {rank} grid dimension{'s' if rank != 1 else ''} "
                        f"but `as {ast.unparse(target)}` names {len(getattr(target, 'elts', [])) or 1} "
                        "block indices", hint="name one block index per grid dimension")
    for name, idx in zip(names, v.block_indices):
        v.bind(name, idx)
