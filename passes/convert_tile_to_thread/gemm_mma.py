"""The mma.sync m16n8k16 gemm (sm_80+): fragments of A and B loaded with ldmatrix from
swizzled shared tiles (or pairs of elements), the f32 accumulator layout of
`passes/layouts.py: mma_accumulator_layout`.
"""

from __future__ import annotations


from xdsl.dialects import llvm, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    VectorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Block, SSAValue

from tilec.dialects import nvvm, tile

from tilec.dialects.tile.layout import Mode
from tilec.passes.layouts import mma_warp_grid

from .context import Lowerer
from .memory import INDEX, View, element_bytes, shared_ptr


def _pair(L: Lowerer, view: View, index: list, second: list) -> SSAValue:
    """Two elements as one mma register: vector<2xf16>, or i32 for bfloat16 (as upstream NVVM)."""
    if L.vectorizable(view, index, 2) and second == index[:-1] + [L.add(index[-1], 1)]:
        pair = L.load(view, index, 2)
    else:
        pair = L.pack([L.load(view, index), L.load(view, second)])
    if str(view.element_type) == "bf16":
        return L.emit(llvm.BitcastOp(pair, i32)).results[0]
    return pair


def _ldmatrix(L: Lowerer, view: View, index: list, num: int, trans: bool) -> list[SSAValue]:
    """`num` 8x8 b16 matrices: each lane gives one row's address, gets its fragment registers."""
    layout = nvvm.MMALayoutAttr(nvvm.MMALayout.COL if trans else nvvm.MMALayout.ROW)
    result = i32 if num == 1 else llvm.LLVMStructType.from_type_list([i32] * num)
    load = L.emit(nvvm.LdMatrixOp.create(operands=[shared_ptr(L, view, index)], result_types=[result],
                                         properties={"num": IntegerAttr(num, 32), "layout": layout}))
    if num == 1:
        return [load.results[0]]
    return [L.emit(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [j]), load.results[0], i32)).results[0]
            for j in range(num)]


def _ldmatrix_ok(view: View, inner: int) -> bool:
    """ldmatrix reads 16-byte rows of shared memory: rows of a multiple of 8 elements, 16-bit data."""
    return view.kind == "shared" and element_bytes(view.element_type) == 2 and inner % 8 == 0 and \
        all(isinstance(o, int) and o % 8 == 0 for o in view.offsets) and \
        all(isinstance(s, int) and s % 8 == 0 for s in view.strides[:-1])


def _as_operand(L: Lowerer, reg: SSAValue, element_type) -> SSAValue:
    """An ldmatrix register as an mma operand: vector<2xf16> for f16, the i32 itself for bf16."""
    if str(element_type) == "bf16":
        return reg
    return L.emit(llvm.BitcastOp(reg, VectorType(element_type, [2]))).results[0]


