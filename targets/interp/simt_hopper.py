"""The simulator's model of Hopper's asynchronous machinery (sm_90): mbarriers, TMA tensor maps
and copies, warp-specialized roles running concurrently, elect.sync, stmatrix, named barriers.

The block's threads still run in lockstep inside one role; an `scf.if` marked
`tilec.warp_roles` (the lowering's producer/consumer split) runs its two branches as two
Python threads that meet only at mbarriers, as the warpgroups of a warp-specialized kernel
do. An mbarrier is the hardware's state machine (pending arrivals, transaction bytes, phase
parity); a TMA load is *queued* on its mbarrier and lands in shared memory only when someone
waits on that barrier's phase, so a consumer that reads a stage without waiting reads stale
data, as it could on the GPU. When every role is waiting on a phase that nothing can
complete, the simulation stops with a located "deadlock" error instead of hanging.

setmaxnreg moves registers within the block's pool (its threads times the registers each started
with): an increase waits until the other roles' decreases leave it room, and one that never fits
is a located deadlock, as it hangs on the GPU.

A cp.async copy inside the roles lands late too: when its thread waits for it (cp.async.wait_group),
or, tracked by `cp.async.mbarrier.arrive`, when someone waits on that barrier's phase (the copies
hold the phase open until then). Their bytes are then the waiting role's generic-proxy writes:
its wgmma reads of them need its `fence.proxy.async.shared::cta` first, or a located error.

Inside the roles the simulator also keeps the proxy rule of the PTX memory model: shared memory a
role read through the generic proxy (ld.shared, ldmatrix) may be overwritten by a TMA load (the
async proxy) only after that role's `fence.proxy.async.shared::cta`. The simulated loads read at
once, so a missing fence would never show as wrong data here; on the GPU the release of a stage
can overtake reads still in flight and TMA overwrites what they read. A TMA load into bytes with
unfenced generic reads is a located error.

A TMA store (`cp.async.bulk.tensor` shared::cta → global) reads shared memory late, as the GPU's may:
the simulated store reads its bytes when its thread waits for its bulk group
(`cp.async.bulk.wait_group`), so a tile rewritten before that wait goes out rewritten. The proxy
rule holds the other way too: bytes a role wrote through the generic proxy (st.shared, stmatrix)
may be read by a TMA store only after that role's `fence.proxy.async.shared::cta`; a generic write
into bytes a pending store still reads, an unfenced store, and a role that ends with stores not
waited for are located errors.

Two roles touching one shared byte, one of them writing, must be ordered by what they synchronize
on (mbarrier phases, named barriers): `shared_races.RoleClocks` keeps their happens-before and
makes a race a located error at the second access, whichever order the simulation ran them in.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
from tilec.dialects import nvvm

from tilec.errors import error_at

from .shared_races import RoleClocks, report_race

__all__ = ["HOPPER_HANDLERS", "block_barrier", "hopper_of", "note_generic_read", "note_generic_write", "run_roles"]


@dataclass
class _MBarrier:
    count: int
    pending: int
    tx: int = 0
    phase: int = 0  # completed phases
    queued: list = field(default_factory=list)  # TMA loads not yet landed: (byte addresses, bytes)
    copies: list = field(default_factory=list)  # cp.async copies that arrive here once landed: (_Copies, lanes)
    clock: np.ndarray | None = None  # the releases into the current phase (shared_races.RoleClocks)
    done: np.ndarray | None = None  # ... into the last completed phase, which its waiters acquire

    def complete_if_done(self) -> None:
        if self.pending <= 0 and self.tx == 0 and not self.queued and not self.copies:
            self.phase += 1
            self.pending = self.count
            self.done, self.clock = self.clock, None

    def arrive(self, op, count: int, tx: int, where: str) -> None:
        """`count` arrivals (after announcing `tx` bytes); more than the phase's count is an error
        at `op`, the barrier being the one at `where`."""
        self.tx += tx
        self.pending -= count
        if self.pending < 0:
            raise error_at(op, f"more arrivals on the mbarrier at {where} than its count {self.count} in one "
                               f"phase (simulated)")
        self.complete_if_done()


class Waiting:
    """Who waits, and what changed: one per block, or one per cluster (its blocks run together
    and wake each other up: remote arrivals, multicast loads, the cluster barrier)."""

    def __init__(self, running: int = 1):
        self.cv = threading.Condition()
        self.running = running  # threads that are running (a block's roles, of every block of a cluster)
        self.epoch = 0  # bumped by every change a waiter could be waiting for
        self.seen: dict[int, int] = {}  # waiting thread → the epoch it last checked its barrier at
        self.error: BaseException | None = None
        self.cluster_barrier = None  # a cluster's: simt_cluster._ClusterBarrier


@dataclass
class _Copies:
    """A role's cp.async copies not yet landed: (destination array, element offsets (lanes, width),
    the data, the shared byte addresses they write)."""

    writes: list = field(default_factory=list)

    def land(self) -> np.ndarray:
        """Writes them; the shared bytes written."""
        for array, at, data, _ in self.writes:
            array[at] = data
        where = [w for *_, w in self.writes]
        self.writes = []
        return np.concatenate(where) if where else np.zeros(0, np.int64)


def _first_marked(masks: dict, where: np.ndarray) -> int | None:
    """The first of the shared bytes `where` that any role's mask marks (None: none)."""
    for mask in list(masks.values()):
        hit = mask[where]
        if hit.any():
            return int(where[np.flatnonzero(hit)[0]])
    return None


