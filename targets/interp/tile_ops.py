"""Interpreter handlers for the `tile` dialect.

The grid runs as a Python loop over blocks; each block allocates fresh buffers (zeros).
A `tile.parallel` runs its body once, vectorized: each induction variable is an int64 array
shaped to broadcast over the iteration space (`(4, 1)` and `(1, 512)` for `[4, 512]`), so
`tile.load` is a gather and `tile.store` a scatter.  Barriers, layouts and swizzles are
no-ops: the block runs in lockstep, one tile op at a time.

Whole-tile ops (copy, gemm, fill, reduce, scans, tile-form atomics) run once per block and
must not sit under a per-element condition. Per-thread code (the thread index, raw cp.async)
runs on the block's threads as lanes: threads.py.
"""

from __future__ import annotations

import itertools

import numpy as np
from tilec.dialects import tile

from tilec.errors import error_at

from .values import (
    Tile,
    atomic_at,
    compute_dtype,
    gather,
    numpy_dtype,
    scatter,
    uniform,
)

_ATOMIC_UFUNCS = {tile.AtomicKind.ADD: np.add, tile.AtomicKind.MAX: np.maximum, tile.AtomicKind.MIN: np.minimum}


def _tile_operand(st, op, value) -> Tile:
    """A tile operand of a whole-tile op, which runs once for the block."""
    if st.mask is not None:
        raise error_at(op, f"{op.name} under a per-element condition is not supported by the interpreter",
                       hint="move the tile operation out of the `if` inside T.Parallel")
    t = st.env[value]
    if t.lanes is not None:
        raise error_at(op, f"{op.name} on a buffer allocated inside T.Parallel is not supported by the interpreter")
    return t


def _block_view(st, op, value) -> np.ndarray:
    """The numpy view of a buffer operand of a whole-tile op."""
    t = _tile_operand(st, op, value)
    assert t.view is not None, "buffer windows lie inside their buffer (checked by tile.region)"
    return t.view


# --- structure ------------------------------------------------------------------------------


def _kernel(op, c):
    grid, args, body = tuple(op.grid), op.body.block.args, c.block(op.body.block)

    def run(st):
        extents = [uniform(st.env[g], op, "the grid size") for g in grid]
        # blockIdx.x varies fastest, as CUDA usually schedules; the order is not part of the contract.
        for index in itertools.product(*(range(e) for e in reversed(extents))):
            st.block = index[::-1]
            for a, i in zip(args, st.block):
                st.env[a] = np.int64(i)
            body(st)
        st.block = None

    return run


def _parallel(op, c):
    extents, ivs, body = op.shape, op.body.block.args, c.block(op.body.block)
    rank = len(extents)
    lanes = tuple(np.arange(e, dtype=np.int64).reshape([e if d == k else 1 for d in range(rank)])
                  for k, e in enumerate(extents))

    def run(st):
        if st.lanes is not None:
            raise error_at(op, "nested T.Parallel loops are not supported by the interpreter",
                           hint="merge them into one T.Parallel with more extents")
        for a, lane in zip(ivs, lanes):
            st.env[a] = lane
        st.lanes = lanes
        body(st)
        st.lanes = None

    return run


def _for(op, c):
    iv, body = op.induction_var, c.block(op.body.block)
    bounds = (op.lb, op.ub, op.step)

    def run(st):
        env = st.env
        lb, ub, step = (uniform(env[v], op, "a loop bound") for v in bounds)
        if step <= 0:
            raise error_at(op, f"tile.for: the step must be positive, got {step}")
        for k in range(lb, ub, step):
            env[iv] = np.int64(k)
            body(st)

    return run


# --- buffers and element access -------------------------------------------------------------


def _alloc(op, c):
    typ, r = op.result.type, op.result
    shape, dtype = typ.shape, numpy_dtype(typ.element_type)
    if dtype is None:
        raise error_at(op, f"tile.alloc: element type {typ.element_type} is not supported by the interpreter")

    def run(st):
        if st.lanes is None:
            st.env[r] = Tile.whole(np.zeros(shape, dtype), is_global=False)
            return
        # One private copy per lane: T.alloc_var / T.alloc_local inside T.Parallel.
        lane_shape = np.broadcast_shapes(*(lane.shape for lane in st.lanes))
        st.env[r] = Tile(np.zeros(lane_shape + shape, dtype), (0,) * len(shape), shape, False, lanes=st.lanes)

    return run


