"""The `nvvm` ops of Ampere-class code: special registers, warp ops, barriers, cp.async,
mma.sync and ldmatrix, and the sm_90a warpgroup mma (wgmma)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I32,
    I64,
    IntAttr,
    IntegerAttr,
    UnitAttr,
    VectorType,
    f16,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.dialects.llvm import LLVMPointerType, LLVMStructType
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from .attrs import *  # noqa: F403
from .attrs import _check_ptr, _check_struct  # noqa: F401

# ----------------------------------------------------------------------- special registers


class _SregOp(IRDLOperation):
    """Reads one PTX special register (`%tid.x`, `%laneid`, …) as i32."""

    res = result_def(i32)
    assembly_format = "attr-dict `:` type($res)"

    def __init__(self):
        super().__init__(result_types=[i32])


def _sreg(register: str) -> type[_SregOp]:
    name = f"nvvm.read.ptx.sreg.{register}"
    cls = type(f"Sreg_{register.replace('.', '_')}Op", (_SregOp,), {"name": name})
    return irdl_op_definition(cls)


SREG_OPS: dict[str, type[_SregOp]] = {
    reg: _sreg(reg)
    for reg in [f"{r}.{d}" for r in ("tid", "ntid", "ctaid", "nctaid") for d in "xyz"]
    + ["laneid", "warpid", "nwarpid", "smid", "cluster.ctarank"]
}


# ---------------------------------------------------------------------- warp-level ops


@irdl_op_definition
class ShflSyncOp(IRDLOperation):
    """`shfl.sync.<kind>.b32`: exchange `val` within the warp.

    With `return_value_and_is_valid` the result is `!llvm.struct<(T, i1)>`.
    """

    name = "nvvm.shfl.sync"
    thread_mask = operand_def(i32)
    val = operand_def()
    offset = operand_def(i32)
    mask_and_clamp = operand_def(i32)
    kind = prop_def(ShflKindAttr)
    return_value_and_is_valid = opt_prop_def(UnitAttr)
    res = result_def()

    def verify_(self) -> None:
        ty = self.val.type
        if ty not in (i32, f32):
            raise VerifyException(f"{self.name}: val must be i32 or f32, got {ty}")
        elems = [ty, i1] if self.return_value_and_is_valid else [ty]
        _check_struct(self, self.res.type, elems, "result")


@irdl_op_definition
class ReduxSyncOp(IRDLOperation):
    """`redux.sync.<kind>.{s32,u32,b32}` (sm_80+): warp reduction of an i32."""

    name = "nvvm.redux.sync"
    val = operand_def(i32)
    mask_and_clamp = operand_def(i32)
    kind = prop_def(ReduxKindAttr)
    res = result_def(i32)


@irdl_op_definition
class VoteBallotOp(IRDLOperation):
    """`vote.sync.ballot.b32`: bit i of the result is lane i's predicate."""

    name = "nvvm.vote.ballot.sync"
    mask = operand_def(i32)
    pred = operand_def(i1)
    res = result_def(i32)


# ------------------------------------------------------------------------------- math


@irdl_op_definition
class RcpApproxFtzF32Op(IRDLOperation):
    """`rcp.approx.ftz.f32`: the hardware reciprocal (one MUFU.RCP), about 1 ulp, subnormals flushed."""

    name = "nvvm.rcp.approx.ftz.f"
    arg = operand_def(f32)
    res = result_def(f32)

    assembly_format = "$arg attr-dict `:` type($res)"

    def __init__(self, arg: SSAValue | Operation):
        super().__init__(operands=[arg], result_types=[f32])


# --------------------------------------------------------------------------- barriers


@irdl_op_definition
class Barrier0Op(IRDLOperation):
    """`bar.sync 0`: block-wide barrier (`__syncthreads`)."""

    name = "nvvm.barrier0"
    assembly_format = "attr-dict"


@irdl_op_definition
class BarWarpSyncOp(IRDLOperation):
    """`bar.warp.sync mask`."""

    name = "nvvm.bar.warp.sync"
    mask = operand_def(i32)


@irdl_op_definition
class FenceProxyOp(IRDLOperation):
    """`fence.proxy.<kind>[::space]` (sm_90): orders generic- and async-proxy accesses."""

    name = "nvvm.fence.proxy"
    kind = prop_def(ProxyKindAttr)
    space = opt_prop_def(SharedSpaceAttr)

    def verify_(self) -> None:
        needs_space = self.kind.data == ProxyKind.ASYNC_SHARED
        if needs_space != (self.space is not None):
            raise VerifyException(
                f"{self.name}: 'space' is required exactly for async.shared"
            )


# ------------------------------------------------------------------------- async copies