def _shared_field(name: str) -> property:
    return property(lambda self: getattr(self.waiting, name), lambda self, v: setattr(self.waiting, name, v))


class Hopper:
    """Per-block state of the asynchronous machinery, shared by the roles' threads. The blocks of
    a cluster share their `waiting` and know each other (`peers`, by rank)."""

    cv, running, epoch, seen, error = (_shared_field(n) for n in ("cv", "running", "epoch", "seen", "error"))

    def __init__(self, shared: np.ndarray, waiting: Waiting | None = None, rank: int = 0):
        self.shared = shared  # the block's shared memory, bytes
        self.barriers: dict[int, _MBarrier] = {}
        self.waiting = waiting or Waiting()
        self.rank = rank  # in its cluster
        self.peers: list[Hopper] = [self]  # the cluster's blocks, by rank
        self.roles = 0  # > 0 inside a warp-specialized region
        self.named: dict[int, int] = {}  # named barrier → threads arrived in its current round
        self.rounds: dict[int, int] = {}  # named barrier → rounds completed
        self.named_site: dict = {}  # named barrier → the bar.sync (aligned) its blocking threads run this round
        self.unfenced: dict[int, np.ndarray] = {}  # role thread → shared bytes it read, not yet fenced
        self.unfenced_writes: dict[int, np.ndarray] = {}  # role thread → shared bytes it wrote, not yet fenced
        self.bulk_open: dict[int, list] = {}  # thread → TMA stores issued since its last commit
        self.bulk_groups: dict[int, list[list]] = {}  # thread → its committed bulk groups, oldest first
        self.bulk_reading = np.zeros(shared.size, np.int32)  # shared bytes pending TMA stores still read
        self.copies: dict[int, _Copies] = {}  # role thread → its cp.async copies issued, not yet landed
        self.lane_registers: np.ndarray | None = None  # per thread of the block: its registers (setmaxnreg)
        self.starved: tuple | None = None  # (op, message) of a setmaxnreg.inc waiting for registers
        self.clocks: RoleClocks | None = None  # happens-before between the roles (inside them)
        self.named_clock: dict[int, np.ndarray] = {}  # named barrier → the releases into its current round
        self.named_done: dict[tuple[int, int], np.ndarray] = {}  # (named barrier, round) → ... of that round
        self.wgmma_open: dict[int, list] = {}  # thread → its wgmmas' operand reads since its last commit
        self.wgmma_groups: dict[int, list[list]] = {}  # thread → its committed wgmma groups not waited for
        self.wgmma_reading = np.zeros(shared.size, np.int32)  # shared bytes wgmmas not waited for read
        self.wgmma_in_flight = 0  # their (op, bytes) reads

    def release(self, into: np.ndarray | None) -> np.ndarray | None:
        """The calling role's clock joined into a barrier's (shared_races.RoleClocks.release)."""
        return into if self.clocks is None else self.clocks.release(into)

    def acquire(self, clock: np.ndarray | None) -> None:
        if self.clocks is not None:
            self.clocks.acquire(clock)

    def set_registers(self, op, lanes: np.ndarray, count: int, increase: bool) -> None:
        """`setmaxnreg` by the active `lanes` (a mask over the block's threads): each keeps `count`
        registers, out of the block's pool, its threads times the registers each started with; an
        increase waits until the pool holds it (the other roles' decreases), as the GPU's does: one it
        never holds is a located deadlock."""
        from tilec.dialects.tile import launch_registers

        block = lanes.size
        start = launch_registers(block)

        def asked() -> int:
            return int(np.where(lanes, count, self.lane_registers).sum())

        def starved() -> str:
            return (f"simulated deadlock: setmaxnreg.inc to {count} registers for {int(lanes.sum())} threads waits "
                    f"for registers the block never frees (its {block} threads start with {start} each; the "
                    f"threads would hold {asked()} of {block * start})")

        with self.cv:  # (the pool made under the lock: two roles making it at once lost one's setmaxnreg)
            if self.lane_registers is None or self.lane_registers.size != block:
                self.lane_registers = np.full(block, start, np.int64)
            if increase:
                self.starved = (op, starved)  # the cause to report, whichever waiter finds the deadlock
                try:
                    self.block_until(op, lambda: asked() <= block * start, starved)
                finally:
                    self.starved = None
            self.lane_registers[lanes] = count
            self.changed()

    def defer_copy(self, op, array: np.ndarray, at: np.ndarray, data: np.ndarray, byte_addrs: np.ndarray) -> None:
        """A cp.async copy inside the roles: it lands when its thread waits for it (cp.async.wait_group) or
        when someone waits on the mbarrier its `cp.async.mbarrier.arrive` tracks it on, as late as the GPU may."""
        self.check_not_read_by_wgmma(op, byte_addrs, "a cp.async copy")
        if self.clocks is not None:
            self.clocks.async_write(op, byte_addrs, "a cp.async copy", ("cp.async",), None)
        self.copies.setdefault(threading.get_ident(), _Copies()).writes.append((array, at, data, byte_addrs))

    def land_copies(self) -> None:
        """cp.async.wait_group (or the end of a role): the calling thread's copies land now."""
        pending = self.copies.pop(threading.get_ident(), None)
        if pending is not None:
            pending.land()
        if self.clocks is not None:
            self.clocks.copies_landed()

    def track_copies(self, op, addr: int, lanes: int, noinc: bool) -> None:
        """`cp.async.mbarrier.arrive` by `lanes` lanes: the calling thread's copies so far arrive on the
        barrier at `addr` once they land (raising its pending count first, but with `noinc`)."""
        pending = self.copies.pop(threading.get_ident(), None) or _Copies()
        with self.cv:
            bar = self.barrier(op, addr)
            if not noinc:
                bar.pending += lanes
            bar.clock = self.release(bar.clock)
            if self.clocks is not None:  # (the role's copies so far complete in this phase)
                bar.clock = self.clocks.agent_clock(("cp.async",), bar.clock)
            bar.copies.append((pending, lanes))
            self.changed()

    def check_async_operand(self, op, where: np.ndarray) -> None:
        """wgmma reads bytes `where` through the async proxy: the calling role must have fenced the
        generic-proxy writes it acquired there (a producer's cp.async copies, landed by its wait)."""
        me = threading.get_ident()
        if self.clocks is not None:
            self.clocks.read(op, where, "a wgmma operand read")
        byte = _first_marked({t: m for t, m in self.unfenced_writes.items() if t == me}, where)
        if byte is not None:
            raise error_at(op, f"wgmma reads shared byte {byte}, written through the generic proxy (cp.async, "
                               "st.shared) with no fence.proxy.async.shared::cta between the wait for it and the "
                               "read: the async proxy may read the old bytes on the GPU (simulated)")

    def wgmma_read(self, op, where: np.ndarray) -> None:
        """A wgmma of the calling thread reads these shared bytes from now until the wgmma.wait_group that
        completes its group: a write into them meanwhile, by any thread, is a located error."""
        where = np.clip(where, 0, self.shared.size - 1)
        if self.roles:
            self.check_async_operand(op, where)
        with self.cv:  # (the roles' threads share the counts)
            self.wgmma_open.setdefault(threading.get_ident(), []).append((op, where))
            self.wgmma_reading[where] += 1  # (a repeated byte counts once, here and where it is retired)
            self.wgmma_in_flight += 1

    def wgmma_commit(self) -> None:
        """wgmma.commit_group: the calling thread's wgmmas since its last commit form a group."""
        me = threading.get_ident()
        with self.cv:
            self.wgmma_groups.setdefault(me, []).append(self.wgmma_open.pop(me, []))

    def wgmma_wait(self, pending: int) -> None:
        """wgmma.wait_group `pending`: the calling thread's groups but the newest `pending` are complete,
        their operands read until now (a role's release before this wait does not cover those reads)."""
        with self.cv:
            groups = self.wgmma_groups.get(threading.get_ident(), [])
            while len(groups) > pending:
                self._retire(groups.pop(0), restamp=True)

    def _retire(self, reads: list, restamp: bool) -> None:
        with self.cv:
            for _, where in reads:
                self.wgmma_reading[where] -= 1
                self.wgmma_in_flight -= 1
                if restamp and self.clocks is not None:
                    self.clocks.extend_read(where)

    def drop_wgmmas(self) -> None:
        """The calling thread ends (a role): its wgmmas no one waited for no longer count as reading."""
        me = threading.get_ident()
        with self.cv:
            for reads in [self.wgmma_open.pop(me, []), *self.wgmma_groups.pop(me, [])]:
                self._retire(reads, restamp=False)

    def check_not_read_by_wgmma(self, op, where: np.ndarray, what: str) -> None:
        """`what` (a write) into shared bytes `where`: no wgmma not yet waited for may read them."""
        if not self.wgmma_in_flight:
            return
        with self.cv:  # (a snapshot: the other roles' threads change these)
            busy = self.wgmma_reading[np.clip(where, 0, self.shared.size - 1)] > 0
            if not busy.any():
                return
            reading = [*self.wgmma_open.items(), *((t, r) for t, gs in self.wgmma_groups.items() for r in gs)]
        byte = int(where[np.flatnonzero(busy)[0]])
        for thread, reads in reading:
            for wgmma, read in reads:
                if np.isin(byte, read):
                    whose = "the block's" if self.clocks is None else "its own" if thread == threading.get_ident() \
                        else "another role's"
                    report_race(op, f"{what} into shared memory that {whose} wgmma still reads: the "
                                    "wgmma.wait_group that completes it comes later, and until then the wgmma may "
                                    "read the new bytes (simulated)",
                                "wait for the wgmma before the tile is written again (a role: release the buffer "
                                "only after that wait)", wgmma, "the wgmma")
                    return

    def generic_read(self, op, byte_addrs: np.ndarray) -> None:
        """The calling role read these shared bytes through the generic proxy (inside the roles)."""
        if not self.roles:
            return
        if self.clocks is not None:
            self.clocks.read(op, np.clip(byte_addrs, 0, self.shared.size - 1), "a read")
        self._mark(self.unfenced, byte_addrs)

    def _mark(self, masks: dict, byte_addrs: np.ndarray) -> None:
        """The calling role's mask in `masks` (unfenced reads or writes) gets these shared bytes."""
        me = threading.get_ident()
        mask = masks.get(me)
        if mask is None:
            mask = masks[me] = np.zeros(self.shared.size, bool)
        mask[np.clip(byte_addrs, 0, self.shared.size - 1)] = True

    def fence_proxy_async(self) -> None:
        """`fence.proxy.async`: the calling role's generic reads are ordered before later async writes,
        its generic writes before later async reads."""
        self.unfenced.pop(threading.get_ident(), None)
        self.unfenced_writes.pop(threading.get_ident(), None)

    def generic_write(self, op, byte_addrs: np.ndarray) -> None:
        """The calling thread wrote these shared bytes through the generic proxy."""
        addrs = np.clip(byte_addrs, 0, self.shared.size - 1)
        self.check_not_read_by_wgmma(op, addrs, "a write")
        if not self.roles:
            return
        if self.clocks is not None:
            self.clocks.write(op, addrs, "a write")
        busy = self.bulk_reading[addrs]
        if busy.any():
            byte = int(addrs[np.flatnonzero(busy)[0]])
            raise error_at(op, f"a write to shared byte {byte}, which a TMA store still reads: the store's thread "
                               "must wait for it (cp.async.bulk.wait_group.read) and the writers meet it at a "
                               "barrier before the tile is written again (simulated)")
        self._mark(self.unfenced_writes, addrs)

    def check_async_read(self, op, where: np.ndarray) -> None:
        """A TMA store of bytes `where`: no role may have written them through the generic proxy unfenced."""
        byte = _first_marked(self.unfenced_writes, where)
        if byte is not None:
            raise error_at(op, f"TMA store of shared byte {byte}, which a role wrote through the generic proxy "
                               "(st.shared / stmatrix) with no fence.proxy.async.shared::cta between the write "
                               "and the store: the store may read the old bytes on the GPU (simulated)")

    def bulk_wait(self, pending: int) -> None:
        """`cp.async.bulk.wait_group pending`: the calling thread's oldest bulk groups, all but
        `pending`, read shared memory now (and write the tensor)."""
        groups = self.bulk_groups.get(threading.get_ident(), [])
        while len(groups) > pending:
            for tmap, flat, inside, where, _ in groups.pop(0):
                values = self.shared[where].view(tmap.array.dtype)
                tmap.array[flat[inside]] = values[inside]
                self.bulk_reading[where] -= 1

    def check_bulk_done(self) -> None:
        """At the end of a role: its thread's TMA stores must have been waited for."""
        me = threading.get_ident()
        left = self.bulk_open.pop(me, []) + [r for g in self.bulk_groups.pop(me, []) for r in g]
        if left:
            raise error_at(left[0][4], "the threads end with a TMA store whose bulk group was never waited for "
                                       "(cp.async.bulk.commit_group, then wait_group.read by the same thread): the "
                                       "block must not end while it reads shared memory (simulated)")

    def check_async_write(self, op, where: np.ndarray) -> None:
        """A TMA load into bytes `where`: no role may have read them through the generic proxy unfenced."""
        byte = _first_marked(self.unfenced, where)
        if byte is not None:
            raise error_at(op, f"TMA load over shared byte {byte}, which a role read through the generic "
                               "proxy (ld.shared / ldmatrix) with no fence.proxy.async.shared::cta between "
                               "those reads and the release of the buffer: a write-after-read race across "
                               "proxies on the GPU (simulated)")

    def changed(self) -> None:
        """An arrival or a landed copy: every waiter must look again (call with `cv` held)."""
        self.epoch += 1
        self.cv.notify_all()

    def barrier(self, op, addr: int) -> _MBarrier:
        found = self.barriers.get(addr)
        if found is None:
            raise error_at(op, f"{op.name}: no mbarrier was initialized at shared byte {addr} (simulated)")
        return found

    def deliver(self, bar: _MBarrier) -> None:
        """The barrier's queued copies land (called by a waiter, with `cv` held): TMA loads complete their
        bytes; cp.async copies their arrivals, their bytes now the waiter's generic writes to fence."""
        if not bar.queued and not bar.copies:
            return
        for where, data in bar.queued:
            self.shared[where] = data
            bar.tx -= data.size
        bar.queued.clear()
        for copies, lanes in bar.copies:
            written = copies.land()
            if written.size and self.roles:
                self._mark(self.unfenced_writes, written)
            bar.pending -= lanes
        bar.copies.clear()
        bar.complete_if_done()
        self.changed()

    def named_barrier(self, op, ident: int, count: int, lanes: int, wait: bool, aligned: bool = False) -> None:
        """`lanes` threads arrive on named barrier `ident` of `count` threads (bar.arrive), and,
        with `wait`, block until its round completes (bar.sync): the roles' threads meet there.
        `aligned` (bar.sync): every thread that blocks in one round must run this same instruction."""
        with self.cv:
            arrived = self.named.get(ident, 0) + lanes
            if arrived > count:
                raise error_at(op, f"more threads ({arrived}) on named barrier {ident} than its count {count} "
                                   f"in one round (simulated)")
            if aligned:
                first = self.named_site.setdefault(ident, op)
                if first is not op:
                    raise error_at(op, f"bar.sync on named barrier {ident} here and at another instruction in one "
                                       f"round: bar.sync is aligned (every thread that blocks in a round runs the same "
                                       f"instruction; compute-sanitizer's synccheck reports it as divergent); threads "
                                       f"meeting from different code need barrier.sync (simulated)")
            round_ = self.rounds.get(ident, 0)
            self.named_clock[ident] = self.release(self.named_clock.get(ident))
            if arrived == count:
                self.named[ident] = 0
                self.named_site.pop(ident, None)
                self.rounds[ident] = round_ + 1
                self.named_done[(ident, round_)] = self.named_clock.pop(ident)
                if wait:
                    self.acquire(self.named_done[(ident, round_)])
                self.changed()
                return
            self.named[ident] = arrived
            self.changed()
            if wait:
                self.block_until(op, lambda: self.rounds.get(ident, 0) != round_,
                                 lambda: f"simulated deadlock: every role waits, one of them on named barrier {ident} "
                                         f"({arrived} of {count} threads arrived)")
                self.acquire(self.named_done.get((ident, round_)))

    def wait(self, op, addr: int, parity: int) -> None:
        """Block until the phase of `parity` at `addr` has completed."""

        def done() -> bool:
            bar = self.barrier(op, addr)
            self.deliver(bar)
            return (bar.phase & 1) != parity  # `phase` phases completed: the one of this parity is the last

        def stuck() -> str:
            bar = self.barrier(op, addr)
            return (f"simulated deadlock: every role waits on an mbarrier phase that nothing completes (barrier at "
                    f"shared byte {addr}: {bar.pending} arrivals and {bar.tx} bytes pending, parity {parity})")

        with self.cv:
            self.block_until(op, done, stuck)
            self.acquire(self.barrier(op, addr).done)

    def block_until(self, op, done, stuck) -> None:
        """Wait (with `cv` held) until `done()`; when every running thread waits and none has changed
        anything since each last looked, a located deadlock error with the message `stuck()`."""
        me = threading.get_ident()
        while True:
            if self.error is not None:
                raise self.error
            if done():
                self.seen.pop(me, None)
                return
            self.seen[me] = self.epoch
            if len(self.seen) >= self.running and all(e == self.epoch for e in self.seen.values()):
                at, why = self.starved if self.starved is not None else (op, stuck)  # (the root cause first)
                self.error = error_at(at, why())
                self.cv.notify_all()
                raise self.error
            self.cv.wait(timeout=60)


