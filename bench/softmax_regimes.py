"""Softmax 8192x1024 f16 under three timing regimes: tile shapes, math modes, PTX variants.

An experiment, not a table for users: it asks where a single softmax call's time goes.

- `zero`:   an L2 flush by *writing* 256 MB before each call (triton's and tilec's do_bench).
            The flush leaves L2 full of dirty lines, whose write-backs share HBM with the kernel.
- `read`:   a flush by *reading* 256 MB: L2 is full of clean lines.
- `graph`:  back to back in one CUDA graph over the 8 sets (the kernels' own time).

Besides tile shapes and `tl.enable_fast_math`, variants of tilec's PTX patched by text:
the global loads / stores with cache hints (`.cs`, `L2::cache_hint` with an evict_first /
evict_last policy, `L1::no_allocate`; none moved the time, 2026-11-29), and approximate
division with flushed ex2 as a floor for the arithmetic. Each is checked against torch
before it is timed.
"""

import os
import re
import statistics
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import gbps, graph_ms, print_table, rel_err, write_log  # noqa: E402
from bench_memory import softmax, triton_softmax  # noqa: E402

import tilec  # noqa: E402
from tilec.targets.cuda_runtime import Ptr, load  # noqa: E402
from tilec.targets.nvptx.ptxas import assemble  # noqa: E402

M, N = 8192, 1024
SETS = 8
FLUSH_BYTES = 256 << 20


def _policy(ptx: str, prio: str) -> str:
    if "%pol<2>" not in ptx:
        ptx = ptx.replace(".reg .b64 \t%rd<", ".reg .b64 \t%pol<2>;\n\t.reg .b64 \t%rd<", 1)
    return re.sub(r"(\tld\.param\.b64[^\n]*\n)", r"\1\tcreatepolicy.fractional.L2::%s.b64 %%pol%d, 1.0;\n"
                  % (prio, 0 if prio == "evict_first" else 1), ptx, count=1)


def ld_hint(ptx: str, prio: str) -> str:
    ptx = _policy(ptx, prio)
    return re.sub(r"ld\.global\.nc\.v4\.b32(\s+\{[^}]*\}, \[[^\]]*\]);", r"ld.global.nc.L2::cache_hint.v4.b32\1, %pol0;",
                  ptx)


def st_hint(ptx: str, prio: str) -> str:
    ptx = _policy(ptx, prio)
    reg = "%pol0" if prio == "evict_first" else "%pol1"
    return re.sub(r"st\.global\.v4\.b32(\s+\[[^\]]*\], \{[^}]*\});", r"st.global.L2::cache_hint.v4.b32\1, " + reg + ";",
                  ptx)


VARIANTS = {
    "base": lambda p: p,
    "ld.cs": lambda p: p.replace("ld.global.nc.v4", "ld.global.cs.nc.v4"),
    "ld.L1na": lambda p: p.replace("ld.global.nc.v4", "ld.global.nc.L1::no_allocate.v4"),
    "ld.L2ef": lambda p: ld_hint(p, "evict_first"),
    "st.cs": lambda p: p.replace("st.global.v4", "st.global.cs.v4"),
    "st.L2el": lambda p: st_hint(p, "evict_last"),
    "ld.cs+st.cs": lambda p: p.replace("ld.global.nc.v4", "ld.global.cs.nc.v4").replace("st.global.v4",
                                                                                         "st.global.cs.v4"),
    "ld.L2ef+st.L2el": lambda p: st_hint(ld_hint(p, "evict_first"), "evict_last"),
    # arithmetic, not caching: what the per-element instruction count costs
    "div.full": lambda p: p.replace("div.rn.f32", "div.full.f32"),
    "div.full+ftz": lambda p: p.replace("div.rn.f32", "div.full.f32").replace("ex2.approx.f32", "ex2.approx.ftz.f32"),
}
RUNS = [(4, 128, "base"), (4, 128, "fast"), (4, 128, "div.full+ftz"), (1, 128, "base"), (2, 128, "base"),
        (2, 128, "fast"), (2, 64, "base"), (8, 256, "base"), (1, 32, "base")]


