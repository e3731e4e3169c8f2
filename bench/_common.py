"""Shared helpers for the bench scripts: timing, checking, cold compiles, the table, the log.

Timing follows the device method (shared/device METHOD.md, `tilec.profiler.do_bench`): CUDA
events around each repetition, a 256 MB write between repetitions to flush L2, warm-up
first, the median of the repetitions reported.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import torch

from tilec.profiler import do_bench


def bench_ms(fn, warmup: float = 25, rep: float = 200) -> float:
    """Median milliseconds per call of `fn` (CUDA events, L2 flushed before each call)."""
    return do_bench(fn, warmup=warmup, rep=rep, return_mode="median")


def graph_ms(call, input_sets, replays: int = 20) -> float:
    """Milliseconds per call of `call(*inputs)`, back to back in one CUDA graph over `input_sets`.

    Rotate over enough input sets to exceed the 50 MB L2, so that this is the kernels' own
    time with inputs from device memory, without the host's launch gaps of single timed calls.
    A tilec kernel must use the cuda-bindings loader (pycuda cannot launch during capture).
    """
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for inputs in input_sets:
            call(*inputs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for inputs in input_sets:
            call(*inputs)
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / (replays * len(input_sets))


def rel_err(out, ref) -> float:
    """‖out − ref‖ / ‖ref‖ in float64 (inf when out has a NaN)."""
    out, ref = out.detach().double(), ref.detach().double()
    if torch.isnan(out).any():
        return float("inf")
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def gbps(nbytes: int, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def cold_compile_ms(script: str, name: str, runs: int = 5, mode: str = "build") -> float | None:
    """Median build time of kernel `name` in a fresh process with the cache off.

    `script --cold-compile NAME` must build the kernel and print `{"ms": ...}` as its last
    line, timing only the build (frontend, passes, LLVM, ptxas), not the imports.
    """
    env = dict(os.environ, TILEC_DISABLE_CACHE="1")
    times = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, script, "--cold-compile", name, mode], env=env, capture_output=True,
                              text=True, check=False)
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            print(f"cold compile of {name} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
            return None
        times.append(json.loads(lines[-1])["ms"])
    return statistics.median(times)


def fmt(value, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec) if isinstance(value, int | float) else str(value)


def print_table(headers: list[str], rows: list[list]) -> str:
    cells = [[str(h) for h in headers]] + [[fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [" | ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
             for row in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    text = "\n".join(lines)
    print(text, flush=True)
    return text


def write_log(name: str, data: dict) -> None:
    """Writes `$OUT/<name>.json` when OUT is set (the device machine's output folder)."""
    out = os.environ.get("OUT")
    if not out:
        return
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, default=str)


def device_name() -> str:
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
