"""The `nvvm` ops of Hopper-class code (sm_90/sm_90a): mbarriers, the tensor memory accelerator
(`cp.async.bulk.tensor`, TMA), `setmaxnreg`, `elect.sync`, named barriers, `stmatrix`, and the
thread-block cluster's: `mapa`, remote mbarrier arrivals and the cluster barrier.

Upstream: https://mlir.llvm.org/docs/Dialects/NVVMDialect/ (same op names and operand order).
Tensor maps are `!llvm.ptr` (generic address space) operands: a kernel parameter marked
`nvvm.grid_constant` (HOPPER_KERNELS.md §2.2).

```mlir
"nvvm.cp.async.bulk.tensor.shared.cluster.global"(%dst, %tmap, %c0, %c1, %mbar)
    <{operandSegmentSizes = array<i32: 1, 1, 2, 1, 0, 0>}>
    : (!llvm.ptr<3>, !llvm.ptr, i32, i32, !llvm.ptr<3>) -> ()
```
"""

from __future__ import annotations

from xdsl.dialects.builtin import I32, I64, IntegerAttr, UnitAttr, i1, i16, i32, i64
from xdsl.dialects.llvm import LLVMPointerType
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from .attrs import GENERIC, SHARED, MMALayoutAttr, SetMaxRegisterActionAttr, _check_ptr

# ---------------------------------------------------------------------------- mbarriers


@irdl_op_definition
class MBarrierInitSharedOp(IRDLOperation):
    """`mbarrier.init.shared.b64 [addr], count` (sm_80+)."""

    name = "nvvm.mbarrier.init.shared"
    addr = operand_def(LLVMPointerType)
    count = operand_def(i32)

    def verify_(self) -> None:
        _check_ptr(self, self.addr, SHARED, "addr")


@irdl_op_definition
class MBarrierArriveSharedOp(IRDLOperation):
    """`mbarrier.arrive.shared.b64 state, [addr]`; the result is the phase token."""

    name = "nvvm.mbarrier.arrive.shared"
    addr = operand_def(LLVMPointerType)
    res = result_def(i64)

    def verify_(self) -> None:
        _check_ptr(self, self.addr, SHARED, "addr")


@irdl_op_definition
class MBarrierTryWaitParitySharedOp(IRDLOperation):
    """Block until the phase with parity `phase` of the mbarrier at `addr` completes.

    As upstream, this op loops over `mbarrier.try_wait.parity` (sm_90) itself; `ticks`
    is the suspend-time hint in nanoseconds.
    """

    name = "nvvm.mbarrier.try_wait.parity.shared"
    addr = operand_def(LLVMPointerType)
    phase = operand_def(i32)
    ticks = operand_def(i32)

    def verify_(self) -> None:
        _check_ptr(self, self.addr, SHARED, "addr")


@irdl_op_definition
class MBarrierArriveExpectTxSharedOp(IRDLOperation):
    """`mbarrier.arrive.expect_tx.shared.b64 _, [addr], txcount`: expect `txcount` more bytes
    of asynchronous copies (TMA `complete_tx`) in the current phase, then arrive once."""

    name = "nvvm.mbarrier.arrive.expect_tx.shared"
    addr = operand_def(LLVMPointerType)
    txcount = operand_def(i32)

    def verify_(self) -> None:
        _check_ptr(self, self.addr, SHARED, "addr")


@irdl_op_definition
class CpAsyncMBarrierArriveSharedOp(IRDLOperation):
    """`cp.async.mbarrier.arrive[.noinc].shared.b64 [addr]` (sm_80+): an arrival on the mbarrier
    once all of the thread's earlier cp.async copies have landed. Without `noinc` the pending
    count is raised by one first, so the arrival only holds the phase open until the copies land
    (the thread arrives for itself as well); with `noinc` it is one of the phase's arrivals."""

    name = "nvvm.cp.async.mbarrier.arrive.shared"
    addr = operand_def(LLVMPointerType)
    noinc = opt_prop_def(UnitAttr)

    def verify_(self) -> None:
        _check_ptr(self, self.addr, SHARED, "addr")


@irdl_op_definition
class FenceMbarrierInitOp(IRDLOperation):
    """`fence.mbarrier_init.release.cluster`: makes mbarrier.init visible to the async proxy
    (and the cluster) before the barrier is used."""

    name = "nvvm.fence.mbarrier.init"
    assembly_format = "attr-dict"


