"""Fragment accesses that the registers of the owning threads cannot serve as written, rewritten
into ones they can (tile-infer-layout's helpers; TileLang's layout inference and Triton's
`convert_layout` do the same; regions of fragments are fragment_regions.py's):

- *layout conversions*: an op that needs F in a layout other than F's own gets a second
  fragment `%F_as<k>` in that layout, `tile.copy %F, %F_as<k>` before it (the lowering moves
  the elements between threads through shared memory, with its barriers; not when the op
  overwrites every element unread; hoisted out of loops and branches that write neither when
  the op only reads F) and `tile.copy %F_as<k>, %F` after it when it writes F;
- *shared trips*: accesses whose owning thread is not the accessing one (run-time or permuted
  indices, a loop variable over part of a dim, an element read outside T.Parallel of a fragment
  that is not replicated) go to a shared copy `%F_shared`: `tile.copy %F, %F_shared` before
  them (hoisted out of loops and branches that write neither), `tile.copy %F_shared, %F`
  after writes; tile-plan-shared-memory places the buffer, tile-insert-barriers orders it.

    tile.parallel (%i) in [4] { %v = tile.load %a[%k, %i] ... }       (%k: a run-time index)
  becomes
    tile.copy %a, %a_shared
    tile.parallel (%i) in [4] { %v = tile.load %a_shared[%k, %i] ... }
"""

from __future__ import annotations

from tilec.dialects import tile
from tilec.dialects.tile.layout import Layout
from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from .analysis import computed_from, constant_value

__all__ = ["convert_layouts", "fragment_view", "is_fragment_alloc", "localize_per_thread_fragments", "located", "reads",
           "regular_access", "stage_irregular_accesses", "writes"]


def regular_access(dims: tuple[int | None, ...], loop_shape, shape) -> bool:
    """Whether an access indexes with distinct loop variables in loop order (`x[i, j]`, `y[j]`),
    each running over the whole of its dim of the fragment."""
    return None not in dims and list(dims) == sorted(set(dims)) and \
        tuple(loop_shape[d] for d in dims) == tuple(shape)


def located(ops: list[Operation], where: Operation) -> list[Operation]:
    for op in ops:
        op.location = where.location
    return ops


def _new_buffer(like: tile.AllocOp, scope: str, suffix: str, layout: Layout | None = None) -> tile.AllocOp:
    """A buffer of `like`'s shape and element type, allocated right after it."""
    typ = like.result.type
    new = tile.AllocOp(tile.BufferType(typ.shape, typ.element_type, scope))
    if layout is not None:
        new.layout = tile.FragmentLayoutAttr(str(layout))
    hint = like.result.name_hint
    new.result.name_hint = f"{hint}_{suffix}" if hint else suffix
    Rewriter.insert_op(located([new], like)[0], InsertPoint.after(like))
    return new


def is_fragment_alloc(value: SSAValue) -> bool:
    return isinstance(value.owner, tile.AllocOp) and value.type.scope == "fragment"


def fragment_view(value: SSAValue) -> tile.ReshapeOp | None:
    """The `tile.reshape` that `value` is when it views a fragment allocation (its registers, reshaped)."""
    op = value.owner
    return op if isinstance(op, tile.ReshapeOp) and is_fragment_alloc(op.source) else None


# -- what an op does with a buffer ----------------------------------------------------------------
def reads(user: Operation, value: SSAValue) -> bool:
    if isinstance(user, tile.LoadOp):
        return True
    if isinstance(user, tile.StoreOp | tile.FillOp):
        return False
    if isinstance(user, tile.CopyOp):
        return user.src is value
    if isinstance(user, tile.GemmOp):
        return value in (user.a, user.b) or not user.clear_accum.value.data
    if isinstance(user, tile.ReduceOp):
        return user.src is value or not user.clear.value.data
    if isinstance(user, tile.RegionOp | tile.ReshapeOp):
        return any(reads(u.operation, user.result) for u in user.result.uses)
    return True


def writes(user: Operation, value: SSAValue) -> bool:
    if isinstance(user, tile.LoadOp):
        return False
    if isinstance(user, tile.CopyOp):
        return user.dst is value
    if isinstance(user, tile.GemmOp):
        return user.c is value
    if isinstance(user, tile.ReduceOp):
        return user.dst is value
    if isinstance(user, tile.RegionOp | tile.ReshapeOp):
        return any(writes(u.operation, user.result) for u in user.result.uses)
    return True  # stores, fills, atomics, and whatever else takes the buffer


