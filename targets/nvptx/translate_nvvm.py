"""NVPTX translations of tilec's `nvvm` dialect (`dialects/nvvm/`): each op becomes the
LLVM NVVM intrinsic of the same name (checked against LLVM 22 in llvmlite 0.50)."""

from __future__ import annotations

from llvmlite import ir
from tilec.dialects import nvvm

from .translate import FunctionTranslator as T
from .translate import MEMBER_READERS, lowers

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
F32 = ir.FloatType()
VOID = ir.VoidType()


def _sreg(t: T, op) -> None:
    t.set(
        op, t.call(f"llvm.{op.name}", I32, [])
    )  # nvvm.read.ptx.sreg.tid.x → llvm.nvvm…


for _op in nvvm.SREG_OPS.values():
    lowers(_op)(_sreg)


@lowers(nvvm.ShflSyncOp)
def _shfl(t: T, op: nvvm.ShflSyncOp) -> None:
    mask, val, offset, clamp = t.operands(op)
    suffix = "f32" if isinstance(val.type, ir.FloatType) else "i32"
    name = f"llvm.nvvm.shfl.sync.{op.kind.data.value}.{suffix}"
    if op.return_value_and_is_valid is None:
        t.set(op, t.call(name, val.type, [mask, val, offset, clamp]))
    else:
        t.set(
            op,
            t.call(
                name + "p",
                ir.LiteralStructType([val.type, I1]),
                [mask, val, offset, clamp],
            ),
        )


@lowers(nvvm.ReduxSyncOp)
def _redux(t: T, op: nvvm.ReduxSyncOp) -> None:
    t.set(op, t.call(f"llvm.nvvm.redux.sync.{op.kind.data.value}", I32, t.operands(op)))


@lowers(nvvm.VoteBallotOp)
def _ballot(t: T, op: nvvm.VoteBallotOp) -> None:
    t.set(op, t.call("llvm.nvvm.vote.ballot.sync", I32, t.operands(op)))


@lowers(nvvm.RcpApproxFtzF32Op)
def _rcp_approx(t: T, op: nvvm.RcpApproxFtzF32Op) -> None:
    t.set(op, t.call("llvm.nvvm.rcp.approx.ftz.f", F32, t.operands(op)))


@lowers(nvvm.Barrier0Op)
def _barrier0(t: T, op: nvvm.Barrier0Op) -> None:
    t.call("llvm.nvvm.barrier0", VOID, [])


@lowers(nvvm.BarWarpSyncOp)
def _bar_warp_sync(t: T, op: nvvm.BarWarpSyncOp) -> None:
    t.call("llvm.nvvm.bar.warp.sync", VOID, t.operands(op))


@lowers(nvvm.FenceProxyOp)
def _fence_proxy(t: T, op: nvvm.FenceProxyOp) -> None:
    name = "llvm.nvvm.fence.proxy." + op.kind.data.value.replace(".", "_")
    if (
        op.space is not None
    ):  # async.shared::cta → llvm.nvvm.fence.proxy.async_shared_cta
        name = f"llvm.nvvm.fence.proxy.async.shared_{op.space.data.value}"
    t.call(name, VOID, [])


@lowers(nvvm.CpAsyncOp)
def _cp_async(t: T, op: nvvm.CpAsyncOp) -> None:
    name = f"llvm.nvvm.cp.async.{op.modifier.data.value}.shared.global.{op.size.value.data}"
    args = t.operands(op)
    t.call(name + (".s" if op.cpSize is not None else ""), VOID, args)


@lowers(nvvm.CpAsyncCommitGroupOp)
def _cp_async_commit(t: T, op) -> None:
    t.call("llvm.nvvm.cp.async.commit.group", VOID, [])


@lowers(nvvm.CpAsyncWaitGroupOp)
def _cp_async_wait(t: T, op: nvvm.CpAsyncWaitGroupOp) -> None:
    t.call("llvm.nvvm.cp.async.wait.group", VOID, [I32(op.n.value.data)])