def lower_gemm_mma(L: Lowerer, op: tile.GemmOp, a: View, b: View, c: View) -> None:
    """C += A @ B with mma.sync m16n8k16 (row-major A, column-major B fragments, f32 accumulator).

    Fragment registers follow the PTX ISA: lane = 4 * group + tig; A register i holds row
    group + 8 * (i % 2), columns 2 * tig + {0, 1} + 8 * (i // 2); B register j holds rows
    2 * tig + {0, 1} + 8 * j of column group; C value i holds row group + 8 * (i // 2),
    column 2 * tig + i % 2 — the accumulator layout of `passes/layouts.py: mma_accumulator_layout`.
    """
    m, n, k = op.mnk()
    wm, wn = mma_warp_grid(m, n, L.threads // 32, op.policy.data)
    rm, rn = m // 16 // wm, n // 8 // wn
    group, tig = L.coord(Mode(8, "t", 4)), L.coord(Mode(4, "t", 1))
    row0 = L.add(L.mul(L.coord(Mode(wm, "t", 32 * wn)), m // wm), group)
    col0 = L.add(L.mul(L.coord(Mode(wn, "t", 32)), n // wn), group)
    k0 = L.mul(tig, 2)
    bf16 = str(a.element_type) == "bf16"
    props = {"shape": nvvm.MMAShapeAttr(16, 8, 16), "layoutA": nvvm.MMALayoutAttr(nvvm.MMALayout.ROW),
             "layoutB": nvvm.MMALayoutAttr(nvvm.MMALayout.COL)}
    if bf16:
        props["multiplicandAPtxType"] = props["multiplicandBPtxType"] = nvvm.MMATypeAttr(nvvm.MMAType.BF16)
    result = llvm.LLVMStructType.from_type_list([f32] * 4)

    def a_index(row, kk):
        return [kk, row] if op.trans_a else [row, kk]

    def b_index(kk, col):
        return [col, kk] if op.trans_b else [kk, col]

    # ldmatrix: lane l addresses row l % 8 of matrix l // 8 (x4: A's four 8x8 blocks; x2: B's two)
    a_ldm = _ldmatrix_ok(a, a.shape[1]) and _ldmatrix_ok(a, a.shape[0] if op.trans_a else 16)
    b_ldm = _ldmatrix_ok(b, b.shape[1]) and _ldmatrix_ok(b, b.shape[0] if op.trans_b else 8)
    r8, m_hi, k_hi = L.coord(Mode(8, "t", 1)), L.coord(Mode(2, "t", 8)), L.coord(Mode(2, "t", 16))
    warp_row = L.mul(L.coord(Mode(wm, "t", 32 * wn)), m // wm)
    warp_col = L.mul(L.coord(Mode(wn, "t", 32)), n // wn)

    def a_fragment(im, kk) -> list[SSAValue]:
        if a_ldm:
            row0_block = L.add(warp_row, im * 16)
            if op.trans_a:  # A is stored [k, m]: transposed 8x8 blocks
                index = [L.add(L.add(kk, L.mul(k_hi, 8)), r8), L.add(row0_block, L.mul(m_hi, 8))]
            else:
                index = [L.add(L.add(row0_block, L.mul(m_hi, 8)), r8), L.add(kk, L.mul(k_hi, 8))]
            return [_as_operand(L, r, a.element_type) for r in _ldmatrix(L, a, index, 4, op.trans_a)]
        regs = []
        for i in range(4):
            row, kcol = L.add(row0, im * 16 + 8 * (i % 2)), L.add(L.add(kk, k0), 8 * (i // 2))
            regs.append(_pair(L, a, a_index(row, kcol), a_index(row, L.add(kcol, 1))))
        return regs

    def b_fragment(jn, kk) -> list[SSAValue]:
        if b_ldm:
            n0 = L.add(warp_col, jn * 8)
            if op.trans_b:  # B is stored [n, k]: its rows are the fragment's columns
                index = [L.add(n0, r8), L.add(kk, L.mul(m_hi, 8))]
            else:
                index = [L.add(L.add(kk, L.mul(m_hi, 8)), r8), n0]
            return [_as_operand(L, r, b.element_type) for r in _ldmatrix(L, b, index, 2, not op.trans_b)]
        # a B that ldmatrix cannot read (a region at a run-time offset, rows off the 16-byte grid):
        # each register is the pair of rows 2 * tig + {0, 1} + 8 * j of column `group`
        col = L.add(col0, jn * 8)
        regs = []
        for j in range(2):
            krow = L.add(L.add(kk, k0), 8 * j)
            regs.append(_pair(L, b, b_index(krow, col), b_index(L.add(krow, 1), col)))
        return regs

    def b_fragment_pair(jn, kk) -> list[list[SSAValue]]:
        """The fragments of n-tiles jn and jn + 1 with one ldmatrix.x4 (lanes 16-31 address jn + 1)."""
        n0 = L.add(warp_col, jn * 8)
        if op.trans_b:
            index = [L.add(L.add(n0, L.mul(k_hi, 8)), r8), L.add(kk, L.mul(m_hi, 8))]
        else:
            index = [L.add(L.add(kk, L.mul(m_hi, 8)), r8), L.add(n0, L.mul(k_hi, 8))]
        regs = [_as_operand(L, r, b.element_type) for r in _ldmatrix(L, b, index, 4, not op.trans_b)]
        return [regs[:2], regs[2:]]

    pairs = b_ldm and rn % 2 == 0  # n-tiles jn, jn + 1 by one ldmatrix.x4

    def step(kk, acc: dict) -> dict:
        a_regs = [a_fragment(im, kk) for im in range(rm)]
        out = dict(acc)
        b_frags: dict[int, list[SSAValue]] = {}
        for jn in range(rn):
            if jn not in b_frags:
                if pairs:
                    b_frags[jn], b_frags[jn + 1] = b_fragment_pair(jn, kk)
                else:
                    b_frags[jn] = b_fragment(jn, kk)
            b_regs = b_frags.pop(jn)
            for im in range(rm):
                slots = [(im * rn + jn) * 4 + i for i in range(4)]
                mma = L.emit(nvvm.MmaSyncOp.build(operands=[a_regs[im], b_regs, [acc[s] for s in slots]],
                                                  result_types=[result], properties=dict(props)))
                for i, s in enumerate(slots):
                    position = DenseArrayBase.from_list(i64, [i])
                    out[s] = L.emit(llvm.ExtractValueOp(position, mma.results[0], f32)).results[0]
        return out

    slots = list(range(c.layout.num_slots))
    acc = {s: L.const(0.0, f32) if op.clear_accum.value.data else L.frag_load(c, s) for s in slots}
    if k // 16 <= 2:
        for kk in range(0, k, 16):
            acc = step(kk, acc)
    else:  # a loop over K carrying the accumulators
        body = Block(arg_types=[INDEX] + [f32] * len(slots))
        loop = L.emit(scf.ForOp(L.const(0), L.const(k), L.const(16), [acc[s] for s in slots], body))
        with L.push(body):
            L.mults[body.args[0]] = 16
            new = step(body.args[0], dict(zip(slots, body.args[1:])))
            L.emit(scf.YieldOp(*[new[s] for s in slots]))
        acc = dict(zip(slots, loop.results))
    for s, v in acc.items():
        L.frag_store(c, s, v)
