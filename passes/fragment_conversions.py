"""Fragment accesses that the registers of the owning threads cannot serve as written, rewritten
into ones they can (tile-infer-layout's helpers; TileLang's layout inference and Triton's
`convert_layout` do the same):

- *regions* (before inference): `T.copy(F[r], X)`, `T.copy(X, F[r])` and `T.fill(F[r], v)` of a
  fragment F and memory X become a `tile.parallel` over the whole of F, guarded to the region,
  which indexes F by its loop variables in order (so it follows F's layout); with X another
  fragment, the loop runs over X and indexes F at the region's offsets; an element of `F[r]` is
  the element of F, and any other op on `F[r]` works on a fragment `%F_region` of its own, copied
  in before it and out after it;
- *layout conversions* (after inference): an op that needs F in a layout other than F's own gets
  a second fragment `%F_as<k>` in that layout, `tile.copy %F, %F_as<k>` before it (the lowering
  moves the elements between threads through shared memory, with its barriers) and
  `tile.copy %F_as<k>, %F` after it when it writes F;
- *shared trips* (after inference): accesses whose owning thread is not the accessing one
  (run-time or permuted indices, an element read outside T.Parallel of a fragment that is not
  replicated) go to a shared copy `%F_shared`: `tile.copy %F, %F_shared` before them (hoisted
  out of loops and branches that do not write F), `tile.copy %F_shared, %F` after writes;
  tile-plan-shared-memory places the buffer and tile-insert-barriers orders its accesses.

    tile.parallel (%i) in [4] { %v = tile.load %a[%k, %i] ... }       (%k: a run-time index)
  becomes
    tile.copy %a, %a_shared
    tile.parallel (%i) in [4] { %v = tile.load %a_shared[%k, %i] ... }
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from tilec.dialects import tile
from tilec.dialects.tile.layout import Layout

from .analysis import constant_value

__all__ = ["convert_layouts", "expand_region_uses", "regular_access", "stage_irregular_accesses"]


def regular_access(dims: tuple[int | None, ...], loop_shape, shape) -> bool:
    """Whether an access indexes with distinct loop variables in loop order (`x[i, j]`, `y[j]`),
    each running over the whole of its dim of the fragment."""
    return None not in dims and list(dims) == sorted(set(dims)) and \
        tuple(loop_shape[d] for d in dims) == tuple(shape)


def _located(ops: list[Operation], where: Operation) -> list[Operation]:
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
    Rewriter.insert_op(_located([new], like)[0], InsertPoint.after(like))
    return new


def _is_fragment_alloc(value: SSAValue) -> bool:
    return isinstance(value.owner, tile.AllocOp) and value.type.scope == "fragment"


# -- what an op does with a buffer ----------------------------------------------------------------
def _reads(user: Operation, value: SSAValue) -> bool:
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
        return any(_reads(u.operation, user.result) for u in user.result.uses)
    return True


def _writes(user: Operation, value: SSAValue) -> bool:
    if isinstance(user, tile.LoadOp):
        return False
    if isinstance(user, tile.CopyOp):
        return user.dst is value
    if isinstance(user, tile.GemmOp):
        return user.c is value
    if isinstance(user, tile.ReduceOp):
        return user.dst is value
    if isinstance(user, tile.RegionOp | tile.ReshapeOp):
        return any(_writes(u.operation, user.result) for u in user.result.uses)
    return True  # stores, fills, atomics, and whatever else takes the buffer


def _uses_inside(value: SSAValue, op: Operation):
    return [u for u in list(value.uses) if op.is_ancestor(u.operation)]


def _writes_inside(value: SSAValue, op: Operation) -> bool:
    return any(_writes(u.operation, value) for u in _uses_inside(value, op))


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


# -- regions of fragments ------------------------------------------------------------------------
def _fragment_region(value: SSAValue) -> tile.RegionOp | None:
    op = value.owner
    if isinstance(op, tile.RegionOp) and _is_fragment_alloc(op.source):
        return op
    return None


class _Ops(list):
    """New ops for one insertion point, all at the location of the op they replace."""

    def __init__(self, where: Operation):
        super().__init__()
        self.where = where

    def add(self, op: Operation) -> SSAValue | None:
        op.location = self.where.location
        self.append(op)
        return op.results[0] if op.results else None

    def const(self, n: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(n, IndexType())))


def _region_index(ops: _Ops, region: tile.RegionOp, index: list[SSAValue], shape) -> list[SSAValue]:
    """The root index of the element at `index` of a tile of `shape` (the region's shape up to unit
    dims, as tile.copy's verifier allows) in `region`: offsets added, unit dims at 0."""
    kept = [i for i, n in zip(index, shape) if n != 1]
    out = []
    for off, ext in zip(region.offsets, region.result.type.shape):
        rel = kept.pop(0) if ext != 1 else None
        out.append(off if rel is None else rel if constant_value(off) == 0 else ops.add(arith.AddiOp(off, rel)))
    return out


def _other_index(ops: _Ops, rel: list[SSAValue], region_shape, other_shape) -> list[SSAValue]:
    """The region-relative index `rel` as an index of a tile of `other_shape` (unit dims aside)."""
    kept = [r for r, n in zip(rel, region_shape) if n != 1]
    return [kept.pop(0) if n != 1 else ops.const(0) for n in other_shape]


def _loop(shape, where: Operation, fill) -> tile.ParallelOp:
    """A `tile.parallel` over `shape` whose body `fill(ops, ivs)` builds (ops it returns last are
    guarded by the condition it returns, None: none)."""
    loop = tile.ParallelOp(shape)
    block = loop.body.block
    ops = _Ops(where)
    cond, guarded = fill(ops, list(block.args))
    _located(guarded, where)
    if cond is not None:
        ops.add(scf.IfOp(cond, [], [*guarded, scf.YieldOp()]))
    else:
        ops += guarded
    for op in ops:
        op.location = where.location
        block.insert_op_before(op, block.last_op)
    loop.location = where.location
    return loop


def _guard(ops: _Ops, region: tile.RegionOp, ivs) -> tuple[SSAValue | None, list[SSAValue]]:
    """For a loop over the region's fragment: whether (ivs) lies in the region, and the index
    relative to the region."""
    cond, rel = None, []
    for iv, off, ext, full in zip(ivs, region.offsets, region.result.type.shape, region.source.type.shape):
        c_off = constant_value(off)
        rel.append(iv if c_off == 0 else ops.add(arith.SubiOp(iv, off)))
        if ext == full and c_off == 0:
            continue
        end = ops.const(c_off + ext) if c_off is not None else ops.add(arith.AddiOp(off, ops.const(ext)))
        inside = ops.add(arith.AndIOp(ops.add(arith.CmpiOp(iv, off, "sge")), ops.add(arith.CmpiOp(iv, end, "slt"))))
        cond = inside if cond is None else ops.add(arith.AndIOp(cond, inside))
    return cond, rel


def _expand_copy(copy: tile.CopyOp, region: tile.RegionOp) -> None:
    """A copy to or from a region of a fragment F: to or from memory, a loop over all of F (which
    follows F's layout) guarded to the region; with another fragment, a loop over that one."""
    reading = copy.src is region.result
    other = copy.dst if reading else copy.src
    shape = region.result.type.shape
    other_region = _fragment_region(other)

    def move(load_from, load_index, store_to, store_index):
        load = tile.LoadOp(load_from, load_index)
        return [load, tile.StoreOp(load.result, store_to, store_index)]

    if other.type.scope == "fragment":
        def fill(ops: _Ops, ivs):  # ivs index `other`
            index = _region_index(ops, region, ivs, other.type.shape)
            root, at = other, ivs
            if other_region is not None:
                root, at = other_region.source, _region_index(ops, other_region, ivs, other.type.shape)
            if reading:
                return None, move(region.source, index, root, at)
            return None, move(root, at, region.source, index)

        loop = _loop(other.type.shape, copy, fill)
    else:
        def fill(ops: _Ops, ivs):  # ivs index the region's fragment
            cond, rel = _guard(ops, region, ivs)
            index = _other_index(ops, rel, shape, other.type.shape)
            if reading:
                return cond, move(region.source, ivs, other, index)
            return cond, move(other, index, region.source, ivs)

        loop = _loop(region.source.type.shape, copy, fill)
    Rewriter.replace_op(copy, [loop], [])
    if other_region is not None and not other_region.result.uses:
        Rewriter.erase_op(other_region)


def _expand_fill(op: tile.FillOp, region: tile.RegionOp) -> None:
    def fill(ops: _Ops, ivs):
        cond, _ = _guard(ops, region, ivs)
        return cond, [tile.StoreOp(op.value, region.source, ivs)]

    Rewriter.replace_op(op, [_loop(region.source.type.shape, op, fill)], [])


def _expand_access(op: tile.LoadOp | tile.StoreOp, region: tile.RegionOp) -> None:
    """An element of a region of a fragment: the element of the fragment."""
    ops = _Ops(op)
    index = _region_index(ops, region, list(op.indices), region.result.type.shape)
    if isinstance(op, tile.LoadOp):
        new = ops.add(tile.LoadOp(region.source, index)).owner
        Rewriter.insert_op(list(ops), InsertPoint.before(op))
        op.result.replace_by(new.result)
    else:
        ops.add(tile.StoreOp(op.value, region.source, index))
        Rewriter.insert_op(list(ops), InsertPoint.before(op))
    Rewriter.erase_op(op)


def _materialize(user: Operation, region: tile.RegionOp) -> None:
    """Any other op on a region of a fragment works on a fragment of the region's own, copied in
    before it (when it reads the region) and out after it (when it writes it)."""
    typ = region.result.type
    own = tile.AllocOp(tile.BufferType(typ.shape, typ.element_type, "fragment"))
    hint = region.source.name_hint
    own.result.name_hint = f"{hint}_region" if hint else "region"
    Rewriter.insert_op(_located([own], region)[0], InsertPoint.after(region.source.owner))
    copies = []
    if _reads(user, region.result):
        copies.append(tile.CopyOp(region.result, own.result))
        Rewriter.insert_op(_located(copies[-1:], user), InsertPoint.before(user))
    if _writes(user, region.result):
        copies.append(tile.CopyOp(own.result, region.result))
        Rewriter.insert_op(_located(copies[-1:], user), InsertPoint.after(user))
    for use in list(region.result.uses):
        if use.operation is user:
            user.operands[use.index] = own.result
    for copy in copies:
        _expand_copy(copy, region)


def expand_region_uses(kernel: tile.KernelOp) -> None:
    """Regions of fragments (`F[r]`): copies and fills become loops over F guarded to the region,
    elements become elements of F, and other ops work on a fragment of their own."""
    for region in [op for op in kernel.walk() if isinstance(op, tile.RegionOp) and _is_fragment_alloc(op.source)]:
        for use in list(region.result.uses):
            user = use.operation
            if user.parent is None:
                continue  # replaced already (a copy between two regions)
            if isinstance(user, tile.CopyOp) and not user.is_async:
                _expand_copy(user, region)
            elif isinstance(user, tile.FillOp):
                _expand_fill(user, region)
            elif isinstance(user, tile.LoadOp | tile.StoreOp) and user.indices:
                _expand_access(user, region)
            elif not isinstance(user, tile.RegionOp | tile.ReshapeOp):
                _materialize(user, region)
        if not region.result.uses:
            Rewriter.erase_op(region)


# -- layout conversions --------------------------------------------------------------------------
def convert_layouts(conflicts: list[tuple[Operation, tile.AllocOp, Layout]]) -> None:
    """Each (op, fragment, layout): `op` uses a converted fragment of that layout instead."""
    converted: dict[tuple[tile.AllocOp, str], tile.AllocOp] = {}
    for site, alloc, layout in conflicts:
        key = (alloc, str(layout))
        if key not in converted:
            converted[key] = _new_buffer(alloc, "fragment", f"as{len(converted)}", layout)
        new, value = converted[key].result, alloc.result
        uses = _uses_inside(value, site)
        if any(_reads(u.operation, value) for u in uses) or not _fully_written(site, value):
            Rewriter.insert_op(_located([tile.CopyOp(value, new)], site), InsertPoint.before(site))
        if any(_writes(u.operation, value) for u in uses):
            Rewriter.insert_op(_located([tile.CopyOp(new, value)], site), InsertPoint.after(site))
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
        if not _is_fragment_alloc(buf):
            continue
        site = _irregular_site(op, buf.owner)
        if site is not None and site not in sites.setdefault(buf.owner, []):
            sites[buf.owner].append(site)
    for alloc, found in sites.items():
        if not found:
            continue
        shared = _new_buffer(alloc, "shared", "shared").result
        value, copied_at = alloc.result, set()
        for site in found:
            uses = _uses_inside(value, site)
            writes = any(_writes(u.operation, value) for u in uses)
            point = site if writes else _hoisted(site, alloc, (value, shared))
            if id(point) not in copied_at:
                copied_at.add(id(point))
                Rewriter.insert_op(_located([tile.CopyOp(value, shared)], site), InsertPoint.before(point))
            if writes:
                Rewriter.insert_op(_located([tile.CopyOp(shared, value)], site), InsertPoint.after(site))
            _redirect(uses, shared)
