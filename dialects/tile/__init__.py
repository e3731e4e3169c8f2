"""The `tile` dialect: block-level tile programs, the first IR of tilec.

A kernel is a `func.func` whose arguments are global tensors (`!tile.tensor`)
and whose body holds one `tile.kernel`: the grid of blocks and the threads per
block.  Inside, buffers live in shared / fragment / local scope
(`!tile.buffer<64x32xf16, shared>`) and tile ops (`tile.copy`, `tile.gemm`,
`tile.fill`, `tile.reduce`, `tile.cumsum`, `tile.atomic`) work on whole tiles.
Element-wise code sits in `tile.parallel` loops (one logical iteration per
element, partitioned over threads later); sequential and software-pipelined
loops are `tile.for`.  Scalar math is upstream `arith` / `math`, run-time
conditions are `scf.if`.

```mlir
func.func @main(%A: !tile.tensor<256x128xf16>, %C: !tile.tensor<256x128xf32>) {
  %c2 = arith.constant 2 : index
  tile.kernel (%bx) in (%c2) threads [128, 1, 1] {
    %c128 = arith.constant 128 : index
    %c0 = arith.constant 0 : index
    %row = arith.muli %bx, %c128 : index
    %x = tile.alloc : !tile.buffer<128x128xf32, fragment>
    %a = tile.region %A[%row, %c0] : !tile.tensor<256x128xf16> -> !tile.tensor<128x128xf16>
    tile.copy %a, %x : !tile.tensor<128x128xf16>, !tile.buffer<128x128xf32, fragment>
    %c = tile.region %C[%row, %c0] : !tile.tensor<256x128xf32> -> !tile.tensor<128x128xf32>
    tile.copy %x, %c : !tile.buffer<128x128xf32, fragment>, !tile.tensor<128x128xf32>
  }
  func.return
}
```

Semantics shared by all ops: a `tile.region` of a global tensor may reach past
its end; the out-of-range part is neither read (reads give 0) nor written.
"""

from xdsl.ir import Dialect

from .attrs import (
    AtomicKind,
    AtomicKindAttr,
    AtomicRMWKind,
    FragmentLayoutAttr,
    GemmPolicy,
    GemmPolicyAttr,
    LoopKind,
    LoopKindAttr,
    MmaKind,
    MmaKindAttr,
    RasterOrder,
    RasterOrderAttr,
    ReduceKind,
    ReduceKindAttr,
    Scope,
    ScopeAttr,
    SwizzleLayoutAttr,
    atomic_rmw_kind,
)
from .compute import (
    AtomicOp,
    CopyOp,
    CummaxOp,
    CumsumOp,
    FillOp,
    GemmOp,
    ReduceOp,
    reduced_shape,
)
from .memory import (
    AllocOp,
    AnnotateLayoutOp,
    AsyncCommitOp,
    AsyncWaitOp,
    DimOp,
    LoadOp,
    RegionOp,
    ReshapeOp,
    StageOp,
    StoreOp,
)
from .pointers import ALIGNED_SIZES, MakeTensorOp, built_from_pointer, size_multiple, tensor_root
from .raw_copy import CP_ASYNC_BYTES, CpAsyncArriveOp, CpAsyncOp
from .parallel_body import (
    block_level_name,
    missing_loop_dims,
    parallel_body_error,
    varies_per_element,
)
from .shared_layout import (
    WgmmaDescriptor,
    alignment,
    xor_swizzle,
)
from .structure import (
    DeviceAssertOp,
    ForOp,
    KernelOp,
    ParallelOp,
    PrintOp,
    STAGES_ASKED,
    ThreadIdOp,
    UseSwizzleOp,
    YieldOp,
    constant_index,
    enclosing,
    enclosing_kernel,
)
from .sync import (
    launch_registers,
    AllocBarrierOp,
    BarrierOp,
    ConsumerGroupOp,
    GemmWaitOp,
    MBarrierArriveOp,
    MBarrierExpectTxOp,
    MBarrierWaitParityOp,
    PassTurnOp,
    PersistentOp,
    SetMaxNRegOp,
    TmaLoadOp,
    TmaStoreOp,
    TmaStoreWaitOp,
    WaitTurnOp,
    WarpSpecializeOp,
    multicast_bands,
    tma_chunks,
    consumer_split,
)
from .turns import WarpgroupPassTurnOp, WarpgroupWaitTurnOp
from .types import (
    ATOMIC_KINDS,
    DYNAMIC,
    GEMM_POLICIES,
    LOOP_KINDS,
    REDUCE_KINDS,
    SCOPES,
    BufferType,
    MBarrierType,
    TensorType,
    TileLike,
    TileType,
    element_bytes,
    squeezed,
    tile_type,
)

