"""Memory addressing of the lowering: the `View` of a tile, flat and swizzled addresses,
bounds predicates, vector accesses and fragment slots.

Four kinds of storage:

    global    memref<?xT>       (kernel argument, flat)     bounds-checked unless proven
                                (or at a tile.make_tensor address: llvm.inttoptr)
    shared    memref<NxT, 3>    (view of dynamic shared memory)
    fragment  memref<SxT>       (per-thread registers: S slots of its layout)
    local     memref<NxT>       (per-thread array)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import math
from dataclasses import dataclass, field

from xdsl.dialects import arith, llvm, memref, scf
from xdsl.dialects.builtin import (
    IndexType,
    IntAttr,
    MemRefType,
    NoneAttr,
    UnrealizedConversionCastOp,
    VectorType,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue


from tilec.dialects.tile import element_bytes as tile_element_bytes
from tilec.dialects import fast_ops
from tilec.dialects.tile import xor_swizzle
from tilec.dialects.tile.layout import Layout
from tilec.passes.analysis import constant_value

if TYPE_CHECKING:
    from .context import Lowerer


INDEX = IndexType()


Index = int | SSAValue


@dataclass
class View:
    """A tile as seen by the thread-level code: where its elements live and how to address them."""

    kind: str  # "global", "shared", "fragment", "local"
    mem: SSAValue | None
    shape: tuple[int, ...]
    element_type: Attribute
    offsets: list[Index] = field(default_factory=list)
    strides: list[Index] = field(default_factory=list)  # of the root buffer, flat
    dims: list[Index] = field(default_factory=list)  # of the root (global bounds)
    in_bounds: bool = True
    layout: Layout | None = None
    swizzle: int = 0  # bytes of the XOR swizzle of a shared buffer (T.annotate_layout): 0, 32, 64, 128
    base: Index = 0  # flat element offset of the view in its memory (a stage of a multi-buffered tile)
    chunk: int = 0  # >0: the last dim is stored in chunks of this many columns, each chunk (all rows of
    #                 the root, `dims[-2]`) after the other (a wgmma N-major operand); `strides` are one chunk's

    def window(self, offsets: list[Index], shape: tuple[int, ...], lowerer: Lowerer, in_bounds: bool) -> View:
        """The region at `offsets` of this view; `in_bounds`: tile-legalize-bounds proved that every
        element of it lies inside the root tensor (which decides alone: a proven region of a root
        that is not known to be in bounds needs no predicates)."""
        return View(self.kind, self.mem, shape, self.element_type,
                    [lowerer.add(a, b) for a, b in zip(self.offsets, offsets)], self.strides, self.dims,
                    in_bounds if self.kind == "global" else self.in_bounds, self.layout, self.swizzle, self.base,
                    self.chunk)


class MemoryAccess:
    """Loads, stores and addresses of the four kinds of storage (mixed into `Lowerer`, which
    provides `emit`, `const`, index arithmetic and the insertion point)."""

    # -- memory ------------------------------------------------------------------------
    def flat(self, view: View, index: list[Index]) -> Index:
        addr: Index = 0
        positions = [self.add(off, i) for off, i in zip(view.offsets, index)]
        after = 0
        if view.swizzle:
            positions, after = self._atom_offsets(view, positions)
        if view.chunk and positions:
            col = positions[-1]
            chunk_elements = view.dims[-2] * view.chunk
            addr = self.add(self.mul(self.div(col, view.chunk), chunk_elements), self.rem(col, view.chunk))
            positions = positions[:-1]
        for pos, stride in zip(positions, view.strides):
            addr = self.add(addr, self.mul(pos, stride))
        if not view.swizzle:
            return self.add(view.base, addr)
        if self.mult(view.base) * element_bytes(view.element_type) % (8 * view.swizzle) == 0:
            # the XOR reads address bits below 8x the swizzle width: a base that is a multiple of
            # it (a pipeline stage) adds after, and the swizzled part stays loop-invariant
            return self.add(self.add(view.base, after), self.swizzled(addr, view))
        return self.add(after, self.swizzled(self.add(view.base, addr), view))

    def _atom_offsets(self, view: View, positions: list[Index]) -> tuple[list[Index], int]:
        """The positions of a swizzled view less the constant parts that move whole swizzle atoms
        (8x the swizzle width in bytes: the XOR neither reads nor changes those address bits), and
        those parts' flat element offset, which adds after the swizzle. An epilogue's stmatrix rows
        8 apart, or its chunks of columns, then share one swizzled address and immediate offsets
        (16 addresses kept live across a persistent kernel's mainloop became 2)."""
        atom, esize = 8 * view.swizzle, element_bytes(view.element_type)
        out, after = [], 0
        last = len(positions) - 1
        for d, pos in enumerate(positions):
            terms, c = self.constant_part(pos)
            kept = c
            if view.chunk and d == last:
                # (x + q·chunk) / chunk = x / chunk + q for x >= 0: whole chunks of all the root's rows
                rows = view.dims[-2] if len(view.dims) >= 2 else None
                chunk_bytes = rows * view.chunk * esize if isinstance(rows, int) else 0
                bounds = [self.bound(t) for t in terms]
                low = sum(b[0] for b in bounds) if all(b is not None for b in bounds) else None
                q = c // view.chunk
                if q and chunk_bytes % atom == 0 and chunk_bytes and low is not None and low + c - q * view.chunk >= 0:
                    after += q * chunk_bytes // esize
                    kept = c - q * view.chunk
            elif d < len(view.strides) and isinstance(stride := view.strides[d], int) and stride:
                step = atom // math.gcd(atom, abs(stride) * esize)  # positions a whole atom apart
                after += (c - c % step) * stride
                kept = c % step
            out.append(pos if kept == c else self.sum(terms, kept))
        return out, after

    def sum(self, terms: list[Index], start: Index = 0) -> Index:
        """start + the terms (constant_part's, put back together)."""
        for t in terms:
            start = self.add(start, t)
        return start

    def constant_part(self, x: Index) -> tuple[list[Index], int]:
        """x as (its other terms, its constant) through its chain of index additions."""
        if isinstance(x, int):
            return [], x
        if (c := constant_value(x)) is not None:
            return [], c
        op = x.owner
        if isinstance(op, arith.AddiOp) and isinstance(op.result.type, IndexType):
            (a, ca), (b, cb) = self.constant_part(op.lhs), self.constant_part(op.rhs)
            if ca or cb:
                return a + b, ca + cb
        return [x], 0

    def swizzled(self, addr: Index, view: View) -> Index:
        """The element at `addr` of a swizzled buffer: the XOR swizzle of its byte address
        (`tilec.dialects.tile.xor_swizzle`, as the simulator decodes it), so that rows a warp
        reads together fall into different banks; a 16-byte chunk never splits.
        """
        esize = element_bytes(view.element_type)
        if isinstance(addr, int):
            return xor_swizzle(addr * esize, view.swizzle) // esize
        chunk_align = math.gcd(self.mult(addr), 16 // esize)
        byte = self.emit(fast_ops.binary(arith.MuliOp, addr, self.const(esize))).results[0]
        moved = xor_swizzle(byte, view.swizzle, _BitOps(self))
        return self._index_op(fast_ops.binary(arith.DivUIOp, moved, self.const(esize)), chunk_align)

    def in_bounds(self, view: View, index: list[Index]) -> SSAValue | None:
        """The condition that `index` lies inside the root tensor (None: always)."""
        if view.kind != "global" or view.in_bounds:
            return None
        cond = None
        for off, i, dim in zip(view.offsets, index, view.dims):
            pos = self.add(off, i)
            if isinstance(pos, int) and isinstance(dim, int):
                if 0 <= pos < dim:
                    continue
                return self.const(0, i1)
            c = self.emit(arith.CmpiOp(self.ssa(pos), self.ssa(dim), "ult")).results[0]  # unsigned: also pos >= 0
            cond = c if cond is None else self.emit(arith.AndIOp(cond, c)).results[0]
        return cond

    def vectorizable(self, view: View, index: list[Index], width: int) -> bool:
        """Whether `width` elements from `index` along the last dim form one aligned vector access."""
        if width <= 1 or view.kind not in ("global", "shared") or not view.strides or view.strides[-1] != 1:
            return False
        if view.element_type == i1:  # LLVM packs a vector of i1 into bits; in memory a bool is a byte
            return False
        nbytes = width * element_bytes(view.element_type)
        if nbytes not in (4, 8, 16):
            return False
        if math.gcd(self.mult(self.flat_probe(view, index)), width) != width:
            return False
        return view.in_bounds or view.kind != "global" or self.mult(view.dims[-1]) % width == 0

    def flat_probe(self, view: View, index: list[Index]) -> Index:
        """The known multiple of a flat address, without emitting """
        m = self.mult(view.base)
        pairs = list(zip(view.offsets, index, view.strides))
        if view.chunk and pairs:
            off, i, _ = pairs.pop()
            m = math.gcd(m, self.mult(off), self.mult(i), view.chunk)
        for off, i, stride in pairs:
            m = math.gcd(m, self.mult(off) * self.mult(stride), self.mult(i) * self.mult(stride))
        return math.gcd(m, 16 // element_bytes(view.element_type)) if view.swizzle else m

    def _guarded(self, cond: SSAValue | None, result_type: Attribute | None, body, zero):
        if cond is None:
            return body()
        then_block, else_block = Block(), Block()
        types = [] if result_type is None else [result_type]
        op = self.emit(scf.IfOp(cond, types, Region(then_block), Region(else_block)))
        with self.push(then_block):
            value = body()
            self.emit(scf.YieldOp(*([] if result_type is None else [value])))
        with self.push(else_block):
            self.emit(scf.YieldOp(*([] if result_type is None else [zero()])))
        return op.results[0] if result_type is not None else None

    def load(self, view: View, index: list[Index], width: int = 1) -> SSAValue:
        """One element, or `width` consecutive ones as a vector (bounds give zeros)."""
        typ = view.element_type if width == 1 else VectorType(view.element_type, [width])
        addr = self.ssa(self.flat(view, index))

        def body():
            if width == 1:
                return self.emit(fast_ops.load(view.mem, [addr])).results[0]
            return self.emit(fast_ops.vector_load(view.mem, [addr], typ)).results[0]

        def zero():
            z = self.const(0, view.element_type)
            return z if width == 1 else self.emit(fast_ops.broadcast(z, typ)).results[0]

        return self._guarded(self.in_bounds(view, index), typ, body, zero)

    def store(self, view: View, index: list[Index], value: SSAValue, cond: SSAValue | None = None) -> None:
        addr = self.ssa(self.flat(view, index))
        guard = self.in_bounds(view, index)
        if cond is not None:
            guard = cond if guard is None else self.emit(arith.AndIOp(guard, cond)).results[0]

        def body():
            if isinstance(value.type, VectorType):
                self.emit(fast_ops.vector_store(value, view.mem, [addr]))
            else:
                self.emit(fast_ops.store(value, view.mem, [addr]))

        self._guarded(guard, None, body, None)

    def extract(self, vec: SSAValue, lane: int) -> SSAValue:
        return self.emit(fast_ops.extract(vec, lane, vec.type.element_type)).results[0]

    def pack(self, values: list[SSAValue]) -> SSAValue:
        typ = VectorType(values[0].type, [len(values)])
        acc = self.emit(fast_ops.broadcast(values[0], typ)).results[0]
        for lane, v in enumerate(values[1:], 1):
            acc = self.emit(fast_ops.insert(v, acc, lane, typ)).results[0]
        return acc

    def pack_word(self, pair: list[SSAValue]) -> SSAValue:
        """Two 16-bit values as one 32-bit register (the first in the low half): an mma / stmatrix operand."""
        return self.emit(llvm.BitcastOp(self.pack(pair), i32)).results[0]

    # -- fragments ------------------------------------------------------------------------
    def alloca(self, element_type: Attribute, count: int) -> SSAValue:
        op = memref.AllocaOp.get(element_type, shape=[count])
        op.location = self.location
        entry = self.blocks[0]
        entry.insert_op_before(op, entry.first_op) if entry.first_op else entry.add_op(op)
        return op.results[0]

    def frag_load(self, view: View, slot: int) -> SSAValue:
        return self.emit(fast_ops.load(view.mem, [self.const(slot)])).results[0]

    def frag_store(self, view: View, slot: int, value: SSAValue) -> None:
        self.emit(fast_ops.store(self.convert(value, view.element_type), view.mem, [self.const(slot)]))


class _BitOps:
    """`xor_swizzle`'s bit operations on index values, emitted as arith ops."""

    def __init__(self, lowerer: MemoryAccess):
        self.L = lowerer

    def _emit(self, cls, a: Index, b: Index) -> SSAValue:
        return self.L.emit(fast_ops.binary(cls, self.L.ssa(a), self.L.ssa(b))).results[0]

    def shr(self, a: Index, b: Index) -> SSAValue:
        return self._emit(arith.ShRUIOp, a, b)

    def and_(self, a: Index, b: Index) -> SSAValue:
        return self._emit(arith.AndIOp, a, b)

    def shl(self, a: Index, b: Index) -> SSAValue:
        return self._emit(arith.ShLIOp, a, b)

    def xor(self, a: Index, b: Index) -> SSAValue:
        return self._emit(arith.XOrIOp, a, b)


element_bytes = tile_element_bytes
"""Bytes one element takes in memory: the dialect's definition (`tilec.dialects.tile.element_bytes`)."""


def memref_type(element_type: Attribute, count: int | None, space: int | None = None) -> MemRefType:
    from xdsl.dialects.builtin import IntegerAttr as IA

    from xdsl.dialects.builtin import DYNAMIC_INDEX

    shape = [DYNAMIC_INDEX if count is None else count]
    return MemRefType(element_type, shape, NoneAttr(), NoneAttr() if space is None else IA(space, 64))


def shared_ptr(L: Lowerer, view: View, index: list) -> SSAValue:
    """`!llvm.ptr<3>` to element `index` of a shared view (what nvvm ops address memory by)."""
    ptr3 = llvm.LLVMPointerType(IntAttr(3))
    base = L.emit(UnrealizedConversionCastOp.get([view.mem], [ptr3])).results[0]
    # the constant part as a GEP of its own: outside the i32 cast, LLVM folds it into the address's
    # immediate offset (inside, the cast's wrap-around keeps it a register of its own an address)
    terms, constant = L.constant_part(L.flat(view, index))
    if terms:
        offset = L.emit(arith.IndexCastOp(L.ssa(L.sum(terms)), i32)).results[0]
        base = L.emit(llvm.GEPOp.from_mixed_indices(base, [offset], view.element_type, result_type=ptr3)).results[0]
    if constant:
        base = L.emit(llvm.GEPOp.from_mixed_indices(base, [constant], view.element_type, result_type=ptr3)).results[0]
    return base


def global_ptr(L: Lowerer, view: View, addr) -> SSAValue:
    """`!llvm.ptr<1>` to flat element `addr` of a global view."""
    ptr1 = llvm.LLVMPointerType(IntAttr(1))
    base = L.emit(UnrealizedConversionCastOp.get([view.mem], [ptr1])).results[0]
    offset = L.emit(arith.IndexCastOp(L.ssa(addr), i64)).results[0]
    return L.emit(llvm.GEPOp.from_mixed_indices(base, [offset], view.element_type, result_type=ptr1)).results[0]


def pointer_memref(L: Lowerer, address: SSAValue, element_type: Attribute) -> SSAValue:
    """`memref<?xT>` over the global memory at the i64 `address` (a tensor of `tile.make_tensor`):
    `llvm.inttoptr` to `!llvm.ptr<1>`, seen as the memref (both are the base pointer)."""
    ptr1 = llvm.LLVMPointerType(IntAttr(1))
    ptr = L.emit(llvm.IntToPtrOp.create(operands=[address], result_types=[ptr1])).results[0]
    return L.emit(UnrealizedConversionCastOp.get([ptr], [memref_type(element_type, None)])).results[0]

