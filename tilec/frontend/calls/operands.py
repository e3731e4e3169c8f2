"""The operands of T.* builtins: shapes, dtypes, compile-time integers, regions of tiles.

Shared by every op family's builder: a buffer shape must be positive compile-time integers, a
dtype must name one, a tile operand is a whole tile or a `tile.region` of one (a point access
`A[i, j]` means the region of the other operand's shape starting there).
"""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType

import tilec.language as T
from tilec.dialects import tile
from tilec.dtypes import DType, as_dtype

from ..values import Access, Scalar, SliceIndex, TileRef, VarRef

INDEX = IndexType()


def describe_(value) -> str:
    from ..semantic import describe

    return describe(value)


def shape_of(v, shape, what: str) -> tuple[int, ...]:
    """A buffer shape: positive compile-time integers."""
    if isinstance(shape, int | Scalar):
        shape = (shape,)
    if not isinstance(shape, tuple | list):
        raise v.b.error(f"{what}: shape must be an int or a list of ints, got {shape!r}")
    out = []
    for d in shape:
        if isinstance(d, Scalar) or isinstance(d, T.Symbol):
            raise v.b.error(f"{what}: buffer sizes must be compile-time integers, got a run-time size",
                            hint="use a constant tile size; dynamic sizes belong to global tensors")
        if not isinstance(d, int) or d <= 0:
            raise v.b.error(f"{what}: buffer sizes must be positive integers, got {d!r}")
        out.append(int(d))
    return tuple(out)


def dtype_of(v, dtype, what: str) -> DType:
    d = as_dtype(dtype)
    if d is None:
        raise v.b.error(f"{what}: unknown dtype {dtype!r}",
                        hint="use T.float16, T.bfloat16, T.float32, T.int32, ... or a name like 'float16'")
    return computable(v, d, what)


def computable(v, d: DType, what: str) -> DType:
    """`d` if kernels can compute with it; a located error naming it if it is a storage-only format."""
    if not d.computable:
        raise v.b.error(f"{what}: dtype {d.name} cannot be computed with by tilec (no target has arithmetic on it)",
                        hint="hold the data in a byte type (T.uint8 / T.int8) and unpack it with shifts and masks, "
                             "or use float16 / bfloat16 / float32" if d.bits < 8 else
                        "use float32 (tfloat32 is a tensor-core input precision, not a storage type)")
    return d


def static_int(v, value, what: str) -> int:
    """A compile-time integer (a folded constant counts)."""
    if isinstance(value, Scalar) and value.ssa in v.b.constants:
        return int(v.b.constants[value.ssa])
    if not isinstance(value, int):
        raise v.b.error(f"{what} must be a compile-time integer")
    return value


def explicit_shape(v, value) -> tuple[int, ...] | None:
    """The shape a tile operand has on its own; None for a point access `A[i, j]`."""
    if isinstance(value, TileRef):
        return value.shape
    if isinstance(value, Access) and not value.is_point:
        return tuple(_extent(v, value.tile, d, i) for d, i in enumerate(value.indices))
    return None


def _extent(v, ref: TileRef, dim: int, index) -> int:
    if not isinstance(index, SliceIndex):
        return 1
    start = 0 if index.start is None else index.start
    if index.stop is None:
        size = ref.shape[dim]
        if size == tile.DYNAMIC:
            raise v.b.error(f"`:` on dynamic dimension {dim} of {ref} has no compile-time extent",
                            hint="slice with explicit bounds such as i * 64:(i + 1) * 64")
        stop = size
    else:
        stop = index.stop
    fa, fb = v.b.affine_of(start), v.b.affine_of(stop)
    diff = None if fa is None or fb is None else fb - fa
    if diff is None or diff.terms:
        raise v.b.error(f"the extent of slice {dim} of {ref} is not a compile-time constant",
                        hint="write slices as start:start + size with a constant size")
    if diff.const <= 0:
        raise v.b.error(f"slice {dim} of {ref} is empty ({diff.const} elements)")
    return diff.const


def _refuse_custom_layout(v, value, what: str) -> None:
    if v.custom_layouts:  # custom_layout.py loads with the first T.Layout
        from ..custom_layout import refuse_tile_operand

        refuse_tile_operand(v, value, what)