@irdl_op_definition
class CpAsyncOp(IRDLOperation):
    """`cp.async.{ca,cg}.shared.global [dst], [src], size{, cpSize}` (sm_80+).

    `cpSize` < `size` zero-fills the rest of the destination.
    """

    name = "nvvm.cp.async.shared.global"
    dst = operand_def(LLVMPointerType)
    src = operand_def(LLVMPointerType)
    cpSize = opt_operand_def(i32)
    size = prop_def(IntegerAttr[I32])
    modifier = prop_def(LoadCacheModifierAttr)

    def verify_(self) -> None:
        _check_ptr(self, self.dst, SHARED, "dst")
        _check_ptr(self, self.src, GLOBAL, "src")
        size = self.size.value.data
        if size not in (4, 8, 16):
            raise VerifyException(f"{self.name}: size must be 4, 8 or 16, got {size}")
        if self.modifier.data == LoadCacheModifier.CG and size != 16:
            raise VerifyException(
                f"{self.name}: the cg modifier needs size 16, got {size}"
            )
        if self.modifier.data not in (LoadCacheModifier.CA, LoadCacheModifier.CG):
            raise VerifyException(f"{self.name}: modifier must be ca or cg")


@irdl_op_definition
class CpAsyncCommitGroupOp(IRDLOperation):
    name = "nvvm.cp.async.commit.group"
    assembly_format = "attr-dict"


@irdl_op_definition
class CpAsyncWaitGroupOp(IRDLOperation):
    """`cp.async.wait_group n`: wait until at most `n` committed groups are pending."""

    name = "nvvm.cp.async.wait.group"
    n = prop_def(IntegerAttr[I32])


# ------------------------------------------------------------------------- tensor cores


@irdl_op_definition
class LdMatrixOp(IRDLOperation):
    """`ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16`; `layout = col` is `.trans`."""

    name = "nvvm.ldmatrix"
    ptr = operand_def(LLVMPointerType)
    num = prop_def(IntegerAttr[I32])
    layout = prop_def(MMALayoutAttr)
    res = result_def()

    def verify_(self) -> None:
        _check_ptr(self, self.ptr, SHARED, "ptr")
        num = self.num.value.data
        if num not in (1, 2, 4):
            raise VerifyException(f"{self.name}: num must be 1, 2 or 4, got {num}")
        _check_struct(self, self.res.type, [i32] * num, "result")


