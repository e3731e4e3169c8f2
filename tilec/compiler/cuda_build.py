"""The CUDA build: tile IR → thread IR → LLVM IR → PTX → cubin, through the disk cache.

    CudaBuild(program, target, pass_configs)
      │ key = sha256(tile IR, calling convention, target, pass configs, ptxas, versions)
      │ cache hit → LaunchSpec, PTX, cubin, stage IRs from TILEC_CACHE_DIR (no lowering), taken only
      │             if every field checks out and the entry is this program's (`cache_entry.read_entry`)
      │ miss:  lower.lower_to_thread → Lowered (tile-opt and thread modules, LaunchSpec)
      │        checks.check_lowered_shared_memory
      │        targets.nvptx.emit_llvm_ir → compile_llvm_ir (PTX, keeping the LLVM text)
      │        targets.nvptx.assemble (ptxas -v) when ptxas is found, else the driver JITs the PTX
      ▼
    spec, ptx, cubin, report, and every stage's IR: printed from the kept modules after a fresh
    build; after a cache hit, the stored texts (tile, llvm, ptx) and, for tile-opt and thread, a
    lowering run again on request (the entry stores no modules: printing them costs a third of
    a build).

`.report` is ptxas's `PtxasReport` (registers, spills, shared memory) or None without ptxas.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
import time
import warnings

from tilec.compiler import cache, cache_entry, pass_configs
from tilec.errors import TilecError

STAGES = ("tile", "tile-opt", "thread", "llvm", "ptx")
_EXT = {"tile": "mlir", "tile-opt": "mlir", "thread": "mlir", "llvm": "ll", "ptx": "ptx"}


class CacheMissError(TilecError):
    """A build from a memo's `build_key` (no tile IR in memory) found no usable cache entry."""