def region(v, value, hint: tuple[int, ...] | None, what: str):
    """The SSA tile for an operand: a whole tile, or a `tile.region` of it."""
    if isinstance(value, TileRef):
        _refuse_custom_layout(v, value, what)
        return value.ssa
    if isinstance(value, VarRef):
        return value.tile.ssa
    if not isinstance(value, Access):
        raise v.b.error(f"{what} must be a tile (a tensor, a buffer or a region of one), got {describe_(value)}")
    _refuse_custom_layout(v, value, what)
    ref = value.tile
    rank = len(ref.shape)
    if len(value.indices) != rank:
        raise v.b.error(f"{ref} has {rank} dimensions but {what} indexes {len(value.indices)}")
    if value.is_point:
        if hint is None:
            raise v.b.error(f"{what} is a single element; the other operand does not give a region shape",
                            hint="write the region as a slice, e.g. A[i:i + 64, j:j + 64]")
        hint = tuple(hint)
        while len(hint) > rank and hint[0] == 1:
            hint = hint[1:]
        if len(hint) > rank:
            raise v.b.error(f"{what}: a {len(hint)}-D region cannot start at an element of {rank}-D {ref}")
        extents = (1,) * (rank - len(hint)) + hint
        offsets = list(value.indices)
    else:
        extents = tuple(_extent(v, ref, d, i) for d, i in enumerate(value.indices))
        offsets = [(0 if i.start is None else i.start) if isinstance(i, SliceIndex) else i for i in value.indices]
    if ref.scope != "global":
        for d, (off, ext) in enumerate(zip(offsets, extents)):
            if isinstance(off, int) and off + ext > ref.shape[d]:
                raise v.b.error(f"{what}: region [{off}, {off + ext}) exceeds dimension {d} of {ref} "
                                f"(size {ref.shape[d]})")
    if extents == ref.shape and all(isinstance(o, int) and o == 0 for o in offsets):
        return ref.ssa
    offsets = [v.index_ssa(o) for o in offsets]
    typ = ref.type
    rtype = tile.TensorType(extents, typ.element_type) if typ.scope == "global" else \
        tile.BufferType(extents, typ.element_type, typ.scope)
    return v.b.emit(tile.RegionOp(ref.ssa, offsets, rtype)).results[0]


def stage_view(v, value, what: str = "the operand", regions: bool = False):
    """`buf[s, :, :]` of a shared buffer of 3 or more dimensions: its stage s (`tile.stage`, one dimension
    less, as multi-buffered pipelines and TMA use it), and with `regions`, `buf[s, :, a:b]` a region of that
    stage (a gemm operand: TileLang's `KV_shared[stage, :, :D // 2]`); None for any other operand."""
    if not isinstance(value, Access) or value.tile.scope != "shared" or len(value.indices) < 3:
        return None
    first, rest = value.indices[0], value.indices[1:]
    whole = all(isinstance(i, SliceIndex) and i.start is None and i.stop is None for i in rest)
    if isinstance(first, SliceIndex) or not (whole or regions and all(isinstance(i, SliceIndex) for i in rest)):
        return None
    stage = v.b.emit(tile.StageOp(value.tile.ssa, v.index_ssa(first))).results[0]
    return stage if whole else region(v, Access(TileRef(stage), tuple(rest)), None, what)


def tile_operand(v, value, what: str, scopes: tuple[str, ...], hint=None, *, stages: bool = False):
    """`region()` of an operand that must live in one of `scopes`; with `stages`, a shared buffer's stage
    `buf[s, :, :]` is its stage view (the 2-D operand a gemm reads)."""
    ssa = (stage_view(v, value, what, regions=True) if stages else None) or region(v, value, hint, what)
    scope = ssa.type.scope
    if scope not in scopes:
        raise v.b.error(f"{what} must be in {' or '.join(scopes)} scope, got a {scope} tile",
                        hint="copy global data to T.alloc_shared or T.alloc_fragment first" if scope == "global" else None)
    return ssa


def require_kernel(v, what: str, *, whole_tiles: bool = False) -> None:
    """`what` must be inside the kernel; with `whole_tiles`, also outside any T.Parallel loop."""
    if v.kernel is None:
        raise v.b.error(f"{what} is only usable inside `with T.Kernel(...)`",
                        hint="move it into the kernel body")
    if whole_tiles and v.parallel_loops:
        raise v.b.error(f"{what} works on whole tiles (or the whole block) and cannot be used inside T.Parallel",
                        hint="move it before or after the T.Parallel loop; inside the loop, work on one element "
                             "per iteration")
