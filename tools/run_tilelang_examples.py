"""Runs TileLang's example suite through tilec (`python -m tilec.compat -m pytest`), one file at a time.

    python tools/run_tilelang_examples.py                       # all 35 test files in scope
    python tools/run_tilelang_examples.py gemm flash_attention  # only these folders
    python tools/run_tilelang_examples.py --examples .gpu/tilelang-examples --timeout 900 --json out.json
    python tools/run_tilelang_examples.py --jobs 8 --timeout 300 --deadline 400 --json out.json --table out.md  # GPU
    python tools/run_tilelang_examples.py --also-compile sm_90a      # CPU: each kernel also built for sm_90a

The examples (test data: TileLang's own `*/test_*.py`, each calling an example's `main()`, which
checks itself against torch) are copied to a scratch folder and never into the project. Each
test file runs in its own subprocess with a time limit; each test function gets a row: pass,
fail, skip (TileLang's own markers), or timeout, with its time and the first line of its error.

Where no GPU is visible (or with --cuda-on-cpu), `tilec.testing.cuda_on_cpu` maps torch's CUDA
calls to the CPU and the kernels run on tilec's interpreter; on a GPU machine they run on it.
With --also-compile ARCH (CPU only), every kernel is also built for ARCH (PTX assembled by
ptxas, not launched): a test whose kernels are too slow on the interpreter still says, by a
timeout rather than an error, that it got past compilation. --compile-only ARCH builds every
kernel for ARCH and runs none (a diagnostic: the examples' checks then fail on wrong values, so
a failure other than a value mismatch is what to look at).

--jobs N runs N files at once; --deadline S stops launching files S seconds after the start,
ends the files still running then, and reports the tests it never reached as "not run".
The examples folder defaults to ../shared/tilelang-examples, or .gpu/tilelang-examples where
that exists (the copy on a GPU machine).

In scope: every `*/test_*.py` except those under `amd/`, `*sm100*`, `*sm120*`, `gemm_tcgen05/`
and `blockscaled_*` (35 files, 86 test functions).

This file is also the pytest plugin its subprocesses load (`-p run_tilelang_examples`): it
writes one JSON line per test as the test finishes, so a file killed by its time limit still
reports the tests that finished, and it gives every test a time limit of its own.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXCLUDED = ("amd", "gemm_tcgen05")
EXCLUDED_PARTS = ("sm100", "sm120", "blockscaled_")
RESULTS_ENV = "TILEC_EXAMPLES_RESULTS"
TEST_TIMEOUT_ENV = "TILEC_EXAMPLES_TEST_TIMEOUT"


def default_examples() -> str:
    gpu_copy = os.path.join(ROOT, ".gpu", "tilelang-examples")
    if os.path.isdir(gpu_copy):
        return gpu_copy
    return os.path.join(os.path.dirname(ROOT), "shared", "tilelang-examples")


def in_scope(rel: str) -> bool:
    folder = rel.split(os.sep)[0]
    return folder not in EXCLUDED and not any(p in folder for p in EXCLUDED_PARTS)


def test_files(examples: str, only: list[str]) -> list[str]:
    """The in-scope test files, relative to `examples`, sorted."""
    found = []
    for folder in sorted(os.listdir(examples)):
        path = os.path.join(examples, folder)
        if not os.path.isdir(path) or (only and folder not in only):
            continue
        for name in sorted(os.listdir(path)):
            rel = os.path.join(folder, name)
            if name.startswith("test_") and name.endswith(".py") and in_scope(rel):
                found.append(rel)
    return found


def test_functions(path: str) -> list[str]:
    """The names of a test file's top-level test functions (what pytest collects from it)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]


def gpu_visible() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# --------------------------------------------------------------------------------------------
# The pytest plugin (runs inside each subprocess)
# --------------------------------------------------------------------------------------------

_current: dict = {}