@lowers(nvvm.LdMatrixOp)
def _ldmatrix(t: T, op: nvvm.LdMatrixOp) -> None:
    num = op.num.value.data
    trans = ".trans" if op.layout.data == nvvm.MMALayout.COL else ""
    ret = I32 if num == 1 else ir.LiteralStructType([I32] * num)
    name = f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{num}{trans}.b16.p3"
    t.set(op, t.call(name, ret, t.operands(op)))


@lowers(nvvm.MmaSyncOp)
def _mma(t: T, op: nvvm.MmaSyncOp) -> None:
    # f16 inputs: the intrinsic is named by the D and C types; bf16 by the input type.
    suffix = "bf16" if op.element_type == nvvm.MMAType.BF16 else "f32.f32"
    name = f"llvm.nvvm.mma.m16n8k16.row.col.{suffix}"
    t.set(op, t.call(name, ir.LiteralStructType([ir.FloatType()] * 4), t.operands(op)))


# ------------------------------------------------------------------- warpgroup mma (sm_90a)


@lowers(nvvm.WgmmaFenceAlignedOp)
def _wgmma_fence(t: T, op) -> None:
    _fence_operands(t, op)
    t.call("llvm.nvvm.wgmma.fence.sync.aligned", VOID, [])


def _fence_operands(t: T, op: nvvm.WgmmaFenceAlignedOp) -> None:
    """Give the accumulator inputs of the wgmmas the fence precedes (up to their commit) registers
    of their own before the fence. The wgmma ties each input to its output, so an input that is
    not a register of its own (a constant, or a value standing in two places, as a masked init's
    -inf and 0 do) is copied into one right at the wgmma, after the fence; ptxas then finds
    registers written between the fence and the wgmma and injects a warpgroup.arrive of its own
    (C7519), which serializes the wgmmas. An empty inline asm taking and returning each input
    (CUTLASS's warpgroup_fence_operand) makes those copies before the fence instead: for every
    64-row block's first wgmma (the later k steps take the wgmmas' own results)."""
    wgmma = op.next_op
    while wgmma is not None and not isinstance(wgmma, nvvm.WgmmaCommitGroupSyncAlignedOp | nvvm.WgmmaFenceAlignedOp):
        if isinstance(wgmma, nvvm.WgmmaMmaAsyncOp) and wgmma.inouts is not None and wgmma.inouts in t.values:
            _fence_operand(t, wgmma.inouts)
        wgmma = wgmma.next_op


def _fence_operand(t: T, inouts) -> None:
    flat, _ = _scalars(t, [t.get(inouts)])
    outs = ",".join("=" + _CONSTRAINT[str(v.type)] for v in flat)
    ties = ",".join(str(i) for i in range(len(flat)))
    res = t.b.asm(ir.FunctionType(t.types.struct([v.type for v in flat]), [v.type for v in flat]), "",
                  f"{outs},{ties}", flat, True)
    agg, build = ir.Constant(t.get(inouts).type, ir.Undefined), not t.reads_members_only(inouts)
    for i in range(len(flat)):
        agg = t.insert_value(agg, t.b.extract_value(res, i), i, build=build)
    t.values[inouts] = agg


@lowers(nvvm.WgmmaCommitGroupSyncAlignedOp)
def _wgmma_commit(t: T, op) -> None:
    t.call("llvm.nvvm.wgmma.commit_group.sync.aligned", VOID, [])


_CONSTRAINT = {"float": "f", "i32": "r", "i64": "l", "double": "d"}


def _scalars(t: T, values: list[ir.Value]) -> tuple[list[ir.Value], list[int | None]]:
    """The scalars of `values` (struct members in order) and each value's member count (None: scalar)."""
    flat, counts = [], []
    for v in values:
        if isinstance(v.type, ir.BaseStructType):
            counts.append(len(v.type.elements))
            flat += [t.extract_value(v, i) for i in range(len(v.type.elements))]
        else:
            counts.append(None)
            flat.append(v)
    return flat, counts


