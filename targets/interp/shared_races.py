"""Shared-memory races between the roles of a warp-specialized block, found by happens-before.

Inside `simt_hopper.run_roles` each role (the producer, each consumer group) runs in a Python
thread of its own, and on the GPU they run at once: two accesses to a shared byte by different
roles, one of them a write, are ordered only through what the roles synchronize on. This is the
vector-clock method of race detectors (FastTrack, and compute-sanitizer's racecheck does the
same job on the GPU):

- each role keeps a clock per role; its accesses are stamped with its own entry;
- a *release* (an mbarrier arrival, a TMA load or a tracked cp.async completing on an mbarrier,
  an arrival on a named barrier) joins the role's clock into the barrier's current phase (or
  round) and then advances the role's own entry;
- an *acquire* (an mbarrier wait that passes, the end of a named barrier's round) joins the
  phase's clock into the waiter's;
- an access races with an earlier one by another role unless that role's stamp is covered by
  the accessing role's clock, i.e. some chain of releases and acquires orders them.

Writes are the generic stores (st.shared, stmatrix), TMA loads and cp.async copies; the copies are
checked when issued and stamped as writes of their own agent (the loads tracked by one mbarrier,
the cp.async copies of one role), which only what completes them publishes: the barrier's phase,
the role's cp.async.wait_group. Reads are the generic loads (ld.shared, ldmatrix) and wgmma's
operand reads, which last until their wgmma.wait_group. A race is a located error at the later access, with the
earlier one's location as a note. The lanes of one role run in lockstep here and are not
checked against each other, nor are accesses outside the roles (the block runs in lockstep there).
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

from tilec.errors import TilecRaceWarning, loc_of, render

__all__ = ["RoleClocks", "report_race"]


def report_race(op, msg: str, hint: str, earlier=None, earlier_what: str = "") -> None:
    """A `TilecRaceWarning` at `op` (the second access; `earlier`, the first, as a note), shown once per
    place as `warnings` shows them; an exception where the warning filters say `error`."""
    from tilec.log import logger

    loc, before = loc_of(op), loc_of(earlier) if earlier is not None else None
    text = render("warning", msg, loc, hint, ((before, earlier_what),) if before is not None else ())
    logger.warning("%s", text)
    if loc is None:
        warnings.warn(text, TilecRaceWarning, stacklevel=2)
    else:
        warnings.warn_explicit(text, TilecRaceWarning, loc.file, loc.line, module="tilec", registry=_SHOWN)


_SHOWN: dict = {}  # `warnings`' registry: each race once per place (it empties when the filters change)


class RoleClocks:
    """The clocks of one `run_roles` and the last accesses to each shared byte.

    Besides the roles, the asynchronous copies are writers of their own ("agents"): the TMA loads
    tracked by one mbarrier, the cp.async copies of one role. An agent's write is ordered before what
    acquires its completion (the barrier's phase; the role's cp.async.wait_group), not before the
    issuing role's later releases: an arrival on another barrier does not publish a load's bytes."""

    def __init__(self, size: int, roles: int, barriers: int = 0):
        self.n = roles
        self.components = 2 * roles + barriers + 16  # roles, their cp.async agents, TMA agents (one per mbarrier)
        self.agents: dict[tuple, int] = {("cp.async", r): roles + r for r in range(roles)}
        self.agent_epoch = np.zeros(self.components, np.int64)
        self.lock = threading.RLock()  # (the roles' threads update the arrays below)
        self.index: dict[int, int] = {}  # role thread → its role
        self.names: list[str] = [""] * roles
        self.vc = [np.zeros(self.components, np.int64) for _ in range(roles)]
        for i in range(roles):
            self.vc[i][i] = 1
        self.w_role = np.full(size, -1, np.int16)  # last writer of each byte (-1: none inside the roles)
        self.w_epoch = np.zeros(size, np.int64)
        self.w_op = np.zeros(size, np.int32)  # (as an index into `ops`)
        self.r_epoch = np.zeros((roles, size), np.int64)  # each role's last read of each byte (0: none)
        self.r_op = np.zeros((roles, size), np.int32)
        self.ops: list = []  # the accessing ops, and what each access is ("a TMA load", ...)
        self.what: list[str] = []
        self._number: dict[int, int] = {}  # id(op) → its index in `ops`

    def enter(self, role: int, lanes: np.ndarray) -> None:
        """The calling thread runs `role`, on the block's threads `lanes` (a mask)."""
        self.index[threading.get_ident()] = role
        on = np.flatnonzero(lanes)
        self.names[role] = f"threads {on[0]}..{on[-1]}" if on.size else "no threads"

    def _me(self) -> int | None:
        return self.index.get(threading.get_ident())

    def _agent(self, key: tuple) -> int:
        index = self.agents.get(key)
        if index is None:  # (past the capacity, mbarriers share the last agent: fewer orders told apart)
            index = self.agents[key] = min(self.n * 2 + len(self.agents) - self.n, self.components - 1)
        return index

    def async_write(self, op, where: np.ndarray, what: str, agent: tuple, into: np.ndarray | None) -> np.ndarray | None:
        """An asynchronous copy issued by the calling role into `where`, completed by `agent` (("tma",
        barrier address) or ("cp.async", role)): checked as the role's write, stamped as the agent's; with
        `into` (the tracking barrier's phase clock), that clock joined with the agent's stamp."""
        me = self._me()
        if me is None or not where.size:
            return into
        with self.lock:
            index = self._agent(agent if agent[0] == "tma" else ("cp.async", me))
            self.agent_epoch[index] += 1
            self.write(op, where, what, index, self.agent_epoch[index])
            return None if into is None else self._with_agent(into, index)

    def agent_clock(self, agent: tuple, into: np.ndarray | None) -> np.ndarray | None:
        """`into` (a barrier's phase clock) joined with the calling role's cp.async agent, or a TMA
        agent: the copies issued so far complete in that phase (None: an empty clock)."""
        me = self._me()
        if me is None:
            return into
        with self.lock:
            index = self._agent(agent if agent[0] == "tma" else ("cp.async", me))
            return self._with_agent(np.zeros(self.components, np.int64) if into is None else into, index)

    def _with_agent(self, clock: np.ndarray, index: int) -> np.ndarray:
        """A copy of `clock` that also holds agent `index`'s copies issued so far."""
        joined = clock.copy()
        joined[index] = max(joined[index], self.agent_epoch[index])
        return joined

    def copies_landed(self) -> None:
        """cp.async.wait_group by the calling role: its copies so far are complete, for it."""
        me = self._me()
        if me is not None:
            with self.lock:
                index = self.n + me
                self.vc[me][index] = max(self.vc[me][index], self.agent_epoch[index])

    def _op(self, op, what: str) -> int:
        number = self._number.get(id(op))
        if number is None:
            number = self._number[id(op)] = len(self.ops)
            self.ops.append(op)
            self.what.append(what)
        return number

    def release(self, into: np.ndarray | None) -> np.ndarray | None:
        """The calling role's clock joined into `into` (a barrier phase's clock; None: none yet); the
        role's own entry then advances, so its later accesses are not covered."""
        me = self._me()
        if me is None:
            return into
        with self.lock:
            mine = self.vc[me]
            joined = mine.copy() if into is None or into.size != mine.size else np.maximum(into, mine)
            mine[me] += 1
            return joined

    def acquire(self, clock: np.ndarray | None) -> None:
        """The calling role has seen the releases in `clock`."""
        me = self._me()
        if me is not None and clock is not None and clock.size == self.components:
            with self.lock:
                np.maximum(self.vc[me], clock, out=self.vc[me])

    def read(self, op, where: np.ndarray, what: str) -> None:
        me = self._me()
        if me is None or not where.size:
            return
        with self.lock:
            self._against_writes(op, me, where, what)
            self.r_epoch[me, where] = self.vc[me][me]
            self.r_op[me, where] = self._op(op, what)

    def extend_read(self, where: np.ndarray) -> None:
        """The calling role's read of `where` (checked when it began) lasted until now: a wgmma's, at
        its wgmma.wait_group (a release between the two does not cover it; a write meanwhile was
        reported by `simt_hopper.Hopper.check_not_read_by_wgmma`)."""
        me = self._me()
        if me is not None:
            with self.lock:
                self.r_epoch[me, where] = self.vc[me][me]

    def write(self, op, where: np.ndarray, what: str, writer: int | None = None, epoch: int | None = None) -> None:
        """The calling role's write (or, with `writer` and `epoch`, its agent's: `async_write`)."""
        me = self._me()
        if me is None or not where.size:
            return
        with self.lock:
            self._against_writes(op, me, where, what)
            vc = self.vc[me]
            for other in range(self.n):
                if other == me:
                    continue
                late = self.r_epoch[other, where] > vc[other]
                if late.any():
                    at = where[np.flatnonzero(late)[0]]
                    self._race(op, what, int(at), other, self.r_op[other, at])
            self.w_role[where] = me if writer is None else writer
            self.w_epoch[where] = vc[me] if epoch is None else epoch
            self.w_op[where] = self._op(op, what)
            self.r_epoch[:, where] = 0

    def _against_writes(self, op, me: int, where: np.ndarray, what: str) -> None:
        writer = self.w_role[where]
        other = (writer >= 0) & (writer != me)
        if not other.any():
            return
        late = other & (self.w_epoch[where] > self.vc[me][np.where(other, writer, 0)])
        if late.any():
            k = np.flatnonzero(late)[0]
            self._race(op, what, int(where[k]), int(writer[k]), self.w_op[where[k]])

    def _race(self, op, what: str, byte: int, other: int, number: int):
        """Reported once per pair of places (`report_race`); the byte (`byte`) is left out of the text,
        which `warnings` dedupes on. `other`: a role, or an agent (an asynchronous copy)."""
        me = self._me()
        other_op, earlier = self.ops[number], self.what[number]
        if other < self.n:
            before, hint = f"{earlier} by {self.names[other]}", (
                "make the role that goes second wait on an mbarrier (or meet at a named barrier) that the other "
                "arrives on after its access")
        else:
            before = (f"{earlier}, complete only at its cp.async.wait_group or the mbarrier phase tracking it"
                      if other < 2 * self.n else f"{earlier}, complete only when its mbarrier's phase completes")
            hint = "wait on the mbarrier phase the copy completes on (for cp.async: its wait_group) before the access"
        report_race(op, f"a race on shared memory: {what} by {self.names[me]} and {before}, with nothing ordering "
                        "the two (simulated; on the GPU they may happen in either order)", hint, other_op, before)
