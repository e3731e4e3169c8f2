"""The compile driver: from a KernelProgram (the frontend's tile IR and calling convention) to
a backend that runs it on one Target.

    build(program, target, pass_configs) -> InterpBackend | SimBackend | CudaBackend | MultiKernelBackend

    kernel_program.py  KernelProgram, Param: what the frontend hands the compiler
    pass_configs.py    every pass_configs key tilec accepts, and its fate (honoured, n/a, refused)
    pass_list.py       which tile passes run, in which order, per target
    lower.py           tile passes + convert-tile-to-thread; every stage's module kept (`Lowered`)
    checks.py          shared memory (the planner's budget check, reused)
    multi_kernel.py    functions with several T.Kernels: one build each, launched in program order
    launch.py          the launch ABI: grid, block, shared memory and the argument kinds
    cuda_build.py      the CUDA build: cache key → lowering → LLVM → PTX → ptxas → cache entry
    cache_entry.py     that build's cache entry, written and read back field by field
    cache.py           the content-addressed disk cache, and the memo that skips the frontend
    cpu_backends.py    InterpBackend (targets/interp on the tile IR), SimBackend (thread IR on the CPU)
    cuda_backend.py    CudaBackend: a CudaBuild launched on the GPU (loaders in targets/cuda)

Light on import (no xDSL, no LLVM at module load anywhere in this package but lower.py's
functions): a process whose kernels all come from the cache loads only what launching needs.
"""

from __future__ import annotations

import contextlib
import gc


_paused = False  # the collector is paused by paused_gc (not by the caller): ours to run


@contextlib.contextmanager
def paused_gc():
    """The cyclic garbage collector paused while a kernel is built: building IR allocates some 10^5
    objects, many in reference cycles, and the collections they trigger cost ~17 % of a cold build
    (4096³ gemm, 1.44 → 1.19 s median on a 2-core machine); the cycles are collected once it resumes,
    or earlier by `collect_paused` (while ptxas runs)."""
    global _paused
    if not gc.isenabled():
        yield
        return
    gc.disable()
    _paused = True
    try:
        yield
    finally:
        _paused = False
        gc.enable()


def collect_paused() -> None:
    """Runs now the collection that the first allocation after `paused_gc` resumes would run (the
    young generation: it frees ~25,000 objects of a cold gemm build in ~0.05 s), where the build
    has other work on another core: the CUDA build calls it while the ptxas process runs. Nothing when
    the collector is not paused by `paused_gc` (the caller's own gc.disable() is respected)."""
    if _paused and not gc.isenabled():
        gc.collect(0)


def _needs_simulator(program) -> str | None:
    """Why the tile interpreter cannot run `program`, which the interp target then runs on the CUDA
    lowering's simulator instead (None: it can): warpgroup roles written as a branch on the thread
    index (every producer thread running its code, several consumer groups, or none but
    consumers), which the interpreter's two-role model does not hold, or per-thread code its lanes
    do not run (a thread's own local values, a loop over a thread-dependent range: threads.py)."""
    from tilec.dialects import tile
    from tilec.targets.interp.threads import unsupported_thread_use

    for op in program.module.walk():
        if isinstance(op, tile.WarpSpecializeOp) and op.user_roles is not None and \
                (op.all_producer_threads is not None or op.groups > 1):
            return "warpgroup roles the tile interpreter does not model"
        if isinstance(op, tile.ThreadIdOp) and (found := unsupported_thread_use(op)) is not None:
            return f"per-thread code the tile interpreter does not run ({found[1]})"
    return None


def build(program, target, pass_configs: dict, *, execution_backend: str = "auto", build_key: str | None = None,
          make_program=None):
    """The backend that runs `program` on `target`, built (or taken from the cache) now. A kernel with
    run-time inner sizes gets a build for sizes of 16-byte multiples, and others for the multiples a
    call's sizes have, each made at the first call that needs it (size_variants.py; `make_program`:
    the frontend again, for a program restored from the cache)."""
    why = _needs_simulator(program) if target.kind == "interp" else None
    if why is not None:
        from tilec.log import logger
        from tilec.target import resolve_target

        logger.info("%s: %s; running the CUDA lowering on the simulator (target 'sim')", program.name, why)
        target = resolve_target("sim")
    if target.kind == "interp":
        from tilec.compiler.cpu_backends import InterpBackend

        return InterpBackend(program)
    from tilec.compiler import size_variants
    from tilec.compiler.multi_kernel import MultiKernelBackend, kernel_count

    if target.kind == "sim":
        from tilec.compiler.cpu_backends import SimBackend

        make = lambda p, configs, key: SimBackend(p, target, configs)  # noqa: E731
    else:
        from tilec.compiler.cuda_backend import CudaBackend

        make = lambda p, configs, key: CudaBackend(p, target, configs, execution_backend=execution_backend,  # noqa: E731
                                                   build_key=key)
    needed = size_variants.size_multiples(program) if pass_configs.get(size_variants.CONFIG, True) else {}
    if kernel_count(program) > 1:
        return MultiKernelBackend(program, lambda p: make(p, {**pass_configs, size_variants.CONFIG: False}, build_key))
    if needed:
        return size_variants.SizeVariants(program, make, pass_configs, needed, build_key=build_key,
                                          make_program=make_program)
    return make(program, pass_configs, build_key)