@lowers(nvvm.WgmmaWaitGroupSyncOp)
def _wgmma_wait(t: T, op: nvvm.WgmmaWaitGroupSyncOp) -> None:
    """With values: inline asm that takes and returns them all, tied, so that no use of an
    accumulator can move above the wait (HOPPER_KERNELS.md §1.6)."""
    group = op.group.value.data
    if not op.values:
        t.call("llvm.nvvm.wgmma.wait_group.sync.aligned", VOID, [ir.Constant(I64, group)])
        return
    flat, counts = _scalars(t, t.operands(op))
    outs = ",".join("=" + _CONSTRAINT[str(v.type)] for v in flat)
    ties = ",".join(str(i) for i in range(len(flat)))
    ret = flat[0].type if len(flat) == 1 else t.types.struct([v.type for v in flat])
    res = _aligned_asm(t, ir.FunctionType(ret, [v.type for v in flat]), f"wgmma.wait_group.sync.aligned {group};",
                       f"{outs},{ties},~{{memory}}", flat)
    scalars = [res] if len(flat) == 1 else [t.b.extract_value(res, i) for i in range(len(flat))]
    results, at = [], 0
    for count, value in zip(counts, t.operands(op)):
        if count is None:
            results.append(scalars[at])
            at += 1
            continue
        agg = ir.Constant(value.type, ir.Undefined)
        build = not t.reads_members_only(op.results[len(results)])
        for i in range(count):
            agg = t.insert_value(agg, scalars[at + i], i, build=build)
        results.append(agg)
        at += count
    t.set(op, *results)


MEMBER_READERS[nvvm.WgmmaWaitGroupSyncOp] = lambda op, index: True  # every operand, by `_scalars`
MEMBER_READERS[nvvm.WgmmaMmaAsyncOp] = lambda op, index: op.operands[index] in (op.inouts, op.descriptorA)


@lowers(nvvm.WgmmaMmaAsyncOp)
def _wgmma_mma_async(t: T, op: nvvm.WgmmaMmaAsyncOp) -> None:
    """Inline PTX (LLVM has no intrinsic): the N/2 accumulators are outputs, tied to the
    incoming ones when accumulating (scale-d 1), else scale-d 0 and no inputs. The RS form
    takes A as four b32 registers and has no imm-trans-a."""
    n, k = op.shape.n.data, op.shape.k.data
    outs = n // 2
    type_a, type_b = op.typeA.data.value, op.typeB.data.value
    trans_a = int(op.layoutA.data == nvvm.MMALayout.COL)
    trans_b = int(op.layoutB.data == nvvm.MMALayout.ROW)
    args, constraints = [], ["=f"] * outs
    if op.inouts is not None:
        acc, _ = _scalars(t, [t.get(op.inouts)])
        args += acc
        constraints += [str(i) for i in range(outs)]
    first = outs + len(args)
    a_regs, _ = _scalars(t, [t.get(op.descriptorA)])
    args += [*a_regs, t.get(op.descriptorB)]
    constraints += ["r"] * 4 + ["l"] if len(a_regs) == 4 else ["l", "l"]
    regs = ", ".join(f"${i}" for i in range(outs))
    if len(a_regs) == 4:
        a_text = "{" + ", ".join(f"${first + i}" for i in range(4)) + "}"
        b_at, trans = first + 4, f"{trans_b}"
    else:
        a_text, b_at, trans = f"${first}", first + 1, f"{trans_a}, {trans_b}"
    scale = str(int(op.inouts is not None))
    if op.scaleD is not None:  # a run-time predicate ("b": an i1 in a .pred register)
        args.append(t.get(op.scaleD))
        constraints.append("b")
        scale = f"${len(args) + outs - 1}"
    fp8 = type_a in ("e4m3", "e5m2")  # 8-bit operands have no imm-trans (always K-major)
    text = (f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{type_a}.{type_b} {{{regs}}}, {a_text}, ${b_at}, "
            f"{scale}, 1, 1" + ("" if fp8 else f", {trans}") + ";")
    ret = t.types.struct([ir.FloatType()] * outs)
    t.set(op, _aligned_asm(t, ir.FunctionType(ret, [a.type for a in args]), text, ",".join(constraints), args))


