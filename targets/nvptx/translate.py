"""Thread-level IR (xDSL `builtin.module`) → LLVM IR (`llvmlite.ir.Module`) for NVPTX.

This module owns the translation framework: types, functions, globals, structured control
flow and the op dispatch table. Per-op translations live in `translate_ops.py` (arith,
memref, vector, gpu, func, llvm), `translate_scf.py`, `translate_math.py` (math, imported at
the first math op) and `translate_nvvm.py` (nvvm); each registers itself in `LOWERINGS` with
`@lowers(OpClass)`.

IR conventions (what the tile → thread lowering must produce):

- A `func.func` with the unit attribute `nvvm.kernel` is a kernel (`ptx_kernel` calling
  convention → `.entry`); `nvvm.maxntid`/`nvvm.reqntid`/`nvvm.cluster_dim` (`array<i32: x, y, z>`;
  a cluster dim becomes `.explicitcluster .reqnctapercluster`),
  `nvvm.minctasm` and `nvvm.maxnreg` (i32) become `!nvvm.annotations`. Other functions are
  device functions (`func.call`); private ones get internal linkage.
- Memrefs are lowered to a bare pointer to their first element: identity layout only,
  static shapes or 1-D dynamic `memref<?xT>`. Memory space: absent or 1 → addrspace(1)
  (global), 3 → addrspace(3) (shared), `#gpu.address_space<…>` likewise; `memref.alloca`
  gives a generic (addrspace 0) pointer that LLVM promotes to registers when indexed with
  constants. Kernel memref arguments are `noalias align 16`: buffers must not overlap. A
  kernel `!llvm.ptr` argument with `{llvm.byval = T, nvvm.grid_constant}` is passed by value
  in the parameter space and read in place (TMA tensor maps: `!llvm.array<128 x i8>`).
- Shared memory is a `memref.global` in space 3: with `initial_value` (`uninitialized`) it
  is a static `addrspace(3)` global (alignment attribute, default 16). A shared global of
  size 0 (`memref<0xi8, 3>`) is the dynamic shared memory: an `external` `[0 x i8]` global
  aligned 128 (or its `alignment`), carved up with `memref.view` (byte shift + sizes).
- `index` lowers to i64, or i32 with `index_bitwidth=32`. Loop and address arithmetic
  keep the `nsw`/`nuw` flags that `arith` ops carry; GEPs on memrefs are `inbounds`.
- `vector.load`/`vector.store` are assumed aligned to the vector's byte size (capped at
  16), so a 16-byte vector becomes `ld.global.v4.b32`; an `alignment` attribute overrides.
- `builtin.unrealized_conversion_cast %m : memref<…> to !llvm.ptr<AS>` is the memref's base
  pointer: that is how nvvm ops, which take `!llvm.ptr` as upstream, address memrefs.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llvmlite import ir
from llvmlite.ir.types import _BaseFloatType
from xdsl.dialects import builtin, func, memref, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    VectorType,
)
from xdsl.dialects.llvm import (
    ExtractValueOp,
    InsertValueOp,
    LLVMArrayType,
    LLVMPointerType,
    LLVMStructType,
    LLVMVoidType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

__all__ = [
    "LOWERINGS",
    "TranslateOptions",
    "TranslationError",
    "lowers",
    "translate_module",
]

TRIPLE = "nvptx64-nvidia-cuda"
GLOBAL_SPACE, SHARED_SPACE = 1, 3
_GPU_SPACES = {"global": 1, "workgroup": 3, "private": 0}


class TranslationError(RuntimeError):
    """An op or type the NVPTX translation does not support, named with its location."""


@dataclass(frozen=True)
class TranslateOptions:
    """`index_bitwidth`: width of `index`; `fast_math`: use the approximate NVVM math
    everywhere, as if every math op carried `fastmath<afn>`; `fp_contract`: f32/f16 multiplies,
    adds and subtractions may contract into fused multiply-adds (`contract`), as nvcc's default
    `--fmad=true` lets them (one rounding instead of two)."""

    index_bitwidth: int = 64
    fast_math: bool = False
    fp_contract: bool = True


# ------------------------------------------------------------------------------ bfloat


class BFloatType(_BaseFloatType):
    """LLVM's `bfloat`, which llvmlite.ir lacks; constants print as `0xRXXXX`."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value: float) -> str:
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
        return f"0xR{bits:04X}"


