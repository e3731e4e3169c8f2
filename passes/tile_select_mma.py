"""Choose the tensor-core instruction of each `tile.gemm` the target can run on tensor cores.

Requires: nothing (runs before tile-infer-layout).
Establishes: a gemm of float16 or bfloat16 operands into a float32 fragment, with M % 16,
  N % 8 and K % 16 zero and a warp grid that divides its tile, carries `mma = "m16n8k16"`
  (mma.sync, sm_80 and later), the `mma` property of the op; tile-infer-layout then gives its accumulator the fragment
  layout of that instruction and convert-tile-to-thread issues it.  Its shared operands
  that `T.annotate_layout` does not lay out get `swizzle = <bytes>`: the XOR swizzle of
  their row width, at most 128 bytes (none below 32), which every access then applies.
  With `wgmma` (sm_90a) a gemm whose operands wgmma can read (B from shared memory, A from
  shared memory or from a fragment: the RS form; a shared operand may be a region of a tile or
  of a stage of one) gets `mma = "wgmma"` instead, and its operands' shared allocations the
  swizzle (and column chunk) of the PTX canonical layouts (`wgmma_operands`, `_wgmma_shared`). An fp8 gemm (float8_e4m3fn / float8_e5m2 into an f32 fragment) takes
  wgmma m64nNk32 with both operands K-major in shared memory (`wgmma_fp8_operands`). Other
  gemms keep the SIMT path. The program's own waits (`tile.gemm_wait` without accumulators,
  TileLang's `T.wait_wgmma`) get the accumulators of the asynchronous wgmmas that can be running
  there (`running_accumulators`), whose registers the wait then ties.
Fails: on an fp8 gemm before sm_89, on wgmma an fp8 gemm with a transposed (not K-major)
  operand, and on a `T.wgmma_gemm` (`wgmma_only`) that wgmma cannot compute, with an error at the
  gemm naming the feature; other gemms the instructions cannot run are left as they are.

    tile.gemm %a, %b, %c : !tile.buffer<64x32xf16, shared>, ..., !tile.buffer<64x64xf32, fragment>
  becomes
    tile.gemm %a, %b, %c {mma = "m16n8k16"} : ...
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.dialects import tile
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass

from tilec.errors import error_at

from .analysis import known_multiple
from .program_waits import running_accumulators
from .target_facts import target_facts
from .layouts import mma_accumulator_layout, wgmma_accumulator_layout, wgmma_register_a_layout


def mma_fits(op: tile.GemmOp, threads: int) -> bool:
    """Whether mma.sync m16n8k16 can compute this gemm with `threads` threads."""
    a, b, c = (v.type.element_type for v in (op.a, op.b, op.c))
    if a != b or str(a) not in ("f16", "bf16") or str(c) != "f32" or op.c.type.scope != "fragment":
        return False
    m, n, k = op.mnk()
    return k % 16 == 0 and mma_accumulator_layout(m, n, threads, op.policy.data) is not None


def _plain_shared(value) -> tile.AllocOp | None:
    """The shared allocation `value` is, when it is one (not a region) and nothing else lays it out."""
    alloc = value.owner
    if not isinstance(alloc, tile.AllocOp) or alloc.result.type.scope != "shared":
        return None
    if alloc.annotated_swizzle is not None:
        return None
    return alloc


def _wgmma_shared(value, k_major: bool, element_bytes: int) -> tuple[tile.AllocOp, dict] | None:
    """The shared allocation a wgmma operand reads and the row layout it needs there, or None.

    The operand is the allocation, a stage of a multi-buffered one, or a region of either
    (TileLang's `KV_shared[stage, :, :D // 2]`, `Q_shared[:, D:]`). Its rows are the allocation's
    rows, so the layout is that of the allocation's row width (`_row_layout`), and a region must
    start where wgmma's descriptors can: at a multiple of 8 rows (a swizzle atom's), and along the
    row at a k step (K-major: 32 bytes) or at a whole swizzle atom, with whole atoms across
    (M- or N-major). The allocation's rows are a multiple of 8, so that each of its stages and
    column chunks starts on the swizzle pattern's repeat boundary (the descriptors' base offset
    is 0). An allocation `T.annotate_layout` fixed serves when the annotation is that swizzle
    (TileLang's `make_swizzled_layout` of a row wider than 128 bytes is the same column chunks)."""
    columns, offsets = value.type.shape[-1], []
    while isinstance(value.owner, tile.RegionOp | tile.StageOp):
        if isinstance(value.owner, tile.RegionOp):
            offsets.append((value.owner.offsets[-2], value.owner.offsets[-1]))
        value = value.owner.source
    alloc = value.owner
    if not isinstance(alloc, tile.AllocOp) or alloc.result.type.scope != "shared" or alloc.result.type.rank < 2:
        return None
    if alloc.result.type.shape[-2] % 8:
        return None  # a stage or a column chunk would start inside a swizzle pattern (its base offset is 0)
    layout = _row_layout(alloc.result.type.shape[-1], element_bytes)
    if layout is None:
        return None
    if alloc.annotated_swizzle not in (None, layout["swizzle"]):
        return None
    atom = layout["swizzle"] // element_bytes  # columns of one swizzle atom's row
    col_step = 32 // element_bytes if k_major else atom
    if not k_major and columns % atom:
        return None
    for row, col in offsets:
        if known_multiple(row) % 8 or known_multiple(col) % col_step:
            return None
    return alloc, layout


def _plain_fragment(value) -> tile.AllocOp | None:
    """The fragment allocation `value` is, when it is one (not a region of one)."""
    alloc = value.owner
    if not isinstance(alloc, tile.AllocOp) or alloc.result.type.scope != "fragment":
        return None
    return alloc


FP8_TYPES = ("f8E4M3FN", "f8E5M2")


def is_fp8_gemm(op: tile.GemmOp) -> bool:
    """Whether A or B is fp8 (float8_e4m3fn / float8_e5m2)."""
    return any(str(v.type.element_type) in FP8_TYPES for v in (op.a, op.b))


def wgmma_fp8_operands(op: tile.GemmOp, threads: int) -> dict | None:
    """`wgmma_operands` of an fp8 gemm (wgmma m64nNk32, e4m3 / e5m2 in any pairing, f32
    accumulator): both operands K-major in shared memory, the only layout wgmma reads for 8-bit
    types (A [M, K], B [N, K] with transpose_B), rows of K bytes swizzled by their width (128-byte
    chunks for wider rows). None when it cannot (`apply` refuses a transposed operand)."""
    a_t, b_t, c_t = (str(v.type.element_type) for v in (op.a, op.b, op.c))
    if a_t not in FP8_TYPES or b_t not in FP8_TYPES or c_t != "f32" or op.c.type.scope != "fragment":
        return None
    if op.trans_a or not op.trans_b:
        return None
    m, n, k = op.mnk()
    if k % 32 or wgmma_accumulator_layout(m, n, threads) is None:
        return None
    return _shared_plan((op.a, True), (op.b, True), element_bytes=1)


def wgmma_operands(op: tile.GemmOp, threads: int) -> dict | None:
    """How wgmma m64nNk16 reads this gemm's operands: per shared allocation, the swizzle (and the
    column chunk of rows wider than 128 bytes) its layout needs; None when it cannot.

    A is a shared tile, K-major ([M, K]) or M-major ([K, M] with transpose_A) (the SS form), or a
    fragment (the RS form: tile-infer-layout gives it `wgmma_register_a_layout`, which an
    accumulator converted to 16 bits already has); B is K-major ([N, K] with transpose_B) or
    N-major ([K, N]), always shared. A row
    of 32, 64 or 128 bytes takes the swizzle of its width; a wider one (a multiple of 64
    halves: K of 128 or 256 in attention's Q K^T, N up to 256) is stored as 64-column chunks
    with the 128-byte swizzle, one after the other (`_row_layout`). The accumulator is an f32
    fragment of 64-row blocks per warpgroup (`passes/layouts.py: wgmma_accumulator_layout`).
    """
    if not mma_fits(op, threads):
        return None
    m, n, k = op.mnk()
    if wgmma_accumulator_layout(m, n, threads) is None:
        return None
    b = (op.b, bool(op.trans_b))  # B [N, K] is K-major
    if op.a.type.scope == "fragment":  # RS: A from registers
        if op.trans_a or _plain_fragment(op.a) is None or wgmma_register_a_layout(m, k, threads) is None:
            return None
        return _shared_plan(b)
    return _shared_plan((op.a, not op.trans_a), b)


def _shared_plan(*operands: tuple, element_bytes: int = 2) -> dict | None:
    """Per shared allocation the gemm's (operand, K-major) pairs read, the row layout wgmma needs
    there (`_wgmma_shared`); None when one of them cannot be read. Two regions of one allocation
    need the same layout (that of its rows)."""
    plan = {}
    for value, k_major in operands:
        found = _wgmma_shared(value, k_major, element_bytes)
        if found is None:
            return None
        plan[found[0]] = found[1]
    return plan


def _row_layout(columns: int, element_bytes: int = 2) -> dict | None:
    """The shared layout of a wgmma operand whose rows hold `columns` values of `element_bytes`:
    the swizzle of the row's width (32, 64 or 128 bytes), or 128-byte column chunks (64 halves,
    128 fp8) with the 128-byte swizzle for wider rows (each chunk then is a canonical
    128-byte-row tile); None otherwise."""
    row = columns * element_bytes
    if row in (32, 64, 128):
        return {"swizzle": row}
    chunk = 128 // element_bytes
    if columns % chunk == 0:
        return {"swizzle": 128, "chunk": chunk}
    return None


@dataclass(frozen=True)
class TileSelectMmaPass(ModulePass):
    """Choose the tensor-core instruction of each tile.gemm the target can run on tensor cores."""

    name = "tile-select-mma"

    target: str = "sm_90a"
    """The target (target_facts.py): mma.sync where it has cp.async and mma.sync (sm_80+), wgmma
    where it has wgmma (sm_90a)."""

    wgmma: bool = False
    """Use wgmma m64nNk16 where the target has it and it fits (pass config `tilec.enable_wgmma`)."""

    program_async: bool = True
    """Leave the program's asynchronous wgmmas (`wg_wait`) running as written (pass config
    `tilec.async_wgmma`); False completes each where it stands (its `wg_wait` dropped)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = target_facts(self.target)
        for gemm in op.walk():
            if not isinstance(gemm, tile.GemmOp):
                continue
            kernel = tile.enclosing_kernel(gemm)
            if kernel is None:
                continue
            if not target.has_cp_async:
                _require_wgmma(gemm, target, self.wgmma, None)
                continue
            wgmma = self.wgmma and target.has_wgmma
            if is_fp8_gemm(gemm):
                _check_fp8_gemm(gemm, target, wgmma)
                plan = wgmma_fp8_operands(gemm, kernel.num_threads) if wgmma else None
            else:
                plan = wgmma_operands(gemm, kernel.num_threads) if wgmma else None
            _require_wgmma(gemm, target, self.wgmma, plan)
            if not self.program_async:
                gemm.wg_wait = None
            if plan is not None:
                gemm.mma = tile.MmaKindAttr(tile.MmaKind.WGMMA)
                for alloc, facts in plan.items():
                    for key, value in facts.items():  # the alloc's `swizzle` / `chunk` properties
                        setattr(alloc, key, IntegerAttr(value, i64))
            elif mma_fits(gemm, kernel.num_threads):
                gemm.mma = tile.MmaKindAttr(tile.MmaKind.M16N8K16)
                for operand in (gemm.a, gemm.b):
                    _swizzle_operand(operand)
        for wait in op.walk():
            if isinstance(wait, tile.GemmWaitOp) and not wait.cs:
                wait.operands = running_accumulators(wait)


def _require_wgmma(op: tile.GemmOp, target, enabled: bool, plan: dict | None) -> None:
    """A `T.wgmma_gemm` (`wgmma_only`) that wgmma cannot compute: an error at it saying why."""
    if op.wgmma_only is None or plan is not None:
        return
    if not target.has_wgmma:
        why = f"the target {target.arch or target.name} has no wgmma (sm_90a has)"
    elif not enabled:
        why = "wgmma is turned off for this build (the pass config tl.disable_wgmma or tilec.enable_wgmma=False)"
    else:
        why = (f"wgmma cannot compute it: A {op.a.type}, B {op.b.type}, C {op.c.type} (it multiplies float16 / "
               "bfloat16 (fp8: both K-major) into a float32 fragment of whole 64-row blocks per warpgroup, A from "
               "shared memory or registers, B from shared memory)")
    raise error_at(op, f"T.wgmma_gemm: {why}",
                   hint="use T.gemm, which takes mma.sync or the SIMT cores where wgmma cannot run the gemm")


def _check_fp8_gemm(op: tile.GemmOp, target, wgmma: bool) -> None:
    """Refuse an fp8 gemm the target cannot run: before sm_89 (no fp8 at all), and on sm_90a's
    wgmma an operand that is not K-major (wgmma reads 8-bit types only K-major)."""
    names = {"f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2"}
    dtype = next(names[str(v.type.element_type)] for v in (op.a, op.b) if str(v.type.element_type) in names)
    if not target.has_fp8:
        raise error_at(op, f"T.gemm of {dtype} operands needs sm_89 or newer (fp8 tensor cores and conversions); "
                           f"the target is {target.arch}",
                       hint="compile for sm_90a (wgmma e4m3 / e5m2), or convert the operands to float16 first")
    if wgmma and (op.trans_a or not op.trans_b):
        which = "A is transposed (M-major)" if op.trans_a else "B is [K, N] (N-major, transpose_B=False)"
        raise error_at(op, f"T.gemm of {dtype} operands on wgmma: {which}, and wgmma reads 8-bit operands only "
                           f"K-major",
                       hint="store B as [N, K] and pass transpose_B=True (A as [M, K], transpose_A=False), or "
                            "pass the config tl.disable_wgmma to compute it without tensor cores")


def _swizzle_operand(value) -> None:
    """A shared operand without a layout of its own gets the XOR swizzle of its row width (up to
    128 bytes), so that the 8 rows each ldmatrix reads fall into 8 different bank groups."""
    alloc = _plain_shared(value)
    if alloc is None or alloc.swizzle is not None:
        return
    typ = alloc.result.type
    row = typ.shape[-1] * tile.element_bytes(typ.element_type)
    if row < 32 or row & (row - 1) and row % 128:
        return
    alloc.swizzle = IntegerAttr(min(row, 128), i64)
