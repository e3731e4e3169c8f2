"""Which global regions TMA can copy to and from a shared tile, decided from the IR alone (the
launch checks the rest: base alignment, the run-time sizes). Read by tile-warp-specialize (its
loads) and tile-stage-epilogue (its stores)."""

from __future__ import annotations

from xdsl.ir import SSAValue

from tilec.dialects import tile

__all__ = ["tma_region_refusal"]


def tma_region_refusal(region: SSAValue, tile_shape) -> str | None:
    """Why TMA cannot copy between a shared tile of `tile_shape` and the global `region` (None: it
    can): a region of a tensor of rank 2 to 5 that is the 2-D tile once unit dims are dropped, its
    innermost dim the tile's columns, the tensor's strides multiples of 16 bytes (a run-time size
    among the inner dims only where the build assumes it a multiple of 16 bytes: `tile.size_multiple`)."""
    if tile.built_from_pointer(region):
        return "a tensor at a run-time address (T.make_tensor), which no host TMA descriptor describes"
    src = region.type
    root = region
    while isinstance(root.owner, tile.RegionOp):
        root = root.owner.source
    shape = root.type.shape
    if not 2 <= len(shape) <= 5 or src.rank != len(shape) or len(tile_shape) != 2 or \
            tuple(n for n in src.shape if n != 1) != tuple(n for n in tile_shape if n != 1) or \
            src.shape[-1] != tile_shape[-1]:
        return "a region that is not the tile's rows and columns in a tensor of 2 to 5 dims"
    esize, stride, aligned = tile.element_bytes(src.element_type), 1, False
    for dim in range(len(shape) - 1, 0, -1):  # the strides of the outer dims, innermost first
        n = shape[dim]
        if n == tile.DYNAMIC:  # aligned where the build may assume its size a multiple of 16 bytes
            if tile.size_multiple(root, dim) * esize % 16:
                return "a run-time row stride (a build for sizes of 16-byte multiples takes TMA: tilec.aligned_sizes)"
            aligned = True  # this stride and every outer one a multiple of 16 bytes
            continue
        stride *= n
        if not aligned and stride * esize % 16:
            return f"a stride of {stride * esize} bytes (TMA needs multiples of 16)"
    return None