BFloatType._create_instance()


# ------------------------------------------------------------------------ dispatch table

Lowering = Callable[["FunctionTranslator", Any], None]
LOWERINGS: dict[type[Operation], Lowering] = {}
MEMBER_READERS: dict[type[Operation], Callable[[Any, int], bool]] = {}
"""Ops whose translation reads a struct operand member by member (`FunctionTranslator.extract_value`),
as (op, operand index) -> whether that operand is read so; see `reads_members_only`."""


@dataclass(frozen=True, eq=False)
class UnbuiltStruct:
    """A struct value the translation did not build (`FunctionTranslator.insert_value` with
    build=False): `base` (a built struct or undef) with `members` replaced. Only ops that read
    members (`reads_members_only`) are given one."""

    type: ir.Type
    base: ir.Value
    members: dict[int, ir.Value]


def lowers(*op_types: type[Operation]) -> Callable[[Lowering], Lowering]:
    """Register a translation for each op class (one table, keyed by class)."""

    def register(fn: Lowering) -> Lowering:
        for op_type in op_types:
            LOWERINGS[op_type] = fn
        return fn

    return register


_LAZY_LOWERINGS = {"math": "translate_math"}
"""Dialects whose lowerings register on the first op of theirs a module has (a gemm has none: its
module's source is not compiled where bytecode is not cached)."""


def _lazy_lowering(op: Operation) -> Lowering | None:
    module = _LAZY_LOWERINGS.get(op.dialect_name())
    if module is None:
        return None
    import importlib

    importlib.import_module(f"{__package__}.{module}")
    return LOWERINGS.get(type(op))


def error(op: Operation, msg: str) -> TranslationError:
    loc = getattr(op, "location", None)
    where = f"{loc}: " if loc is not None and "unknown" not in str(loc).lower() else ""
    return TranslationError(f"{where}{op.name}: {msg}")


# ----------------------------------------------------------------------------- types


def memory_space(ty: MemRefType) -> int:
    space = ty.memory_space
    if isinstance(space, NoneAttr):
        return GLOBAL_SPACE
    if isinstance(space, IntegerAttr):
        return space.value.data
    value = getattr(space, "data", None)  # #gpu.address_space<workgroup>
    name = getattr(value, "value", str(value))
    if name in _GPU_SPACES:
        return _GPU_SPACES[name]
    raise TranslationError(f"unsupported memref memory space {space}")


_NAMED_STRUCT_MIN = 16
"""Structs of at least this many members get a named type (`struct`)."""


class TypeConverter:
    def __init__(self, options: TranslateOptions, context: ir.Context | None = None):
        self.index = ir.IntType(options.index_bitwidth)
        self.context = context  # where named struct types live (the module's own context)
        self._structs: dict[tuple[str, ...], ir.IdentifiedStructType] = {}
        self._converted: dict[Attribute, ir.Type] = {}

    def struct(self, elements: list[ir.Type]) -> ir.Type:
        """The struct of `elements`: a literal `{...}` when short; from `_NAMED_STRUCT_MIN` members
        on, one named type per member list (`%"floatx128" = type {float, ...}`), so that a wgmma
        accumulator's 128 members are not spelled out in each of its ~1000 extractvalues. The PTX
        is the same; the LLVM IR text of the 4096³ gemm shrinks from 1.4 MB to 0.26 MB, which
        saves a tenth of a second printing and parsing it."""
        if len(elements) < _NAMED_STRUCT_MIN or self.context is None:
            return ir.LiteralStructType(elements)
        key = tuple(str(e) for e in elements)
        ty = self._structs.get(key)
        if ty is None:
            name = f"{key[0]}x{len(key)}" if len(set(key)) == 1 else f"struct.{len(self._structs)}"
            ty = self.context.get_identified_type(name)
            ty.set_body(*elements)
            self._structs[key] = ty
        return ty

    def __call__(self, ty: Attribute) -> ir.Type:
        """The LLVM type of `ty` (converted once per distinct type: llvmlite types are values)."""
        converted = self._converted.get(ty)
        if converted is None:
            converted = self._converted[ty] = self._convert(ty)
        return converted

    def _convert(self, ty: Attribute) -> ir.Type:
        match ty:
            case IndexType():
                return self.index
            case IntegerType():
                return ir.IntType(ty.width.data)
            case Float16Type():
                return ir.HalfType()
            case BFloat16Type():
                return BFloatType()
            case Float32Type():
                return ir.FloatType()
            case Float64Type():
                return ir.DoubleType()
            case Float8E4M3FNType() | Float8E5M2Type():
                return ir.IntType(8)  # fp8 is stored as its code (translate_fp8.py converts)
            case VectorType():
                if ty.get_num_dims() != 1 or ty.get_num_scalable_dims():
                    raise TranslationError(
                        f"only 1-D fixed vectors are supported, got {ty}"
                    )
                return ir.VectorType(self(ty.element_type), ty.get_shape()[0])
            case MemRefType():
                return ir.PointerType(addrspace=memory_space(ty))
            case LLVMPointerType():
                space = ty.addr_space
                return ir.PointerType(
                    addrspace=space.data if isinstance(space, IntAttr) else 0
                )
            case LLVMStructType():
                return self.struct([self(t) for t in ty.types])
            case LLVMArrayType():
                return ir.ArrayType(self(ty.type), ty.size.data)
            case LLVMVoidType():
                return ir.VoidType()
        raise TranslationError(f"unsupported type {ty}")

    def element(self, ty: MemRefType) -> ir.Type:
        return self(ty.element_type)