def hopper_of(st) -> Hopper:
    h = st.env.get("__hopper__")
    if h is None:
        h = st.env["__hopper__"] = Hopper(st.shared.array)
    return h


def _active(st, n: int) -> np.ndarray:
    return np.ones(n, bool) if st.mask is None else np.broadcast_to(np.asarray(st.mask), (n,))


def _lanes(st) -> int:
    return st.lanes[0].shape[0]


def _byte_addr(st, ptr) -> np.ndarray:
    """Shared byte addresses of a pointer per lane."""
    from .simt import _shared_byte_base

    base = _shared_byte_base(ptr.memory, st.shared)
    return base + np.broadcast_to(np.asarray(ptr.offset, np.int64), (_lanes(st),)) * ptr.memory.array.dtype.itemsize


def _mbarrier_init(op, c):
    def run(st):
        h = hopper_of(st)
        addr, count = _byte_addr(st, st.env[op.addr]), np.broadcast_to(st.env[op.count], (_lanes(st),))
        with h.cv:
            for a, n in zip(addr[_active(st, _lanes(st))], count[_active(st, _lanes(st))]):
                if a % 8:
                    raise error_at(op, f"mbarrier at shared byte {a} is not 8-byte aligned (simulated)")
                h.barriers[int(a)] = _MBarrier(int(n), int(n))

    return run