def _first_error_line(report) -> str:
    text = str(report.longrepr) if report.longrepr is not None else ""
    if hasattr(report.longrepr, "reprcrash") and report.longrepr.reprcrash is not None:
        text = report.longrepr.reprcrash.message
    elif isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:  # a skip: (file, line, reason)
        text = str(report.longrepr[2])
    else:  # a collection error: pytest's "E   ..." lines say what failed
        errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
        text = "\n".join(errors[-1:]) or text
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def _write(row: dict) -> None:
    path = os.environ.get(RESULTS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")


def _alarm(signum, frame):
    raise TimeoutError(f"test exceeded its time limit of {os.environ.get(TEST_TIMEOUT_ENV)} s")


def pytest_runtest_setup(item):
    limit = int(os.environ.get(TEST_TIMEOUT_ENV, "0") or 0)
    if limit > 0 and hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(limit)
    _current[item.nodeid] = time.time()


def pytest_runtest_teardown(item):
    if hasattr(signal, "SIGALRM"):
        signal.alarm(0)


def pytest_runtest_logreport(report):
    failed_setup = report.when == "setup" and report.outcome != "passed"
    if report.when != "call" and not failed_setup:
        return
    outcome = {"passed": "pass", "failed": "fail", "skipped": "skip"}[report.outcome]
    if outcome == "fail" and "TimeoutError: test exceeded its time limit" in str(report.longrepr):
        outcome = "timeout"
    error = "" if outcome == "pass" else _first_error_line(report)
    _write({"test": report.nodeid, "outcome": outcome, "seconds": round(report.duration, 1), "error": error})


def pytest_collectreport(report):
    if report.failed:
        _write({"test": report.nodeid, "outcome": "error", "seconds": 0.0, "error": _first_error_line(report)})


# --------------------------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------------------------


def run_file(workdir: str, rel: str, *, timeout: float, test_timeout: int, cuda_on_cpu: bool, keyword: str | None,
             log_dir: str, also_compile: str | None = None, compile_only: bool = False) -> list[dict]:
    results = os.path.join(log_dir, rel.replace(os.sep, "__") + ".jsonl")
    log = os.path.join(log_dir, rel.replace(os.sep, "__") + ".log")
    if os.path.exists(results):
        os.remove(results)
    env = dict(os.environ, **{RESULTS_ENV: results, TEST_TIMEOUT_ENV: str(test_timeout)})
    if also_compile:
        env["TILEC_ALSO_COMPILE"] = also_compile
    if compile_only:
        env["TILEC_COMPILE_ONLY"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "tools"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, "-m", "tilec.compat", *(["--cuda-on-cpu"] if cuda_on_cpu else []), "-m", "pytest",
           "-q", "-p", "run_tilelang_examples", "-p", "no:cacheprovider", "-p", "no:randomly", os.path.basename(rel)]
    if keyword:
        cmd += ["-k", keyword]
    start = time.time()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, cwd=os.path.join(workdir, os.path.dirname(rel)), env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the file's whole process group (it started the session)
            proc.wait()
            code = "timeout"
    rows = []
    if os.path.exists(results):
        with open(results, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    for row in rows:  # named from the examples folder, whatever pytest took as its root
        if "::" in row["test"]:
            row["test"] = f"{rel}::{row['test'].split('::', 1)[1]}"
    # Every test function gets a row: one the run never reached shares the file's fate.
    seen = {row["test"].split("::")[-1].split("[")[0] for row in rows}
    file_error = next((row for row in rows if "::" not in row["test"]), None)
    rows = [row for row in rows if "::" in row["test"]]
    elapsed = round(time.time() - start, 1)
    for name in test_functions(os.path.join(workdir, rel)):
        if name in seen or (keyword and keyword not in name):
            continue
        if code == "timeout":
            row = {"outcome": "timeout", "error": f"the file exceeded its time limit of {round(timeout)} s"}
        elif file_error is not None:
            row = {"outcome": "error", "error": file_error["error"]}
        else:
            row = {"outcome": "error", "error": f"pytest exited {code} without running it: {_last_line(log)}"}
        rows.append({"test": f"{rel}::{name}", "seconds": elapsed, **row})
    return rows


def _last_line(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [line.strip() for line in f if line.strip()]
    errors = [line for line in lines if "Error" in line or "error" in line]
    return (errors or lines or [""])[-1][:300]


def summarize(rows: list[dict]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    lines = ["| test | outcome | s | first error line |", "| --- | --- | --- | --- |"]
    for row in rows:
        error = row["error"].replace("|", "\\|")
        lines.append(f"| {row['test']} | {row['outcome']} | {row['seconds']} | {error} |")
    total = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    lines.append("")
    lines.append(f"{len(rows)} rows: {total}")
    return "\n".join(lines)


def not_run_rows(workdir: str, rel: str, keyword: str | None, why: str) -> list[dict]:
    return [{"test": f"{rel}::{name}", "outcome": "not run", "seconds": 0.0, "error": why}
            for name in test_functions(os.path.join(workdir, rel)) if not keyword or keyword in name]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", help="only these example folders (default: all in scope)")
    parser.add_argument("--examples", default=default_examples(), help="TileLang's examples folder")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per test file (default 1200)")
    parser.add_argument("--test-timeout", type=int, default=600, help="seconds per test function (default 600)")
    parser.add_argument("--deadline", type=float, default=None,
                        help="seconds after the start past which no file is launched and running files are ended "
                             "(their unreached tests: timeout; files never launched: not run)")
    parser.add_argument("--cuda-on-cpu", action="store_true", default=None,
                        help="map torch's CUDA calls to the CPU and run kernels on the interpreter "
                             "(the default where no GPU is visible)")
    parser.add_argument("--also-compile", metavar="ARCH",
                        help="with the kernels on the interpreter: also build each for ARCH (e.g. sm_90a), not launched")
    parser.add_argument("--compile-only", metavar="ARCH",
                        help="build each kernel for ARCH and run none (a diagnostic of the GPU build; values are wrong)")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression inside each file")
    parser.add_argument("--jobs", type=int, default=1, help="test files run at once (default 1)")
    parser.add_argument("--json", help="write the rows as JSON here")
    parser.add_argument("--table", help="write the summary table (markdown) here too")
    parser.add_argument("--keep", help="copy the examples to this folder (kept) instead of a temporary one")
    args = parser.parse_args(argv)
    start = time.time()
    if not os.path.isdir(args.examples):
        print(f"no examples folder at {args.examples}", file=sys.stderr)
        return 2
    cuda_on_cpu = not gpu_visible() if args.cuda_on_cpu is None else args.cuda_on_cpu
    if args.compile_only:
        args.also_compile = args.compile_only
    if args.also_compile and not cuda_on_cpu:
        print("--also-compile is for runs on the interpreter (--cuda-on-cpu): on a GPU the kernels are built "
              "for it anyway", file=sys.stderr)
        return 2
    files = test_files(args.examples, args.folders)
    workdir = args.keep or tempfile.mkdtemp(prefix="tilelang-examples-")
    if os.path.isdir(workdir):
        shutil.rmtree(workdir)
    shutil.copytree(args.examples, workdir)
    log_dir = os.path.join(workdir, "_tilec_logs")
    os.makedirs(log_dir, exist_ok=True)
    where = "on the GPU" if not cuda_on_cpu else "kernels on the interpreter, CUDA mapped to the CPU" + \
        (f", each also built for {args.also_compile}" if args.also_compile else "") + \
        (" and none run (compile only)" if args.compile_only else "")
    print(f"{len(files)} test files from {args.examples} in {workdir} ({where}), {args.jobs} at a time"
          + (f", deadline {args.deadline:.0f} s" if args.deadline else ""), flush=True)

    def one(rel: str) -> list[dict]:
        timeout: float = args.timeout
        if args.deadline is not None:
            left = args.deadline - (time.time() - start)
            if left <= 1:
                rows = not_run_rows(workdir, rel, args.keyword, f"not launched: the deadline of {args.deadline:.0f} s "
                                                                "had passed")
                for row in rows:
                    print(f"  {row['outcome']:8} {row['seconds']:7.1f}s {row['test']}", flush=True)
                return rows
            timeout = min(timeout, left)
        rows = run_file(workdir, rel, timeout=timeout, test_timeout=args.test_timeout, cuda_on_cpu=cuda_on_cpu,
                        keyword=args.keyword, log_dir=log_dir, also_compile=args.also_compile,
                        compile_only=bool(args.compile_only))
        for row in rows:
            print(f"  {row['outcome']:8} {row['seconds']:7.1f}s {row['test']}  {row['error'][:150]}", flush=True)
        return rows

    rows: list[dict] = []
    if args.jobs > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(args.jobs) as pool:
            for file_rows in pool.map(one, files):
                rows.extend(file_rows)
    else:
        for rel in files:
            rows.extend(one(rel))
    print()
    table = summarize(rows) + f"\nwall time {time.time() - start:.0f} s"
    print(table)
    if args.table:
        with open(args.table, "w", encoding="utf-8") as f:
            f.write(table + "\n")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    if not args.keep:
        print(f"logs: {log_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
