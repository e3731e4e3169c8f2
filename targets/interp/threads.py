"""Per-thread code on the interpreter: `tile.thread_id` and TileLang's raw cp.async (`tile.cp_async`).

The interpreter runs a block as whole tiles. The thread index is the block's threads side by side,
as lanes: `tile.thread_id` is an array over the block's threads (x fastest), the scalar code
computed from it runs on such arrays, a branch on it runs under a lane mask (scalar_ops._if), and
element loads, stores and raw cp.asyncs at such indices gather and scatter, one lane per thread.
That is each thread's own code while what a thread computes stays in those values and in shared
and global memory. A local buffer (T.alloc_var, T.alloc_local) or a fragment holds one value for
the whole block here, T.Parallel runs its iterations as lanes of their own, and a loop runs the
same iterations for the block: a value of the thread index that reaches one of those (a store, a
loop bound), or such a store under a branch on the thread index, is a located error, found when
the kernel's runners are built.
"""

from __future__ import annotations

import numpy as np
from tilec.dialects import tile
from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue

from tilec.errors import error_at

from .values import gather, scatter

_HINT = "run it on target='sim', which runs the CUDA lowering's threads on the CPU"
_LOOPS = (tile.ForOp, scf.ForOp)


def _per_block_state(op: Operation) -> bool:
    """Whether `op` writes a buffer the interpreter keeps once per block (local scope, fragments)."""
    dest = op.dest if isinstance(op, tile.StoreOp) else op.dst if isinstance(op, tile.AtomicOp) else None
    return dest is not None and tile.tile_type(dest).scope in ("local", "fragment")


def _unsupported_use(user: Operation, value: SSAValue) -> tuple[Operation, str] | None:
    """Where thread-index `value` reaches `user` in a way the lanes cannot run per thread: the op and
    what it is (None: they can)."""
    if tile.enclosing(user, tile.ParallelOp) is not None or isinstance(user, tile.ParallelOp):
        return user, "the thread index (T.get_thread_binding) inside T.Parallel is not supported by the interpreter"
    if _per_block_state(user):
        return user, ("a value of the thread index (T.get_thread_binding) stored in a local buffer or fragment is "
                      "not supported by the interpreter, which keeps one for the whole block")
    if isinstance(user, _LOOPS) and value in (user.lb, user.ub, user.step):
        return user, "a loop whose bounds depend on the thread index is not supported by the interpreter"
    if isinstance(user, scf.IfOp) and value is user.cond:
        for inner in user.walk():
            what = "T.Parallel" if isinstance(inner, tile.ParallelOp) else \
                "a store to a local buffer or fragment" if _per_block_state(inner) else None
            if what is not None:
                return inner, f"{what} under a branch on the thread index is not supported by the interpreter"
    return None


def _dependents(user: Operation) -> list[SSAValue]:
    """The values of `user` that carry a thread-index operand on: its results, its regions' block
    arguments (a loop's), and for a terminator the results of the op it yields to."""
    values = list(user.results) + [a for region in user.regions for block in region.blocks for a in block.args]
    if isinstance(user, scf.YieldOp | tile.YieldOp) and user.parent_op() is not None:
        values += list(user.parent_op().results)
    return values


def unsupported_thread_use(op: tile.ThreadIdOp) -> tuple[Operation, str] | None:
    """The first place the thread index `op` gives reaches, through the values computed from it,
    per-thread code the lanes cannot run (`_unsupported_use`), and what it is; None: nowhere."""
    seen: set[SSAValue] = set()
    todo = [op.result]
    while todo:
        value = todo.pop()
        if value in seen:
            continue
        seen.add(value)
        for use in value.uses:
            found = _unsupported_use(use.operation, value)
            if found is not None:
                return found
            todo.extend(_dependents(use.operation))
    return None


def check_thread_values(op: tile.ThreadIdOp) -> None:
    """A located error where the thread index `op` gives reaches per-thread code the lanes cannot run."""
    found = unsupported_thread_use(op)
    if found is not None:
        raise error_at(found[0], found[1], hint=_HINT)


def _thread_id(op, c):
    check_thread_values(op)
    x, y, z = tile.enclosing_kernel(op).thread_extents
    linear = np.arange(x * y * z, dtype=np.int64)
    lanes = (linear % x, linear // x % y, linear // (x * y))[op.dim.value.data]
    lanes.flags.writeable = False
    r = op.result

    def run(st):
        st.env[r] = lanes

    return run


def _cp_async(op, c):
    """Each thread's run of elements along the last dim, copied at issue (the interpreter's async
    copies are done when issued); zeros where the predicate is false or the source lies outside
    the tensor."""
    n, src, dst, predicate = op.elements.value.data, op.src, op.dst, op.predicate
    src_indices, dst_indices = tuple(op.src_indices), tuple(op.dst_indices)

    def run(st):
        env = st.env
        si, di = [env[i] for i in src_indices], [env[i] for i in dst_indices]
        reads = st.mask
        if predicate is not None:
            reads = env[predicate] if reads is None else reads & env[predicate]
        for k in range(n):
            value = gather(env[src], si[:-1] + [si[-1] + k], reads, op)
            scatter(env[dst], di[:-1] + [di[-1] + k], value, st.mask, op)

    return run


HANDLERS = {tile.ThreadIdOp: _thread_id, tile.CpAsyncOp: _cp_async}
