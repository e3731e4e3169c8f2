"""16-bit fragments into shared memory by `stmatrix` (sm_90): a warp stores up to four 8x8
matrices in one instruction, where each thread would otherwise store its pairs of a row 4 bytes
at a time.

A fragment in the mma accumulator pattern (the wgmma m64nN accumulator, the mma.sync m16n8 one)
holds, in each pair of slots of its innermost column mode, an 8x8 matrix per warp: lane l has
row l / 4, columns 2 (l % 4) + {0, 1} of it, which is the register layout of `stmatrix`. Where
a copy (`tile.copy` of a fragment into shared memory) or a `T.Parallel` over such a fragment
(the epilogue of a chunked persistent kernel, a fused bias + gelu) stores those pairs into a 2-D
shared buffer of 16-bit elements, at the fragment's index plus constant offsets, with every row
of 8 elements one aligned 16-byte piece (the 128-byte swizzle keeps 16-byte pieces whole), the
pairs go out as `stmatrix .x4` of four matrices side by side in a row (`.x2`, `.x1` for the
rest): lane l gives the address of row l % 8 of matrix l / 8.

Only in the consumer code of a warp-specialized kernel (sm_90a, where every warp runs the
epilogue whole) and with the pass option `stmatrix` (pass config `tilec.stmatrix`, on by default).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.ir import Block, SSAValue

from tilec.dialects import nvvm
from tilec.dialects.tile.layout import Layout, Mode

from tilec.passes.analysis import constant_value

from .context import Lowerer
from .memory import View, shared_ptr

__all__ = ["MatrixStores", "index_delta", "matrix_layout", "store_fragment"]

_LANE_ROW = Mode(8, "t", 4)  # lane / 4: the row of each 8x8 matrix
_LANE_COL = Mode(4, "t", 1)  # lane % 4: its column pair
_PAIR = Mode(2, "s", 1)
_B16 = ("f16", "bf16")


def enabled(L: Lowerer) -> bool:
    return L.matrix_stores and L.barrier_threads is not None


def matrix_layout(layout: Layout | None) -> bool:
    """Whether `layout` holds 8x8 matrices of 16-bit pairs in the mma accumulator pattern: rows end in
    the lane / 4 mode, columns in the lane % 4 mode and the pair, and its other thread modes select
    whole warps (a warp's matrices share their rows and columns but for those two lane modes)."""
    if layout is None or len(layout.dims) != 2 or layout.rep:
        return False
    rows, cols = layout.dims
    if rows[-1:] != (_LANE_ROW,) or cols[-2:] != (_LANE_COL, _PAIR):
        return False
    others = [m for m in rows[:-1] + cols[:-2] if m.kind == "t"]
    return all(m.stride % 32 == 0 for m in others)


def _b16_shared(view: View) -> bool:
    return (view.kind == "shared" and len(view.shape) == 2 and str(view.element_type) in _B16 and
            bool(view.strides) and view.strides[-1] == 1)


@dataclass
class _Pair:
    view: View
    row: int  # the slot's constant part of the row and column (the matrix's place in the thread's tile)
    col: int
    value: SSAValue  # i32: the lane's two 16-bit values
    delta: tuple[int, int]  # destination index minus fragment index


@dataclass
class MatrixStores:
    """The pairs one copy or one `T.Parallel` stores into shared memory, sent out by `flush` as
    `stmatrix` (in the loop's top-level block only: a store under a branch stays a store)."""

    layout: Layout
    block: Block
    pairs: list[_Pair] = field(default_factory=list)

    @staticmethod
    def open(L: Lowerer, layout: Layout) -> MatrixStores | None:
        if not enabled(L) or not matrix_layout(layout):
            return None
        return MatrixStores(layout, L.blocks[-1])

    def take(self, L: Lowerer, view: View, slot: int, values: list[SSAValue], delta: tuple[int, int] | None) -> bool:
        """Keep the pair of `slot` (its two values) for `view` at the fragment's index + `delta`: False
        where it cannot go out by stmatrix (the caller stores it)."""
        if (delta is None or len(values) != 2 or L.blocks[-1] is not self.block or not _b16_shared(view) or
                not _aligned(L, view, delta[1]) or self.layout.slot_coords(slot)[1][-1] != 0):
            return False
        (row, _), (col, _) = self.layout.index_parts(slot)
        word = L.pack_word([L.convert(v, view.element_type) for v in values])
        self.pairs.append(_Pair(view, row, col, word, delta))
        return True

    def flush(self, L: Lowerer) -> None:
        """The kept pairs as `stmatrix`: four matrices of consecutive columns at a time."""
        runs: dict[tuple, list[_Pair]] = {}
        for p in self.pairs:
            runs.setdefault((id(p.view), p.delta, p.row), []).append(p)
        for run in runs.values():
            run.sort(key=lambda p: p.col)
            i = 0
            while i < len(run):
                n = 1
                while n < 4 and i + n < len(run) and run[i + n].col == run[i].col + 8 * n:
                    n += 1
                n = 4 if n == 4 else 2 if n >= 2 else 1
                self._store(L, run[i:i + n])
                i += n
        self.pairs = []

    def _store(self, L: Lowerer, run: list[_Pair]) -> None:
        first = run[0]
        row, col = first.row + first.delta[0], first.col + first.delta[1]
        rows, cols = self.layout.dims
        row = L.add(row, _warp_part(L, rows[:-1]))
        col = L.add(col, _warp_part(L, cols[:-2]))
        row = L.add(row, L.coord(Mode(8, "t", 1)))  # lane l: row l % 8 ...
        if len(run) > 1:
            col = L.add(col, L.mul(L.coord(Mode(len(run), "t", 8)), 8))  # ... of matrix l / 8
        ptr = shared_ptr(L, first.view, [row, col])
        L.emit(nvvm.StMatrixOp.create(operands=[ptr, *[p.value for p in run]],
                                      properties={"layout": nvvm.MMALayoutAttr(nvvm.MMALayout.ROW)}))


def _aligned(L: Lowerer, view: View, col: int) -> bool:
    """Whether every row's 8 elements from column `col` + 8k of `view` are one aligned 16-byte piece."""
    return col % 8 == 0 and view.strides[0] % 8 == 0 and L.vectorizable(view, [0, col], 8)


def _warp_part(L: Lowerer, modes: tuple[Mode, ...]):
    """The thread modes' part of an index along a dim whose two lane modes (8 rows, or 4 column
    pairs: 8 elements either way) follow `modes`."""
    value, weight = 0, 8
    for m in reversed(modes):
        if m.kind == "t":
            value = L.add(value, L.mul(L.coord(m), weight))
        weight *= m.size
    return value


def index_delta(indices, ivs: dict) -> tuple[int, int] | None:
    """The constant offsets of a store's tile-level `indices` from the loop's variables, in order
    (`F[i, j]` stored at `X[i - 8, j]`: (-8, 0)); None for any other index."""
    if len(indices) != 2:
        return None
    out = []
    for d, index in enumerate(indices):
        found = _offset(index, ivs, d)
        if found is None:
            return None
        out.append(found)
    return tuple(out)


def _offset(value: SSAValue, ivs: dict, dim: int) -> int | None:
    if ivs.get(value) == dim:
        return 0
    op = value.owner
    if isinstance(op, arith.AddiOp):
        for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            c, inner = constant_value(b), _offset(a, ivs, dim)
            if c is not None and inner is not None:
                return inner + c
    if isinstance(op, arith.SubiOp):
        c, inner = constant_value(op.rhs), _offset(op.lhs, ivs, dim)
        if c is not None and inner is not None:
            return inner - c
    return None


def store_fragment(L: Lowerer, src: View, dst: View, groups: list[list[int]], read) -> bool:
    """`tile.copy` of fragment `src` into shared `dst` of its shape by stmatrix (False: not such a
    copy, nothing emitted). `read(group)` gives a slot group's values."""
    if not (src.shape == dst.shape and _b16_shared(dst)):
        return False
    stores = MatrixStores.open(L, src.layout)
    if stores is None or any(len(g) != 2 for g in groups):
        return False
    if not _aligned(L, dst, 0):
        return False
    for group in groups:
        if not stores.take(L, dst, group[0], read(group), (0, 0)):
            raise AssertionError("a pair of an accumulator fragment that stmatrix cannot store")
    stores.flush(L)
    return True