def _dump_sass(tag: str, cubin: bytes, report) -> None:
    out = os.environ.get("OUT")
    if not out:
        return
    path = os.path.join(out, f"softmax_{tag}.cubin")
    with open(path, "wb") as f:
        f.write(cubin)
    sass = subprocess.run(["cuobjdump", "--dump-sass", path], capture_output=True, text=True).stdout
    with open(path[:-6] + ".sass", "w") as f:
        f.write(report.log + "\n" + sass)
    os.remove(path)


def timed(fn, mode: str, xs, ys, reps: int = 200) -> float:
    """Median ms of one call under `mode` (see the module docstring)."""
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    flush.random_()
    for i in range(10):
        fn(xs[i % SETS], ys[i % SETS])
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    sink = torch.empty((), dtype=torch.int64, device="cuda")
    for i in range(reps):
        if mode == "zero":
            flush.zero_()
        elif mode == "read":
            torch.sum(flush, dim=0, out=sink)
        starts[i].record()
        fn(xs[0], ys[0])
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def main() -> int:
    xs = [torch.randn(M, N, device="cuda").half() for _ in range(SETS)]
    ys = [torch.empty_like(x) for x in xs]
    refs = [torch.softmax(x.double(), -1) for x in xs[:2]]
    nbytes = 2 * xs[0].numel() * 2
    impls = {
        "copy": lambda x, y: y.copy_(x),
        "torch": lambda x, y: torch.softmax(x, -1),
        "triton": lambda x, y: triton_softmax(x),
    }
    errs = {"copy": "-", "torch": rel_err(torch.softmax(xs[1], -1), refs[1]),
            "triton": rel_err(triton_softmax(xs[1]), refs[1])}
    for block_m, threads, name in RUNS:
        configs = {"tl.enable_fast_math": True} if name == "fast" else None
        k = tilec.compile(softmax.fn(M, N, block_M=block_m, threads=threads), out_idx=[1], pass_configs=configs)
        ptx = k.get_kernel_source()
        grid, block, smem = (M // block_m, 1, 1), (threads, 1, 1), k._backend.spec.smem_bytes
        if True:
            patch = VARIANTS.get(name, VARIANTS["base"])
            cubin, report = assemble(patch(ptx), "sm_90a")
            _dump_sass(f"{block_m}_{threads}_{name}".replace("+", "_").replace(".", "_"), cubin, report)
            fn = load(cubin, "main", loader="cuda-bindings")

            def run(x, y, fn=fn, grid=grid, block=block, smem=smem):
                fn.launch(grid, block, smem, [Ptr(x.data_ptr()), Ptr(y.data_ptr())],
                          torch.cuda.current_stream().cuda_stream)
                return y

            label = f"tilec {block_m}/{threads} {name}"
            ys[1].fill_(float("nan"))
            errs[label] = rel_err(run(xs[1], ys[1]), refs[1])
            if errs[label] < 1e-2:
                impls[label] = run
    rows, log = [], {}
    copy = {}
    for label, fn in impls.items():
        times = {mode: timed(fn, mode, xs, ys) for mode in ("zero", "read")}
        times["graph"] = graph_ms(fn, list(zip(xs, ys)))
        if label == "copy":
            copy = times
        log[label] = times
        err = errs[label]
        rows.append([label, err if isinstance(err, str) else f"{err:.0e}"]
                    + [f"{times[m] * 1e3:.1f}us {gbps(nbytes, times[m]) / 1e3:.2f}" for m in times])
    for label, err in errs.items():
        if label not in impls:
            rows.append([label, f"{err:.0e} FAILED"] + ["-"] * 3)
    write_log("softmax_cache_policy", log)
    print_table(["impl", "err", "zero-flush (TB/s)", "read-flush", "graph"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