Tile = Dialect(
    "tile",
    [
        KernelOp,
        ParallelOp,
        ForOp,
        YieldOp,
        AllocOp,
        RegionOp,
        StageOp,
        DimOp,
        LoadOp,
        StoreOp,
        ReshapeOp,
        MakeTensorOp,
        CopyOp,
        GemmOp,
        FillOp,
        ReduceOp,
        CumsumOp,
        CummaxOp,
        AtomicOp,
        UseSwizzleOp,
        AnnotateLayoutOp,
        BarrierOp,
        AsyncCommitOp,
        AsyncWaitOp,
        CpAsyncOp,
        CpAsyncArriveOp,
        AllocBarrierOp,
        MBarrierArriveOp,
        MBarrierWaitParityOp,
        MBarrierExpectTxOp,
        TmaLoadOp,
        TmaStoreOp,
        TmaStoreWaitOp,
        WarpSpecializeOp,
        PersistentOp,
        ConsumerGroupOp,
        SetMaxNRegOp,
        WaitTurnOp,
        PassTurnOp,
        WarpgroupWaitTurnOp,
        WarpgroupPassTurnOp,
        GemmWaitOp,
        ThreadIdOp,
        PrintOp,
        DeviceAssertOp,
    ],
    [
        TensorType,
        BufferType,
        MBarrierType,
        SwizzleLayoutAttr,
        FragmentLayoutAttr,
        LoopKindAttr,
        GemmPolicyAttr,
        MmaKindAttr,
        ReduceKindAttr,
        AtomicKindAttr,
        RasterOrderAttr,
        ScopeAttr,
    ],
)

__all__ = [
    "ATOMIC_KINDS",
    "constant_index",
    "multicast_bands",
    "tma_chunks",
    "DYNAMIC",
    "GEMM_POLICIES",
    "LOOP_KINDS",
    "REDUCE_KINDS",
    "SCOPES",
    "AllocBarrierOp",
    "AllocOp",
    "AnnotateLayoutOp",
    "AsyncCommitOp",
    "AsyncWaitOp",
    "AtomicKind",
    "AtomicKindAttr",
    "AtomicOp",
    "AtomicRMWKind",
    "BarrierOp",
    "BufferType",
    "ConsumerGroupOp",
    "CP_ASYNC_BYTES",
    "CpAsyncArriveOp",
    "CpAsyncOp",
    "consumer_split",
    "PassTurnOp",
    "WaitTurnOp",
    "CopyOp",
    "CummaxOp",
    "CumsumOp",
    "DeviceAssertOp",
    "DimOp",
    "FillOp",
    "ForOp",
    "FragmentLayoutAttr",
    "GemmOp",
    "GemmPolicy",
    "GemmPolicyAttr",
    "GemmWaitOp",
    "KernelOp",
    "LoadOp",
    "LoopKind",
    "LoopKindAttr",
    "MakeTensorOp",
    "MBarrierArriveOp",
    "MBarrierExpectTxOp",
    "MBarrierType",
    "MBarrierWaitParityOp",
    "MmaKind",
    "MmaKindAttr",
    "PersistentOp",
    "ParallelOp",
    "PrintOp",
    "RasterOrder",
    "RasterOrderAttr",
    "ReduceKind",
    "ReduceKindAttr",
    "ReduceOp",
    "RegionOp",
    "ReshapeOp",
    "Scope",
    "STAGES_ASKED",
    "ScopeAttr",
    "StageOp",
    "StoreOp",
    "SwizzleLayoutAttr",
    "TensorType",
    "ThreadIdOp",
    "Tile",
    "TileLike",
    "TileType",
    "TmaLoadOp",
    "TmaStoreOp",
    "TmaStoreWaitOp",
    "UseSwizzleOp",
    "SetMaxNRegOp",
    "WarpSpecializeOp",
    "WarpgroupPassTurnOp",
    "WarpgroupWaitTurnOp",
    "WgmmaDescriptor",
    "YieldOp",
    "alignment",
    "atomic_rmw_kind",
    "block_level_name",
    "built_from_pointer",
    "element_bytes",
    "missing_loop_dims",
    "parallel_body_error",
    "reduced_shape",
    "squeezed",
    "tensor_root",
    "size_multiple",
    "enclosing",
    "enclosing_kernel",
    "launch_registers",
    "ALIGNED_SIZES",
    "tile_type",
    "varies_per_element",
    "xor_swizzle",
]
