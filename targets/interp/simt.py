"""Runs thread-level IR (what `convert-tile-to-thread` emits for CUDA) on the CPU.

Every thread of a block is one lane of a numpy array, so a block runs in lockstep: a value
is a numpy scalar (the same on every thread) or an array over the block's threads, and
divergent `scf.if`s run under lane masks exactly as in the tile interpreter, whose scalar
handlers (arith, math, scf) are reused.  Barriers are then no-ops, `nvvm.shfl.sync`
permutes lanes, shared memory is one byte array per block and `memref.alloca` one row per
thread.  An access outside its memory on an active lane is an error, as memcheck would
report it.  This is the CPU oracle of the CUDA lowering: a kernel's thread-level IR must
compute what its tile IR computes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import gpu, llvm, memref, scf, vector
from ml_dtypes import bfloat16 as ml_bfloat16
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp, UnrealizedConversionCastOp
from xdsl.dialects.func import FuncOp

from tilec.dialects import nvvm, tile
from tilec.errors import error_at

from . import pointers, scalar_ops
from .interpreter import Compiler, State
from .simt_cluster import CLUSTER_HANDLERS, run_clusters
from .simt_hopper import HOPPER_HANDLERS, _lanes, block_barrier, note_generic_read, note_generic_write, run_roles
from .simt_tma import TMA_HANDLERS, TensorMapSim
from .simt_wgmma import WGMMA_HANDLERS
from .values import numpy_dtype, scalarize, uniform


class Memory:
    """A flat array: global (a kernel argument), shared (a view of the block's bytes), or
    per-thread (`rows` set: one row of the array per thread)."""

    __slots__ = ("array", "per_thread", "what")

    def __init__(self, array: np.ndarray, what: str, per_thread: bool = False):
        self.array, self.what, self.per_thread = array, what, per_thread


def _check(op, mem: Memory, idx, active, width: int = 1):
    size = mem.array.shape[-1]
    bad = (idx < 0) | (idx + width > size)
    if active is not None:
        bad = bad & active
    if np.any(bad):
        where = np.broadcast_to(idx, np.shape(bad))[bad] if np.ndim(bad) else idx
        raise error_at(op, f"{op.name}: access at element {int(np.ravel(where)[0])} outside {mem.what} memory of "
                           f"{size} elements (simulated)")


def _shared_bytes(st: State, mem: Memory, idx, width: int, active=None) -> np.ndarray | None:
    """The shared bytes the active lanes touch with accesses of `width` elements at `idx` (None
    unless `mem` is shared memory under the Hopper model)."""
    if mem.what != "shared" or "__hopper__" not in st.env:
        return None
    active = st.mask if active is None else active
    n = _lanes(st)
    idx = np.broadcast_to(np.asarray(idx, np.int64), (n,))
    if active is not None:
        idx = idx[np.broadcast_to(np.asarray(active), (n,))]
    size = mem.array.dtype.itemsize
    return (idx[:, None] * size + np.arange(width * size)).reshape(-1)


def _generic_read(st: State, mem: Memory, idx, width: int, op, active=None) -> None:
    """Tell the Hopper model which shared bytes the active lanes read (`simt_hopper.note_generic_read`)."""
    where = _shared_bytes(st, mem, idx, width, active)
    if where is not None:
        note_generic_read(st, mem, where, op)


def _generic_write(st: State, mem: Memory, idx, width: int, op) -> None:
    """Tell the Hopper model which shared bytes the active lanes write (`simt_hopper.note_generic_write`)."""
    where = _shared_bytes(st, mem, idx, width)
    if where is not None:
        note_generic_write(st, mem, where, op)


def _load(op, c):
    ref, (index,), r = op.memref, tuple(op.indices), op.res

    def run(st):
        mem, idx = st.env[ref], st.env[index]
        _check(op, mem, idx, st.mask)
        safe = idx if st.mask is None else np.where(st.mask, idx, 0)
        if mem.per_thread:
            st.env[r] = mem.array[np.arange(_lanes(st)), safe]
        else:
            _generic_read(st, mem, idx, 1, op)
            st.env[r] = scalarize(mem.array[safe])

    return run


def _store(op, c):
    ref, (index,), value = op.memref, tuple(op.indices), op.value

    def run(st):
        mem, idx, v = st.env[ref], st.env[index], st.env[value]
        _check(op, mem, idx, st.mask)
        lanes = np.arange(_lanes(st))
        if mem.per_thread:
            idx, v = np.broadcast_to(idx, lanes.shape), np.broadcast_to(v, lanes.shape)
            keep = lanes if st.mask is None else lanes[st.mask]
            mem.array[keep, idx[keep]] = v[keep]
            return
        _generic_write(st, mem, idx, 1, op)
        if st.mask is None and not isinstance(idx, np.ndarray) and not isinstance(v, np.ndarray):
            mem.array[idx] = v
            return
        # threads storing to one address: the highest thread's value lands, as numpy's last write
        idx, v = np.broadcast_to(idx, lanes.shape), np.broadcast_to(v, lanes.shape)
        keep = slice(None) if st.mask is None else st.mask
        mem.array[idx[keep]] = v[keep]

    return run


def _vector_load(op, c):
    ref, (index,), r = op.base, tuple(op.indices), op.result
    width = op.result.type.get_shape()[0]

    def run(st):
        mem, idx = st.env[ref], st.env[index]
        _check(op, mem, idx, st.mask, width)
        safe = idx if st.mask is None else np.where(st.mask, idx, 0)
        _generic_read(st, mem, idx, width, op)
        st.env[r] = mem.array[np.asarray(safe)[..., None] + np.arange(width)]

    return run


def _vector_store(op, c):
    ref, (index,), value = op.base, tuple(op.indices), op.vector
    width = op.vector.type.get_shape()[0]

    def run(st):
        mem, idx, v = st.env[ref], st.env[index], st.env[value]
        _check(op, mem, idx, st.mask, width)
        n = _lanes(st)
        idx = np.broadcast_to(idx, (n,))
        v = np.broadcast_to(v, (n, width))
        keep = np.ones(n, bool) if st.mask is None else st.mask
        _generic_write(st, mem, idx, width, op)
        mem.array[idx[keep][:, None] + np.arange(width)] = v[keep]

    return run


def _extract(op, c):
    (pos,) = op.static_position.get_values()
    src, r = op.vector, op.result

    def run(st):
        st.env[r] = scalarize(np.asarray(st.env[src])[..., pos])

    return run


def _insert(op, c):
    (pos,) = op.static_position.get_values()
    src, dest, r = op.source, op.dest, op.result

    def run(st):
        s, d = st.env[src], np.asarray(st.env[dest])
        shape = np.broadcast_shapes(d.shape, np.shape(s) + (d.shape[-1],))
        out = np.array(np.broadcast_to(d, shape))
        out[..., pos] = s
        st.env[r] = out

    return run


def _broadcast(op, c):
    src, r = op.source, op.vector
    width = op.vector.type.get_shape()[0]

    def run(st):
        s = np.asarray(st.env[src])
        st.env[r] = np.repeat(s[..., None], width, axis=-1)

    return run


def _alloca(op, c):
    typ, r = op.memref.type, op.memref
    count, dtype = typ.get_shape()[0], numpy_dtype(typ.element_type)

    def run(st):
        # registers start out as garbage on the GPU: NaN here, so that a read before the first
        # write shows in the result instead of passing as a zero
        fill = np.nan if dtype.kind == "f" else 0
        st.env[r] = Memory(np.full((_lanes(st), count), fill, dtype), "per-thread", per_thread=True)

    return run


def _get_global(op, c):
    r = op.memref

    def run(st):
        st.env[r] = st.shared

    return run


def _view(op, c):
    src, shift, r = op.source, op.byte_shift, op.result
    typ: MemRefType = op.result.type
    count, dtype = typ.get_shape()[0], numpy_dtype(typ.element_type)

    def run(st):
        offset = st.env[shift]
        if st.mask is not None and np.ndim(offset) == 1 and np.shape(offset) == st.mask.shape and st.mask.any():
            offset = offset[st.mask]  # the running lanes' (a consumer group's area is its own)
        start = uniform(offset, op, "a shared-memory offset")
        raw = st.env[src].array
        if start + count * dtype.itemsize > raw.size:
            raise error_at(op, f"memref.view: bytes [{start}, {start + count * dtype.itemsize}) exceed the "
                               f"{raw.size} bytes of dynamic shared memory (simulated)")
        st.env[r] = Memory(raw[start:start + count * dtype.itemsize].view(dtype), "shared")

    return run


_RMW = tile.AtomicRMWKind
_ATOMIC = {_RMW.ADDF: np.add, _RMW.ADDI: np.add, _RMW.MAXIMUMF: np.maximum, _RMW.MAXS: np.maximum,
           _RMW.MAXNUMF: np.fmax, _RMW.MINIMUMF: np.minimum, _RMW.MINS: np.minimum, _RMW.MINNUMF: np.fmin}
"""numpy's reading of each memref.atomic_rmw kind (`tilec.dialects.tile.AtomicRMWKind`, the codes the lowering emits)."""


def _atomic(op, c):
    ufunc = _ATOMIC.get(op.kind.value.data)
    if ufunc is None:
        raise error_at(op, f"memref.atomic_rmw kind {op.kind.value.data} is not supported by the simulator")
    ref, (index,), value, r = op.memref, tuple(op.indices), op.value, op.result

    def run(st):
        mem, idx, v = st.env[ref], st.env[index], st.env[value]
        _check(op, mem, idx, st.mask)
        n = _lanes(st)
        idx, v = np.broadcast_to(idx, (n,)), np.broadcast_to(v, (n,))
        keep = np.ones(n, bool) if st.mask is None else st.mask
        v = v.astype(mem.array.dtype, copy=False)
        if r.first_use is not None:
            st.env[r] = _old_values(mem.array, idx, v, keep, ufunc)
        ufunc.at(mem.array, idx[keep], v[keep])

    return run


def _old_values(array: np.ndarray, idx: np.ndarray, v: np.ndarray, keep: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
    """Each thread's old value of its element (what `atomicAdd` returns): threads that update the same
    element take turns in thread order, each seeing the ones before it."""
    prev = np.zeros(idx.shape, array.dtype)
    lanes = np.flatnonzero(keep)
    prev[lanes] = array[idx[lanes]]
    _, group = np.unique(idx[lanes], return_inverse=True)
    for g in np.flatnonzero(np.bincount(group.ravel()) > 1):
        turn = lanes[group.ravel() == g]
        prev[turn] = ufunc.accumulate(np.concatenate([prev[turn[:1]], v[turn[:-1]]]))
    return prev


def _thread_id(op, c):
    axis, r = "xyz".index(op.dimension.data.value), op.result

    def run(st):
        x, y, _ = st.extents
        lanes = st.lanes[0]
        st.env[r] = (lanes % x, (lanes // x) % y, lanes // (x * y))[axis]

    return run


def _block_id(op, c):
    axis, r = "xyz".index(op.dimension.data.value), op.result

    def run(st):
        st.env[r] = np.int64(st.block[axis])

    return run


def _grid_dim(op, c):
    axis, r = "xyz".index(op.dimension.data.value), op.result

    def run(st):
        st.env[r] = np.int64(st.grid[axis])

    return run


def _shuffle(op, c):
    kind = op.kind.data.value
    if kind not in ("bfly", "idx"):
        raise error_at(op, f"nvvm.shfl.sync {kind} is not supported by the simulator")
    val, offset, mask, r = op.val, op.offset, op.thread_mask, op.res

    def run(st):
        v = st.env[val]
        lanes = st.lanes[0]
        if kind == "bfly":
            partner = lanes ^ int(st.env[offset])
        else:  # idx: lane `offset` of the calling thread's warp (clamp 0x1f: the whole warp)
            partner = lanes - lanes % 32 + int(st.env[offset]) % 32
        members = np.broadcast_to(np.asarray(st.env[mask]).astype(np.int64) & 0xFFFFFFFF, lanes.shape)
        lane_bit = lambda t: (members >> (t % 32)) & 1  # noqa: E731
        inside = np.minimum(partner, lanes.shape[0] - 1)
        active = np.ones(lanes.shape, bool) if st.mask is None else np.broadcast_to(st.mask, lanes.shape)
        bad = active & ((lane_bit(lanes) == 0) | (partner >= lanes.shape[0]) | (lane_bit(inside) == 0) |
                        ~active[inside])
        if bad.any():
            t = int(np.flatnonzero(bad)[0])
            raise error_at(op, f"nvvm.shfl.sync: thread {t} reads lane {int(partner[t]) % 32} of its warp, which "
                               f"is not in the member mask {int(members[t]):#x} or does not exist")
        if not isinstance(v, np.ndarray):
            st.env[r] = v
            return
        st.env[r] = v[inside]

    return run


def _inline_asm(op, c):
    text = op.asm_string.data

    def run(st):
        if text.strip() == "trap;":
            raise error_at(op, "device assertion failed (simulated trap)")
        raise error_at(op, f"inline asm {text!r} is not supported by the simulator")

    return run


def _bitcast(op, c):
    """`llvm.bitcast` between i32 and vector<2 x 16-bit>: the same bytes per lane."""
    src, r = op.arg, op.results[0]
    to_vector = not isinstance(r.type, IntegerType)
    dtype = numpy_dtype(r.type.element_type) if to_vector else np.dtype(np.int32)

    def run(st):
        v = np.ascontiguousarray(st.env[src])
        if to_vector:
            st.env[r] = v.astype(np.int32).reshape(v.shape + (1,)).view(dtype)
        else:
            st.env[r] = scalarize(v.view(np.int32).reshape(v.shape[:-1]))

    return run


def _extract_value(op, c):
    (pos,) = op.position.get_values()
    src, r = op.container, op.res

    def run(st):
        st.env[r] = st.env[src][pos]

    return run


def _whole_warps(op, st: State, n: int) -> np.ndarray:
    """The warps that run a warp-collective op (mma.sync, ldmatrix): a branch may leave whole warps
    out (a warp-specialized role is one), but a warp it splits is an error, as on the hardware."""
    active = np.ones(n, bool) if st.mask is None else np.broadcast_to(np.asarray(st.mask), (n,))
    warps = active.reshape(-1, 32)
    if np.any(warps.any(axis=1) & ~warps.all(axis=1)):
        raise error_at(op, f"{op.name} under a condition that splits a warp (simulated): "
                           "all 32 lanes of a warp must take part")
    return np.flatnonzero(warps.all(axis=1))


def _mma(op, c):
    """mma.sync m16n8k16 (row A, col B, f32 C) for every warp of the block, with the fragment
    registers of the PTX ISA: lane = 4 * group + tig (see `convert_tile_to_thread/gemm_mma.py`)."""
    a_ops, b_ops, c_ops, r = tuple(op.operandA), tuple(op.operandB), tuple(op.operandC), op.res
    half = np.dtype(ml_bfloat16) if op.element_type.value == "bf16" else np.dtype(np.float16)

    def pairs(values, n):
        out = np.empty((n, len(values), 2), np.float32)
        for i, v in enumerate(values):
            v = np.asarray(v)
            if v.dtype == np.int32 or v.ndim < 2 and v.dtype.kind == "i":
                v = np.broadcast_to(v, (n,)).astype(np.int32).reshape(n, 1).view(half)
            out[:, i] = np.broadcast_to(v, (n, 2)).astype(np.float32)
        return out

    def run(st):
        n = _lanes(st)
        warps = _whole_warps(op, st, n)
        a, b = pairs([st.env[x] for x in a_ops], n), pairs([st.env[x] for x in b_ops], n)
        acc = np.stack([np.broadcast_to(st.env[x], (n,)).astype(np.float32) for x in c_ops], axis=1)
        lane = np.arange(n) % 32
        group, tig, warp = lane // 4, lane % 4, np.arange(n) // 32
        out = acc.copy()  # an inactive warp's results are never read: its accumulators stay
        for w in warps:
            sel = warp == w
            am, bm, cm = np.zeros((16, 16), np.float32), np.zeros((16, 8), np.float32), np.zeros((16, 8), np.float32)
            g, t = group[sel], tig[sel]
            for i in range(4):
                for e in range(2):
                    am[g + 8 * (i % 2), 2 * t + e + 8 * (i // 2)] = a[sel, i, e]
            for j in range(2):
                for e in range(2):
                    bm[2 * t + e + 8 * j, g] = b[sel, j, e]
            for i in range(4):
                cm[g + 8 * (i // 2), 2 * t + i % 2] = acc[sel, i]
            d = (am.astype(np.float64) @ bm.astype(np.float64) + cm).astype(np.float32)
            for i in range(4):
                out[sel, i] = d[g + 8 * (i // 2), 2 * t + i % 2]
        st.env[r] = tuple(out[:, i] for i in range(4))

    return run


class Pointer:
    """An `!llvm.ptr` into one of the simulator's memories: the memory and an element offset."""

    __slots__ = ("memory", "offset")

    def __init__(self, memory: Memory, offset):
        self.memory, self.offset = memory, offset


def _to_pointer(op, c):
    src, r = op.inputs[0], op.outputs[0]

    def run(st):
        if isinstance(st.env[src], pointers.Address):  # llvm.inttoptr seen as a memref (T.make_tensor)
            pointers.sim_pointer_memref(op, st, Memory, numpy_dtype)
            return
        st.env[r] = Pointer(st.env[src], np.int64(0))

    return run


def _gep(op, c):
    """One index, an SSA value or a constant (shared_ptr's immediate offset)."""
    (raw,) = op.rawConstantIndices.get_values()
    ptr, r = op.ptr, op.result
    if raw != llvm.GEP_USE_SSA_VAL:
        constant = np.int64(raw)

        def run_constant(st):
            p = st.env[ptr]
            st.env[r] = Pointer(p.memory, p.offset + constant)

        return run_constant
    (index,) = op.ssa_indices

    def run(st):
        p = st.env[ptr]
        st.env[r] = Pointer(p.memory, p.offset + np.asarray(st.env[index]).astype(np.int64))

    return run


def _cp_async(op, c):
    """The copy happens at issue (one legal order of an async copy); bytes past `cpSize` are zeros.
    Inside warp-specialized roles it reads at issue and lands later (simt_hopper: at the thread's
    cp.async.wait_group, or when a waiter on the mbarrier that tracks it sees it complete)."""
    size = op.size.value.data

    def run(st):
        dst, src = st.env[op.dst], st.env[op.src]
        n = _lanes(st)
        width = size // dst.memory.array.dtype.itemsize
        keep = np.ones(n, bool) if st.mask is None else np.asarray(st.mask)
        d = np.broadcast_to(dst.offset, (n,))[keep]
        s = np.broadcast_to(src.offset, (n,))[keep]
        valid = np.full(d.shape, size) if op.cpSize is None else np.broadcast_to(st.env[op.cpSize], (n,))[keep]
        _check(op, dst.memory, d, None, width)
        data = np.zeros((d.size, width), dst.memory.array.dtype)
        full = valid >= size
        if np.any(valid % size != 0):
            raise error_at(op, "cp.async with a partial source size is not supported by the simulator")
        _check(op, src.memory, s[full], None, width)
        data[full] = src.memory.array[s[full][:, None] + np.arange(width)]
        at = d[:, None] + np.arange(width)
        h = st.env.get("__hopper__")
        if h is not None and (h.roles or h.wgmma_in_flight) and dst.memory.what == "shared":
            item = dst.memory.array.dtype.itemsize
            where = (_shared_byte_base(dst.memory, st.shared) + at.reshape(-1, 1) * item + np.arange(item)).ravel()
            if h.roles:
                h.defer_copy(op, dst.memory.array, at, data, where)
                return
            h.check_not_read_by_wgmma(op, where, "a cp.async copy")
        dst.memory.array[at] = data

    return run


def _cp_async_wait(op, c):
    def run(st):
        h = st.env.get("__hopper__")
        if h is not None and h.roles:
            h.land_copies()

    return run


def _shared_byte_base(mem: Memory, shared: Memory) -> int:
    return mem.array.__array_interface__["data"][0] - shared.array.__array_interface__["data"][0]


def _ptr_to_int(op, c):
    src, r = op.input, op.output

    def run(st):
        p = st.env[src]
        if p.memory.what != "shared":
            raise error_at(op, "llvm.ptrtoint of a non-shared pointer is not supported by the simulator")
        base = _shared_byte_base(p.memory, st.shared)
        st.env[r] = scalarize(np.asarray(base + np.asarray(p.offset) * p.memory.array.dtype.itemsize, np.int64))

    return run


def _undef(op, c):
    r = op.res
    count = len(r.type.types) if hasattr(r.type, "types") else 0

    def run(st):
        st.env[r] = tuple(np.float32(0) for _ in range(count)) if count else np.int64(0)

    return run


def _insert_value(op, c):
    (pos,) = op.position.get_values()
    agg, value, r = op.container, op.value, op.res

    def run(st):
        items = list(st.env[agg])
        items[pos] = st.env[value]
        st.env[r] = tuple(items)

    return run


def _ldmatrix(op, c):
    """ldmatrix m8n8 .b16: lane l gives the address of row l % 8 of matrix l // 8; register j of
    lane l holds row l // 4, columns 2 (l % 4) + {0, 1} of matrix j (its transpose with .trans)."""
    num, trans, r = op.num.value.data, op.layout.data.value == "col", op.res

    def run(st):
        p = st.env[op.ptr]
        n = _lanes(st)
        warps = _whole_warps(op, st, n)
        taking_part = np.zeros((n // 32, 32), bool)
        taking_part[warps] = True
        offsets = np.broadcast_to(p.offset, (n,))
        data = p.memory.array
        _check(op, p.memory, offsets, taking_part.reshape(n), 8)
        offsets = np.where(taking_part.reshape(n), offsets, 0)  # a warp left out reads nothing
        _generic_read(st, p.memory, offsets, 8, op, taking_part.reshape(n))
        lane = np.arange(n) % 32
        regs = []
        for j in range(num):
            # the 8 row addresses of matrix j come from lanes 8j .. 8j+7 of each warp
            rows = offsets.reshape(-1, 32)[:, 8 * j:8 * j + 8]  # (warps, 8)
            block = data[rows[:, :, None] + np.arange(8)]  # (warps, 8 rows, 8 cols)
            if trans:
                block = block.transpose(0, 2, 1)
            warp, row, col = np.arange(n) // 32, lane // 4, 2 * (lane % 4)
            pair = np.stack([block[warp, row, col], block[warp, row, col + 1]], -1)
            regs.append(np.ascontiguousarray(pair).view(np.int32).reshape(n))
        st.env[r] = regs[0] if num == 1 else tuple(regs)

    return run


def _flush(x):
    """Subnormal float32 values (scalar or array) become zeros of the same sign, as `.ftz` does."""
    x = np.asarray(x, np.float32)
    return np.where(np.abs(x) < np.finfo(np.float32).tiny, np.copysign(np.float32(0), x), x)


def _rcp_approx_ftz(x):
    """Within 1 ulp of 1/x, as the hardware: 1 ulp above the correctly rounded value, so that code
    built on the approximation (thread-shared-divisor) cannot pass by relying on exactness."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = _flush(np.float32(1) / _flush(x))
        off = np.nextafter(r, np.float32(np.inf) * np.sign(r)).astype(np.float32)
        return scalarize(np.where(np.isfinite(r) & (r != 0), off, r).astype(np.float32))


def _nothing(op, c):
    return None  # barriers: the lanes of a block already run in lockstep


HANDLERS: dict[type, Callable] = {
    **scalar_ops.HANDLERS,
    memref.LoadOp: _load, memref.StoreOp: _store, memref.AllocaOp: _alloca, memref.GetGlobalOp: _get_global,
    memref.ViewOp: _view, memref.AtomicRMWOp: _atomic, vector.LoadOp: _vector_load, vector.StoreOp: _vector_store,
    vector.ExtractOp: _extract, vector.InsertOp: _insert, vector.BroadcastOp: _broadcast,
    gpu.ThreadIdOp: _thread_id, gpu.BlockIdOp: _block_id, gpu.GridDimOp: _grid_dim, gpu.BarrierOp: _nothing, nvvm.ShflSyncOp: _shuffle,
    llvm.InlineAsmOp: _inline_asm, llvm.BitcastOp: _bitcast, llvm.ExtractValueOp: _extract_value,
    nvvm.RcpApproxFtzF32Op: scalar_ops._fixed(_rcp_approx_ftz), nvvm.MmaSyncOp: _mma,
    nvvm.CpAsyncOp: _cp_async, nvvm.CpAsyncCommitGroupOp: _nothing, nvvm.CpAsyncWaitGroupOp: _cp_async_wait,
    **WGMMA_HANDLERS, nvvm.WgmmaFenceAlignedOp: _nothing, llvm.PtrToIntOp: _ptr_to_int, nvvm.Barrier0Op: _nothing,
    llvm.UndefOp: _undef, llvm.InsertValueOp: _insert_value, UnrealizedConversionCastOp: _to_pointer, llvm.GEPOp: _gep, llvm.IntToPtrOp: pointers.sim_int_to_ptr, nvvm.LdMatrixOp: _ldmatrix,
}


def _if(op, c):
    """`scf.if`: the scalar interpreter's, except for a warp-specialized split (`tilec.warp_roles`),
    whose two branches run concurrently (simt_hopper.run_roles)."""
    if "tilec.warp_roles" not in op.attributes:
        return scalar_ops.HANDLERS[scf.IfOp](op, c)
    then_run = c.block(op.true_region.block)
    else_run = c.block(op.false_region.block) if op.false_region.blocks else None

    groups = op.attributes.get("tilec.consumer_groups")
    groups = tuple(groups.get_values()) if groups is not None else None

    def run(st):
        run_roles(st, st.env[op.cond], then_run, else_run, groups)

    return run


HANDLERS.update(HOPPER_HANDLERS)
HANDLERS.update(TMA_HANDLERS)
HANDLERS.update(CLUSTER_HANDLERS)
HANDLERS[scf.IfOp] = _if
HANDLERS[gpu.BarrierOp] = HANDLERS[nvvm.Barrier0Op] = block_barrier


class SimtState(State):
    __slots__ = ("extents", "grid", "shared")


def run_kernel(module: ModuleOp, args: Sequence, grid: tuple[int, int, int], block: tuple[int, int, int],
               smem_bytes: int, name: str | None = None) -> None:
    """Runs the `nvvm.kernel` function of `module` over `grid` blocks of `block` threads.

    `args` follow the kernel's parameters: numpy arrays for `memref<?xT>` (updated in place;
    any shape, read as flat) and Python ints for the i64 sizes.
    """
    fn = next(op for op in module.ops if isinstance(op, FuncOp) and "nvvm.kernel" in op.attributes
              and (name is None or op.sym_name.data == name))
    body = Compiler(HANDLERS, "the thread-level simulator").block(fn.body.block)
    params = list(fn.body.block.args)
    bound = {}
    for p, a in zip(params, args):
        if isinstance(p.type, MemRefType):
            bound[p] = Memory(np.asarray(a).reshape(-1), "global")
        elif isinstance(a, TensorMapSim):  # a grid-constant tensor-map parameter
            bound[p] = a
        else:
            bound[p] = np.int64(a)
    lanes = (np.arange(block[0] * block[1] * block[2], dtype=np.int64),)
    cluster = fn.attributes.get("nvvm.cluster_dim")
    if cluster is not None:  # the blocks of a cluster run together (simt_cluster.py)

        def run_block(index, hopper):
            st = SimtState()
            st.env.update(bound)
            st.lanes, st.block, st.grid, st.extents = lanes, index, tuple(grid), tuple(block)
            st.shared = Memory(hopper.shared, "shared")
            st.env["__hopper__"] = hopper
            with np.errstate(all="ignore"):
                body(st)

        run_clusters(run_block, tuple(grid), tuple(cluster.get_values()), lanes[0].size, smem_bytes)
        return
    with np.errstate(all="ignore"):
        for bz in range(grid[2]):
            for by in range(grid[1]):
                for bx in range(grid[0]):
                    st = SimtState()
                    st.env.update(bound)
                    st.lanes, st.block, st.grid, st.extents = lanes, (bx, by, bz), tuple(grid), tuple(block)
                    st.shared = Memory(np.zeros(max(smem_bytes, 1), np.uint8), "shared")
                    body(st)