def _ptxas_marker() -> str:
    """Which ptxas a build would use, cheaply (importing targets.nvptx loads LLVM: ~120 ms)."""
    candidates = [shutil.which("ptxas")] + [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    return "ptxas=" + ";".join(c or "" for c in candidates)


class CudaBuild:
    """One KernelProgram built for a CUDA target (see the module docstring)."""

    def __init__(self, program, target, pass_configs: dict | None = None, *, build_key: str | None = None):
        self.program = program
        self.target = target
        self.pass_configs = dict(pass_configs or {})
        self.build_key = build_key
        self.spec = None
        self.ptx = ""
        self.cubin: bytes | None = None
        self._report = None  # a PtxasReport, or its JSON form until first read (no LLVM import on a hit)
        self.lowered = None  # the kept stage modules after a fresh build; None after a cache hit
        self.ir: dict[str, str] = {}  # printed stages
        self._tile_text: str | None = None
        self.from_cache = False
        self.compile_seconds = 0.0
        self._build()

    @property
    def report(self):
        """ptxas's PtxasReport (registers, spills, smem) for this module, or None without ptxas."""
        if isinstance(self._report, dict):
            self._report = cache_entry.report_from_json(self._report)
        return self._report

    @property
    def module(self):
        """The thread-level ModuleOp after a fresh build; None after a cache hit."""
        return self.lowered.thread if self.lowered is not None else None

    @property
    def arch(self) -> str:
        return self.target.arch or self.target.name

    # ---- the build -----------------------------------------------------------------------
    def _key(self) -> str:
        from tilec.dialects import print_ir

        convention = cache.program_to_json(self.program)
        convention.pop("loc", None)
        self._tile_text = print_ir(self.program.module)
        return cache.key("cuda-backend", self._tile_text, convention, repr(self.target),
                         self.pass_configs, _ptxas_marker())

    def _build(self) -> None:
        start = time.perf_counter()
        if self.build_key is None:
            self.build_key = self._key()
        entry = cache.get(self.build_key)
        if entry is not None and self._restore(entry):
            self.from_cache = True
        elif self.program.module is None:
            raise CacheMissError(f"kernel {self.program.name}: no usable cached build {self.build_key[:12]} "
                                 "(missing, damaged, or another program's)",
                                 hint="build the program with the frontend (the memo's entry is stale)")
        else:
            self._compile()
            cache.put(self.build_key, cache_entry.make_entry(self))
        self.compile_seconds = time.perf_counter() - start
        folder = pass_configs.dump_dir(self.pass_configs)
        if folder:
            self.dump(folder)

    def _compile(self) -> None:
        from tilec.compiler import checks, collect_paused, lower
        from tilec.dialects import print_ir
        from tilec.targets.nvptx import (
            PtxasError,
            TranslationError,
            assemble,
            compile_llvm_ir,
            emit_llvm_ir,
            find_ptxas,
            kernel_names,
        )

        name = self.program.name
        self.lowered = lower.lower_to_thread(self.program, self.target, self.pass_configs,
                                             dump_dir=pass_configs.dump_dir(self.pass_configs) or "")
        checks.check_lowered_shared_memory(self.program, self.target, self.lowered)
        self.spec = self.lowered.spec
        self.ir = {"tile": self._tile_text or print_ir(self.program.module)}
        try:
            llvm_ir = emit_llvm_ir(self.lowered.thread, fast_math=self._fast_math(), index_bitwidth=self._index_bits(),
                                   fp_contract=bool(self.pass_configs.get("tilec.fp_contract", True)))
            self.ptx = compile_llvm_ir(llvm_ir, self.arch)
        except TranslationError as e:
            raise TilecError(f"kernel {name}: NVPTX translation failed: {e}", loc=self.program.loc) from None
        self.ir["llvm"], self.ir["ptx"] = llvm_ir, self.ptx
        if self.spec.kernel_name not in kernel_names(self.ptx):
            raise TilecError(f"kernel {name}: the PTX has no entry {self.spec.kernel_name!r} "
                             f"(found {kernel_names(self.ptx)})")
        if find_ptxas() is None:
            self._warn_without_ptxas()
            return
        try:
            # the collection the paused collector owes runs beside ptxas (2 cores: ~0.05 s of a cold gemm)
            self.cubin, self._report = assemble(self.ptx, self.arch, extra_args=self._ptxas_args(),
                                                meanwhile=collect_paused)
        except PtxasError as e:
            folder = pass_configs.dump_dir(self.pass_configs)
            if folder:  # the stages up to the PTX, for the inspection the hint offers
                self.dump(folder)
            raise TilecError(f"kernel {name}: ptxas rejected the PTX:\n{e}", loc=self.program.loc,
                             hint=_ptxas_hint(str(e), self.spec, folder)) from None
        if self.pass_configs.get("tl.enable_ptxas_verbose_output"):
            print(self._report.log, file=sys.stderr)
        self._report_serialized_wgmmas()

    def _report_serialized_wgmmas(self) -> None:
        """ptxas's notes that it serialized the kernel's wgmmas or waited for them where the program
        did not (C7510-C7519, "Potential Performance Loss"), as a TilecWarning at the kernel: the
        program's own asynchronous wgmmas (T.wgmma_gemm, T.wait_wgmma) then run one after another."""
        log = self._report.get("log", "") if isinstance(self._report, dict) else self._report.log  # (a cache hit's JSON)
        for line in log.splitlines():
            m = re.search(r"\((C751\d)\) (.*?)(?: in (?:the )?function '[^']*')?$", line)
            if m is None:
                continue
            code, text = m.groups()
            hint = _WGMMA_HINTS.get(code, "")
            pass_configs.report(f"kernel {self.program.name}: ptxas: {text} ({code}){hint}", self.program.loc)

    # ---- what the pass configs ask of the build (pass_configs.py lists them) ---------------
    def _fast_math(self) -> bool:
        return bool(self.pass_configs.get("tl.enable_fast_math", False)) and \
            not self.pass_configs.get("tl.disable_fast_math", False)

    def _index_bits(self) -> int:
        """The width of index arithmetic: `tl.config_index_bitwidth` when given, else 32 when every
        tensor is static and at most 2^30 elements (tiles that reach past an end stay far below
        2^31), which halves the integer instructions of address arithmetic; else 64."""
        configured = self.pass_configs.get("tl.config_index_bitwidth")
        if configured:
            return int(configured)
        for p in self.program.params:
            if p.shape is None:
                continue
            if not all(isinstance(d, int) for d in p.shape) or math.prod(p.shape) > 1 << 30:
                return 64
        return 32

    def _ptxas_args(self) -> tuple[str, ...]:
        level = self.pass_configs.get("tl.ptxas_register_usage_level")
        return () if level is None else (f"--register-usage-level={int(level)}",)

    def _warn_without_ptxas(self) -> None:
        for key in ("tl.ptxas_register_usage_level", "tl.enable_ptxas_verbose_output"):
            if self.pass_configs.get(key) not in (None, False):
                warnings.warn(f"pass config {key!r} is not applied to kernel {self.program.name}: no ptxas was "
                              "found, so the driver compiles the PTX", pass_configs.TilecWarning, stacklevel=2)

    def _restore(self, entry: dict) -> bool:
        """Takes a cached build (see `cache_entry.read_entry`); False, changing nothing, if it is not usable."""
        restored = cache_entry.read_entry(entry, self.program, self.arch)
        if restored is None:
            return False
        self.spec, self.ptx, self.cubin, self.ir, self._report = restored
        if self._report is not None:
            self._report_serialized_wgmmas()  # (as the build that made it did)
        return True

    # ---- inspection ------------------------------------------------------------------------
    def get_ir(self, stage: str = "tile") -> str:
        """The IR of `stage` (STAGES), printed once."""
        if stage in self.ir:
            return self.ir[stage]
        if stage == "tile" and self.program.module is not None:
            from tilec.dialects import print_ir

            return print_ir(self.program.module)
        if stage in ("tile-opt", "thread") and self.program.module is not None:
            if self.lowered is None:  # restored from the cache: lower again to show it
                from tilec.compiler import lower

                self.lowered = lower.lower_to_thread(self.program, self.target, self.pass_configs, dump_dir="")
            self.ir[stage] = self.lowered.stage(stage)
            return self.ir[stage]
        raise TilecError(f"unknown IR stage {stage!r} for kernel {self.program.name}",
                         hint=f"stages: {', '.join(s for s in STAGES if s in self.ir)}")

    def kernel_source(self) -> str:
        return self.ptx

    def emit(self, kind: str) -> str | bytes:
        if kind == "cubin":
            if self.cubin is None:
                raise TilecError("no cubin: ptxas was not found (PATH, $CUDA_HOME/bin, nvidia-cuda-nvcc wheel)",
                                 hint="install the CUDA toolkit or `pip install nvidia-cuda-nvcc`, or emit ptx")
            return self.cubin
        return self.get_ir(kind)

    def dump(self, folder: str) -> None:
        """Writes every stage as `<kernel>.<n>-<stage>.<ext>` (and the cubin) into `folder`."""
        os.makedirs(folder, exist_ok=True)
        if self.lowered is not None:
            for stage in ("tile-opt", "thread"):
                self.get_ir(stage)
        base = os.path.join(folder, self.program.name)
        for i, stage in enumerate(STAGES):
            if stage in self.ir:
                with open(f"{base}.{i}-{stage}.{_EXT[stage]}", "w", encoding="utf-8") as f:
                    f.write(self.ir[stage])
        if self.cubin is not None:
            with open(f"{base}.cubin", "wb") as f:
                f.write(self.cubin)


def _ptxas_hint(message: str, spec, folder: str | None) -> str:
    """What to change after ptxas refused the PTX: for a register shortfall (C7602), the budget
    the block's threads leave; and where the PTX is (or how to get it)."""
    where = f"the PTX is in {folder}" if folder else "TILEC_DUMP_IR=dir writes the PTX for inspection"
    if "C7602" in message:
        threads = spec.block[0] * spec.block[1] * spec.block[2]
        return (f"the block's {threads} threads leave {min(255, 65536 // threads // 8 * 8)} registers a thread "
                f"(65536 per multiprocessor): give it fewer threads or each thread less of the tile (smaller "
                f"block_M / block_N per warpgroup); {where}")
    return where


_WGMMA_HINTS = {
    "C7514": ": an accumulator of a running wgmma is read or written before the T.wait_wgmma that completes it "
             "(a wgmma kept running across a loop's back edge, or an accumulator rescaled in place, counts); wait "
             "for it first, as TileLang's FlashMLA does at the end of each iteration",
    "C7517": ": registers a running wgmma writes are used before the T.wait_wgmma that completes it; wait for it "
             "first",
    "C7511": ": too few registers to keep the wgmmas running",
}
"""What to change for ptxas's notes on the program's wgmmas (`_report_serialized_wgmmas`)."""
