"""Tile IR → thread IR for the CUDA targets: the tile passes of `pass_list`, then the conversion.

    program.module (tile, from the frontend)
      │ clone; pass_list.cuda_tile_passes(target, configs), verified after each with TILEC_VERIFY
      ▼
    tile-opt module   (kept: `Lowered.tile_opt`)
      │ clone; convert-tile-to-thread, thread-shared-divisor, thread-sigmoid
      ▼
    thread module     (kept: `Lowered.thread`) + the LaunchSpec the runtime launches it with

Every stage's module is kept, so printing a stage (`get_ir`) never runs a pass again.
With a dump folder (TILEC_DUMP_IR, or the `tl.enable_dump_ir` pass config) the IR after
every pass is written there as `<kernel>.<pass>.mlir`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from tilec import config
from tilec.compiler import size_variants
from tilec.compiler.launch import SCALAR_SIZE_PREFIX, GridExpr, LaunchSpec
from tilec.errors import TilecError, loc_of

STAGES = ("tile-opt", "thread")
"""The stages a lowering keeps, after the frontend's "tile"."""


@dataclass
class Lowered:
    """The result of lowering one KernelProgram: every stage's module and the launch spec."""

    tile_opt: object  # the ModuleOp after the tile passes
    thread: object  # the ModuleOp after convert-tile-to-thread
    spec: LaunchSpec
    planned_smem: int  # bytes tile-plan-shared-memory placed (spec.smem_bytes adds lowering scratch)

    def stage(self, name: str) -> str:
        """The printed IR of stage `name` ("tile-opt" or "thread")."""
        from tilec.dialects import print_ir

        return print_ir(self.tile_opt if name == "tile-opt" else self.thread)


def grid_expr(program) -> GridExpr:
    """The grid of `program`'s tile.kernel as a function of its dynamic sizes."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IntegerAttr
    from xdsl.ir import BlockArgument

    from tilec.dialects import tile
    from tilec.language.program import Symbol

    f = program.func
    kernel = next(op for op in f.body.block.ops if isinstance(op, tile.KernelOp))
    expr = GridExpr()
    numbers: dict = {}

    def number(value) -> int:
        if value in numbers:
            return numbers[value]
        op = value.owner
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            expr.program.append(["const", op.value.value.data])
        elif isinstance(op, tile.DimOp):
            param = program.params[f.body.block.args.index(op.source)]
            sym = param.shape[op.dim.value.data]
            expr.program.append(["size", sym.name if isinstance(sym, Symbol) else str(sym)])
        elif isinstance(value, BlockArgument) and value in f.body.block.args:  # an integer scalar parameter
            param = program.params[f.body.block.args.index(value)]
            expr.program.append(["size", SCALAR_SIZE_PREFIX + param.name])
        elif isinstance(op, arith.IndexCastOp | arith.ExtSIOp | arith.ExtUIOp):
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


def check_scalar_params(program) -> None:
    """Scalar kernel parameters reach the CUDA lowering only where it passes them by value (the
    conversion says so with `SCALAR_PARAMS`) and only as integers (the thread-level simulator binds
    its scalar parameters as int64)."""
    from tilec.passes import convert_tile_to_thread

    scalars = [p for p in program.params if p.shape is None]
    if not scalars:
        return
    if not getattr(convert_tile_to_thread, "SCALAR_PARAMS", False):
        raise TilecError(f"scalar parameter `{scalars[0].name}` of {program.name} is not supported by the CUDA "
                         "lowering yet (it passes only tensors and sizes)", loc=program.loc,
                         hint="run it on target='interp', or make it an argument of the @tilec.jit factory")
    for p in scalars:
        if not p.dtype.name.startswith(("int", "uint")):
            raise TilecError(f"scalar parameter `{p.name}` of {program.name}: {p.dtype.name} scalars are not "
                             "supported by the CUDA targets yet (integer scalars are)", loc=program.loc,
                             hint="pass it in a one-element tensor")


def dump(folder: str | None, stage: str, text: str, name: str) -> None:
    """Writes `<name>.<stage>.mlir` into `folder` (nothing when there is no folder)."""
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{name}.{stage}.mlir"), "w", encoding="utf-8") as f:
        f.write(text)


def run_tile_passes(program, target, pass_configs: dict | None = None, *, dump_dir: str | None = None):
    """A copy of the program's module after the tile-level passes (dump_dir None: TILEC_DUMP_IR)."""
    from tilec.compiler.pass_list import cuda_tile_passes
    from tilec.dialects import context, print_ir

    ctx = context()
    dump_dir = config.DUMP_IR if dump_dir is None else dump_dir
    module = program.module.clone()
    assumed = pass_configs.get(size_variants.CONFIG)  # True: sizes of 16-byte multiples; a dict: those multiples
    if assumed:  # (a build the launcher runs only for calls whose sizes are such multiples)
        size_variants.annotate(module, program, assumed if isinstance(assumed, dict) else None)
    for p in cuda_tile_passes(target, pass_configs):
        p.apply(ctx, module)
        if config.VERIFY:
            module.verify()
        if dump_dir:
            dump(dump_dir, p.name, print_ir(module), program.name)
    return module


