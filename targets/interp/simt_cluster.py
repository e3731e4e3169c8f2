"""The simulator's thread-block clusters (sm_90): the blocks of a cluster run at the same time,
each in a Python thread of its own, and reach into each other's shared memory.

A kernel with `nvvm.cluster_dim` runs cluster by cluster. Its blocks share one `Waiting` (so a
remote arrival or a multicast load wakes a waiter in another block, and a deadlock is one when
every thread of every block waits) and know each other by rank (`%cluster_ctarank`: x fastest
within the cluster). `mapa` makes a `RemotePointer` (a rank and this block's address), on which
`mbarrier.arrive.release.cluster` arrives in that block; a multicast TMA load (simt_hopper.py)
queues its box on the barrier of every block of its mask, and each lands in that block's shared
memory; `barrier.cluster.arrive` / `wait` meet every thread of the cluster.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np
from tilec.dialects import nvvm

from tilec.errors import error_at

from .simt_hopper import Hopper, Waiting, _active, _byte_addr, _lanes, hopper_of

__all__ = ["CLUSTER_HANDLERS", "RemotePointer", "run_clusters"]


class RemotePointer:
    """A shared::cluster address: shared byte `pointer` of this block, in block `rank`."""

    __slots__ = ("pointer", "rank")

    def __init__(self, rank: int, pointer):
        self.rank, self.pointer = rank, pointer


class _ClusterBarrier:
    """barrier.cluster: `total` threads per round; a thread's arrival is remembered until it waits."""

    def __init__(self, total: int):
        self.total, self.arrived, self.rounds = total, 0, 0


def _rank(op, c):
    def run(st):
        st.env[op.res] = np.int32(hopper_of(st).rank)

    return run


def _mapa(op, c):
    def run(st):
        n = _lanes(st)
        ranks = np.broadcast_to(st.env[op.rank], (n,))[_active(st, n)]
        h = hopper_of(st)
        if ranks.size and (np.any(ranks != ranks[0]) or not 0 <= int(ranks[0]) < len(h.peers)):
            raise error_at(op, f"mapa: rank {ranks.tolist()} outside the cluster of {len(h.peers)} blocks, or not "
                               f"one rank for every thread (simulated)")
        st.env[op.res] = RemotePointer(int(ranks[0]) if ranks.size else 0, st.env[op.addr])

    return run


def _arrive_remote(op, c):
    def run(st):
        h = hopper_of(st)
        ptr = st.env[op.addr]
        if not isinstance(ptr, RemotePointer):
            raise error_at(op, "mbarrier.arrive.cluster needs an address from mapa (simulated)")
        n = _lanes(st)
        act = _active(st, n)
        addrs = _byte_addr(st, ptr.pointer)[act]
        counts = np.broadcast_to(st.env[op.count], (n,))[act]
        target = h.peers[ptr.rank]
        with h.cv:
            for a, k in zip(addrs, counts):
                bar = target.barrier(op, int(a))
                bar.clock = target.release(bar.clock)  # (a release only in the arriving block's own roles)
                bar.arrive(op, int(k), 0, f"shared byte {a} of block {ptr.rank} of the cluster")
            h.changed()

    return run


def _cluster_arrive(op, c):
    def run(st):
        h = hopper_of(st)
        lanes = int(np.count_nonzero(_active(st, _lanes(st))))
        bar = h.waiting.cluster_barrier
        with h.cv:
            st.env["__cluster_round__"] = bar.rounds
            bar.arrived += lanes
            if bar.arrived > bar.total:
                raise error_at(op, f"more threads ({bar.arrived}) at the cluster barrier than the cluster has "
                                   f"({bar.total}) (simulated)")
            if bar.arrived == bar.total:
                bar.arrived, bar.rounds = 0, bar.rounds + 1
            h.changed()

    return run


def _cluster_wait(op, c):
    def run(st):
        h = hopper_of(st)
        bar = h.waiting.cluster_barrier
        mine = st.env.get("__cluster_round__")
        if mine is None:
            raise error_at(op, "barrier.cluster.wait without barrier.cluster.arrive (simulated)")
        with h.cv:
            h.block_until(op, lambda: bar.rounds != mine,
                          lambda: f"simulated deadlock: every thread waits, some at the cluster barrier "
                                  f"({bar.arrived} of {bar.total} threads arrived)")
        del st.env["__cluster_round__"]

    return run


CLUSTER_HANDLERS = {
    nvvm.SREG_OPS["cluster.ctarank"]: _rank,
    nvvm.MapaSharedClusterOp: _mapa,
    nvvm.MBarrierArriveClusterOp: _arrive_remote,
    nvvm.ClusterArriveOp: _cluster_arrive,
    nvvm.ClusterWaitOp: _cluster_wait,
}


def _one_block(run_block, block, hopper, errors: list) -> None:
    """A cluster's block in its thread: an error stops the others' waits and is re-raised after."""
    try:
        run_block(block, hopper)
    except BaseException as e:  # noqa: BLE001 - re-raised in the launching thread
        errors.append(e)
        with hopper.cv:
            if hopper.error is None:
                hopper.error = e
            hopper.cv.notify_all()
    finally:
        with hopper.cv:
            hopper.running -= 1
            hopper.seen.pop(threading.get_ident(), None)
            hopper.changed()


def run_clusters(run_block, grid: tuple[int, int, int], cluster: tuple[int, int, int], threads: int,
                 smem_bytes: int) -> None:
    """Runs `run_block(block index, hopper)` for every block of `grid`, the blocks of each cluster of
    shape `cluster` together (each in a thread), a cluster after the other."""
    for g, c in zip(grid, cluster):
        if g % c:
            raise error_at(None, f"a grid of {list(grid)} blocks does not divide into clusters of {list(cluster)} "
                                 f"(simulated; the GPU refuses such a launch)")
    size = cluster[0] * cluster[1] * cluster[2]
    starts = itertools.product(*(range(0, g, c) for g, c in zip(reversed(grid), reversed(cluster))))
    for z0, y0, x0 in starts:
        waiting = Waiting(running=size)
        waiting.cluster_barrier = _ClusterBarrier(size * threads)
        hoppers, blocks = [], []
        for dz, dy, dx in itertools.product(*(range(c) for c in reversed(cluster))):
            rank = dx + dy * cluster[0] + dz * cluster[0] * cluster[1]
            hoppers.append((rank, Hopper(np.zeros(max(smem_bytes, 1), np.uint8), waiting, rank)))
            blocks.append((x0 + dx, y0 + dy, z0 + dz))
        peers = [h for _, h in sorted(hoppers, key=lambda p: p[0])]
        for _, h in hoppers:
            h.peers = peers
        errors: list[BaseException] = []
        workers = [threading.Thread(target=_one_block, args=(run_block, b, h, errors), daemon=True)
                   for b, (_, h) in zip(blocks, hoppers)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        if errors:
            raise errors[0]
