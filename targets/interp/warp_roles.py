"""Interpreter handlers for warp-specialized kernels: mbarriers with phases, TMA loads, stage views
and `tile.warp_specialize`, whose two roles run concurrently and meet only at mbarriers.

Outside a `tile.warp_specialize` the block runs in lockstep, one tile op at a time, and barrier
operations do nothing (as in tile_ops.py). Inside one, the producer and consumer regions each
run in a Python thread of their own, one at a time (a baton): a role runs until it waits on an
mbarrier phase that has not completed, then hands over to the other. Both roles blocked on
phases that cannot complete is a deadlock, reported at the wait.

An mbarrier (element of a `tile.alloc_barrier` array) counts the arrivals of its current phase
and the bytes of TMA loads still to land; when the arrivals reach `arrive_count` and no bytes
are outstanding, the phase completes and the next begins (phase 0, 1, 2, ...). `wait_parity(p)`
passes once the phase number's parity differs from p: on a fresh barrier parity 1 passes at
once and parity 0 waits for phase 0 to complete.

Who arrives: the producer region runs on one thread of its warpgroup (see
tilec/frontend/warp_specialize.py), so each of its `tile.mbarrier_arrive` and
`tile.mbarrier_expect_tx` is one arrival; the consumer region runs on the kernel's threads, each
of which executes its arrive: an arrive there is `threads` arrivals. A TMA load copies at once
(it lands before anything can observe it) and then takes its bytes off the barrier.
"""

from __future__ import annotations

import threading

import numpy as np
from tilec.dialects import tile

from tilec.errors import error_at

from .tile_ops import _tile_operand
from .values import Tile, uniform


class Barriers:
    """The state of the `count` mbarriers of one `tile.alloc_barrier`."""

    def __init__(self, count: int, arrive_count: int):
        self.arrive_count = arrive_count
        self.phase = [0] * count
        self.arrived = [0] * count
        self.tx = [0] * count

    def _complete_if_done(self, i: int) -> None:
        if self.arrived[i] >= self.arrive_count and self.tx[i] <= 0:
            self.phase[i] += 1
            self.arrived[i] -= self.arrive_count
            self.tx[i] = 0

    def arrive(self, i: int, n: int, op) -> None:
        if self.arrived[i] + n > self.arrive_count:
            raise error_at(op, f"{n} arrivals on an mbarrier expecting {self.arrive_count} per phase overrun "
                               f"its phase ({self.arrived[i]} had arrived)",
                           hint="arrive_count must count every thread that arrives in one phase")
        self.arrived[i] += n
        self._complete_if_done(i)

    def expect(self, i: int, nbytes: int) -> None:
        self.tx[i] += nbytes

    def landed(self, i: int, nbytes: int) -> None:
        self.tx[i] -= nbytes
        self._complete_if_done(i)

    def passes(self, i: int, parity: int) -> bool:
        return self.phase[i] % 2 != parity % 2


class Roles:
    """The baton passed between the two roles of one `tile.warp_specialize` run."""

    def __init__(self):
        self.cond = threading.Condition()
        self.turn = 0
        self.done = [False, False]
        self.blocked = [False, False]
        self.version = 0  # bumped by every barrier update, so a stalled pair of roles is seen as such
        self.seen = [-1, -1]
        self.error: BaseException | None = None

    def hand_over(self, me: int) -> None:
        """Let the other role run until it blocks or finishes; then continue."""
        other = 1 - me
        with self.cond:
            self.turn = other
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.turn == me or self.error is not None)
        if self.error is not None:
            raise _Stop()

    def wait(self, me: int, ready, op) -> None:
        while not ready():
            other = 1 - me
            stalled = self.done[other] or (self.blocked[other] and self.seen[other] == self.version)
            if stalled:
                raise error_at(op, "deadlock: this mbarrier wait can never pass (the other warpgroup "
                                   f"{'has finished' if self.done[other] else 'waits too'}, and no arrival or TMA "
                                   "load is left to complete the phase)",
                               hint="check the parities and the arrive_count of the barriers of the T.ws blocks")
            self.blocked[me], self.seen[me] = True, self.version
            self.hand_over(me)
            self.blocked[me] = False


class _Stop(Exception):
    """Ends a role's thread after the other role failed."""


def _role_state(st, roles: Roles | None, me: int):
    from .interpreter import State

    s = State()
    s.env, s.block = st.env, st.block
    s.roles, s.role = roles, me
    return s


