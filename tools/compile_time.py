"""Cold-compile time of one kernel, from the factory call to the cubin, with a per-stage breakdown.

Issue 9's acceptance item: the reference gemm (../shared/kernels/gemm.py,
`matmul(4096, 4096, 4096, 128, 256, 64, 3, 256)`, float16, sm_90a) built in a fresh process
with the cache off stays ≤ 1.0 s. Each run is a fresh `python` process (TILEC_DISABLE_CACHE=1,
TILEC_DEFAULT_TARGET=sm_90a) that imports tilec and the kernel's module, then times the factory
call: frontend, passes, lowering, LLVM, ptxas and every lazy import the build triggers.

    python tools/compile_time.py                   # median of 7 runs, and the median of each stage
    python tools/compile_time.py --runs 11 --json  # the raw runs as JSON too
    python tools/compile_time.py --passes          # also each tile pass and conversion pass
    python tools/compile_time.py --profile out.prof  # one run under cProfile (the build only)

Stages (seconds; each stage's time excludes the imports it triggers, which are their own row):
    imports    modules first imported during the build (xDSL, llvmlite, the passes, ...)
    frontend   the factory call and the AST → tile IR build
    key        the cache key: printing the tile IR and hashing it
    passes     the tile passes (`lower.run_tile_passes`)
    convert    convert-tile-to-thread and the thread passes (rest of `lower.lower_to_thread`)
    translate  thread IR → LLVM IR text (`emit_llvm_ir`)
    llvm       parse + verify + the O3 pipeline + NVPTX codegen (`compile_llvm_ir`)
    ptxas      `assemble` (the ptxas subprocess)
    other      the rest of the call (JITKernel, checks, cache entry)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("TILEC_SHARED_KERNELS", os.path.join(os.path.dirname(ROOT), "shared", "kernels"))
STAGES = ("imports", "frontend", "key", "passes", "convert", "translate", "llvm", "ptxas", "other")
DEFAULT_CASE = "gemm.py:matmul:4096,4096,4096,128,256,64,3,256"


# ---- the child: one timed build --------------------------------------------------------------
class _Clock:
    """Wall time per stage, with the imports a stage triggers moved to the `imports` row."""

    def __init__(self):
        self.times = dict.fromkeys(STAGES, 0.0)
        self.passes: dict[str, float] = {}
        self.import_depth = 0
        self.import_total = 0.0
        self.modules: list[tuple[str, float]] = []  # outermost modules imported, with their time

    def stage(self, name, fn):
        """`fn`, its time (less the imports it triggers) added to stage `name`."""
        def timed(*args, **kwargs):
            t0, i0 = time.perf_counter(), self.import_total
            try:
                return fn(*args, **kwargs)
            finally:
                self.times[name] += time.perf_counter() - t0 - (self.import_total - i0)
        return timed

    def pass_timer(self, p):
        """A stand-in for tile pass `p` (a frozen dataclass) whose `apply` is timed under its name."""
        clock = self

        class Timed:
            name = p.name

            @staticmethod
            def apply(ctx, module):
                t0, i0 = time.perf_counter(), clock.import_total
                try:
                    return p.apply(ctx, module)
                finally:
                    clock.passes[p.name] = clock.passes.get(p.name, 0.0) + time.perf_counter() - t0 - \
                        (clock.import_total - i0)
        return Timed


def _install_hooks(clock: _Clock, per_pass: bool) -> None:
    """Times every module import (importlib's `_find_and_load`, which both `import` statements and
    `importlib.import_module` go through) and wraps the stage functions once their modules load."""
    import importlib._bootstrap as bootstrap

    find_and_load = bootstrap._find_and_load
    patches = {
        "tilec.compiler.lower": lambda m: _patch_lower(m, clock),
        "tilec.targets.nvptx": lambda m: _patch_nvptx(m, clock),
        "tilec.compiler.cuda_build": lambda m: setattr(m.CudaBuild, "_key",
                                                       clock.stage("key", m.CudaBuild._key)),
    }
    if per_pass:
        cuda_tile_passes = None

        def pass_list(m):
            nonlocal cuda_tile_passes
            cuda_tile_passes = m.cuda_tile_passes
            m.cuda_tile_passes = lambda *a, **k: [clock.pass_timer(p) for p in cuda_tile_passes(*a, **k)]
        patches["tilec.compiler.pass_list"] = pass_list

    def timed_find_and_load(name, import_):
        outermost = clock.import_depth == 0
        clock.import_depth += 1
        t0 = time.perf_counter()
        try:
            module = find_and_load(name, import_)
        finally:
            clock.import_depth -= 1
            if outermost:
                spent = time.perf_counter() - t0
                clock.import_total += spent
                clock.modules.append((name, spent))
        patch = patches.pop(name, None)
        if patch is not None:
            patch(module)
        return module

    bootstrap._find_and_load = timed_find_and_load
    for name in list(patches):  # already imported by `import tilec`
        if name in sys.modules:
            patches.pop(name)(sys.modules[name])


def _patch_lower(m, clock: _Clock) -> None:
    m.run_tile_passes = clock.stage("passes", m.run_tile_passes)
    m.lower_to_thread = clock.stage("convert", m.lower_to_thread)


def _patch_nvptx(m, clock: _Clock) -> None:
    m.emit_llvm_ir = clock.stage("translate", m.emit_llvm_ir)
    m.compile_llvm_ir = clock.stage("llvm", m.compile_llvm_ir)
    m.assemble = clock.stage("ptxas", m.assemble)


def _load_case(case: str):
    file, kernel, args = case.split(":")
    sys.path.insert(0, SHARED)
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import importlib.util

    path = file if os.path.isabs(file) else os.path.join(SHARED, file)
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, kernel), [int(a) for a in args.split(",") if a]


def child(case: str, per_pass: bool, profile: str | None) -> dict:
    t_import = time.perf_counter()
    import tilec  # noqa: F401

    t_import = time.perf_counter() - t_import
    factory, args = _load_case(case)  # the kernel's module (and what it imports: torch) before the clock
    clock = _Clock()
    _install_hooks(clock, per_pass)
    _patch_frontend(clock)
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
    kernel = factory(*args)
    total = time.perf_counter() - t0
    cpu = time.process_time() - c0 + _children_cpu() - k0
    if profile:
        prof.disable()
        prof.dump_stats(profile)
    backend = kernel._backend
    assert backend.cubin, "no cubin: is ptxas on PATH?"
    # `convert` is timed around all of lower_to_thread, `passes` inside it.
    clock.times["convert"] -= clock.times["passes"]
    clock.times["imports"] = clock.import_total
    clock.times["other"] = total - sum(clock.times[s] for s in STAGES if s != "other")
    return {"total": total, "cpu": cpu, "import_tilec": t_import, "stages": clock.times,
            "passes": clock.passes, "modules": sorted(clock.modules, key=lambda m: -m[1])[:15],
            "from_cache": backend.from_cache}


def _children_cpu() -> float:
    """CPU seconds of the finished child processes (ptxas)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _patch_frontend(clock: _Clock) -> None:
    """`JITFunction.build_program` is the frontend (factory call + AST → tile IR)."""
    jit = sys.modules["tilec.jit"]  # (`tilec.jit` the attribute is the decorator)
    jit.JITFunction.build_program = clock.stage("frontend", jit.JITFunction.build_program)


