"""Regions of fragments (`F[r]`, a tile-infer-layout helper, before inference), in terms the
fragment's own layout serves:

- `T.copy(F[r], X)`, `T.copy(X, F[r])` and `T.fill(F[r], v)` with X in memory: a `tile.parallel`
  over the whole of F guarded to the region, which indexes F by its loop variables in order (so
  it follows F's layout) and X by the region-relative index;
- with X another fragment (or a region of one): a loop over X that indexes F at the region's
  offsets (fragment_conversions.py then reads F through shared memory);
- an element of `F[r]`: the element of F;
- any other op on `F[r]`: works on a fragment `%F_region` of its own, copied in before it (when
  it reads the region) and out after it (when it writes it).

    tile.copy %r, %Y       (%r = tile.region %x[%c8, %c0] : 64x32 -> 16x32)
  becomes
    tile.parallel (%i, %j) in [64, 32] { scf.if (8 <= %i < 24) { Y[%i - 8, %j] = x[%i, %j] } }
"""

from __future__ import annotations

from tilec.dialects import tile
from tilec.dialects.arith_utils import convert, is_float
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from .analysis import constant_value
from .fragment_conversions import is_fragment_alloc, located, reads, writes

__all__ = ["expand_region_uses"]


def _fragment_region(value: SSAValue) -> tile.RegionOp | None:
    op = value.owner
    if isinstance(op, tile.RegionOp) and is_fragment_alloc(op.source):
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

    def emit(self, op: Operation) -> Operation:
        self.add(op)
        return op

    def const(self, n, typ=None) -> SSAValue:
        """A constant of `typ` (index by default)."""
        typ = IndexType() if typ is None else typ
        return self.add(arith.ConstantOp(FloatAttr(n, typ) if is_float(typ) else IntegerAttr(n, typ)))


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
    located(guarded, where)
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
        """One element moved, converted to the destination's element type (a copy may cast)."""
        ops = _Ops(copy)
        loaded = ops.add(tile.LoadOp(load_from, load_index))
        value = convert(loaded, store_to.type.element_type, ops.emit, ops.const)
        return [*ops, tile.StoreOp(value, store_to, store_index)]

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
        op.result.replace_all_uses_with(new.result)
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
    Rewriter.insert_op(located([own], region)[0], InsertPoint.after(region.source.owner))
    copies = []
    if reads(user, region.result):
        copies.append(tile.CopyOp(region.result, own.result))
        Rewriter.insert_op(located(copies[-1:], user), InsertPoint.before(user))
    if writes(user, region.result):
        copies.append(tile.CopyOp(own.result, region.result))
        Rewriter.insert_op(located(copies[-1:], user), InsertPoint.after(user))
    for use in list(region.result.uses):
        if use.operation is user:
            user.operands[use.index] = own.result
    for copy in copies:
        _expand_copy(copy, region)


def expand_region_uses(kernel: tile.KernelOp) -> None:
    """Regions of fragments (`F[r]`): copies and fills become loops over F guarded to the region,
    elements become elements of F, and other ops work on a fragment of their own."""
    for region in [op for op in kernel.walk() if isinstance(op, tile.RegionOp) and is_fragment_alloc(op.source)]:
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
