"""The simulator's TMA (sm_90): tensor maps, `cp.async.bulk.tensor` loads into shared memory (queued on
their mbarrier, multicast to the blocks of a cluster) and stores out of it (read at their bulk wait),
with the bulk groups. The state they share with the roles is `simt_hopper.Hopper`'s."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from tilec.dialects import nvvm, tile

from tilec.errors import error_at

from .simt_hopper import Hopper, _active, _byte_addr, _lanes, hopper_of

__all__ = ["TMA_HANDLERS", "TensorMapSim", "swizzle_bytes"]


@dataclass
class TensorMapSim:
    """A tensor map as the simulator reads it: the tensor (flat), its dims and element strides
    (outermost first), the box (outermost first) and the shared-memory swizzle in bytes."""

    array: np.ndarray
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    swizzle: int = 0

    def box_offsets(self, coords_inner_first: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Flat element offsets of the box's elements in the tensor (row-major over the box) and
        which of them lie inside the tensor (the others read as zero and are not written)."""
        origin = list(reversed(coords_inner_first))
        grids = np.meshgrid(*[np.arange(b) for b in self.box], indexing="ij")
        inside = np.ones(grids[0].shape, bool)
        flat = np.zeros(grids[0].shape, np.int64)
        for g, o, n, s in zip(grids, origin, self.dims, self.strides):
            pos = o + g
            inside &= (pos >= 0) & (pos < n)
            flat += np.where(inside, pos, 0) * s
        return flat.reshape(-1), inside.reshape(-1)


def swizzle_bytes(addr: np.ndarray, swizzle: int) -> np.ndarray:
    """The shared-memory byte address TMA (and wgmma) use for `addr` under a `swizzle`-byte
    pattern (0: none): the XOR the lowering applies, `tilec.dialects.tile.xor_swizzle`."""
    return tile.xor_swizzle(addr, swizzle)


def _box_bytes(op, h: Hopper, start: int, nbytes: int, swizzle: int, what: str) -> np.ndarray:
    """The shared bytes of a TMA box of `nbytes` at byte `start` (its `what`: source or destination),
    in the order of the box's elements: 128-byte aligned, swizzled, inside shared memory."""
    if start % 128:
        raise error_at(op, f"TMA {what} at shared byte {start} is not 128-byte aligned (simulated)")
    where = swizzle_bytes(start + np.arange(nbytes, dtype=np.int64), swizzle)
    if where.max() >= h.shared.size:
        raise error_at(op, f"TMA box of {nbytes} bytes at shared byte {start} overruns the "
                           f"{h.shared.size} bytes of shared memory (simulated)")
    return where


def _tma_load(op, c):
    def run(st):
        h = hopper_of(st)
        n = _lanes(st)
        act = np.flatnonzero(_active(st, n))
        tmap = st.env[op.tmaDescriptor]
        if not isinstance(tmap, TensorMapSim):
            raise error_at(op, "cp.async.bulk.tensor: the descriptor is not a tensor map (simulated)")
        dst = _byte_addr(st, st.env[op.dstMem])
        bar_addr = _byte_addr(st, st.env[op.mbar])
        coords = [np.broadcast_to(st.env[v], (n,)) for v in op.coordinates]
        targets = [h]
        if op.multicastMask is not None:  # every block of the mask, at the same offsets
            mask = int(np.broadcast_to(st.env[op.multicastMask], (n,))[act[0]]) if act.size else 0
            if mask >> len(h.peers):
                raise error_at(op, f"multicast mask {mask:#x} names blocks beyond the cluster of {len(h.peers)} "
                                   f"(simulated)")
            targets = [p for r, p in enumerate(h.peers) if mask >> r & 1]
        with h.cv:
            for lane in act:
                flat, inside = tmap.box_offsets([int(cc[lane]) for cc in coords])
                values = np.where(inside, tmap.array[np.where(inside, flat, 0)], 0).astype(tmap.array.dtype)
                data = np.ascontiguousarray(values).view(np.uint8)
                where = _box_bytes(op, h, int(dst[lane]), data.size, tmap.swizzle, "destination")
                for t in targets:
                    t.check_async_write(op, where)
                    bar = t.barrier(op, int(bar_addr[lane]))
                    if t is h:  # lands when someone waits: a reader that did not wait reads stale data
                        h.check_not_read_by_wgmma(op, where, "a TMA load")
                        bar.clock = h.release(bar.clock)
                        if h.clocks is not None:  # (its bytes are the barrier's to publish, not the role's)
                            bar.clock = h.clocks.async_write(op, where, "a TMA load", ("tma", int(bar_addr[lane])),
                                                             bar.clock)
                        bar.queued.append((where, data))
                    else:  # another block's (multicast): lands now, under any reader not yet done
                        t.shared[where] = data
                        bar.tx -= data.size
                        bar.complete_if_done()
            h.changed()

    return run


def _tma_store(op, c):
    def run(st):
        h = hopper_of(st)
        n = _lanes(st)
        tmap = st.env[op.tmaDescriptor]
        if not isinstance(tmap, TensorMapSim):
            raise error_at(op, "cp.async.bulk.tensor: the descriptor is not a tensor map (simulated)")
        src = _byte_addr(st, st.env[op.srcMem])
        coords = [np.broadcast_to(st.env[v], (n,)) for v in op.coordinates]
        issued = h.bulk_open.setdefault(threading.get_ident(), [])
        for lane in np.flatnonzero(_active(st, n)):
            flat, inside = tmap.box_offsets([int(cc[lane]) for cc in coords])
            where = _box_bytes(op, h, int(src[lane]), flat.size * tmap.array.dtype.itemsize, tmap.swizzle, "source")
            h.check_async_read(op, where)
            h.bulk_reading[where] += 1
            issued.append((tmap, flat, inside, where, op))

    return run


def _bulk_commit(op, c):
    def run(st):
        if not _active(st, _lanes(st)).any():
            return
        h = hopper_of(st)
        me = threading.get_ident()
        h.bulk_groups.setdefault(me, []).append(h.bulk_open.pop(me, []))

    return run


def _bulk_wait(op, c):
    pending = op.group.value.data

    def run(st):
        if _active(st, _lanes(st)).any():
            hopper_of(st).bulk_wait(pending)

    return run


TMA_HANDLERS = {
    nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp: _tma_load,
    nvvm.CpAsyncBulkTensorSharedCTAToGlobalOp: _tma_store,
    nvvm.CpAsyncBulkCommitGroupOp: _bulk_commit,
    nvvm.CpAsyncBulkWaitGroupOp: _bulk_wait,
}