@irdl_op_definition
class MmaSyncOp(IRDLOperation):
    """`mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32`.

    Only the m16n8k16 f32-accumulator shape tilec selects is supported: A is 4 registers,
    B 2, C 4 f32; f16 operands are `vector<2xf16>`, bf16 operands are i32 with
    `multiplicandAPtxType = #nvvm.mma_type<bf16>` (as upstream).
    """

    name = "nvvm.mma.sync"
    operandA = var_operand_def()
    operandB = var_operand_def()
    operandC = var_operand_def()
    shape = prop_def(MMAShapeAttr)
    layoutA = prop_def(MMALayoutAttr)
    layoutB = prop_def(MMALayoutAttr)
    multiplicandAPtxType = opt_prop_def(MMATypeAttr)
    multiplicandBPtxType = opt_prop_def(MMATypeAttr)
    res = result_def(LLVMStructType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @property
    def element_type(self) -> MMAType:
        if self.multiplicandAPtxType is not None:
            return self.multiplicandAPtxType.data
        return MMAType.BF16 if self.operandA[0].type == i32 else MMAType.F16

    def verify_(self) -> None:
        shape = (self.shape.m.data, self.shape.n.data, self.shape.k.data)
        if shape != (16, 8, 16):
            raise VerifyException(
                f"{self.name}: only m16n8k16 is supported, got {shape}"
            )
        if (self.layoutA.data, self.layoutB.data) != (MMALayout.ROW, MMALayout.COL):
            raise VerifyException(
                f"{self.name}: m16n8k16 needs layoutA = row, layoutB = col"
            )
        ab_type = {MMAType.F16: VectorType(f16, [2]), MMAType.BF16: i32}.get(
            self.element_type
        )
        if ab_type is None:
            raise VerifyException(f"{self.name}: multiplicands must be f16 or bf16")
        for group, count, ty in (
            (self.operandA, 4, ab_type),
            (self.operandB, 2, ab_type),
            (self.operandC, 4, f32),
        ):
            if len(group) != count or any(v.type != ty for v in group):
                got = [str(v.type) for v in group]
                raise VerifyException(
                    f"{self.name}: expected {count} x {ty}, got {got}"
                )
        _check_struct(self, self.res.type, [f32] * 4, "result")


# ------------------------------------------------------------------- warpgroup mma (sm_90a)


@irdl_op_definition
class WgmmaFenceAlignedOp(IRDLOperation):
    """`wgmma.fence.sync.aligned`: before the first wgmma, and between ordinary register
    accesses to an accumulator and a wgmma that uses it."""

    name = "nvvm.wgmma.fence.aligned"
    assembly_format = "attr-dict"


@irdl_op_definition
class WgmmaCommitGroupSyncAlignedOp(IRDLOperation):
    """`wgmma.commit_group.sync.aligned`: the warp's uncommitted wgmmas become one group."""

    name = "nvvm.wgmma.commit.group.sync.aligned"
    assembly_format = "attr-dict"


@irdl_op_definition
class WgmmaWaitGroupSyncOp(IRDLOperation):
    """`wgmma.wait_group.sync.aligned group`: at most `group` committed groups stay pending.

    tilec's form also takes the accumulators the wait completes and returns them: their uses
    must follow the wait, which LLVM only respects when the values pass through it (the
    translation ties them through the inline asm of the wait, as Triton does). With no
    values it is upstream's op.
    """

    name = "nvvm.wgmma.wait.group.sync.aligned"
    values = var_operand_def()
    group = prop_def(IntegerAttr[I64])
    res = var_result_def()

    def verify_(self) -> None:
        if [v.type for v in self.values] != [r.type for r in self.res]:
            raise VerifyException(f"{self.name}: the results are the values, of the same types")
        if self.group.value.data < 0:
            raise VerifyException(f"{self.name}: group must be >= 0")


WGMMA_N = tuple(range(8, 257, 8))


@irdl_op_definition
class WgmmaMmaAsyncOp(IRDLOperation):
    """`wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}` (or `m64nNk32.f32` of
    fp8 `{e4m3,e5m2}` operands, both K-major) with B from a
    shared-memory descriptor and A from one (the SS form) or from four registers of packed
    pairs (the RS form: the accumulator layout's m64 x k16 slice, HOPPER_KERNELS.md §1.4),
    issued by the 128 threads of a warpgroup.

    The result holds the thread's N/2 f32 accumulators (the layout of HOPPER_KERNELS.md §1.4).
    With `inouts` (the accumulators so far) it computes D = A·B + D (scale-d 1); without, D =
    A·B; with `scaleD` as well, D = A·B + D where it is true and D = A·B where it is false (the
    first k-step of a loop whose accumulator starts at zero). `layoutA = row` / `layoutB = col` read K-major tiles (imm-trans 0); `col` / `row`
    read M-major A / N-major B (imm-trans 1). The result is not ready before a
    `wgmma.wait.group` that covers its commit group.
    """

    name = "nvvm.wgmma.mma_async"
    descriptorA = operand_def()  # i64 descriptor (SS), or the RS form's A registers: !llvm.struct<(i32 x 4)>
    descriptorB = operand_def(i64)
    inouts = opt_operand_def(LLVMStructType)
    scaleD = opt_operand_def(i1)  # with inouts: accumulate only where true (false: D = A·B, the inputs ignored)
    shape = prop_def(MMAShapeAttr)
    typeA = prop_def(MMATypeAttr)
    typeB = prop_def(MMATypeAttr)
    layoutA = prop_def(MMALayoutAttr)
    layoutB = prop_def(MMALayoutAttr)
    res = result_def(LLVMStructType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def verify_(self) -> None:
        if self.scaleD is not None and self.inouts is None:
            raise VerifyException(f"{self.name}: scaleD needs the accumulator inputs (inouts)")
        m, n, k = self.shape.m.data, self.shape.n.data, self.shape.k.data
        fp8 = (MMAType.E4M3, MMAType.E5M2)
        want_k = 32 if self.typeA.data in fp8 else 16
        if m != 64 or k != want_k or n not in WGMMA_N:
            raise VerifyException(f"{self.name}: the shape must be m64nNk{want_k} with N a multiple of 8 up to 256, "
                                  f"got m{m}n{n}k{k}")
        if self.typeA.data in fp8:  # fp8: e4m3 / e5m2 in any pairing, both operands K-major
            if self.typeB.data not in fp8:
                raise VerifyException(f"{self.name}: an fp8 A needs an fp8 B (e4m3 or e5m2)")
            if self.layoutA.data != MMALayout.ROW or self.layoutB.data != MMALayout.COL:
                raise VerifyException(f"{self.name}: fp8 operands must be K-major (layoutA = row, layoutB = col)")
        elif self.typeA.data not in (MMAType.F16, MMAType.BF16) or self.typeB.data != self.typeA.data:
            raise VerifyException(f"{self.name}: A and B must both be f16 or both bf16")
        if self.descriptorA.type != i64:
            _check_struct(self, self.descriptorA.type, [i32] * 4, "descriptorA (register A)")
            if self.layoutA.data != MMALayout.ROW:
                raise VerifyException(f"{self.name}: register A operands are K-major (layoutA = row)")
        _check_struct(self, self.res.type, [f32] * (n // 2), "result")
        if self.inouts is not None:
            _check_struct(self, self.inouts.type, [f32] * (n // 2), "inouts")