# -------------------------------------------------------------------------- functions


class _GridConstantAttributes(ir.values.ArgumentAttributes):
    """`byval(<type>) align 64 "nvvm.grid_constant"`: a by-value kernel parameter read in place
    (a TMA tensor map: without grid_constant LLVM copies it into local memory, which TMA cannot
    read, HOPPER_KERNELS.md §2.2). llvmlite's attribute set knows neither spelling."""

    def __init__(self, byval: ir.Type):
        super().__init__()
        self.byval = byval

    def _to_list(self, typ):
        return [f"byval({self.byval})", "align 64", '"nvvm.grid_constant"']


class FunctionTranslator:
    """Translates one function body; `values` maps SSA values to LLVM values."""

    def __init__(
        self, mt: ModuleTranslator, fn: ir.Function, options: TranslateOptions
    ):
        self.mt, self.fn, self.options = mt, fn, options
        self.types = mt.types
        self.values: dict[SSAValue, ir.Value] = {}
        # id(struct built by insert_value) -> {member index: value}; the structs stay alive in the function
        self._members: dict[int, dict[int, ir.Value]] = {}
        self._members_only: dict[SSAValue, bool] = {}  # reads_members_only, per struct value
        self.entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)

    # values ------------------------------------------------------------------------
    def get(self, value: SSAValue) -> ir.Value:
        return self.values[value]

    def operands(self, op: Operation) -> list[ir.Value]:
        return [self.values[v] for v in op.operands]

    def set(self, op: Operation, *results: ir.Value) -> None:
        for res, value in zip(op.results, results, strict=True):
            self.values[res] = value

    # structs ---------------------------------------------------------------------
    def insert_value(self, agg: ir.Value | UnbuiltStruct, value: ir.Value, index: int, *,
                     build: bool = True) -> ir.Value | UnbuiltStruct:
        """`insertvalue agg, value, index`, remembering which member values the result holds;
        `build=False` emits nothing and gives an `UnbuiltStruct` (for a struct whose every use
        reads members, `reads_members_only`)."""
        base = agg.base if isinstance(agg, UnbuiltStruct) else agg
        members = dict(agg.members if isinstance(agg, UnbuiltStruct) else self._members.get(id(agg), {}))
        members[index] = value
        if not build:
            return UnbuiltStruct(agg.type, base, members)
        assert not isinstance(agg, UnbuiltStruct), "a built struct whose container was left unbuilt"
        result = self.b.insert_value(agg, value, index)
        self._members[id(result)] = members
        return result

    def extract_value(self, agg: ir.Value | UnbuiltStruct, index: int) -> ir.Value:
        """Member `index` of a struct: the value inserted there when this function built it with
        `insert_value` (what InstCombine would fold the `extractvalue` to, so the PTX is the same
        and LLVM has less to fold: a wgmma accumulator goes through 128-member structs), else
        an `extractvalue`."""
        if isinstance(agg, UnbuiltStruct):
            known, agg = agg.members, agg.base
        else:
            known = self._members.get(id(agg))
        if known is not None and index in known:
            return known[index]
        return self.b.extract_value(agg, index)

    def reads_members_only(self, value: SSAValue) -> bool:
        """Whether every use of the struct `value` only reads members of it: an `llvm.extractvalue`
        of one member, a `MEMBER_READERS` operand (wgmma accumulators), or the container of an
        `llvm.insertvalue` whose result does too. Such a struct need not be built: an
        insertvalue chain that only feeds wgmma is left out of the LLVM IR, where IPSCCP alone
        spends ~60 ms on the 4096³ gemm's (member by member, per insertvalue)."""
        memo = self._members_only
        stack = [value]
        while stack:  # post-order over insertvalue chains (iterative: they are 128 long)
            v = stack[-1]
            if v in memo:
                stack.pop()
                continue
            chained = [u.operation.results[0] for u in v.uses
                       if isinstance(u.operation, InsertValueOp) and u.index == 0]
            pending = [r for r in chained if r not in memo]
            if pending:
                stack.extend(pending)
                continue
            memo[v] = all(self._reads_member(use.operation, use.index) for use in v.uses)
            stack.pop()
        return memo[value]

    def _reads_member(self, op: Operation, index: int) -> bool:
        if isinstance(op, ExtractValueOp):
            return len(op.position.get_values()) == 1
        if isinstance(op, InsertValueOp):
            return index == 0 and self._members_only[op.results[0]]
        reader = MEMBER_READERS.get(type(op))
        return reader is not None and reader(op, index)

    def index(self, value: int) -> ir.Constant:
        return ir.Constant(self.types.index, value)

    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        return self.mt.declare(name, ir.FunctionType(ret, args))

    def call(self, name: str, ret: ir.Type, args: list[ir.Value], **kw) -> ir.Value:
        return self.b.call(
            self.intrinsic(name, ret, [a.type for a in args]), args, **kw
        )

    def alloca(self, ty: ir.Type, align: int) -> ir.Value:
        """An alloca in the entry block, where SROA/mem2reg can promote it."""
        with self.b.goto_block(self.entry):
            if self.entry.instructions:
                self.b.position_before(self.entry.instructions[0])
            ptr = self.b.alloca(ty)
            ptr.align = align
        ptr.type = (
            ir.PointerType()
        )  # llvmlite types it `[N x T]*`; we use opaque pointers
        return ptr

    # blocks --------------------------------------------------------------------------
    def translate_ops(self, block: Block) -> Operation | None:
        """Translate all ops but a terminator that structured control flow consumes
        (`scf.yield`, `scf.condition`); return that terminator."""
        for op in block.ops:
            if isinstance(op, (scf.YieldOp, scf.ConditionOp)):
                return op
            lowering = LOWERINGS.get(type(op)) or _lazy_lowering(op)
            if lowering is None:
                raise error(op, "no NVPTX translation for this op")
            lowering(self, op)
        return None

    def translate_region(self, region: Region, args: list[ir.Value]) -> list[ir.Value]:
        """Inline a single-block region at the builder; return the yielded values."""
        block = region.block
        for arg, value in zip(block.args, args, strict=True):
            self.values[arg] = value
        term = self.translate_ops(block)
        return [self.values[v] for v in term.operands] if term is not None else []