def _arrive(op, c, expect_tx: bool):
    def run(st):
        h = hopper_of(st)
        n = _lanes(st)
        addr = _byte_addr(st, st.env[op.addr])[_active(st, n)]
        tx = np.broadcast_to(st.env[op.txcount], (n,))[_active(st, n)] if expect_tx else np.zeros(addr.shape, np.int64)
        with h.cv:
            for a, t in zip(addr, tx):
                bar = h.barrier(op, int(a))
                bar.clock = h.release(bar.clock)
                bar.arrive(op, 1, int(t), f"shared byte {a}")
            h.changed()
        if not expect_tx:
            st.env[op.res] = np.int64(0)

    return run


def _cp_async_arrive(op, c):
    noinc = op.noinc is not None

    def run(st):
        h = hopper_of(st)
        n = _lanes(st)
        addrs = _byte_addr(st, st.env[op.addr])[_active(st, n)]
        if not addrs.size:
            return
        if np.any(addrs != addrs[0]):
            raise error_at(op, "cp.async.mbarrier.arrive on different mbarriers within one role is not supported "
                               "by the simulator")
        h.track_copies(op, int(addrs[0]), int(addrs.size), noinc)

    return run


def _try_wait(op, c):
    def run(st):
        h = hopper_of(st)
        n = _lanes(st)
        act = _active(st, n)
        addrs = _byte_addr(st, st.env[op.addr])[act]
        parities = np.broadcast_to(st.env[op.phase], (n,))[act]
        for a, p in sorted(set(zip(addrs.tolist(), parities.tolist()))):
            h.wait(op, int(a), int(p) & 1)

    return run