def _warp_specialize(op, c):
    bodies = (c.block(op.producer.block), c.block(op.consumer.block))

    def run(st):
        if st.lanes is not None or st.mask is not None:
            raise error_at(op, "tile.warp_specialize inside T.Parallel or a per-element condition")
        roles = Roles()
        threads = [threading.Thread(target=_run_role, args=(roles, me, bodies[me], _role_state(st, roles, me)),
                                    daemon=True) for me in (0, 1)]
        with roles.cond:
            roles.turn = 0
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if roles.error is not None:
            raise roles.error

    return run


def _run_role(roles: Roles, me: int, body, st) -> None:
    with roles.cond:
        roles.cond.wait_for(lambda: roles.turn == me or roles.error is not None)
    if roles.error is not None:
        return
    try:
        with np.errstate(all="ignore"):
            body(st)
    except _Stop:
        return
    except BaseException as e:  # noqa: BLE001 - handed to the launching thread, which raises it
        with roles.cond:
            roles.error = e
            roles.cond.notify_all()
        return
    with roles.cond:
        roles.done[me] = True
        roles.version += 1
        roles.turn = 1 - me
        roles.cond.notify_all()


# --- barriers -------------------------------------------------------------------------------


def _alloc_barrier(op, c):
    r, count, arrive_count = op.result, op.result.type.count, op.arrive_count.value.data

    def run(st):
        st.env[r] = Barriers(count, arrive_count)

    return run


def _element(st, op) -> int:
    return 0 if op.index is None else uniform(st.env[op.index], op, "a barrier index")


def _arrivals(op) -> int:
    """How many threads execute one arrive in the region holding `op`: 1 in the producer, else the kernel's."""
    region, node = op.parent_region(), op.parent_op()
    while node is not None and not isinstance(node, tile.WarpSpecializeOp):
        region, node = node.parent_region(), node.parent_op()
    if node is not None and region is node.producer:
        return 1
    while node is not None and not isinstance(node, tile.KernelOp):
        node = node.parent_op()
    return node.num_threads if node is not None else 1


def _bump(st) -> None:
    st.roles.version += 1


def _arrive(op, c):
    n = _arrivals(op)

    def run(st):
        if st.roles is None:
            return  # lockstep: nothing waits
        st.env[op.barrier].arrive(_element(st, op), n, op)
        _bump(st)

    return run


def _expect_tx(op, c):
    nbytes = op.bytes.value.data

    def run(st):
        if st.roles is None:
            return
        b, i = st.env[op.barrier], _element(st, op)
        b.expect(i, nbytes)
        b.arrive(i, 1, op)
        _bump(st)

    return run


def _wait(op, c):
    def run(st):
        if st.roles is None:
            return
        b, i, parity = st.env[op.barrier], _element(st, op), uniform(st.env[op.parity], op, "the parity")
        st.roles.wait(st.role, lambda: b.passes(i, parity), op)

    return run


def _tma_load(op, c):
    def run(st):
        src, dst = _tile_operand(st, op, op.src), _tile_operand(st, op, op.dst)
        dst.write(src.read().reshape(dst.shape))
        if st.roles is not None:
            nbytes = int(np.prod(dst.shape)) * dst.dtype.itemsize
            st.env[op.barrier].landed(_element(st, op), nbytes)
            _bump(st)

    return run


def _stage(op, c):
    src, index, r = op.source, op.index, op.result

    def run(st):
        t = _tile_operand(st, op, src)
        s = uniform(st.env[index], op, "a stage index")
        if not 0 <= s < t.shape[0]:
            raise error_at(op, f"tile.stage: stage {s} of a buffer of {t.shape[0]} stages")
        assert t.view is not None, "shared buffers lie inside their storage"
        st.env[r] = Tile.whole(t.view[s], t.is_global)

    return run


def _no_op(op, c):
    return None


HANDLERS = {
    tile.WarpSpecializeOp: _warp_specialize, tile.AllocBarrierOp: _alloc_barrier, tile.MBarrierArriveOp: _arrive,
    tile.CpAsyncArriveOp: _arrive,  # the arrival once the thread's cp.asyncs landed: they land when issued here
    tile.MBarrierExpectTxOp: _expect_tx, tile.MBarrierWaitParityOp: _wait, tile.TmaLoadOp: _tma_load,
    tile.StageOp: _stage, tile.GemmWaitOp: _no_op,
}