# ---- the parent: fresh processes, medians ----------------------------------------------------
def run_once(case: str, per_pass: bool, profile: str | None = None, pyc: str | None = None) -> dict:
    env = dict(os.environ, TILEC_DISABLE_CACHE="1", TILEC_DEFAULT_TARGET="sm_90a")
    if pyc:  # bytecode cached (outside the checkout) instead of compiled from source by every process
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pyc
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--case", case]
    if per_pass:
        cmd.append("--passes")
    if profile:
        cmd += ["--profile", profile]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"the timed build failed:\n{out.stdout}{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--case", default=DEFAULT_CASE, help="FILE:FACTORY:ARGS (file under ../shared/kernels)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--passes", action="store_true", help="also time each tile pass")
    ap.add_argument("--json", action="store_true", help="print the raw runs as JSON")
    ap.add_argument("--profile", help="one run under cProfile, written to this file")
    ap.add_argument("--pyc", metavar="DIR", help="let the processes cache bytecode in DIR (PYTHONPYCACHEPREFIX; "
                    "a first, untimed run fills it) instead of compiling every module from source, as they do "
                    "under PYTHONDONTWRITEBYTECODE=1")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.case, a.passes, a.profile)))
        return 0
    pyc = os.path.abspath(a.pyc) if a.pyc else None
    if pyc:
        run_once(a.case, False, pyc=pyc)
    if a.profile:
        r = run_once(a.case, a.passes, os.path.abspath(a.profile), pyc=pyc)
        print(f"total {r['total']:.3f} s; profile in {a.profile}")
        return 0
    runs = [run_once(a.case, a.passes, pyc=pyc) for _ in range(a.runs)]
    if any(r["from_cache"] for r in runs):
        sys.exit("a run was served from the cache: TILEC_DISABLE_CACHE was not honoured")
    totals = sorted(r["total"] for r in runs)
    import importlib.util

    import tilec

    installed = os.path.exists(importlib.util.cache_from_source(tilec.__file__))  # `make install` compiles it
    bytecode = f"bytecode cached in {a.pyc}" if pyc else \
        ("bytecode as installed (compileall)" if installed else
         "modules compiled from source" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "bytecode as Python caches it")
    print(f"{a.case}: cold compile to cubin, {a.runs} fresh processes (TILEC_DISABLE_CACHE=1, sm_90a, {bytecode})")
    print(f"  median {statistics.median(totals):.3f} s   min {totals[0]:.3f}   max {totals[-1]:.3f}   "
          f"(import tilec {statistics.median(r['import_tilec'] for r in runs):.3f} s, not counted)")
    print(f"  cpu    {statistics.median(r['cpu'] for r in runs):.3f} s median (this process and ptxas: less "
          "sensitive than wall time to a busy machine)")
    for s in STAGES:
        print(f"  {s:10s} {statistics.median(r['stages'][s] for r in runs):.3f}")
    if a.passes:
        names = sorted({n for r in runs for n in r["passes"]},
                       key=lambda n: -statistics.median(r["passes"].get(n, 0.0) for r in runs))
        print("  per pass:")
        for n in names:
            print(f"    {n:32s} {statistics.median(r['passes'].get(n, 0.0) for r in runs):.3f}")
    mid = sorted(runs, key=lambda r: r["total"])[len(runs) // 2]
    print("  slowest imports (median run): " + ", ".join(f"{n} {t:.3f}" for n, t in mid["modules"][:8]))
    if a.json:
        print(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