def _uses_inside(value: SSAValue, op: Operation):
    return [u for u in list(value.uses) if op.is_ancestor(u.operation)]


def _writes_inside(value: SSAValue, op: Operation) -> bool:
    """Whether something inside `op` writes `value`, directly or through a region or reshape of it made
    outside `op`."""
    for use in list(value.uses):
        user = use.operation
        if op.is_ancestor(user):
            if writes(user, value):
                return True
        elif isinstance(user, tile.RegionOp | tile.ReshapeOp) and _writes_inside(user.result, op):
            return True
    return False


def _fully_written(site: Operation, value: SSAValue) -> bool:
    """Whether `site` overwrites every element of `value` without reading it first."""
    if isinstance(site, tile.GemmOp):
        return site.c is value and site.clear_accum.value.data
    if isinstance(site, tile.ReduceOp):
        return site.dst is value and site.clear.value.data
    if isinstance(site, tile.ParallelOp):
        args = list(site.body.block.args)
        return any(isinstance(op, tile.StoreOp) and op.dest is value and list(op.indices) == args
                   for op in site.body.block.ops)
    return False


def _redirect(uses, new: SSAValue) -> None:
    for use in uses:
        use.operation.operands[use.index] = new


# -- layout conversions --------------------------------------------------------------------------
def convert_layouts(conflicts: list[tuple[Operation, tile.AllocOp, Layout]]) -> None:
    """Each (op, fragment, layout): `op` uses a converted fragment of that layout instead. An op
    that only reads it gets its copy hoisted out of the loops and branches that write neither."""
    converted: dict[tuple[tile.AllocOp, str], tile.AllocOp] = {}
    copied_at: set[tuple[int, SSAValue]] = set()
    for site, alloc, layout in conflicts:
        key = (alloc, str(layout))
        if key not in converted:
            k = sum(a is alloc for a, _ in converted)
            converted[key] = _new_buffer(alloc, "fragment", f"as{k}", layout)
        new, value = converted[key].result, alloc.result
        uses = _uses_inside(value, site)
        written = any(writes(u.operation, value) for u in uses)
        if any(reads(u.operation, value) for u in uses) or not _fully_written(site, value):
            point = site if written else _hoisted(site, alloc, (value, new))
            if (id(point), new) not in copied_at:
                copied_at.add((id(point), new))
                Rewriter.insert_op(located([tile.CopyOp(value, new)], site), InsertPoint.before(point))
        if written:
            Rewriter.insert_op(located([tile.CopyOp(new, value)], site), InsertPoint.after(site))
        _redirect(uses, new)


# -- shared trips --------------------------------------------------------------------------------
def _replicated(alloc: tile.AllocOp) -> bool:
    layout = alloc.layout.layout if alloc.layout is not None else None
    return layout is not None and not any(m.kind == "t" for modes in layout.dims for m in modes)


def _enclosing_parallel(op: Operation) -> tile.ParallelOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, tile.KernelOp):
        if isinstance(parent, tile.ParallelOp):
            return parent
        parent = parent.parent_op()
    return None


def _irregular_site(op: Operation, alloc: tile.AllocOp) -> Operation | None:
    """The op whose accesses of `alloc` go through shared memory because of access `op` (None:
    its owner thread serves it from registers)."""
    consts = [constant_value(i) for i in op.indices]
    if None not in consts and _replicated(alloc):
        return None
    loop = _enclosing_parallel(op)
    if loop is None:
        return op
    ivs = {arg: d for d, arg in enumerate(loop.body.block.args)}
    dims = tuple(ivs.get(i) for i in op.indices)
    return None if regular_access(dims, loop.shape, alloc.result.type.shape) else loop


def _hoisted(site: Operation, alloc: tile.AllocOp, buffers: tuple[SSAValue, ...]) -> Operation:
    """The outermost op around `site` (serial loops and branches) that writes none of `buffers`."""
    point = site
    while True:
        parent = point.parent_op()
        if not isinstance(parent, tile.ForOp | scf.IfOp) or parent.is_ancestor(alloc):
            return point
        if any(_writes_inside(b, parent) for b in buffers):
            return point
        point = parent