def _aligned_asm(t: T, ftype: ir.FunctionType, text: str, constraints: str, args: list) -> ir.Value:
    """Inline PTX of a `.sync.aligned` instruction, every thread of the warp running this one
    instruction: a `convergent` call, which LLVM does not duplicate into branches of their own
    (tail duplication copied a wait after a diamond of guarded stores into both sides)."""
    return t.b.call(ir.InlineAsm(ftype, text, constraints, True), args, attrs=("convergent",))


@lowers(nvvm.MBarrierInitSharedOp)
def _mbarrier_init(t: T, op) -> None:
    t.call("llvm.nvvm.mbarrier.init.shared", VOID, t.operands(op))


@lowers(nvvm.MBarrierArriveSharedOp)
def _mbarrier_arrive(t: T, op) -> None:
    t.set(op, t.call("llvm.nvvm.mbarrier.arrive.shared", I64, t.operands(op)))


@lowers(nvvm.CpAsyncMBarrierArriveSharedOp)
def _cp_async_mbarrier_arrive(t: T, op: nvvm.CpAsyncMBarrierArriveSharedOp) -> None:
    noinc = ".noinc" if op.noinc is not None else ""
    t.call(f"llvm.nvvm.cp.async.mbarrier.arrive{noinc}.shared", VOID, t.operands(op))


@lowers(nvvm.MBarrierTryWaitParitySharedOp)
def _mbarrier_wait(t: T, op: nvvm.MBarrierTryWaitParitySharedOp) -> None:
    """loop: done = try_wait.parity(addr, phase); br done, exit, loop. The suspend-time
    hint `ticks` is dropped: LLVM 22's intrinsic has no operand for it."""
    addr, phase, _ticks = t.operands(op)
    loop, exit_ = (
        t.fn.append_basic_block("mbar.wait"),
        t.fn.append_basic_block("mbar.done"),
    )
    t.b.branch(loop)
    t.b.position_at_end(loop)
    done = t.call(
        "llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta", I1, [addr, phase]
    )
    t.b.cbranch(done, exit_, loop)
    t.b.position_at_end(exit_)


@lowers(nvvm.MBarrierArriveExpectTxSharedOp)
def _mbarrier_expect_tx(t: T, op) -> None:
    t.call("llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta", I64, t.operands(op))


@lowers(nvvm.FenceMbarrierInitOp)
def _fence_mbarrier_init(t: T, op) -> None:
    t.call("llvm.nvvm.fence.mbarrier_init.release.cluster", VOID, [])


# ------------------------------------------------------------------------- clusters (sm_90)


@lowers(nvvm.MapaSharedClusterOp)
def _mapa(t: T, op: nvvm.MapaSharedClusterOp) -> None:
    t.set(op, t.call("llvm.nvvm.mapa.shared.cluster", ir.PointerType(addrspace=7), t.operands(op)))


@lowers(nvvm.MBarrierArriveClusterOp)
def _mbarrier_arrive_cluster(t: T, op) -> None:
    """`mbarrier.arrive.shared::cluster.b64` at the default .cta scope, as CUTLASS's ClusterBarrier
    arrives: .cluster scope costs a MEMBAR.ALL.GPU per arrival."""
    t.call("llvm.nvvm.mbarrier.arrive.scope.cta.space.cluster", VOID, t.operands(op))


@lowers(nvvm.ClusterArriveOp)
def _cluster_arrive(t: T, op) -> None:
    t.call("llvm.nvvm.barrier.cluster.arrive", VOID, [])


@lowers(nvvm.ClusterWaitOp)
def _cluster_wait(t: T, op) -> None:
    t.call("llvm.nvvm.barrier.cluster.wait", VOID, [])


# ------------------------------------------------------------------------------ TMA (sm_90)

I16 = ir.IntType(16)


