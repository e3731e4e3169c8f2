"""What a software-pipelined loop's stages are made of, for the passes that pipeline loops
(tile-pipeline with cp.async, tile-warp-specialize with TMA): the copies into shared tiles a
loop can issue iterations ahead, the copies before it that fill a tile its gemms read (issued
once), the address computations they need recomputed for another iteration, and a small
builder for the new ops."""

from __future__ import annotations

from dataclasses import dataclass

from tilec.dialects import tile
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import Rewriter

INDEX = IndexType()

# ops a source address may be computed with (cloned for a later iteration)
PURE_TILE = (tile.RegionOp, tile.DimOp)
# how a multi-buffered tile may be used in the loop besides its one async copy
READERS = {tile.GemmOp: (0, 1), tile.CopyOp: (0,), tile.LoadOp: (0,), tile.ReduceOp: (0,)}


class NotPure(Exception):
    pass


def top_level(op: Operation, body: Block) -> Operation:
    while op.parent_block() is not body:
        op = op.parent_op()
    return op


def pure(op: Operation) -> bool:
    return isinstance(op, PURE_TILE) or (op.dialect_name() == "arith" and not op.regions)


class Builder:
    """Collects new ops for one insertion point, folding the index arithmetic it can."""

    def __init__(self):
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def index(self, n: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(n, INDEX)))

    def binary(self, cls, a: SSAValue, b: SSAValue | int) -> SSAValue:
        if isinstance(b, int):
            b = self.index(b)
        return self.add(cls(a, b))


@dataclass
class StagedCopy:
    op: tile.CopyOp
    alloc: tile.AllocOp


def through_regions(value: SSAValue) -> list[tuple[Operation, int]]:
    """The (operation, operand index) uses of a tile, a region of it standing for its own uses (a
    gemm of `A_s[:, 0:32]` reads A_s)."""
    found = []
    for use in value.uses:
        if isinstance(use.operation, tile.RegionOp):
            found += through_regions(use.operation.result)
        else:
            found.append((use.operation, use.index))
    return found


def staged_copy(copy: tile.CopyOp, loop: tile.ForOp) -> StagedCopy | None:
    body = loop.body.block
    src, dst = copy.src.type, copy.dst.type
    if not (isinstance(src, tile.TensorType) and isinstance(dst, tile.BufferType) and dst.scope == "shared"
            and src.element_type == dst.element_type and copy.parent_block() is body):
        return None
    alloc = copy.dst.owner
    if not isinstance(alloc, tile.AllocOp) or loop.is_ancestor(alloc):
        return None
    if any(isinstance(use.operation, tile.RegionOp) and not loop.is_ancestor(use.operation) for use in alloc.result.uses):
        return None  # a region taken before the loop could not become one of the stage's
    position = body.get_operation_index(copy)
    for user, index in through_regions(alloc.result):
        if user is copy or isinstance(user, tile.AnnotateLayoutOp):
            continue
        if not loop.is_ancestor(user) or index not in READERS.get(type(user), ()):
            return None
        if body.get_operation_index(top_level(user, body)) <= position:
            return None  # read before the copy: the loop carries the old value
    try:
        check_slice(copy.src, body)
    except NotPure:
        return None
    return StagedCopy(copy, alloc)


def preloaded_copy(value: SSAValue, loop: tile.ForOp) -> tile.CopyOp | None:
    """The copy from global memory that alone fills the shared tile `value` before `loop`, when
    the tile is otherwise only read by gemms inside the loop (attention's Q): a producer can issue
    it once, before the loop's stages. None when anything else writes or reads the tile."""
    alloc = value.owner
    body = loop.parent_block()
    if not isinstance(alloc, tile.AllocOp) or alloc.parent_block() is not body:
        return None
    writers = []
    for user, index in through_regions(alloc.result):
        if isinstance(user, tile.AnnotateLayoutOp):
            continue
        if isinstance(user, tile.GemmOp) and index in (0, 1) and loop.is_ancestor(user):
            continue
        if isinstance(user, tile.CopyOp) and index == 1 and user.dst is alloc.result and user.parent_block() is body and \
                isinstance(user.src.type, tile.TensorType) and user.src.type.element_type == alloc.result.type.element_type \
                and body.get_operation_index(user) < body.get_operation_index(loop):
            writers.append(user)
            continue
        return None
    if len(writers) != 1:
        return None
    try:
        check_slice(writers[0].src, body)
    except NotPure:
        return None
    return writers[0]


def check_slice(value: SSAValue, body: Block) -> None:
    op = value.owner
    if not isinstance(op, Operation) or op.parent_block() is not body:
        return
    if not pure(op):
        raise NotPure
    for operand in op.operands:
        check_slice(operand, body)


def clone_slice(value: SSAValue, body: Block, iv: SSAValue, new_iv: SSAValue, b: Builder,
                 done: dict[Operation, Operation]) -> SSAValue:
    """`value` recomputed with `new_iv` for `iv`: the body's ops it depends on are cloned into `b`."""
    if value is iv:
        return new_iv
    op = value.owner
    if not isinstance(op, Operation) or op.parent_block() is not body:
        return value
    if op not in done:
        mapper = {v: clone_slice(v, body, iv, new_iv, b, done) for v in op.operands}
        done[op] = op.clone(value_mapper=mapper)
        b.ops.append(done[op])
    return done[op].results[op.results.index(value)]



def writes_global(loop: tile.ForOp) -> bool:
    """Whether anything in the loop writes global memory: a copy issued iterations ahead could
    then read a tensor before the writes of the iterations between (arguments may alias)."""
    for op in loop.walk():
        if isinstance(op, tile.CopyOp) and isinstance(op.dst.type, tile.TensorType):
            return True
        if isinstance(op, tile.StoreOp) and isinstance(op.dest.type, tile.TensorType):
            return True
        if isinstance(op, tile.AtomicOp):
            return True
    return False


def unstaged_shared_bytes(kernel: tile.KernelOp, copies: list[StagedCopy]) -> int:
    """Bytes of the kernel's shared buffers other than the tiles `copies` stage."""
    staged = {c.alloc for c in copies}
    return sum(op.nbytes for op in kernel.walk() if isinstance(op, tile.AllocOp)
               and op.result.type.scope == "shared" and op not in staged)


def fitting_stages(kernel: tile.KernelOp, copies: list[StagedCopy], stages: int, limit: int) -> int | None:
    """At most `stages`, as many as fit `limit` bytes with the kernel's other shared buffers (an
    estimate that adds everything up, as if nothing shared bytes: the planner may do better)."""
    others = unstaged_shared_bytes(kernel, copies)
    per_stage = sum(a.nbytes for a in {c.alloc for c in copies})
    while stages >= 1 and others + stages * per_stage + 1024 > limit:  # 1 KB: barriers, alignment
        stages -= 1
    return stages if stages >= 1 else None


def use_stage_views(copies: list[StagedCopy], buffers: dict, views: dict, body: Block) -> None:
    """The staged copies go; every use of a single-stage tile reads its stage view instead (a layout
    annotation names the multi-buffered tile); then the tiles and their now unused source addresses go."""
    for c in copies:
        Rewriter.erase_op(c.op)
    for alloc, view in views.items():
        for use in list(alloc.result.uses):
            if isinstance(use.operation, tile.AnnotateLayoutOp):
                use.operation.operands[use.index] = buffers[alloc]
            else:
                use.operation.operands[use.index] = view
        Rewriter.erase_op(alloc)
    for op in reversed(list(body.ops)):  # the single-stage source addresses, now unused
        if pure(op) and all(not r.uses for r in op.results):
            Rewriter.erase_op(op)