# ------------------------------------------------------------------------ clusters (sm_90)

CLUSTER_SHARED = 7  # `!llvm.ptr<7>`: a shared::cluster address (any CTA of the cluster)


@irdl_op_definition
class MapaSharedClusterOp(IRDLOperation):
    """`mapa.shared::cluster.u64 res, addr, rank`: the address of the same shared-memory byte
    `addr` of this CTA in CTA `rank` of the cluster."""

    name = "nvvm.mapa.shared.cluster"
    addr = operand_def(LLVMPointerType)
    rank = operand_def(i32)
    res = result_def(LLVMPointerType)

    def verify_(self) -> None:
        _check_ptr(self, self.addr, SHARED, "addr")
        _check_ptr(self, self.res, CLUSTER_SHARED, "res")


@irdl_op_definition
class MBarrierArriveClusterOp(IRDLOperation):
    """`mbarrier.arrive.shared::cluster.b64 _, [addr], count` (release, .cta scope): arrive on an
    mbarrier of any CTA of the cluster (an address from `mapa`)."""

    name = "nvvm.mbarrier.arrive.cluster"
    addr = operand_def(LLVMPointerType)
    count = operand_def(i32)

    def verify_(self) -> None:
        _check_ptr(self, self.addr, CLUSTER_SHARED, "addr")


@irdl_op_definition
class ClusterArriveOp(IRDLOperation):
    """`barrier.cluster.arrive` (release): this thread reached the cluster barrier."""

    name = "nvvm.cluster.arrive"
    assembly_format = "attr-dict"


@irdl_op_definition
class ClusterWaitOp(IRDLOperation):
    """`barrier.cluster.wait` (acquire): block until every thread of the cluster arrived."""

    name = "nvvm.cluster.wait"
    assembly_format = "attr-dict"


# -------------------------------------------------------------------------------- TMA

TMA_RANKS = (1, 2, 3, 4, 5)


@irdl_op_definition
class CpAsyncBulkTensorGlobalToSharedClusterOp(IRDLOperation):
    """`cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    [dstMem], [tmaDescriptor, {coordinates}], [mbar]{, multicastMask}`: one box of the tensor
    map, at element `coordinates` (innermost first), into shared memory; its bytes complete
    on `mbar`. Out-of-bounds parts of the box are zero-filled."""

    name = "nvvm.cp.async.bulk.tensor.shared.cluster.global"
    dstMem = operand_def(LLVMPointerType)
    tmaDescriptor = operand_def(LLVMPointerType)
    coordinates = var_operand_def(i32)
    mbar = operand_def(LLVMPointerType)
    multicastMask = opt_operand_def(i16)
    l2CacheHint = opt_operand_def(i64)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def verify_(self) -> None:
        _check_ptr(self, self.dstMem, SHARED, "dstMem")
        _check_ptr(self, self.mbar, SHARED, "mbar")
        _check_ptr(self, self.tmaDescriptor, GENERIC, "tmaDescriptor")
        if len(self.coordinates) not in TMA_RANKS:
            raise VerifyException(f"{self.name}: 1 to 5 coordinates, got {len(self.coordinates)}")


@irdl_op_definition
class CpAsyncBulkTensorSharedCTAToGlobalOp(IRDLOperation):
    """`cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [tmaDescriptor, {coordinates}],
    [srcMem]`: a shared-memory box stored to the tensor (out-of-bounds parts are not written);
    completes with the bulk async-group (`cp.async.bulk.commit.group` / `wait_group`)."""

    name = "nvvm.cp.async.bulk.tensor.global.shared.cta"
    tmaDescriptor = operand_def(LLVMPointerType)
    srcMem = operand_def(LLVMPointerType)
    coordinates = var_operand_def(i32)

    def verify_(self) -> None:
        _check_ptr(self, self.srcMem, SHARED, "srcMem")
        _check_ptr(self, self.tmaDescriptor, GENERIC, "tmaDescriptor")
        if len(self.coordinates) not in TMA_RANKS:
            raise VerifyException(f"{self.name}: 1 to 5 coordinates, got {len(self.coordinates)}")


@irdl_op_definition
class CpAsyncBulkCommitGroupOp(IRDLOperation):
    """`cp.async.bulk.commit_group`: the thread's bulk stores so far become one group."""

    name = "nvvm.cp.async.bulk.commit.group"
    assembly_format = "attr-dict"