@lowers(nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp)
def _tma_load(t: T, op: nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp) -> None:
    """`llvm.nvvm.cp.async.bulk.tensor.g2s.tile.Nd(dst (shared::cluster), mbar, tmap, coords…,
    ctaMask, cacheHint, useMask, useHint, ctaGroup)` (LLVM 22)."""
    dst = t.b.addrspacecast(t.get(op.dstMem), ir.PointerType(addrspace=7))
    coords = [t.get(c) for c in op.coordinates]
    mask = t.get(op.multicastMask) if op.multicastMask is not None else I16(0)
    hint = t.get(op.l2CacheHint) if op.l2CacheHint is not None else I64(0)
    name = f"llvm.nvvm.cp.async.bulk.tensor.g2s.tile.{len(coords)}d"
    t.call(name, VOID, [dst, t.get(op.mbar), t.get(op.tmaDescriptor), *coords, mask, hint,
                        I1(op.multicastMask is not None), I1(op.l2CacheHint is not None), I32(0)])


@lowers(nvvm.CpAsyncBulkTensorSharedCTAToGlobalOp)
def _tma_store(t: T, op: nvvm.CpAsyncBulkTensorSharedCTAToGlobalOp) -> None:
    coords = [t.get(c) for c in op.coordinates]
    name = f"llvm.nvvm.cp.async.bulk.tensor.s2g.tile.{len(coords)}d"
    t.call(name, VOID, [t.get(op.srcMem), t.get(op.tmaDescriptor), *coords, I64(0), I1(0)])


@lowers(nvvm.CpAsyncBulkCommitGroupOp)
def _bulk_commit(t: T, op) -> None:
    t.call("llvm.nvvm.cp.async.bulk.commit.group", VOID, [])


@lowers(nvvm.CpAsyncBulkWaitGroupOp)
def _bulk_wait(t: T, op: nvvm.CpAsyncBulkWaitGroupOp) -> None:
    name = "llvm.nvvm.cp.async.bulk.wait.group" + (".read" if op.read is not None else "")
    t.call(name, VOID, [I32(op.group.value.data)])


@lowers(nvvm.PrefetchTensorMapOp)
def _prefetch_tensormap(t: T, op) -> None:
    t.call("llvm.nvvm.prefetch.tensormap.p0", VOID, t.operands(op))


# --------------------------------------------------------------- warp specialization (sm_90a)


@lowers(nvvm.SetMaxRegisterOp)
def _setmaxnreg(t: T, op: nvvm.SetMaxRegisterOp) -> None:
    way = "inc" if op.action.data == nvvm.SetMaxRegisterAction.INCREASE else "dec"
    t.call(f"llvm.nvvm.setmaxnreg.{way}.sync.aligned.u32", VOID, [I32(op.regCount.value.data)])


@lowers(nvvm.ElectSyncOp)
def _elect_sync(t: T, op) -> None:
    pair = t.call("llvm.nvvm.elect.sync", ir.LiteralStructType([I32, I1]), [I32(-1)])
    t.set(op, t.b.extract_value(pair, 1))


@lowers(nvvm.BarrierOp)
def _named_barrier(t: T, op: nvvm.BarrierOp) -> None:
    if op.barrierId is None and op.numberOfThreads is None:
        t.call("llvm.nvvm.barrier0", VOID, [])
        return
    bar = t.get(op.barrierId) if op.barrierId is not None else I32(0)
    form = "" if op.unaligned is not None else ".aligned"  # barrier.sync: reached from different code
    t.call(f"llvm.nvvm.barrier.cta.sync{form}.count", VOID, [bar, t.get(op.numberOfThreads)])


@lowers(nvvm.BarrierArriveOp)
def _named_barrier_arrive(t: T, op: nvvm.BarrierArriveOp) -> None:
    t.call("llvm.nvvm.barrier.cta.arrive.aligned.count", VOID, [t.get(op.barrierId), t.get(op.numberOfThreads)])


@lowers(nvvm.StMatrixOp)
def _stmatrix(t: T, op: nvvm.StMatrixOp) -> None:
    trans = ".trans" if op.layout.data == nvvm.MMALayout.COL else ""
    name = f"llvm.nvvm.stmatrix.sync.aligned.m8n8.x{len(op.sources)}{trans}.b16.p3"
    t.call(name, VOID, t.operands(op))