def note_generic_write(st, mem, byte_addrs, op) -> None:
    """Shared bytes written through the generic proxy by the active lanes (tracked inside warp roles)."""
    h = st.env.get("__hopper__")
    if h is None or not (h.roles or h.wgmma_in_flight) or mem.what != "shared":
        return
    from .simt import _shared_byte_base

    h.generic_write(op, _shared_byte_base(mem, st.shared) + np.asarray(byte_addrs, np.int64))


def _elect(op, c):
    def run(st):
        n = _lanes(st)
        act = _active(st, n)
        first = np.full(n, False)
        for w in range(0, n, 32):
            live = np.flatnonzero(act[w:w + 32])
            if live.size:
                first[w + live[0]] = True
        st.env[op.pred] = first

    return run


def _named_barrier(op, c, wait: bool = True):
    def run(st):
        if op.barrierId is None and op.numberOfThreads is None:
            if hopper_of(st).roles:
                raise error_at(op, "bar.sync 0 (a block-wide barrier) inside a warp-specialized region waits for "
                                   "threads of the other role and deadlocks (simulated)")
            _whole_block(op, st)
            return
        n = _lanes(st)
        lanes = int(np.count_nonzero(_active(st, n)))
        ident = np.broadcast_to(st.env[op.barrierId], (n,))[_active(st, n)]
        count = np.broadcast_to(st.env[op.numberOfThreads], (n,))[_active(st, n)]
        if lanes == 0:
            return
        if np.any(ident != ident[0]) or np.any(count != count[0]):
            raise error_at(op, "a named barrier whose id or thread count differs between the threads of a "
                               "warp (simulated)")
        if lanes == int(count[0]) and wait:  # the lanes of one role, in lockstep: done
            return
        hopper_of(st).named_barrier(op, int(ident[0]), int(count[0]), lanes, wait,
                                    aligned=wait and op.unaligned is None)

    return run


