"""Per-thread scalars (`T.alloc_var`, `T.alloc_local`) written inside `T.Parallel`: checked, then privatized.

A `T.Parallel` runs its iterations on different threads, and a per-thread buffer has one copy
per thread, so a buffer defined outside the loop and written inside it has a defined meaning
only as a temporary of each iteration. The rule, the same on every target:

- inside the loop, each read must see a write of the same iteration (on every path through
  the body): a read that could see another iteration's write is a loop-carried dependence
  (`acc = acc + A[i]`), refused at the read;
- after the loop, the buffer holds no defined value until it is written again, so a read
  that could see the loop's writes is refused too.

A buffer that passes gets a private copy: a `tile.alloc` at the start of the loop body takes
over every use inside the loop, which is the form the targets run (one copy per element on
the interpreter, per slot on the GPU) and the one `tile.parallel`'s verifier requires.

    %acc = tile.alloc : !tile.buffer<1xf32, local>       %acc = tile.alloc : ...
    tile.parallel (%i) in [128] {                         tile.parallel (%i) in [128] {
      tile.store %x, %acc[%c0]                    ==>       %acc_1 = tile.alloc : ...
      %t = tile.load %acc[%c0]                              tile.store %x, %acc_1[%c0]
                                                            %t = tile.load %acc_1[%c0]

Coverage is tracked per element for constant indices; a store at a run-time index covers the
element only of a one-element buffer, so a local array filled by a loop inside `T.Parallel` and
read back is refused (allocate it inside the loop body instead, where it is private anyway).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

from tilec.dialects import tile
from tilec.errors import SourceLoc, error_at, loc_of

ALL = "all"
"""Coverage of every element of the buffer."""

_FIX = ("to sum or reduce over the loop, write the values into a fragment and use T.reduce_sum (or another "
        "T.reduce_*); to carry a value from one iteration to the next, loop with T.serial")


@dataclass
class Privatized:
    """A buffer given a private copy in `loop`; `first_write` is the loop's first write of it."""

    alloc: tile.AllocOp
    loop: tile.ParallelOp
    first_write: Operation


def _name(alloc: tile.AllocOp) -> str:
    hint = alloc.result.name_hint
    return f"`{hint}`" if hint else "this per-thread buffer"