def _region(op, c):
    src, offsets, r, shape = op.source, tuple(op.offsets), op.result, op.result.type.shape

    def run(st):
        t = st.env[src]
        if t.lanes is not None:
            raise error_at(op, "tile.region of a buffer allocated inside T.Parallel is not supported by the interpreter")
        window = t.window([uniform(st.env[o], op, "a region offset") for o in offsets], shape)
        if window.view is None and not window.is_global:
            raise error_at(op, f"tile.region: window at {window.offsets} of shape {shape} is outside the buffer "
                               f"of shape {t.base.shape}")
        st.env[r] = window

    return run


def _dim(op, c):
    src, r, axis = op.source, op.result, op.dim.value.data

    def run(st):
        st.env[r] = np.int64(st.env[src].shape[axis])

    return run


def _load(op, c):
    src, indices, r = op.source, tuple(op.indices), op.result

    def run(st):
        env = st.env
        env[r] = gather(env[src], [env[i] for i in indices], st.mask, op)

    return run


def _store(op, c):
    value, dst, indices = op.value, op.dest, tuple(op.indices)

    def run(st):
        env = st.env
        scatter(env[dst], [env[i] for i in indices], env[value], st.mask, op)

    return run


def _reshape(op, c):
    src, r = op.source, op.result
    shape = tuple(-1 if d < 0 else d for d in op.result.type.shape)

    def run(st):
        t = _tile_operand(st, op, src)
        if t.view is None:
            raise error_at(op, "tile.reshape of a region that reaches past its tensor is not supported")
        view = t.view.view()
        try:
            view.shape = shape  # never copies: a reshape must alias its source
        except (AttributeError, ValueError) as e:
            raise error_at(op, f"tile.reshape: cannot view {t.shape} as {op.result.type.shape}: {e}") from None
        st.env[r] = Tile.whole(view, t.is_global)

    return run


# --- tile operations ------------------------------------------------------------------------


def _copy(op, c):
    src, dst = op.src, op.dst

    def run(st):
        s, d = _tile_operand(st, op, src), _tile_operand(st, op, dst)
        # Same shape once unit dims are dropped (verified), so a C-order reshape lines them up.
        d.write(s.read().reshape(d.shape))

    return run


def _gemm(op, c):
    a, b, cv, clear = op.a, op.b, op.c, bool(op.clear_accum.value.data)
    ta, tb = op.trans_a, op.trans_b
    in_dtype, c_dtype = numpy_dtype(a.type.element_type), numpy_dtype(cv.type.element_type)
    if in_dtype is None or c_dtype is None:
        raise error_at(op, "tile.gemm: element types not supported by the interpreter")
    if in_dtype.kind in "iu":
        acc = np.dtype(np.int32)
    elif np.float64 in (in_dtype, c_dtype):
        acc = np.dtype(np.float64)
    else:
        acc = np.dtype(np.float32)

    def run(st):
        av, bv, c_view = (_block_view(st, op, v) for v in (a, b, cv))
        lhs, rhs = av.astype(acc), bv.astype(acc)
        prod = (lhs.T if ta else lhs) @ (rhs.T if tb else rhs)
        if not clear:
            prod += c_view.astype(acc)
        np.copyto(c_view, prod, casting="unsafe")

    return run


def _fill(op, c):
    dst, value = op.dst, op.value

    def run(st):
        v = st.env[value]
        if np.ndim(v):
            raise error_at(op, "tile.fill with a per-element value is not supported by the interpreter")
        _tile_operand(st, op, dst).write(v)

    return run


_REDUCERS = {
    tile.ReduceKind.SUM: (lambda x, axis: x.sum(axis), np.add),
    tile.ReduceKind.ABSSUM: (lambda x, axis: np.abs(x).sum(axis), np.add),
    tile.ReduceKind.MAX: (lambda x, axis: x.max(axis), np.maximum),
    tile.ReduceKind.ABSMAX: (lambda x, axis: np.abs(x).max(axis), np.maximum),
    tile.ReduceKind.MIN: (lambda x, axis: x.min(axis), np.minimum),
}


def _reduce(op, c):
    src, dst, axis, clear = op.src, op.dst, op.axis, bool(op.clear.value.data)
    reduce, combine = _REDUCERS[op.kind.data]
    acc = compute_dtype(numpy_dtype(dst.type.element_type))

    def run(st):
        x, out = _block_view(st, op, src), _block_view(st, op, dst)
        red = reduce(x.astype(acc), axis).reshape(out.shape)
        if not clear:
            red = combine(out.astype(acc), red)
        np.copyto(out, red, casting="unsafe")

    return run


def _scan(accumulate):
    def build(op, c):
        src, dst, axis, reverse = op.src, op.dst, op.axis, bool(op.reverse.value.data)
        acc = compute_dtype(numpy_dtype(dst.type.element_type))

        def run(st):
            x, out = _block_view(st, op, src), _block_view(st, op, dst)
            x = x.astype(acc)
            if reverse:
                x = np.flip(x, axis)
            y = accumulate(x, axis=axis)
            np.copyto(out, np.flip(y, axis) if reverse else y, casting="unsafe")

        return run

    return build