# ---------------------------------------------------------------------------- modules

_ANNOTATIONS = {"nvvm.maxntid": "maxntid", "nvvm.reqntid": "reqntid", "nvvm.cluster_dim": "cluster_dim_"}
_SCALAR_ANNOTATIONS = {"nvvm.minctasm": "minctasm", "nvvm.maxnreg": "maxnreg"}


class ModuleTranslator:
    def __init__(self, options: TranslateOptions):
        self.options = options
        context = ir.Context()  # the module's own: its named struct types are printed with it
        self.types = TypeConverter(options, context)
        self.module = ir.Module(name="tilec", context=context)
        self.module.triple = TRIPLE
        self.functions: dict[str, ir.Function] = {}
        self.globals: dict[str, ir.GlobalVariable] = {}

    def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, fnty, name)

    def translate(self, module: ModuleOp) -> ir.Module:
        funcs = []
        for op in module.ops:
            if isinstance(op, memref.GlobalOp):
                self._global(op)
            elif isinstance(op, func.FuncOp):
                funcs.append((op, self._declare_function(op)))
            else:
                raise error(op, "unexpected op at module level")
        for op, fn in funcs:
            if op.body.blocks:
                self._define_function(op, fn)
        return self.module

    def _global(self, op: memref.GlobalOp) -> None:
        ty: MemRefType = op.type
        name = op.sym_name.data
        elem = self.types.element(ty)
        count = 1
        for dim in ty.get_shape():
            count *= max(dim, 0)
        space = memory_space(ty)
        gv = ir.GlobalVariable(self.module, ir.ArrayType(elem, count), name, space)
        gv.type = ir.PointerType(
            addrspace=space
        )  # llvmlite types it `[N x T]*`; use opaque
        align = op.alignment.value.data if op.alignment is not None else None
        if space == SHARED_SPACE and count == 0:  # dynamic shared memory
            gv.linkage = "external"
            gv.align = align or 128
        else:
            gv.align = align or 16
            init = op.initial_value
            if isinstance(init, builtin.DenseIntOrFPElementsAttr):
                gv.initializer = ir.Constant(gv.value_type, list(init.get_values()))
            else:
                gv.initializer = ir.Constant(gv.value_type, ir.Undefined)
            gv.linkage = "internal" if op.sym_visibility.data == "private" else ""
            gv.global_constant = op.constant is not None
        self.globals[name] = gv

    def _declare_function(self, op: func.FuncOp) -> ir.Function:
        name = op.sym_name.data
        fnty = op.function_type
        results = [self.types(t) for t in fnty.outputs]
        if len(results) > 1:
            ret: ir.Type = self.types.struct(results)
        else:
            ret = results[0] if results else ir.VoidType()
        fn = ir.Function(
            self.module,
            ir.FunctionType(ret, [self.types(t) for t in fnty.inputs]),
            name,
        )
        self.functions[name] = fn
        is_kernel = "nvvm.kernel" in op.attributes
        if is_kernel:
            fn.calling_convention = "ptx_kernel"
            self._annotate(op, fn)
        elif (
            op.sym_visibility is not None
            and op.sym_visibility.data == "private"
            and op.body.blocks
        ):
            fn.linkage = "internal"
        arg_attrs = op.arg_attrs.data if op.arg_attrs is not None else [None] * len(fn.args)
        for arg, ty, attrs in zip(fn.args, fnty.inputs, arg_attrs):
            if isinstance(ty, MemRefType) and is_kernel:
                arg.add_attribute("noalias")
                arg.attributes.align = 16
            if attrs is not None and "nvvm.grid_constant" in attrs.data:
                if not is_kernel or "llvm.byval" not in attrs.data:
                    raise error(op, "nvvm.grid_constant needs a kernel argument with llvm.byval = <type>")
                arg.attributes = _GridConstantAttributes(self.types(attrs.data["llvm.byval"]))
        return fn

    def _annotate(self, op: func.FuncOp, fn: ir.Function) -> None:
        ann = self.module.add_named_metadata("nvvm.annotations")  # get-or-create
        i32 = ir.IntType(32)

        def add(key: str, value: int) -> None:
            ann.add(
                self.module.add_metadata(
                    [fn, ir.MetaDataString(self.module, key), i32(value)]
                )
            )

        for attr, key in _ANNOTATIONS.items():
            if (dims := op.attributes.get(attr)) is not None:
                if not isinstance(dims, DenseArrayBase):
                    raise error(op, f"{attr} must be array<i32: x, y, z>")
                values = dims.get_values()
                for axis, value in zip("xyz", values):
                    add(key + axis, value)
        for attr, key in _SCALAR_ANNOTATIONS.items():
            if isinstance(value := op.attributes.get(attr), IntegerAttr):
                add(key, value.value.data)

    def _define_function(self, op: func.FuncOp, fn: ir.Function) -> None:
        ft = FunctionTranslator(self, fn, self.options)
        blocks = op.body.blocks
        if len(blocks) != 1:
            raise error(op, "functions must have one block (use scf for control flow)")
        for arg, value in zip(blocks[0].args, fn.args):
            ft.values[arg] = value
        if ft.translate_ops(blocks[0]) is not None:
            raise error(op, "unexpected scf terminator in a function body")


def translate_module(
    module: ModuleOp, options: TranslateOptions | None = None
) -> ir.Module:
    """Translate a verified thread-level module to an llvmlite IR module."""
    from . import (  # noqa: F401  (importing registers the lowerings; math's: _LAZY_LOWERINGS)
        translate_nvvm,
        translate_fp8,
        translate_ops,
        translate_scf,
    )

    return ModuleTranslator(options or TranslateOptions()).translate(module)