def _whole_block(op, st) -> None:
    """A block-wide barrier must be reached by every thread of the block: one under a branch that
    only some take (a lane mask) waits for threads that never come. The lanes run in lockstep
    here, so without this check it would pass; on a GPU it deadlocks, or (the others meeting a
    later barrier) desynchronizes the block's barriers."""
    if st.mask is None:
        return
    n = _lanes(st)
    active = _active(st, n)
    if active.all() or not active.any():
        return
    raise error_at(op, f"a block-wide barrier reached by {int(np.count_nonzero(active))} of the block's {n} "
                       "threads, under a branch the others do not take: on a GPU it waits for threads that never "
                       "arrive (simulated deadlock)")


def block_barrier(op, c):
    def run(st):
        h = st.env.get("__hopper__")
        if h is not None and h.roles:
            raise error_at(op, "a block-wide barrier inside a warp-specialized region waits for threads of the "
                               "other role and deadlocks (simulated)")
        _whole_block(op, st)

    return run


def _stmatrix(op, c):
    """stmatrix m8n8 .b16: lanes 8j .. 8j+7 give the row addresses of matrix j; register j of lane l
    holds row l // 4, columns 2 (l % 4) + {0, 1} of matrix j (.trans: the transpose)."""
    trans = op.layout.data.value == "col"

    def run(st):
        n = _lanes(st)
        act = _active(st, n)
        p = st.env[op.ptr]
        offsets = np.broadcast_to(np.asarray(p.offset, np.int64), (n,))
        data = p.memory.array
        lane = np.arange(n) % 32
        for w in range(n // 32):
            sel = slice(32 * w, 32 * w + 32)
            if not act[sel].any():
                continue
            if not act[sel].all():
                raise error_at(op, "stmatrix under a divergent condition: all lanes of the warp take part (simulated)")
            for j, src in enumerate(op.sources):
                regs = np.ascontiguousarray(np.broadcast_to(np.asarray(st.env[src]).astype(np.int32), (n,))[sel])
                pairs = regs.view(data.dtype).reshape(32, 2)
                rows = offsets[sel][8 * j:8 * j + 8]
                r, col = lane[sel] // 4, 2 * (lane[sel] % 4)
                for e in range(2):
                    at = rows[col + e] + r if trans else rows[r] + col + e
                    note_generic_write(st, p.memory, (at[:, None] * data.itemsize + np.arange(data.itemsize)).ravel(), op)
                    data[at] = pairs[:, e]

    return run


def run_roles(st, cond, then_run, else_run, groups: tuple[int, int] | None = None) -> None:
    """The two branches of a warp-specialized `scf.if` as two concurrent threads of the block;
    `groups` = (G, T): the else branch (the consumers) runs as G threads, one per consumer group of
    T lanes, as the warpgroups of a ping-pong kernel run independently of each other."""
    h = hopper_of(st)
    cv = np.asarray(cond)
    outer = st.mask
    parts = [(then_run, cv)]
    if groups is None:
        parts.append((else_run, ~cv))
    else:
        count, threads = groups
        group = st.lanes[0] // threads
        parts += [(else_run, ~cv & (group == g)) for g in range(count)]
    branches = []
    for run, m in parts:
        mask = m if outer is None else outer & m
        if run is not None and np.any(mask):
            branches.append((run, mask))
    errors: list[BaseException] = []

    def role(run, mask, own_env, index):
        if clocks is not None:
            clocks.enter(index, mask)
        sub = type(st).__new__(type(st))
        for slot in ("env", "lanes", "block", "grid", "extents", "shared"):
            setattr(sub, slot, getattr(st, slot))
        if own_env:  # consumer groups run the same ops: each needs its own values
            sub.env = dict(st.env)
        sub.mask = mask
        try:
            run(sub)
            h.drop_wgmmas()
            h.land_copies()  # (copies no one waited for land at the end, as they eventually do)
            h.check_bulk_done()
        except BaseException as e:  # noqa: BLE001 - re-raised in the block's thread
            errors.append(e)
            with h.cv:
                if h.error is None:
                    h.error = e
                h.cv.notify_all()
        finally:
            with h.cv:
                h.seen.pop(threading.get_ident(), None)
                left[0] -= 1
                if left[0]:
                    h.running -= 1
                # (the last role hands its count back to the block's thread at once: a block of a
                # cluster waiting meanwhile must not take the join for a deadlock)
                h.changed()

    left = [len(branches)]
    clocks = None
    with h.cv:
        h.running += len(branches) - 1
        if not h.roles:  # the outermost roles: a fresh happens-before (what came before is the block's, in lockstep)
            clocks = h.clocks = RoleClocks(h.shared.size, len(branches), len(h.barriers))
            h.named_clock.clear()
            h.named_done.clear()
            for bar in h.barriers.values():
                bar.clock = bar.done = None
        h.roles += 1
    threads = [threading.Thread(target=role, args=(*b, groups is not None, i), daemon=True)
               for i, b in enumerate(branches)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with h.cv:
        h.roles -= 1
        if clocks is not None:
            h.clocks = None
        for t in threads:
            h.unfenced.pop(t.ident, None)
            h.unfenced_writes.pop(t.ident, None)
    if errors:
        raise errors[0]


def _nothing(op, c):
    return None


def _setmaxnreg(op, c):
    count, increase = op.regCount.value.data, op.action.data == nvvm.SetMaxRegisterAction.INCREASE

    def run(st):
        lanes = np.array(_active(st, _lanes(st)), bool)
        if lanes.any():
            hopper_of(st).set_registers(op, lanes, count, increase)

    return run


def _fence_proxy(op, c):
    if op.kind.data not in (nvvm.ProxyKind.ASYNC_SHARED, nvvm.ProxyKind.ASYNC):
        return None

    def run(st):
        h = st.env.get("__hopper__")
        if h is not None:
            h.fence_proxy_async()

    return run


def note_generic_read(st, mem, byte_addrs, op) -> None:
    """Shared bytes read through the generic proxy by the active lanes (tracked inside warp roles)."""
    h = st.env.get("__hopper__")
    if h is None or not h.roles or mem.what != "shared":
        return
    from .simt import _shared_byte_base

    h.generic_read(op, _shared_byte_base(mem, st.shared) + np.asarray(byte_addrs, np.int64))


HOPPER_HANDLERS = {
    nvvm.MBarrierInitSharedOp: _mbarrier_init,
    nvvm.MBarrierArriveSharedOp: lambda op, c: _arrive(op, c, False),
    nvvm.MBarrierArriveExpectTxSharedOp: lambda op, c: _arrive(op, c, True),
    nvvm.MBarrierTryWaitParitySharedOp: _try_wait,
    nvvm.CpAsyncMBarrierArriveSharedOp: _cp_async_arrive,
    nvvm.FenceMbarrierInitOp: _nothing,
    nvvm.FenceProxyOp: _fence_proxy,
    nvvm.PrefetchTensorMapOp: _nothing,
    nvvm.SetMaxRegisterOp: _setmaxnreg,
    nvvm.ElectSyncOp: _elect,
    nvvm.BarrierOp: _named_barrier,
    nvvm.BarrierArriveOp: lambda op, c: _named_barrier(op, c, wait=False),
    nvvm.StMatrixOp: _stmatrix,
}
