"""Running a fuzz case on a target and judging it against its float64 reference.

A case's source is written to a file and imported (tilec reads kernels' source with
`inspect`), compiled with `tilec.compile(main, target=..., pass_configs=...)` and called on
tensors made from the case's data: outputs poisoned with NaN, so an element the kernel
should write but does not stays NaN and fails the check, and an element it must not write
(outside every block's in-range region) must still be NaN afterwards.  Inputs must come back
unchanged.

Verdicts: "ok"; "mismatch" (a wrong, missing or stray element); "refused" (a TilecError while
compiling: the generator makes only valid programs, so this is a refusal to report or a
generator bug); "crash" (a TilecError while running, e.g. the simulator's out-of-range
access); "internal" (any other exception, or an "internal compiler error").
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import traceback
from dataclasses import dataclass, field

import numpy as np

SAFETY = 4.0  # slack over the first-order bound (second-order terms, the bound's rounding)
FLOOR = 1e-3  # an element's tolerance is at least FLOOR x the output's largest magnitude
MIN_BUDGET = 2.0**-23  # even exact pipelines get a couple of f32 ulps

_SOURCE_DIR = None


@dataclass
class Outcome:
    status: str
    message: str = ""
    worst: float = 0.0  # the largest error / tolerance ratio over the checked elements
    normwise: float = 0.0  # ||got - ref|| / ||magnitude||, the largest over the outputs
    details: list = field(default_factory=list)
    features: list = field(default_factory=list)  # what the lowering used (wgmma, mma.sync, cp.async, ...)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def source_dir() -> str:
    global _SOURCE_DIR
    if _SOURCE_DIR is None:
        _SOURCE_DIR = os.environ.get("TILEC_FUZZ_DIR") or tempfile.mkdtemp(prefix="tilec-fuzz-")
        os.makedirs(_SOURCE_DIR, exist_ok=True)
    return _SOURCE_DIR


def load_kernel(source: str):
    """Imports `source` from a file of its own and returns its `main` prim_func."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    name = f"tilec_fuzz_{digest}"
    path = os.path.join(source_dir(), f"{name}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    if name in sys.modules:
        return sys.modules[name].main
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module.main


def make_tensors(case, data: dict, device: str = "cpu") -> list:
    import torch

    return [torch.from_numpy(data[t.name].copy()).to(getattr(torch, t.dtype)).to(device) for t in case.prog.tensors]


def _classify(e: BaseException, phase: str) -> Outcome:
    from tilec import TilecError

    text = str(e)
    if isinstance(e, TilecError) and "internal compiler error" not in text:
        return Outcome("refused" if phase == "compile" else "crash", f"{phase}: {text}")
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__)[-6:])
    return Outcome("internal", f"{phase}: {type(e).__name__}: {text}\n{tb}")


FEATURES = {"wgmma": "wgmma.mma_async", "mma.sync": "nvvm.mma.sync", "cp.async": "cp.async", "ldmatrix": "ldmatrix",
            "shfl": "shfl.sync", "swizzle": "arith.xori"}


def run_case(case, target: str, device: str = "cpu", reference: dict | None = None,
             features: bool = False) -> Outcome:
    """Compiles and runs `case` on `target`, then checks every tensor against the reference
    (with `features`, also notes which thread-level constructs the lowering used)."""
    import tilec

    data = case.data()
    ref = case.prog.reference(data) if reference is None else reference
    try:
        prim = load_kernel(case.source)
        kernel = tilec.compile(prim, target=target, pass_configs=case.prog.pass_configs or None)
    except Exception as e:  # noqa: BLE001 -- every failure is a verdict
        return _classify(e, "compile")
    try:
        tensors = make_tensors(case, data, device)
        kernel(*tensors)
        if device != "cpu":
            import torch

            torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        return _classify(e, "run")
    got = {t.name: x.double().cpu().numpy() for t, x in zip(case.prog.tensors, tensors)}
    out = judge(case, data, got, ref)
    if features and target != "interp":
        thread = kernel.get_ir("thread")
        out.features = [name for name, needle in FEATURES.items() if needle in thread]
    return out


def judge(case, data: dict, got: dict, ref: dict) -> Outcome:
    out = Outcome("ok")
    for t in case.prog.tensors:
        g = got[t.name]
        if t.role == "in":
            if not np.array_equal(g, data[t.name]):
                out.status = "mismatch"
                out.details.append(f"{t.name}: input changed at {int((g != data[t.name]).sum())} elements")
            continue
        r = ref[t.name]
        untouched = np.isnan(r.v)
        stray = untouched & ~np.isnan(g)
        missing = ~untouched & ~np.isfinite(g)
        written = ~untouched
        tol = SAFETY * max(r.b, MIN_BUDGET) * (r.m + FLOOR * (r.m[written].max(initial=0.0))) + 1e-30
        err = np.where(written & np.isfinite(g), np.abs(g - np.where(written, r.v, 0.0)), 0.0)
        ratio = float((err / tol)[written].max(initial=0.0))
        mnorm = float(np.linalg.norm(r.m[written])) or 1.0
        out.worst = max(out.worst, ratio)
        out.normwise = max(out.normwise, float(np.linalg.norm(err[written])) / mnorm)
        bad = (err > tol) & written
        if stray.any() or missing.any() or bad.any():
            out.status = "mismatch"
            first = tuple(int(x) for x in np.argwhere(bad | missing | stray)[0])
            out.details.append(
                f"{t.name} {t.shape} {t.dtype}: {int(bad.sum())} wrong, {int(missing.sum())} missing (NaN), "
                f"{int(stray.sum())} written outside the program's region, of {g.size}; worst error/tolerance "
                f"{ratio:.3g}, normwise {out.normwise:.3g} (budget {r.b:.3g}); first at {first}: "
                f"got {g[first]!r}, want {r.v[first]!r}")
    out.message = "; ".join(out.details)
    return out


def assemble_case(case, arch: str = "sm_90a") -> Outcome:
    """Lowers `case` for `arch`, emits PTX and assembles it with ptxas (no GPU needed)."""
    from tilec.targets.nvptx import assemble, emit_ptx

    from tilec.frontend import build_prim_func
    from tilec.pipeline import lower_to_thread
    from tilec.target import resolve_target

    try:
        prim = load_kernel(case.source)
        module, spec, _ = lower_to_thread(build_prim_func(prim), resolve_target(arch), case.prog.pass_configs)
        cubin, report = assemble(emit_ptx(module, arch), arch)
    except Exception as e:  # noqa: BLE001 -- every failure is a verdict
        return _classify(e, "compile")
    if not cubin.startswith(b"\x7fELF") or spec.kernel_name not in report.kernels:
        return Outcome("internal", f"ptxas gave no cubin for {spec.kernel_name}:\n{report.log[-2000:]}")
    return Outcome("ok", report.log[-500:] if report.log else "")
