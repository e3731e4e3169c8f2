"""`tilec.tools.Analyzer`: a roofline estimate of a kernel from its tile IR (TileLang's
`Analyzer.analysis(func, device)`, there computed on TVM TIR).

    result = Analyzer.analysis(kernel.get_tir(...), CUDA("cuda"))
    result.total_flops, result.total_global_bytes, result.estimated_time, result.tflops, result.bandwidth_GBps

What is counted, per launch (every block of the grid, every trip of the loops around an op):

- flops: 2·M·N·K per `tile.gemm` (M×N accumulator, K the reduced extent);
- global bytes: the global region of each `tile.copy`, `tile.tma_load` and tile-wide `tile.atomic`,
  and each element a `T.Parallel` loop loads from or stores to a global tensor;
- time: the larger of flops / the device's peak tensor-core rate and bytes / its memory bandwidth.

The grid and the loop bounds must be compile-time numbers (a located error names the one that is
not); data-dependent control flow (`if`) is counted as taken. It is an estimate, as TileLang's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilec.errors import TilecError, error_at


@dataclass(frozen=True)
class AnalysisResult:
    """What `Analyzer.analysis` returns (TileLang's fields)."""

    total_flops: int
    total_global_bytes: int
    estimated_time: float  # seconds
    tflops: float
    bandwidth_GBps: float


def _program(func):
    """The KernelProgram of what the caller hands in: `get_tir(...)`'s program, a JITKernel or a T.prim_func."""
    from tilec.compiler.kernel_program import KernelProgram
    from tilec.language.structure import PrimFunc

    if isinstance(func, KernelProgram):
        program = func
    elif isinstance(getattr(func, "program", None), KernelProgram):
        program = func.program
    elif isinstance(func, PrimFunc):
        from tilec.frontend import build_prim_func

        program = build_prim_func(func)
    else:
        raise TilecError(f"Analyzer.analysis takes a kernel's program (jit_kernel.get_tir(...)), a compiled kernel "
                         f"or a T.prim_func, got {type(func).__name__}")
    if program.module is None:
        raise TilecError(f"Analyzer.analysis: {program.name} was restored from the cache without its tile IR",
                         hint="analyse the program of get_tir(...), which is built from the source")
    return program


def _static(value, what: str, op) -> int:
    from tilec.passes.analysis import constant_value

    n = constant_value(value)
    if n is None:
        raise error_at(op, f"Analyzer: the {what} is not a compile-time number, so the work cannot be counted",
                       hint="analyse the kernel for fixed sizes")
    return n


def _bytes(typ) -> int:
    from tilec.dtypes import from_ir

    return math.prod(typ.shape) * from_ir(typ.element_type).bits // 8


def _count(block, times: int, totals: list[int]) -> None:
    from xdsl.dialects import scf

    from tilec.dialects import tile

    for op in block.ops:
        if isinstance(op, tile.GemmOp):
            m, n, k = op.mnk()
            totals[0] += 2 * m * n * k * times
        elif isinstance(op, tile.CopyOp | tile.TmaLoadOp):
            glob = [v for v in (op.operands[0], op.operands[1]) if v.type.scope == "global"]
            totals[1] += sum(_bytes(v.type) for v in glob) * times
        elif isinstance(op, tile.AtomicOp) and not op.indices:
            totals[1] += _bytes(op.dst.type) * times
        elif isinstance(op, tile.LoadOp | tile.StoreOp):
            source = op.operands[0] if isinstance(op, tile.LoadOp) else op.operands[1]
            if source.type.scope == "global":
                from tilec.dtypes import from_ir

                totals[1] += from_ir(source.type.element_type).bits // 8 * times
        if isinstance(op, tile.ForOp):
            lb, ub, step = (_static(v, "loop bound", op) for v in (op.lb, op.ub, op.step))
            _count(op.body.block, times * max(0, -(-(ub - lb) // step)), totals)
        elif isinstance(op, tile.ParallelOp):
            _count(op.body.block, times * math.prod(op.shape), totals)
        elif isinstance(op, scf.IfOp | tile.WarpSpecializeOp):
            for region in op.regions:
                for b in region.blocks:
                    _count(b, times, totals)


class Analyzer:
    """TileLang's `tilec.tools.Analyzer` on tilec's tile IR (see the module docstring)."""

    @staticmethod
    def analysis(func, device) -> AnalysisResult:
        from tilec.dialects import tile

        program = _program(func)
        totals = [0, 0]
        for kernel in [op for op in program.func.body.block.ops if isinstance(op, tile.KernelOp)]:
            blocks = math.prod(_static(g, "grid size", kernel) for g in kernel.grid)
            _count(kernel.body.block, blocks, totals)
        flops, nbytes = totals
        time = max(flops / device.peak_flops, nbytes / device.bandwidth, 1e-12)
        return AnalysisResult(flops, nbytes, time, flops / time / 1e12, nbytes / time / 1e9)


__all__ = ["AnalysisResult", "Analyzer"]
