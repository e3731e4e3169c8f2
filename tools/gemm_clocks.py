"""Clock, power and work per clock of GEMMs under sustained load (H200; needs nvidia-smi).

The H200 runs every large GEMM at its 700 W cap (run s6a), so time alone mixes two things: the
clock the card holds at that power and the work done per clock. Each kernel here runs back to
back for SECONDS while nvidia-smi samples the SM clock and the power every 50 ms; the table gives
the time per call, the median clock and power of the samples, and FLOP per clock per SM.

    python tools/gemm_clocks.py                              # 8192^3, float16 and bfloat16
    GEMM_CLOCKS_SHAPE=4096x4096x4096 GEMM_CLOCKS_SECONDS=3 GEMM_CLOCKS_TILES=128x256x64x4x256 \\
        GEMM_CLOCKS_SCHEDULES=persistent,plain python tools/gemm_clocks.py

Rows: cuBLAS (`a @ b`), tilec's reference gemm (`shared/kernels/gemm.py`, each tile and schedule given),
and Triton's tutorial matmul at its best configuration of bench/bench_gemm.py when triton imports.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))
import bench_gemm  # noqa: E402 - the reference gemm, the tuned Triton and the table printer, as the bench has them

import tilec  # noqa: E402
import tilec.language as T  # noqa: E402

SHAPE = tuple(int(x) for x in os.environ.get("GEMM_CLOCKS_SHAPE", "8192x8192x8192").split("x"))
SECONDS = float(os.environ.get("GEMM_CLOCKS_SECONDS", "3"))
TILES = [tuple(int(x) for x in t.split("x")) for t in os.environ.get("GEMM_CLOCKS_TILES", "128x256x64x4x256").split(",")]
SCHEDULES = os.environ.get("GEMM_CLOCKS_SCHEDULES", "persistent,plain").split(",")
DTYPES = os.environ.get("GEMM_CLOCKS_DTYPES", "float16,bfloat16").split(",")
# each kernel's sustained run repeated in this many rounds that take the kernels in turn, the medians reported:
# an A/B of two schedules then sees the card's thermal drift on both sides
ROUNDS = int(os.environ.get("GEMM_CLOCKS_ROUNDS", "1"))
CONFIGS = bench_gemm.CONFIGS  # the bench's schedules and their variants (-unbalanced, -nostmatrix, ...)


def sustained(call, seconds: float) -> tuple[float, float, float]:
    """(us per call, median SM MHz, median W) of `call` run back to back for `seconds`."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                            "-lms", "50"], stdout=subprocess.PIPE, text=True)
    start, calls = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        for _ in range(10):
            call()
        calls += 10
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    smi.terminate()
    lines = smi.communicate()[0].split("\n")
    samples = [tuple(float(v) for v in line.split(",")) for line in lines if line.count(",") == 1]
    samples = samples[len(samples) // 4:]  # the first quarter: the card settling into its power state
    return 1e6 * elapsed / calls, statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main() -> int:
    M, N, K = SHAPE
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for dtype in DTYPES:
        tdt = getattr(torch, dtype)
        a, b = torch.randn(M, K, device="cuda", dtype=tdt), torch.randn(K, N, device="cuda", dtype=tdt)
        ref = a.float() @ b.float()
        impls = [("cuBLAS", lambda: a @ b)]
        for tiles in TILES:
            for schedule in SCHEDULES:
                factory = tilec.jit(bench_gemm.matmul.fn, out_idx=[-1], pass_configs=CONFIGS[schedule])
                k = factory(M, N, K, *tiles, dtype=getattr(T, dtype))
                err = ((k(a, b).float() - ref).norm() / ref.norm()).item()
                assert err < 1e-2, f"{tiles} {schedule}: relative error {err}"
                impls.append((f"tilec {'x'.join(map(str, tiles))} {schedule}", lambda k=k: k(a, b)))
        run = bench_gemm._triton_kernel()
        if run is not None:
            best = bench_gemm.tuned_triton(run, a, b, None, ref, [])
            if best is not None:
                impls.append((f"Triton {best[2]}", lambda c=best[3]: run(a, b, None, c)))
        runs: dict[str, list] = {name: [] for name, _ in impls}
        for r in range(ROUNDS):
            for name, call in impls[r % len(impls):] + impls[:r % len(impls)]:
                runs[name].append(sustained(call, SECONDS))
        for name, samples in runs.items():
            us, mhz, watts = (statistics.median(s[i] for s in samples) for i in range(3))
            flop_per_clk = 2 * M * N * K / (us * 1e-6) / (mhz * 1e6) / sms
            rows.append([dtype, name, f"{us:.0f}", " ".join(f"{s[0]:.0f}" for s in samples),
                         f"{2 * M * N * K / us / 1e6:.0f}", f"{mhz:.0f}", f"{watts:.0f}", f"{flop_per_clk:.0f}"])
    print(f"{M}x{N}x{K}: each kernel back to back for {SECONDS:.0f} s in each of {ROUNDS} rounds, nvidia-smi every "
          f"50 ms (medians)")
    bench_gemm.print_table(["dtype", "impl", "us", "rounds us", "TFLOP/s", "SM MHz", "W", "FLOP/clk/SM"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