def check_mbarriers(program, target) -> None:
    """T.alloc_barrier is Hopper's mbarrier protocol (phase waits by try_wait.parity, transaction
    counts, the init fence): a located error on a target without it (sm_80), where LLVM would
    abort the process."""
    from tilec.dialects import tile
    from tilec.errors import error_at

    if target.has_tma:
        return
    alloc = next((op for op in program.module.walk() if isinstance(op, tile.AllocBarrierOp)), None)
    if alloc is not None:
        raise error_at(alloc, f"T.alloc_barrier: tilec's mbarriers (phase waits, transaction counts) need sm_90 or "
                              f"newer; this kernel is built for {target.arch}",
                       hint="build for sm_90a (target='sm_90a'), or synchronize with T.sync_threads on sm_80")


def lower_to_thread(program, target, pass_configs: dict, *, dump_dir: str | None = None) -> Lowered:
    """Runs the tile passes and the conversion; every stage's module is kept in the result.
    `dump_dir`: where to write the IR after every pass (None: TILEC_DUMP_IR; "": nowhere).

    The shared-memory budget of the planned buffers is checked by tile-plan-shared-memory;
    the caller checks the lowered total (`checks.check_lowered_shared_memory`).
    """
    from xdsl.dialects import func

    from tilec.dialects import context, print_ir, tile
    from tilec.passes.convert_tile_to_thread import ConvertTileToThreadPass
    from tilec.passes.thread_shared_divisor import ThreadSharedDivisorPass
    from tilec.passes.thread_sigmoid import ThreadSigmoidPass

    check_scalar_params(program)
    check_mbarriers(program, target)
    grid = grid_expr(program)
    dump_dir = config.DUMP_IR if dump_dir is None else dump_dir
    tile_opt = run_tile_passes(program, target, pass_configs, dump_dir=dump_dir)
    module = tile_opt.clone()
    ConvertTileToThreadPass(stmatrix=bool(pass_configs.get("tilec.stmatrix", True))).apply(context(), module)
    ThreadSharedDivisorPass().apply(context(), module)  # one reciprocal per divisor, results unchanged
    ThreadSigmoidPass().apply(context(), module)  # 1 + tanh(u) = 2·σ(2u): gelu's epilogue without cancellation
    if config.VERIFY:
        module.verify()
    if dump_dir:
        dump(dump_dir, "thread", print_ir(module), program.name)
    kfunc = next(op for op in module.ops if isinstance(op, func.FuncOp) and "nvvm.kernel" in op.attributes)
    smem = kfunc.attributes["tilec.smem_bytes"].value.data
    pairs = kfunc.attributes["tilec.sizes"].get_values()
    args: list = [("tensor" if p.shape is not None else "scalar", i) for i, p in enumerate(program.params)]
    for i in range(0, len(pairs), 2):
        sym = program.params[pairs[i]].shape[pairs[i + 1]]  # a Symbol, or a SizeExpr (the runtime keys it by its text)
        args.append(("size", sym.name if hasattr(sym, "name") else str(sym)))
    maps = kfunc.attributes.get("tilec.tensor_maps")  # TMA descriptors, appended by the lowering
    for m in maps.data if maps is not None else ():
        d = m.data
        args.append(("tensormap", {"tensor": d["tensor"].value.data, "dtype": d["dtype"].data,
                                   "box": list(d["box"].get_values()), "swizzle": d["swizzle"].value.data}))
    grid.persistent = "tilec.persistent" in kfunc.attributes
    grid.balanced = grid.persistent and bool(pass_configs.get("tilec.balanced_waves", True))
    cluster = kfunc.attributes.get("nvvm.cluster_dim")
    grid.cluster = math.prod(cluster.get_values()) if cluster is not None and grid.persistent else 1
    block = tuple(kfunc.attributes["nvvm.maxntid"].get_values())  # a warp-specialized kernel adds its producer
    planned = next((op.smem_bytes for op in tile_opt.walk() if isinstance(op, tile.KernelOp)), None)
    return Lowered(tile_opt, module, LaunchSpec(kfunc.sym_name.data, block, smem, grid, args),
                   planned.value.data if planned is not None else 0)