@irdl_op_definition
class CpAsyncBulkWaitGroupOp(IRDLOperation):
    """`cp.async.bulk.wait_group{.read} group`: at most `group` bulk groups pending; with
    `read`, only their reads of shared memory need be done (the source may be reused)."""

    name = "nvvm.cp.async.bulk.wait_group"
    group = prop_def(IntegerAttr[I32])
    read = opt_prop_def(UnitAttr)


@irdl_op_definition
class PrefetchTensorMapOp(IRDLOperation):
    """`prefetch.tensormap [tmaDescriptor]`: bring the tensor map into the cache ahead of use."""

    name = "nvvm.prefetch.tensormap"
    tmaDescriptor = operand_def(LLVMPointerType)

    def verify_(self) -> None:
        _check_ptr(self, self.tmaDescriptor, GENERIC, "tmaDescriptor")


# ----------------------------------------------------------- warp specialization (sm_90a)


@irdl_op_definition
class SetMaxRegisterOp(IRDLOperation):
    """`setmaxnreg.{inc,dec}.sync.aligned.u32 regCount` (sm_90a): a warpgroup gives registers
    back to the block's pool or takes them (24 to 256, a multiple of 8)."""

    name = "nvvm.setmaxregister"
    regCount = prop_def(IntegerAttr[I32])
    action = prop_def(SetMaxRegisterActionAttr)

    def verify_(self) -> None:
        n = self.regCount.value.data
        if not (24 <= n <= 256 and n % 8 == 0):
            raise VerifyException(f"{self.name}: regCount must be a multiple of 8 in [24, 256], got {n}")


@irdl_op_definition
class ElectSyncOp(IRDLOperation):
    """`elect.sync _|p, 0xffffffff`: true on one lane of the (converged) warp."""

    name = "nvvm.elect.sync"
    pred = result_def(i1)
    assembly_format = "attr-dict `->` type($pred)"


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """`bar.sync barrierId, numberOfThreads`: a named barrier among `numberOfThreads` threads
    (a multiple of 32); without operands, `bar.sync 0` over the block. `bar.sync` is the aligned
    form: the threads that block in one round all run this instruction. `{unaligned}`:
    `barrier.sync`, for threads that meet from different code (warp-specialized roles)."""

    name = "nvvm.barrier"
    barrierId = opt_operand_def(i32)
    numberOfThreads = opt_operand_def(i32)
    unaligned = opt_prop_def(UnitAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)


@irdl_op_definition
class BarrierArriveOp(IRDLOperation):
    """`bar.arrive barrierId, numberOfThreads`: arrive on a named barrier without waiting; the
    barrier completes when `numberOfThreads` threads have arrived or synced on it."""

    name = "nvvm.barrier.arrive"
    barrierId = operand_def(i32)
    numberOfThreads = operand_def(i32)


@irdl_op_definition
class StMatrixOp(IRDLOperation):
    """`stmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16 [ptr], {sources}` (sm_90): each
    lane holds a pair of 16-bit values of each 8x8 matrix (the mma accumulator layout); lanes
    8j..8j+7 give the row addresses of matrix j. `layout = col` is `.trans`."""

    name = "nvvm.stmatrix"
    ptr = operand_def(LLVMPointerType)
    sources = var_operand_def(i32)
    layout = prop_def(MMALayoutAttr)

    def verify_(self) -> None:
        _check_ptr(self, self.ptr, SHARED, "ptr")
        if len(self.sources) not in (1, 2, 4):
            raise VerifyException(f"{self.name}: 1, 2 or 4 sources, got {len(self.sources)}")


HOPPER_OPS = [
    MBarrierInitSharedOp, MBarrierArriveSharedOp, MBarrierTryWaitParitySharedOp, MBarrierArriveExpectTxSharedOp,
    CpAsyncMBarrierArriveSharedOp, FenceMbarrierInitOp, CpAsyncBulkTensorGlobalToSharedClusterOp, CpAsyncBulkTensorSharedCTAToGlobalOp,
    CpAsyncBulkCommitGroupOp, CpAsyncBulkWaitGroupOp, PrefetchTensorMapOp, SetMaxRegisterOp, ElectSyncOp,
    BarrierOp, BarrierArriveOp, StMatrixOp, MapaSharedClusterOp, MBarrierArriveClusterOp, ClusterArriveOp,
    ClusterWaitOp,
]
