"""`convert-tile-to-thread`: the lowering of tile kernels to thread-level IR, one module per concern.

    convert     the pass and the kernel ABI (arguments, dynamic shared memory, block ids)
    context     the lowering context (`Lowerer`): insertion point, value maps, index arithmetic
    memory      `View`s of the four kinds of storage, addresses, swizzles, bounds, vectors
    lanes       the `T.Parallel` lane model and per-lane analysis of index expressions
    registry    which handler lowers which op (`@uniform`, `@element`), the walk over a block
    buffers     alloc / region / reshape / stage → views
    control     for / if / barriers / async groups / thread ids / asserts
    elements    element loads, stores, atomics; `tile.parallel`
    copy        copy and fill      reduce    reductions      scan     scans and atomics
    gemm        gemm dispatch      gemm_simt / gemm_mma / gemm_wgmma: the three back ends
    sync        mbarriers, TMA loads, warp-specialized regions, waits for asynchronous gemms
    raw_copy    TileLang's raw per-thread cp.async and its mbarrier arrival
    turns       the warpgroups' turns at the tensor cores (named barriers 5 + w)
"""

from . import buffers, control, copy, elements, gemm, sync  # noqa: F401  (handlers register on import; reduce, scan, turns, raw_copy: registry.LAZY)
from .convert import SMEM, SMEM_ALIGN, ConvertTileToThreadPass, lower_kernel_func

SCALAR_PARAMS = True
"""The kernel's scalar parameters (`max_seqlen: T.int32`) are passed by value (tilec.compiler.lower checks)."""

__all__ = ["SCALAR_PARAMS", "SMEM", "SMEM_ALIGN", "ConvertTileToThreadPass", "lower_kernel_func"]
