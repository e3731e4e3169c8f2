"""Thread-level IR → LLVM IR text → PTX through llvmlite's NVPTX backend.

Owns the LLVM side: one-time target initialization, the target machine per
(arch, PTX version, opt level), LLVM's new-pass-manager O0–O3 pipeline and PTX emission.
Target facts beyond the arch name live in `tilec.targets.Target`; this entry point takes
only the arch string so that it can run without one.

PTX version: `.version` follows the arch's feature string (sm_80 → 7.0, sm_90 → 7.8,
sm_90a → 8.0, as verified on the H200 in HOPPER_KERNELS.md); `ptx_version=83` etc. raises it
for newer instructions (tensormap proxy fences need 8.3).
"""

from __future__ import annotations

import functools
import re
import threading

import llvmlite.binding as llvm
from xdsl.dialects.builtin import ModuleOp

from .translate import TRIPLE, TranslateOptions, translate_module
from .translate_fp8 import fp8_ptx_version

__all__ = ["compile_llvm_ir", "emit_llvm_ir", "emit_ptx", "ptx_features"]

# Lowest PTX ISA version that supports each arch (LLVM's own defaults).
_MIN_PTX = {"sm_70": 60, "sm_75": 63, "sm_80": 70, "sm_86": 71, "sm_87": 74, "sm_89": 78,
            "sm_90": 78, "sm_90a": 80, "sm_100": 86, "sm_100a": 86, "sm_120": 87, "sm_120a": 87}  # fmt: skip
_init_lock = threading.Lock()
_initialized = False


def _initialize() -> None:
    global _initialized
    with _init_lock:
        if not _initialized:
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            _initialized = True


def ptx_features(arch: str, ptx_version: int | None = None) -> str:
    """The `+ptxNN` feature string for `arch` (an unknown arch is rejected here: LLVM would
    abort the process on an intrinsic it cannot select, HOPPER_KERNELS.md §9.2)."""
    if arch not in _MIN_PTX:
        raise ValueError(
            f"unsupported NVPTX arch {arch!r}; expected one of {sorted(_MIN_PTX)}"
        )
    return f"+ptx{max(ptx_version or 0, _MIN_PTX[arch])}"


@functools.cache
def _target_machine(arch: str, features: str, opt_level: int) -> llvm.TargetMachine:
    _initialize()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, features=features, opt=opt_level)


def emit_llvm_ir(
    module: ModuleOp, *, fast_math: bool = False, index_bitwidth: int = 64, fp_contract: bool = True
) -> str:
    """The unoptimized LLVM IR of a thread-level module, as text (`TranslateOptions`)."""
    options = TranslateOptions(index_bitwidth=index_bitwidth, fast_math=fast_math, fp_contract=fp_contract)
    return str(translate_module(module, options))


def compile_llvm_ir(
    llvm_ir: str,
    arch: str = "sm_90a",
    *,
    opt_level: int = 3,
    ptx_version: int | None = None,
    short_shared_pointers: bool = False,
    optimized_ir: list[str] | None = None,
) -> str:
    """LLVM IR text → PTX. `short_shared_pointers` makes addrspace(3) pointers 32-bit
    (`p3:32:32`); `optimized_ir`, when given, receives the IR after optimization."""
    ptx_version = max(ptx_version or 0, fp8_ptx_version(llvm_ir, arch))
    tm = _target_machine(arch, ptx_features(arch, ptx_version), opt_level)
    mod = llvm.parse_assembly(llvm_ir)
    layout = str(tm.target_data)
    mod.data_layout = layout + ("-p3:32:32" if short_shared_pointers else "")
    mod.verify()
    if opt_level > 0:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    if optimized_ir is not None:
        optimized_ir.append(str(mod))
    return tm.emit_assembly(mod)


def emit_ptx(
    module: ModuleOp,
    arch: str = "sm_90a",
    *,
    fast_math: bool = False,
    opt_level: int = 3,
    index_bitwidth: int = 64,
    ptx_version: int | None = None,
    short_shared_pointers: bool = False,
) -> str:
    """Thread-level module → PTX text for `arch` (e.g. "sm_80", "sm_90a")."""
    llvm_ir = emit_llvm_ir(module, fast_math=fast_math, index_bitwidth=index_bitwidth)
    return compile_llvm_ir(llvm_ir, arch, opt_level=opt_level, ptx_version=ptx_version,
                           short_shared_pointers=short_shared_pointers)  # fmt: skip


def kernel_names(ptx: str) -> list[str]:
    """Names of the `.entry` functions in a PTX module."""
    return re.findall(r"\.entry\s+(\w+)", ptx)
