"""compute-sanitizer memcheck, racecheck and synccheck over tilec's GPU workloads, one summary.

    python tools/sanitize.py                       # every tool over every workload
    python tools/sanitize.py --tools racecheck --workloads gpu-tests --log-dir $OUT/sanitize

Workloads: `gpu-tests` (pytest tests/gpu), `reference` (../shared/kernels/run_all.py, or
.gpu/kernels on the device machine), `bench` (each bench kernel launched once with its check,
BENCH_ONCE=1, at a 1000x1280x520 shape with tails), `fuzz` (bench/fuzz_gpu.py, a few hundred cases). Each tool's report is parsed
for its error summary; the table at the end gives errors (and racecheck's hazards) per tool
and workload, and the exit status is 1 if any is non-zero or a run failed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = ("memcheck", "racecheck", "synccheck")


def _kernels_dir() -> str:
    for path in (os.environ.get("TILEC_SHARED_KERNELS", ""), os.path.join(ROOT, ".gpu", "kernels"),
                 os.path.join(os.path.dirname(ROOT), "shared", "kernels")):
        if path and os.path.isdir(path):
            return path
    return ""


def workloads() -> dict[str, list[str]]:
    py = sys.executable
    return {
        # every test (no -x); the one that times a kernel cannot hold under a sanitizer's slowdown
        "gpu-tests": [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/gpu",
                      "--deselect", "tests/gpu/test_cuda_backend_gpu.py::test_profiler_do_bench_uses_cuda_events"],
        "reference": [py, os.path.join(_kernels_dir(), "run_all.py")],
        "bench": [py, "bench/bench_gemm.py"],
        "fuzz": [py, "bench/fuzz_gpu.py", "--cases", "200", "--seed", "7"],
    }


_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")
_RACE = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")


def parse_summary(tool: str, text: str) -> dict:
    """Errors (and, for racecheck, hazards and warnings) from a compute-sanitizer report."""
    out = {"errors": None}
    if (m := _SUMMARY.search(text)) is not None:
        out["errors"] = int(m.group(1))
    if tool == "racecheck" and (m := _RACE.search(text)) is not None:
        out.update(hazards=int(m.group(1)), errors=int(m.group(2)), warnings=int(m.group(3)))
    return out


def run(tool: str, name: str, command: list[str], log_dir: str | None, timeout: int, kernels: str = "") -> dict:
    sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    # API errors are cuda-bindings' and torch's own probes (cuGetProcAddress of entry points the
    # driver lacks, returned as errors by design): not kernel errors
    full = [sanitizer, "--tool", tool, "--print-limit", "20", "--target-processes", "all", "--report-api-errors", "no"]
    if tool == "racecheck":
        full += ["--racecheck-report", "all"]
    if kernels:  # e.g. "kns=main": tilec's kernels only, not the float32 references torch launches
        full += ["--kernel-name", kernels]
    env = dict(os.environ, BENCH_ONCE="1", TILEC_DISABLE_CACHE=os.environ.get("TILEC_DISABLE_CACHE", "0"),
               PYTHONUNBUFFERED="1")
    # the bench kernels at shapes a sanitizer gets through (every tile configuration, plain and
    # persistent, tails included), unless the caller chose
    env.setdefault("BENCH_GEMM_SHAPES", "1000x1280x520")
    env.setdefault("BENCH_GEMM_GELU_SHAPE", "1000x1280x520")
    env.setdefault("BENCH_GEMM_TILES", "128x256x64x3x256,128x128x64x4x128")
    env.setdefault("BENCH_NO_TRITON", "1")  # Triton's kernels are not tilec's to check
    start = time.time()
    try:
        proc = subprocess.run(full + ["--"] + command, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
        text, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        text, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout"
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        with open(os.path.join(log_dir, f"{tool}-{name}.log"), "w") as f:
            f.write(text)
    result = parse_summary(tool, text)
    result.update(rc=rc, seconds=round(time.time() - start, 1))
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--workloads", default="gpu-tests,reference,bench")
    ap.add_argument("--log-dir", default=os.environ.get("OUT") and os.path.join(os.environ["OUT"], "sanitize"))
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--kernel-name", default="", help="compute-sanitizer's filter, e.g. kns=main (the reference gemms' "
                                                         "kernel) to leave torch's own kernels unchecked")
    args = ap.parse_args(argv)
    table = workloads()
    rows, bad = [], False
    for tool in args.tools.split(","):
        for name in args.workloads.split(","):
            r = run(tool, name, table[name], args.log_dir, args.timeout, args.kernel_name)
            rows.append((tool, name, r))
            bad |= r["rc"] != 0 or not r["errors"] == 0
            print(f"{tool:10s} {name:10s} {r}", flush=True)
    print("\n| tool | workload | errors | hazards | exit | seconds |\n|---|---|---|---|---|---|")
    for tool, name, r in rows:
        print(f"| {tool} | {name} | {r['errors']} | {r.get('hazards', '')} | {r['rc']} | {r['seconds']} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