def stage_irregular_accesses(kernel: tile.KernelOp) -> None:
    """Accesses of fragments that the owning threads cannot serve: through a shared copy."""
    sites: dict[tile.AllocOp, list[Operation]] = {}
    for op in kernel.walk():
        if not isinstance(op, tile.LoadOp | tile.StoreOp):
            continue
        buf = op.source if isinstance(op, tile.LoadOp) else op.dest
        if not is_fragment_alloc(buf):
            continue
        site = _irregular_site(op, buf.owner)
        if site is not None and site not in sites.setdefault(buf.owner, []):
            sites[buf.owner].append(site)
    for alloc, found in sites.items():
        if not found:
            continue
        for site in found:
            if isinstance(site, tile.StoreOp) and not any(_on_thread(i) for i in site.indices) and \
                    _on_thread(site.value):
                from tilec.errors import error_at

                raise error_at(site, "each thread stores a value of its own into this one element of a fragment "
                                     "laid out across the threads, through one shared copy: they would overwrite "
                                     "each other",
                               hint="keep per-thread values in a T.alloc_local buffer (each thread's own registers)")
        shared = _new_buffer(alloc, "shared", "shared").result
        value, copied_at = alloc.result, set()
        for site in found:
            uses = _uses_inside(value, site)
            written = any(writes(u.operation, value) for u in uses)
            point = site if written else _hoisted(site, alloc, (value, shared))
            if id(point) not in copied_at:
                copied_at.add(id(point))
                Rewriter.insert_op(located([tile.CopyOp(value, shared)], site), InsertPoint.before(point))
            if written:
                Rewriter.insert_op(located([tile.CopyOp(shared, value)], site), InsertPoint.after(site))
            _redirect(uses, shared)


# ------------------------------------------------------------------ per-thread fragments


def _thread_tainted(kernel: tile.KernelOp) -> set[SSAValue]:
    """The fragment and local buffers that some thread stores a value of its own into (a value, an
    index, an enclosing `scf.if` condition or loop bound computed from the thread index, an atomic's
    previous value, or a value loaded from such a buffer)."""
    tainted: set[SSAValue] = set()
    memo: dict[SSAValue, bool] = {}

    def depends(value: SSAValue, depth: int = 0) -> bool:
        if value in memo:
            return memo[value]
        op = value.owner
        found = False
        if isinstance(op, tile.ThreadIdOp | tile.AtomicOp) or isinstance(op, tile.LoadOp) and op.source in tainted:
            found = True  # (an atomic's previous value is each thread's own)
        elif isinstance(op, Operation) and depth < 64:
            found = any(depends(v, depth + 1) for v in op.operands)
        memo[value] = found
        return found

    def under_thread_branch(op: Operation) -> bool:
        parent = op.parent_op()
        while parent is not None and parent is not kernel:
            if isinstance(parent, scf.IfOp) and depends(parent.cond):
                return True
            if isinstance(parent, tile.ForOp | scf.ForOp) and any(depends(v) for v in parent.operands[:3]):
                return True  # a trip count of the thread's own
            parent = parent.parent_op()
        return False

    changed = True
    while changed:
        changed = False
        memo.clear()
        for op in kernel.walk():
            if not isinstance(op, tile.StoreOp) or op.dest.type.scope not in ("fragment", "local"):
                continue
            if not isinstance(op.dest.owner, tile.AllocOp) or tile.enclosing(op, tile.ParallelOp) is not None:
                continue
            if op.dest in tainted:
                continue
            if depends(op.value) or any(depends(i) for i in op.indices) or under_thread_branch(op):
                tainted.add(op.dest)
                changed = True
    return tainted


def localize_per_thread_fragments(kernel: tile.KernelOp) -> None:
    """A fragment that threads fill with values of their own outside T.Parallel and that only element
    accesses outside T.Parallel and fills use (TileLang's per-thread registers: sparse MLA seesaw's
    `prefetch_indices`, each producer thread's next indices) is each thread's whole buffer, as
    T.alloc_local is: a local buffer. A shared trip (the other irregular accesses') would keep one
    thread's values for all. One that T.Parallel or a tile op also uses keeps its layout (and
    `stage_irregular_accesses` refuses a shared trip of one element with values of the threads' own)."""
    for value in _thread_tainted(kernel):
        alloc = value.owner
        if value.type.scope != "fragment":
            continue
        laid_out = any(not isinstance(u.operation, tile.LoadOp | tile.StoreOp | tile.FillOp)
                       or tile.enclosing(u.operation, tile.ParallelOp) is not None for u in value.uses)
        if laid_out:
            continue
        local = _new_buffer(alloc, "local", "local")
        local.result.name_hint = value.name_hint
        value.replace_all_uses_with(local.result)
        Rewriter.erase_op(alloc)


def _on_thread(value: SSAValue) -> bool:
    """Whether `value` is computed from the thread index or an atomic (not through memory)."""
    return computed_from(value, (tile.ThreadIdOp, tile.AtomicOp))