def _atomic(op, c):
    dst, indices, value, prev = op.dst, tuple(op.indices), op.value, op.prev
    ufunc = _ATOMIC_UFUNCS[op.kind.data]

    def run_elements(st):
        env = st.env
        v = env[value]
        if st.lanes is not None:  # inside T.Parallel every iteration applies it, also when nothing varies
            v = np.broadcast_to(v, np.broadcast_shapes(np.shape(v), *(lane.shape for lane in st.lanes)))
        where = [env[i] for i in indices]
        if prev is not None:
            env[prev] = _old_values(env[dst], where, v, st.mask, ufunc, op)
        atomic_at(env[dst], where, v, st.mask, ufunc, op)

    def run_tile(st):
        d, v = _tile_operand(st, op, dst), _tile_operand(st, op, value)
        d.combine(ufunc, v.read().reshape(d.shape))

    return run_elements if indices else run_tile


def _old_values(t: Tile, where: list, v, mask, ufunc: np.ufunc, op):
    """Each lane's old value of its element (`return_prev=True`) for the update about to be applied:
    lanes that update the same element take turns in lane order, each seeing the ones before it;
    0 on inactive lanes and outside a global tensor (as no update happens there)."""
    old = gather(t, where, mask, op)
    shape = np.broadcast_shapes(np.shape(old), np.shape(v), *(np.shape(i) for i in where),
                                np.shape(mask) if mask is not None else ())
    if shape == ():
        return old
    dtype = np.asarray(old).dtype
    prev = np.array(np.broadcast_to(old, shape), dtype=dtype).ravel()
    vals = np.broadcast_to(np.asarray(v), shape).astype(dtype, copy=False).ravel()
    active = np.ones(prev.size, bool) if mask is None else np.broadcast_to(mask, shape).ravel()
    keys = np.stack([np.broadcast_to(i, shape).ravel() for i in where] or [np.zeros(prev.size, np.int64)], axis=1)
    lanes = np.flatnonzero(active)
    _, group = np.unique(keys[lanes], axis=0, return_inverse=True)
    for g in np.flatnonzero(np.bincount(group.ravel()) > 1):  # colliding lanes: a running combine
        turn = lanes[group.ravel() == g]
        prev[turn] = ufunc.accumulate(np.concatenate([prev[turn[:1]], vals[turn[:-1]]]))
    return prev.reshape(shape)


# --- annotations, synchronization, debugging -------------------------------------------------


def _no_op(op, c):
    return None


def _alloc_barrier(op, c):
    r = op.result

    def run(st):
        st.env[r] = None  # barriers do nothing in lockstep execution

    return run


def _print(op, c):
    values, msg = tuple(op.values), op.msg.data

    def run(st):
        shown = [v.read() if isinstance(v, Tile) else v for v in (st.env[x] for x in values)]
        if st.mask is not None:
            shown = [np.broadcast_to(v, st.mask.shape)[st.mask] if np.ndim(v) else v for v in shown]
        print(f"[block {', '.join(map(str, st.block or ()))}] {msg}", *shown)

    return run


def _device_assert(op, c):
    cond, msg = op.cond, op.msg.data

    def run(st):
        ok = st.env[cond]
        failed = ~ok if st.mask is None else st.mask & ~ok
        if np.any(failed):
            block = ", ".join(map(str, st.block or ()))
            raise error_at(op, f"device assertion failed in block ({block}): {msg}")

    return run


HANDLERS = {
    tile.KernelOp: _kernel, tile.ParallelOp: _parallel, tile.ForOp: _for, tile.YieldOp: _no_op,
    tile.AllocOp: _alloc, tile.RegionOp: _region, tile.DimOp: _dim, tile.LoadOp: _load, tile.StoreOp: _store,
    tile.ReshapeOp: _reshape, tile.CopyOp: _copy, tile.GemmOp: _gemm, tile.FillOp: _fill, tile.ReduceOp: _reduce,
    tile.CumsumOp: _scan(np.cumsum), tile.CummaxOp: _scan(np.maximum.accumulate), tile.AtomicOp: _atomic,
    tile.UseSwizzleOp: _no_op, tile.AnnotateLayoutOp: _no_op, tile.BarrierOp: _no_op,
    tile.AllocBarrierOp: _alloc_barrier, tile.MBarrierArriveOp: _no_op, tile.MBarrierWaitParityOp: _no_op,
    tile.PrintOp: _print, tile.DeviceAssertOp: _device_assert, tile.GemmWaitOp: _no_op,
}
