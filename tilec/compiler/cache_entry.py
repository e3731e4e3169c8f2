"""A CUDA build's cache entry: written after a build, read back field by field.

    {"kernel_name", "launch": LaunchSpec JSON, "ir": {stage: text}, "report": ptxas report JSON | None,
     "arch", "program": the program's fingerprint, "ptx": bytes, "cubin": bytes (with ptxas)}

`read_entry` takes an entry only if every field has the type and range a launch relies on and
the entry is this program's and this arch's; anything else is a miss, rebuilt, so nothing
damaged reaches the driver (`cache.get` has already checked every byte against its hashes).
"""

from __future__ import annotations

import re
from dataclasses import asdict

from tilec.compiler import cache
from tilec.compiler.launch import LaunchSpec, is_int

RESOURCE_FIELDS = ("name", "registers", "stack_frame_bytes", "spill_store_bytes", "spill_load_bytes",
                   "shared_bytes", "barriers")
"""targets.nvptx.KernelResources' fields (not imported: that loads LLVM)."""


def report_to_json(report) -> dict | None:
    if report is None:
        return None
    return {"arch": report.arch, "log": report.log, "kernels": {n: asdict(k) for n, k in report.kernels.items()}}


def report_from_json(data):
    if data is None:
        return None
    from tilec.targets.nvptx import KernelResources, PtxasReport

    return PtxasReport(data["arch"], {n: KernelResources(**k) for n, k in data["kernels"].items()}, data["log"])


def _report_ok(report) -> bool:
    if report is None:
        return True
    if not (isinstance(report, dict) and isinstance(report.get("arch"), str) and isinstance(report.get("log"), str)
            and isinstance(report.get("kernels"), dict)):
        return False
    for resources in report["kernels"].values():
        if not (isinstance(resources, dict) and set(resources) <= set(RESOURCE_FIELDS)
                and isinstance(resources.get("name"), str)
                and all(is_int(v) for k, v in resources.items() if k != "name")):
            return False
    return True


def make_entry(build) -> dict:
    """The cache entry of a fresh `CudaBuild`."""
    report = build._report if isinstance(build._report, dict) else report_to_json(build._report)
    entry = {"kernel_name": build.spec.kernel_name, "launch": build.spec.to_json(), "ir": build.ir,
             "report": report, "arch": build.arch, "program": cache.program_fingerprint(build.program),
             "ptx": build.ptx.encode()}
    if build.cubin is not None:
        entry["cubin"] = build.cubin
    return entry


def read_entry(entry: dict, program, arch: str):
    """(spec, ptx, cubin, ir, report JSON) from a build cache entry, or None if any field is
    missing or of the wrong type, the build is another program's or another arch's, the PTX
    lacks the entry function or the cubin is not an ELF image."""
    try:
        if entry.get("program") != cache.program_fingerprint(program) or entry.get("arch") != arch:
            return None
        spec = LaunchSpec.from_json(entry["launch"])
        ptx, cubin, ir, report = entry["ptx"], entry.get("cubin"), entry["ir"], entry.get("report")
        if not (spec.is_well_formed(len(program.params)) and spec.kernel_name == entry.get("kernel_name")
                and isinstance(ptx, bytes) and (cubin is None or (isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF"))
                and isinstance(ir, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in ir.items())
                and _report_ok(report)):
            return None
        ptx = ptx.decode()
        if not re.search(rf"\.entry\s+{re.escape(spec.kernel_name)}\b", ptx):
            return None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError):
        return None  # ValueError: bad JSON or UTF-8
    return spec, ptx, cubin, ir, report
