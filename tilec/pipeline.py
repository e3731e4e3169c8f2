"""Which passes run, in which order, per target; and what the runtime needs to launch the result.

    tile (frontend) ─ cuda_tile_passes ─▶ tile-opt ─ convert-tile-to-thread, thread-shared-divisor ─▶ thread
        ─ targets.nvptx ─▶ PTX

Each stage's IR can be kept (`get_ir(stage)`) and is written to
`TILEC_DUMP_IR` when that is set.
"""

from __future__ import annotations

import os

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import SSAValue

from tilec import config
from tilec.dialects import context, tile
from tilec.errors import TilecError, loc_of
from tilec.language.program import Symbol
from tilec.launch import GridExpr, LaunchSpec


def cuda_tile_passes(target, pass_configs: dict | None = None) -> list:
    """The tile-level passes for an NVIDIA target, in order."""
    from tilec.passes.canonicalize import tile as _  # noqa: F401 - canonicalization patterns load lazily
    from tilec.passes.tile_infer_layout import TileInferLayoutPass
    from tilec.passes.tile_insert_barriers import TileInsertBarriersPass
    from tilec.passes.tile_legalize_bounds import TileLegalizeBoundsPass
    from tilec.passes.tile_pipeline import TilePipelinePass
    from tilec.passes.tile_plan_shared_memory import TilePlanSharedMemoryPass
    from tilec.passes.tile_select_mma import TileSelectMmaPass

    from tilec.passes.tile_warp_specialize import TileWarpSpecializePass

    configs = pass_configs or {}
    wgmma = target.has_wgmma and bool(configs.get("tilec.enable_wgmma", True))
    specialize = wgmma and target.has_tma and not configs.get("tl.disable_warp_specialized") and \
        not configs.get("tl.disable_tma_lower")
    return [
        TileLegalizeBoundsPass(),  # prove which global accesses stay in bounds; the rest get predicates
        *([TileSelectMmaPass(arch=target.arch, wgmma=wgmma)]
          if _sm80_or_later(target) and configs.get("tilec.enable_mma", True) else []),  # tensor cores
        *([TileWarpSpecializePass()] if specialize else []),  # T.Pipelined wgmma loops: TMA producer warpgroup
        *([TilePipelinePass()] if _sm80_or_later(target) else []),  # T.Pipelined: multi-buffered cp.async stages
        TileInferLayoutPass(),  # thread ↔ element maps for fragments and T.Parallel loops
        TilePlanSharedMemoryPass(limit=target.smem_per_block),  # offsets, reuse, budget check
        TileInsertBarriersPass(),  # order shared-memory accesses of different threads
    ]


def _sm80_or_later(target) -> bool:
    """Whether the target has mma.sync m16n8k16 and cp.async (sm_80 and later)."""
    arch = target.arch or ""
    return arch.startswith("sm_") and int(arch[3:5]) >= 80


def grid_expr(program) -> GridExpr:
    """The grid of `program`'s tile.kernel as a function of its dynamic sizes."""
    f = program.func
    kernel = next(op for op in f.body.block.ops if isinstance(op, tile.KernelOp))
    expr = GridExpr()
    numbers: dict[SSAValue, int] = {}

    def number(value: SSAValue) -> int:
        if value in numbers:
            return numbers[value]
        op = value.owner
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            expr.program.append(["const", op.value.value.data])
        elif isinstance(op, tile.DimOp):
            param = program.params[f.body.block.args.index(op.source)]
            sym = param.shape[op.dim.value.data]
            expr.program.append(["size", sym.name if isinstance(sym, Symbol) else str(sym)])
        elif isinstance(op, arith.IndexCastOp):
            expr.program.append(["copy", number(op.input)])
        elif op is not None and op.name in GridExpr._BINARY:
            expr.program.append([op.name, number(op.operands[0]), number(op.operands[1])])
        else:
            where = op if op is not None and loc_of(op) is not None else kernel
            raise TilecError(f"the grid size computed by {getattr(op, 'name', value)} cannot be evaluated at launch",
                             loc=loc_of(where) or program.loc,
                             hint="compute grid sizes from sizes and constants with + - * // %, T.ceildiv, T.min "
                                  "and T.max")
        numbers[value] = len(expr.program) - 1
        return numbers[value]

    expr.outputs = [number(g) for g in kernel.grid]
    return expr


def _dump(stage: str, text: str, name: str) -> None:
    if config.DUMP_IR:
        os.makedirs(config.DUMP_IR, exist_ok=True)
        with open(os.path.join(config.DUMP_IR, f"{name}.{stage}.mlir"), "w", encoding="utf-8") as f:
            f.write(text)


def run_tile_passes(program, target, pass_configs: dict | None = None) -> ModuleOp:
    """A copy of the program's module after the tile-level passes."""
    from tilec.dialects import print_ir

    ctx = context()
    module = program.module.clone()
    for p in cuda_tile_passes(target, pass_configs):
        p.apply(ctx, module)
        if config.VERIFY:
            module.verify()
        if config.DUMP_IR:
            _dump(p.name, print_ir(module), program.name)
    return module


def lower_to_thread(program, target, pass_configs: dict) -> tuple[ModuleOp, LaunchSpec, dict]:
    """Runs the tile passes and the conversion; returns the thread module, launch spec and stage IRs.

    Stage IRs are printed only when asked for: each value of the dict is a
    function returning the text (printing costs more than compiling).
    """
    from tilec.dialects import print_ir
    from tilec.passes.convert_tile_to_thread import ConvertTileToThreadPass
    from tilec.passes.thread_shared_divisor import ThreadSharedDivisorPass

    grid = grid_expr(program)
    kernel = next(op for op in program.func.body.block.ops if isinstance(op, tile.KernelOp))
    block = kernel.thread_extents
    module = run_tile_passes(program, target, pass_configs)
    ConvertTileToThreadPass().apply(context(), module)
    ThreadSharedDivisorPass().apply(context(), module)  # one reciprocal per divisor, results unchanged
    if config.VERIFY:
        module.verify()
    stages = {"tile-opt": lambda: print_ir(run_tile_passes(program, target, pass_configs)),
              "thread": lambda: print_ir(module)}
    if config.DUMP_IR:
        _dump("thread", print_ir(module), program.name)
    kfunc = next(op for op in module.ops if isinstance(op, func.FuncOp) and "nvvm.kernel" in op.attributes)
    smem = kfunc.attributes["tilec.smem_bytes"].value.data
    if smem > target.smem_per_block:
        raise TilecError(f"the kernel needs {smem} bytes of shared memory, more than the {target.smem_per_block} "
                         f"a block may use on {target.name}", loc=program.loc,
                         hint="use smaller tiles or fewer pipeline stages")
    pairs = kfunc.attributes["tilec.sizes"].get_values()
    args: list = [("tensor", i) for i in range(len(program.params))]
    for i in range(0, len(pairs), 2):
        sym = program.params[pairs[i]].shape[pairs[i + 1]]
        args.append(("size", sym.name))
    maps = kfunc.attributes.get("tilec.tensor_maps")
    for m in maps.data if maps is not None else ():
        d = m.data
        args.append(("tensormap", {"tensor": d["tensor"].value.data, "dtype": d["dtype"].data,
                                   "box": list(d["box"].get_values()), "swizzle": d["swizzle"].value.data}))
    block = tuple(kfunc.attributes["nvvm.maxntid"].get_values())  # a warp-specialized kernel adds a producer
    spec = LaunchSpec(kfunc.sym_name.data, block, smem, grid, args)
    return module, spec, stages
