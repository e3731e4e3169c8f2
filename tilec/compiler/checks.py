"""What a kernel must satisfy to be built for a target, checked before and after lowering.

Shared memory has one budget check, tile-plan-shared-memory's: it places the kernel's shared
buffers and refuses, located at the `T.Kernel` and listing every buffer, a total above the
target's `smem_per_block`. The two checks here reuse it rather than repeat it:

- `check_gpu_limits` (the interpreter) runs the planner's own count (`shared_memory_bytes`)
  against the largest limit of any GPU target, so the CPU refuses what no GPU could run;
- `check_lowered_shared_memory` (after lowering) covers only what the planner cannot see:
  the exchange scratch the lowering adds behind the planned bytes (layout changes through
  shared memory, cross-warp reductions).
"""

from __future__ import annotations

from tilec.errors import TilecError, error_at, loc_of


def _kernels(program) -> list:
    from tilec.dialects import tile

    return [op for op in program.func.body.block.ops if isinstance(op, tile.KernelOp)]


def check_gpu_limits(program) -> None:
    """Refuses, for the CPU interpreter too, a kernel that no supported GPU target can run.

    Shared memory is counted as tile-plan-shared-memory places it (buffers whose live ranges
    do not overlap share bytes), before any pipelining multiplies buffers.
    """
    from tilec.dialects import tile
    from tilec.passes.tile_plan_shared_memory import shared_memory_bytes
    from tilec.target import largest_smem_per_block

    most, archs = largest_smem_per_block()
    for kernel in program.module.walk():
        if not isinstance(kernel, tile.KernelOp):
            continue
        need, listing = shared_memory_bytes(kernel)
        if need > most:
            raise error_at(kernel, f"the kernel needs {need} bytes of shared memory, more than any GPU target "
                                   f"can give a block: at most {most} bytes, on {' and '.join(archs)}; "
                                   f"shared buffers: {listing}",
                           hint="use smaller tiles (block_M / block_N / block_K), or keep some buffers in fragments")


def check_lowered_shared_memory(program, target, lowered) -> None:
    """The planned shared memory plus the lowering's scratch must fit the target's block."""
    smem = lowered.spec.smem_bytes
    if not target.smem_per_block or smem <= target.smem_per_block:
        return
    kernels = _kernels(program) if program.module is not None else []
    scratch = smem - lowered.planned_smem
    raise TilecError(f"the kernel needs {smem} bytes of shared memory, more than the {target.smem_per_block} "
                     f"a block may use on {target.name}: {lowered.planned_smem} bytes of shared buffers and "
                     f"{scratch} bytes of exchange scratch the lowering adds (layout changes, reductions)",
                     loc=(loc_of(kernels[0]) if kernels else None) or program.loc,
                     hint="use smaller tiles or fewer pipeline stages")
