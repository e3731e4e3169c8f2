"""NVPTX translations of the upstream dialects in thread-level IR: arith, memref,
vector, gpu, func and the few `llvm`/`builtin` ops tilec uses (see `translate.py` for the
IR conventions). Each function is registered in the dispatch table with `@lowers`."""

from __future__ import annotations

from llvmlite import ir
from tilec.dialects.tile import AtomicRMWKind
from xdsl.dialects import arith, builtin, func, gpu, llvm, memref, vector
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    MemRefType,
)

from .translate import BFloatType, TranslationError, error, lowers
from .translate import FunctionTranslator as T

# ------------------------------------------------------------------------------ helpers


def byte_size(ty: ir.Type) -> int:
    match ty:
        case ir.IntType():
            return max(ty.width // 8, 1)
        case ir.VectorType():
            return ty.count * byte_size(ty.element)
        case ir.ArrayType():
            return ty.count * byte_size(ty.element)
        case ir.HalfType() | ir.FloatType() | ir.DoubleType():
            return {ir.HalfType(): 2, ir.FloatType(): 4}.get(ty, 8)
        case ir.PointerType():
            return 8
        case BFloatType():
            return 2
    raise TranslationError(f"no byte size for {ty}")


def splat(ty: ir.Type, value) -> ir.Constant:
    """A scalar constant, or a splat of it for vector types."""
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
    return ir.Constant(ty, value)


def type_suffix(ty: ir.Type) -> str:
    """The overload suffix of an LLVM intrinsic: i32, f32, bf16, v4f32 …"""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{type_suffix(ty.element)}"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    return ty.intrinsic_name


def fastmath(op) -> list[str]:
    flags = getattr(op, "fastmath", None)
    names = sorted(str(f) for f in flags.data) if flags is not None else []
    return ["fast"] if len(names) == 7 else names


def overflow(op) -> list[str]:
    flags = getattr(op, "overflow_flags", None)
    return sorted(str(f) for f in flags.data) if flags is not None else []


def address(
    t: T, ref, indices, ty: MemRefType, *, elem: ir.Type | None = None
) -> ir.Value:
    """`inbounds` GEP to element `indices` of an identity-layout memref."""
    base = t.get(ref)
    shape = ty.get_shape()
    offset: ir.Value | None = None
    for dim, idx in enumerate(indices):
        value = t.get(idx)
        if offset is not None:
            if shape[dim] < 0:
                raise TranslationError(
                    f"only the leading dimension may be dynamic, got {ty}"
                )
            offset = t.b.mul(offset, t.index(shape[dim]), flags=["nsw"])
            value = t.b.add(offset, value, flags=["nsw"])
        offset = value
    if offset is None:
        return base
    return t.b.gep(
        base, [offset], inbounds=True, source_etype=elem or t.types.element(ty)
    )


def vector_align(op, vec: ir.VectorType) -> int:
    if isinstance(attr := op.attributes.get("alignment"), IntegerAttr):
        return attr.value.data
    size = byte_size(vec)
    return min(1 << (size.bit_length() - 1), 16)


# -------------------------------------------------------------------------------- arith

_INT_BINOPS = {
    arith.AddiOp: "add",
    arith.SubiOp: "sub",
    arith.MuliOp: "mul",
    arith.DivSIOp: "sdiv",
    arith.DivUIOp: "udiv",
    arith.RemSIOp: "srem",
    arith.RemUIOp: "urem",
    arith.AndIOp: "and_",
    arith.OrIOp: "or_",
    arith.XOrIOp: "xor",
    arith.ShLIOp: "shl",
    arith.ShRSIOp: "ashr",
    arith.ShRUIOp: "lshr",
}
_FLOAT_BINOPS = {
    arith.AddfOp: "fadd",
    arith.SubfOp: "fsub",
    arith.MulfOp: "fmul",
    arith.DivfOp: "fdiv",
}
_INTRINSIC_BINOPS = {
    arith.MaximumfOp: "maximum",
    arith.MinimumfOp: "minimum",
    arith.MaxnumfOp: "maxnum",
    arith.MinnumfOp: "minnum",
    arith.MaxSIOp: "smax",
    arith.MinSIOp: "smin",
    arith.MaxUIOp: "umax",
    arith.MinUIOp: "umin",
}


@lowers(*_INT_BINOPS)
def _int_binop(t: T, op) -> None:
    lhs, rhs = t.operands(op)
    flags = (
        overflow(op)
        if op.name in ("arith.addi", "arith.subi", "arith.muli", "arith.shli")
        else []
    )
    t.set(op, getattr(t.b, _INT_BINOPS[type(op)])(lhs, rhs, flags=flags))


_CONTRACTIBLE = (arith.AddfOp, arith.SubfOp, arith.MulfOp)


@lowers(*_FLOAT_BINOPS)
def _float_binop(t: T, op) -> None:
    lhs, rhs = t.operands(op)
    flags = fastmath(op)
    if t.options.fp_contract and isinstance(op, _CONTRACTIBLE) and "contract" not in flags and "fast" not in flags:
        flags = [*flags, "contract"]  # a multiply feeding an add may become one fma (nvcc's --fmad=true)
    t.set(op, getattr(t.b, _FLOAT_BINOPS[type(op)])(lhs, rhs, flags=flags))


@lowers(*_INTRINSIC_BINOPS)
def _intrinsic_binop(t: T, op) -> None:
    lhs, rhs = t.operands(op)
    name = f"llvm.{_INTRINSIC_BINOPS[type(op)]}.{type_suffix(lhs.type)}"
    t.set(op, t.call(name, lhs.type, [lhs, rhs], fastmath=fastmath(op)))


@lowers(arith.NegfOp)
def _negf(t: T, op: arith.NegfOp) -> None:
    t.set(op, t.b.fneg(t.get(op.operand), flags=fastmath(op)))


@lowers(arith.FloorDivSIOp, arith.CeilDivSIOp, arith.CeilDivUIOp)
def _rounding_div(t: T, op) -> None:
    """q = a / b (truncating), adjusted by one when the remainder is non-zero and the exact
    quotient is negative (floor) or positive (ceil)."""
    a, b = t.operands(op)
    zero, one = splat(a.type, 0), splat(a.type, 1)
    if isinstance(op, arith.CeilDivUIOp):
        q, r = t.b.udiv(a, b), t.b.urem(a, b)
        t.set(op, t.b.add(q, t.b.zext(t.b.icmp_unsigned("!=", r, zero), a.type)))
        return
    q, r = t.b.sdiv(a, b), t.b.srem(a, b)
    nonzero = t.b.icmp_signed("!=", r, zero)
    signs_differ = t.b.icmp_signed(
        "!=", t.b.icmp_signed("<", r, zero), t.b.icmp_signed("<", b, zero)
    )
    if isinstance(op, arith.FloorDivSIOp):
        t.set(op, t.b.sub(q, t.b.select(t.b.and_(nonzero, signs_differ), one, zero)))
    else:
        t.set(
            op,
            t.b.add(
                q, t.b.select(t.b.and_(nonzero, t.b.not_(signs_differ)), one, zero)
            ),
        )


_ICMP = ["==", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">="]
_FCMP = [
    "false",
    "==",
    ">",
    ">=",
    "<",
    "<=",
    "!=",
    "ord",
    "==",
    ">",
    ">=",
    "<",
    "<=",
    "!=",
    "uno",
    "true",
]


@lowers(arith.CmpiOp)
def _cmpi(t: T, op: arith.CmpiOp) -> None:
    pred = op.predicate.value.data
    lhs, rhs = t.operands(op)
    cmp = t.b.icmp_signed if pred < 6 else t.b.icmp_unsigned
    t.set(op, cmp(_ICMP[pred], lhs, rhs))


@lowers(arith.CmpfOp)
def _cmpf(t: T, op: arith.CmpfOp) -> None:
    pred = op.predicate.value.data
    lhs, rhs = t.operands(op)
    if _FCMP[pred] in ("false", "true"):
        i1 = ir.IntType(1)
        ty = (
            ir.VectorType(i1, lhs.type.count)
            if isinstance(lhs.type, ir.VectorType)
            else i1
        )
        t.set(op, splat(ty, int(_FCMP[pred] == "true")))
        return
    cmp = t.b.fcmp_ordered if pred < 8 else t.b.fcmp_unordered
    t.set(op, cmp(_FCMP[pred], lhs, rhs, flags=fastmath(op)))


@lowers(arith.SelectOp)
def _select(t: T, op: arith.SelectOp) -> None:
    t.set(op, t.b.select(*t.operands(op)))


_CASTS = {
    arith.ExtFOp: "fpext",
    arith.TruncFOp: "fptrunc",
    arith.ExtSIOp: "sext",
    arith.ExtUIOp: "zext",
    arith.TruncIOp: "trunc",
    arith.SIToFPOp: "sitofp",
    arith.UIToFPOp: "uitofp",
    arith.FPToSIOp: "fptosi",
    arith.FPToUIOp: "fptoui",
    arith.BitcastOp: "bitcast",
    vector.BitcastOp: "bitcast",
    llvm.BitcastOp: "bitcast",
}


@lowers(*_CASTS)
def _cast(t: T, op) -> None:
    (value,) = t.operands(op)
    t.set(op, getattr(t.b, _CASTS[type(op)])(value, t.types(op.results[0].type)))


@lowers(arith.IndexCastOp)
def _index_cast(t: T, op: arith.IndexCastOp) -> None:
    value, ty = t.get(op.input), t.types(op.result.type)
    src = value.type.element if isinstance(value.type, ir.VectorType) else value.type
    dst = ty.element if isinstance(ty, ir.VectorType) else ty
    if src.width == dst.width:
        t.set(op, value)
    else:
        t.set(
            op, t.b.sext(value, ty) if dst.width > src.width else t.b.trunc(value, ty)
        )


@lowers(arith.ConstantOp)
def _constant(t: T, op: arith.ConstantOp) -> None:
    ty, attr = t.types(op.result.type), op.value
    if isinstance(attr, (IntegerAttr, FloatAttr)):
        t.set(op, ir.Constant(ty, attr.value.data))
    elif isinstance(attr, DenseIntOrFPElementsAttr) and isinstance(ty, ir.VectorType):
        values = attr.get_values()
        values = values * ty.count if len(values) == 1 else values
        t.set(op, ir.Constant(ty, [ir.Constant(ty.element, v) for v in values]))
    else:
        raise error(op, f"unsupported constant {attr}")


# ------------------------------------------------------------------------------- memref


@lowers(memref.LoadOp)
def _load(t: T, op: memref.LoadOp) -> None:
    ty = t.types(op.res.type)
    ptr = address(t, op.memref, op.indices, op.memref.type)
    t.set(op, t.b.load(ptr, typ=ty, align=byte_size(ty)))


@lowers(memref.StoreOp)
def _store(t: T, op: memref.StoreOp) -> None:
    value = t.get(op.value)
    ptr = address(t, op.memref, op.indices, op.memref.type)
    t.b.store(value, ptr, align=byte_size(value.type))


@lowers(memref.AllocaOp)
def _alloca(t: T, op: memref.AllocaOp) -> None:
    ty: MemRefType = op.memref.type
    if op.dynamic_sizes:
        raise error(op, "per-thread arrays must have a static shape")
    count = 1
    for dim in ty.get_shape():
        count *= dim
    align = op.alignment.value.data if op.alignment is not None else 16
    t.set(op, t.alloca(ir.ArrayType(t.types.element(ty), count), align))


@lowers(memref.GetGlobalOp)
def _get_global(t: T, op: memref.GetGlobalOp) -> None:
    t.set(op, t.mt.globals[op.name_.root_reference.data])


@lowers(memref.ViewOp)
def _view(t: T, op: memref.ViewOp) -> None:
    ptr = t.b.gep(
        t.get(op.source),
        [t.get(op.byte_shift)],
        inbounds=True,
        source_etype=ir.IntType(8),
    )
    t.set(op, ptr)


@lowers(memref.CastOp)
def _memref_cast(t: T, op) -> None:
    t.set(op, t.get(op.source))


@lowers(memref.ExtractAlignedPointerAsIndexOp)
def _extract_pointer(t: T, op) -> None:
    t.set(op, t.b.ptrtoint(t.get(op.source), t.types.index))


_RMW = AtomicRMWKind
_ATOMIC_KINDS = {_RMW.ADDF: "fadd", _RMW.ADDI: "add", _RMW.ASSIGN: "xchg", _RMW.MAXIMUMF: "fmaximum",
                 _RMW.MAXS: "max", _RMW.MAXU: "umax", _RMW.MINIMUMF: "fminimum", _RMW.MINS: "min",
                 _RMW.MINU: "umin", _RMW.ORI: "or", _RMW.ANDI: "and", _RMW.MAXNUMF: "fmax",
                 _RMW.MINNUMF: "fmin"}  # fmt: skip
"""LLVM's `atomicrmw` operation of each `memref.atomic_rmw` kind (mulf / muli have none)."""


@lowers(memref.AtomicRMWOp)
def _atomic_rmw(t: T, op: memref.AtomicRMWOp) -> None:
    kind = op.kind.value.data
    rmw = _ATOMIC_KINDS.get(kind)
    if rmw is None:
        name = AtomicRMWKind(kind).name.lower() if kind in set(AtomicRMWKind) else str(kind)
        raise error(op, f"atomic kind {kind} ({name}) has no LLVM atomicrmw")
    ptr = address(t, op.memref, op.indices, op.memref.type)
    value = t.get(op.value)
    if rmw in ("fmax", "fmin", "fmaximum", "fminimum") and isinstance(value.type, ir.HalfType | BFloatType):
        t.set(op, _half_minmax_loop(t, rmw, ptr, value))
        return
    t.set(op, t.b.atomic_rmw(rmw, ptr, value, "monotonic"))


_MINMAX = {"fmax": "llvm.maxnum", "fmin": "llvm.minnum", "fmaximum": "llvm.maximum", "fminimum": "llvm.minimum"}


def _half_minmax_loop(t: T, rmw: str, ptr: ir.Value, value: ir.Value) -> ir.Value:
    """A 16-bit float atomic min/max as a compare-and-swap loop on the 32-bit word holding it,
    the min/max recomputed from each freshly read word. (LLVM 22's own expansion of
    `atomicrmw fmax half` computes the new value once, before its loop, and so loses updates
    made by other threads between its load and its swap: found by the fuzzer on the H200.)"""
    i16, i32, i64 = ir.IntType(16), ir.IntType(32), ir.IntType(64)
    b = t.b
    space = ptr.type.addrspace
    addr = b.ptrtoint(ptr, i64)
    word = b.inttoptr(b.and_(addr, i64(-4)), ir.PointerType(addrspace=space))
    shift = b.trunc(b.shl(b.and_(addr, i64(2)), i64(3)), i32)
    keep = b.not_(b.shl(i32(0xFFFF), shift))
    start = b.load(word, typ=i32, align=4)
    entry = b.block
    loop, done = t.fn.append_basic_block("minmax.cas"), t.fn.append_basic_block("minmax.done")
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(i32)
    old.add_incoming(start, entry)
    current = b.bitcast(b.trunc(b.lshr(old, shift), i16), value.type)
    name = f"{_MINMAX[rmw]}.{'f16' if isinstance(value.type, ir.HalfType) else 'bf16'}"
    fn = t.intrinsic(name, value.type, [value.type, value.type])
    combined = b.call(fn, [current, value])
    new = b.or_(b.and_(old, keep), b.shl(b.zext(b.bitcast(combined, i16), i32), shift))
    pair = b.cmpxchg(word, old, new, "monotonic", "monotonic")
    seen, ok = b.extract_value(pair, 0), b.extract_value(pair, 1)
    old.add_incoming(seen, loop)
    b.cbranch(ok, done, loop)
    b.position_at_end(done)
    return current


# ------------------------------------------------------------------------------- vector


@lowers(vector.LoadOp)
def _vector_load(t: T, op: vector.LoadOp) -> None:
    ty = t.types(op.result.type)
    ptr = address(t, op.base, op.indices, op.base.type)
    t.set(op, t.b.load(ptr, typ=ty, align=vector_align(op, ty)))


@lowers(vector.StoreOp)
def _vector_store(t: T, op: vector.StoreOp) -> None:
    value = t.get(op.vector)
    ptr = address(t, op.base, op.indices, op.base.type)
    t.b.store(value, ptr, align=vector_align(op, value.type))


def _position(t: T, op) -> ir.Value | None:
    static = op.static_position.get_values()
    if not static:
        return None
    if len(static) != 1:
        raise error(op, "only 1-D vectors are supported")
    if static[0] == DYNAMIC_INDEX:
        return t.get(op.dynamic_position[0])
    return ir.IntType(32)(static[0])


@lowers(vector.ExtractOp)
def _extract(t: T, op: vector.ExtractOp) -> None:
    pos = _position(t, op)
    value = t.get(op.vector)
    t.set(op, value if pos is None else t.b.extract_element(value, pos))


@lowers(vector.InsertOp)
def _insert(t: T, op: vector.InsertOp) -> None:
    pos = _position(t, op)
    source = t.get(op.source)
    t.set(
        op, source if pos is None else t.b.insert_element(t.get(op.dest), source, pos)
    )


def broadcast(t: T, scalar: ir.Value, ty: ir.VectorType) -> ir.Value:
    undef = ir.Constant(ty, ir.Undefined)
    one = t.b.insert_element(undef, scalar, ir.IntType(32)(0))
    mask = ir.Constant(ir.VectorType(ir.IntType(32), ty.count), [0] * ty.count)
    return t.b.shuffle_vector(one, undef, mask)


@lowers(vector.BroadcastOp)
def _broadcast(t: T, op: vector.BroadcastOp) -> None:
    source, ty = t.get(op.source), t.types(op.vector.type)
    if source.type == ty:
        t.set(op, source)
        return
    if isinstance(source.type, ir.VectorType):
        source = t.b.extract_element(source, ir.IntType(32)(0))
    t.set(op, broadcast(t, source, ty))


@lowers(vector.FMAOp)
def _vector_fma(t: T, op: vector.FMAOp) -> None:
    args = t.operands(op)
    t.set(op, t.call(f"llvm.fma.{type_suffix(args[0].type)}", args[0].type, args))


# ---------------------------------------------------------------------------------- gpu

_SREGS = {
    gpu.ThreadIdOp: "tid",
    gpu.BlockIdOp: "ctaid",
    gpu.BlockDimOp: "ntid",
    gpu.GridDimOp: "nctaid",
}


def read_sreg(t: T, register: str) -> ir.Value:
    return t.call(f"llvm.nvvm.read.ptx.sreg.{register}", ir.IntType(32), [])


def to_index(t: T, value: ir.Value) -> ir.Value:
    return value if value.type == t.types.index else t.b.zext(value, t.types.index)


@lowers(*_SREGS)
def _gpu_id(t: T, op) -> None:
    register = f"{_SREGS[type(op)]}.{op.dimension.data.value}"
    t.set(op, to_index(t, read_sreg(t, register)))


@lowers(gpu.LaneIdOp)
def _lane_id(t: T, op: gpu.LaneIdOp) -> None:
    t.set(op, to_index(t, read_sreg(t, "laneid")))


@lowers(gpu.BarrierOp)
def _barrier(t: T, op: gpu.BarrierOp) -> None:
    # llvm.nvvm.barrier0 exists in every LLVM llvmlite ships (LLVM 22 auto-upgrades it).
    t.call("llvm.nvvm.barrier0", ir.VoidType(), [])


# --------------------------------------------------------------------------------- func


@lowers(func.CallOp)
def _call(t: T, op: func.CallOp) -> None:
    callee = t.mt.functions[op.callee.root_reference.data]
    args = []
    for value, param in zip(t.operands(op), callee.function_type.args, strict=True):
        if isinstance(param, ir.PointerType) and value.type != param:
            value = t.b.addrspacecast(
                value, param
            )  # e.g. an alloca passed as a global memref
        args.append(value)
    result = t.b.call(callee, args)
    if len(op.results) > 1:
        t.set(op, *(t.b.extract_value(result, i) for i in range(len(op.results))))
    elif op.results:
        t.set(op, result)


@lowers(func.ReturnOp)
def _return(t: T, op: func.ReturnOp) -> None:
    values = t.operands(op)
    if not values:
        t.b.ret_void()
    elif len(values) == 1:
        t.b.ret(values[0])
    else:
        agg = ir.Constant(t.fn.function_type.return_type, ir.Undefined)
        for i, value in enumerate(values):
            agg = t.b.insert_value(agg, value, i)
        t.b.ret(agg)


# ------------------------------------------------------------------------- llvm, builtin


def _escape_asm(text: str) -> str:
    # llvmlite.ir.InlineAsm writes the string verbatim (HOPPER_KERNELS.md §9.1).
    return (
        text.replace("\\", "\\5C")
        .replace('"', "\\22")
        .replace("\n", "\\0A")
        .replace("\t", "\\09")
    )


@lowers(llvm.InlineAsmOp)
def _inline_asm(t: T, op: llvm.InlineAsmOp) -> None:
    args = t.operands(op)
    ret = t.types(op.res.type) if op.res is not None else ir.VoidType()
    fnty = ir.FunctionType(ret, [a.type for a in args])
    side_effects = op.has_side_effects is not None
    result = t.b.asm(
        fnty, _escape_asm(op.asm_string.data), op.constraints.data, args, side_effects
    )
    if op.res is not None:
        t.set(op, result)


@lowers(llvm.PtrToIntOp)
def _ptr_to_int(t: T, op: llvm.PtrToIntOp) -> None:
    """A pointer's address as an integer (a shared-window address for wgmma descriptors)."""
    t.set(op, t.b.ptrtoint(t.get(op.input), t.types(op.output.type)))


@lowers(llvm.IntToPtrOp)
def _int_to_ptr(t: T, op: llvm.IntToPtrOp) -> None:
    """An integer address as a pointer (a tensor of `T.make_tensor`, from a pointer table)."""
    t.set(op, t.b.inttoptr(t.get(op.input), t.types(op.output.type)))


@lowers(llvm.ExtractValueOp)
def _extract_value(t: T, op: llvm.ExtractValueOp) -> None:
    pos = list(op.position.get_values())
    if len(pos) == 1:
        t.set(op, t.extract_value(t.get(op.container), pos[0]))
    else:
        t.set(op, t.b.extract_value(t.get(op.container), pos))


@lowers(llvm.InsertValueOp)
def _insert_value(t: T, op: llvm.InsertValueOp) -> None:
    pos = list(op.position.get_values())
    if len(pos) == 1:
        build = not t.reads_members_only(op.results[0])
        t.set(op, t.insert_value(t.get(op.container), t.get(op.value), pos[0], build=build))
    else:
        t.set(op, t.b.insert_value(t.get(op.container), t.get(op.value), pos))


@lowers(llvm.UndefOp)
def _undef(t: T, op: llvm.UndefOp) -> None:
    t.set(op, ir.Constant(t.types(op.res.type), ir.Undefined))


@lowers(llvm.GEPOp)
def _gep(t: T, op: llvm.GEPOp) -> None:
    dynamic = iter(t.operands(op)[1:])
    indices = [
        next(dynamic) if i == llvm.GEP_USE_SSA_VAL else ir.IntType(32)(i)
        for i in op.rawConstantIndices.get_values()
    ]
    elem = t.types(op.elem_type)
    t.set(
        op,
        t.b.gep(
            t.get(op.ptr), indices, inbounds=op.inbounds is not None, source_etype=elem
        ),
    )


@lowers(builtin.UnrealizedConversionCastOp)
def _cast_pointer(t: T, op: builtin.UnrealizedConversionCastOp) -> None:
    """memref ↔ `!llvm.ptr<AS>`: both are the base pointer; only the space may change."""
    results = []
    for value, res in zip(t.operands(op), op.outputs, strict=True):
        ty = t.types(res.type)
        if not isinstance(ty, ir.PointerType) or not isinstance(
            value.type, ir.PointerType
        ):
            raise error(op, "only memref ↔ !llvm.ptr casts are supported")
        results.append(value if value.type == ty else t.b.addrspacecast(value, ty))
    t.set(op, *results)