def _constant(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


class _Coverage:
    """Which elements of one buffer have been written on every path so far."""

    def __init__(self, buf: SSAValue, written=frozenset()):
        self.buf = buf
        self.shape = tuple(buf.type.shape)
        self.written = written  # frozenset of index tuples, or ALL

    def copy(self, written=None) -> _Coverage:
        return _Coverage(self.buf, self.written if written is None else written)

    def _key(self, indices) -> tuple[int, ...] | None:
        consts = tuple(_constant(i) for i in indices)
        if None in consts:
            return (0,) * len(self.shape) if all(n == 1 for n in self.shape) else None
        return consts

    def covers(self, indices) -> bool:
        if self.written == ALL:
            return True
        key = self._key(indices)
        return key is not None and key in self.written

    def write(self, indices) -> None:
        key = self._key(indices)
        if key is None or self.written == ALL:
            return
        written = self.written | {key}
        total = 1
        for n in self.shape:
            total *= n
        self.written = ALL if len(written) == total else written

    def write_all(self) -> None:
        self.written = ALL

    def meet(self, other: _Coverage) -> _Coverage:
        if self.written == ALL:
            return other.copy()
        if other.written == ALL:
            return self.copy()
        return self.copy(self.written & other.written)


class _Scan:
    """Walks ops in program order and finds the first read of `buf` that no write covers."""

    def __init__(self, buf: SSAValue):
        self.buf = buf

    def block(self, ops, state: _Coverage) -> tuple[Operation | None, _Coverage]:
        for op in ops:
            bad, state = self.op(op, state)
            if bad is not None:
                return bad, state
        return None, state

    def op(self, op: Operation, state: _Coverage) -> tuple[Operation | None, _Coverage]:
        buf = self.buf
        if isinstance(op, tile.LoadOp):
            return (op if op.source is buf and not state.covers(op.indices) else None), state
        if isinstance(op, tile.StoreOp):
            if op.dest is buf:
                state.write(op.indices)
            return None, state
        if isinstance(op, tile.AtomicOp) and op.indices and op.dst is buf:  # read-modify-write
            return (None if state.covers(op.indices) else op), state
        if isinstance(op, scf.IfOp):
            bad, then = self.block(op.true_region.block.ops, state.copy())
            if bad is None and op.false_region.blocks:
                bad, other = self.block(op.false_region.block.ops, state.copy())
            else:
                other = state.copy()
            return bad, then.meet(other)
        if isinstance(op, tile.ForOp | tile.ParallelOp):
            # The body may run any number of times: a read must be covered on entry and
            # after any earlier iteration; writes inside need not happen at all.
            bad, after = self.block(op.body.block.ops, state.copy())
            if bad is None:
                bad, _ = self.block(op.body.block.ops, state.meet(after))
            return bad, state
        if buf in op.operands:  # a tile op: fill and copy write all of it, the others read it
            if isinstance(op, tile.FillOp | tile.CopyOp) and op.dst is buf:
                state.write_all()
                return None, state
            return (None if state.written == ALL else op), state
        return None, state


def _users_inside(loop: tile.ParallelOp, value: SSAValue) -> list[Operation]:
    return [use.operation for use in value.uses if loop.is_ancestor(use.operation)]


def _written_outer_locals(loop: tile.ParallelOp) -> list[tuple[tile.AllocOp, Operation]]:
    """(alloc, first write) of each local buffer allocated outside `loop` and written in it."""
    found: dict[tile.AllocOp, Operation] = {}
    for op in loop.body.walk():
        dest = op.dest if isinstance(op, tile.StoreOp) else \
            op.dst if isinstance(op, tile.AtomicOp) and op.indices else None
        if dest is None or not isinstance(dest.type, tile.BufferType) or dest.type.scope != "local":
            continue
        alloc = dest.owner
        if not isinstance(alloc, tile.AllocOp):
            raise error_at(op, "a write through a view (region or reshape) of a per-thread buffer inside "
                               "T.Parallel is not supported", hint="write the buffer itself")
        if not loop.is_ancestor(alloc):
            found.setdefault(alloc, op)
    return list(found.items())


def privatize(loop: tile.ParallelOp, location) -> list[Privatized]:
    """Checks the per-thread buffers `loop` writes and gives each its own copy inside the loop."""
    done = []
    for alloc, first_write in _written_outer_locals(loop):
        buf = alloc.result
        bad, _ = _Scan(buf).block(loop.body.block.ops, _Coverage(buf))
        if bad is not None:
            raise error_at(
                bad, f"{_name(alloc)} is read here before this T.Parallel iteration has written it, so it would "
                     "see a value from another iteration: T.alloc_var and T.alloc_local are per-thread, and the "
                     "iterations of T.Parallel run on different threads",
                hint=_FIX + "; to use it as a temporary, assign it in the loop body before reading it" +
                ("" if buf.type.num_elements() == 1 else
                 " (an array filled at run-time indices: allocate it inside the T.Parallel body)"))
        private = tile.AllocOp(buf.type)
        private.location = location
        body: Block = loop.body.block
        body.insert_op_before(private, body.first_op) if body.first_op is not None else body.add_op(private)
        private.result.name_hint = buf.name_hint
        for user in _users_inside(loop, buf):
            for k, operand in enumerate(user.operands):
                if operand is buf:
                    user.operands[k] = private.result
        done.append(Privatized(alloc, loop, first_write))
    return done


def _after(op: Operation):
    """The ops after `op` in its block."""
    return itertools.islice(op.parent_block().ops, op.parent_block().get_operation_index(op) + 1, None)


def check_reads_after(record: Privatized) -> None:
    """Refuses a read, after `record.loop`, that could see the values the loop wrote."""
    buf = record.alloc.result
    scan = _Scan(buf)
    state = _Coverage(buf)
    where: Operation = record.loop
    while True:
        bad, state = scan.block(_after(where), state)
        parent = where.parent_op()
        climb = parent is not None and not isinstance(parent, tile.KernelOp) and not parent.is_ancestor(record.alloc)
        if bad is None and climb and isinstance(parent, tile.ForOp):
            bad, _ = scan.block(parent.body.block.ops, state.copy())  # the next iteration, from the top
        if bad is not None:
            break
        if not climb:
            return  # the end of the kernel, or of the block that allocates the buffer
        where = parent
    note: tuple[tuple[SourceLoc, str], ...] = ()
    written = loc_of(record.first_write)
    if written is not None:
        note = ((written, "written inside the T.Parallel loop here"),)
    raise error_at(
        bad, f"{_name(record.alloc)} is read here after a T.Parallel loop that writes it: after the loop each "
             "thread's copy holds whatever its own last iteration wrote, which is no defined value",
        hint=_FIX + "; or assign it after the loop before reading it", notes=note)
