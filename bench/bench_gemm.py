"""GEMM throughput on Hopper: the reference kernels through tilec against cuBLAS, torch and a tuned
Triton, measured in the same run.

    python bench/bench_gemm.py                 # every shape, dtype and tile configuration
    BENCH_GEMM_SHAPES=4096x4096x4096 BENCH_GEMM_DTYPES=float16 python bench/bench_gemm.py
    BENCH_ONCE=1 python bench/bench_gemm.py    # each kernel once, checked, no timing (sanitizers)

The tilec kernels are the reference programs `shared/kernels/gemm.py` (C = A @ B) and
`gemm_bias_gelu.py` (C = gelu_tanh(A @ B + bias)), unmodified, with their tile arguments; the
best of a few tile configurations, each under the schedules of BENCH_GEMM_SCHEDULES (default
"plain,cluster,persistent,pingpong": pass configs `tilec.cluster` (opt-in),
`tilec.persistent` and `tilec.pingpong`, the latter for kernels of one warpgroup, threads=128), is reported (each one is listed in the log). Baselines:
cuBLAS (`a @ b`), torch unfused (`gelu(a @ b + bias)`), and Triton's matmul tutorial kernel
(grouped rasterization) autotuned here over eight configurations of tiles, stages and warps,
with the bias + gelu epilogue fused for the gelu shape. Every implementation is checked
against a float32 product of fresh random inputs before it is timed (median of CUDA-event
timings with the L2 flushed). Each implementation's best is then timed again in BENCH_ROUNDS (default 5)
interleaved rounds of BENCH_ROUND_MS (default 1000) ms each, after BENCH_WARM_S (default 2) seconds of back-to-back
calls that bring the card to its power-capped steady state, and the table reports the median of its rounds, so that
the ratios compare kernels timed in the same power and thermal state of the card. The table gives TFLOP/s and
ratios; the SASS column says whether
tilec's cubin has HGMMA (wgmma), UTMALDG (TMA loads), SETMAXREG (warp specialization) and STSM
(stmatrix epilogue).
Writes $OUT/bench_gemm.json when OUT is set.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from kernels_dir import reference_kernels  # bench/kernels_dir.py

HERE = os.path.dirname(os.path.abspath(__file__))



# the reference kernels first: their own `_common` helpers, then the bench's (the same module name)
sys.path.insert(0, reference_kernels())
from gemm import matmul  # noqa: E402 - shared/kernels/gemm.py
from gemm_bias_gelu import gemm_bias_gelu  # noqa: E402 - shared/kernels/gemm_bias_gelu.py

import tilec.language as T  # noqa: E402

sys.path.pop(0)
sys.modules.pop("_common", None)
sys.path.insert(0, HERE)
from _common import bench_ms, device_name, print_table, rel_err, write_log  # noqa: E402

ONCE = os.environ.get("BENCH_ONCE") == "1"
# BENCH_GEMM_DYNAMIC=1: also the best tilec configuration built over T.dynamic sizes (M, N, K bound at the call:
# tilec.aligned_sizes' build where the sizes are 16-byte multiples, the build for any sizes where not)
DYNAMIC = os.environ.get("BENCH_GEMM_DYNAMIC") == "1"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))  # the interleaved re-timing of each implementation's best
# seconds of back-to-back calls before the rounds: the power controller averages over about a second, and from idle
# its first clamp at the 700 W cap dips the clock to ~1 GHz ~0.9 s into the load (run s23e, H100), into whichever round is
# then being timed; warmed up first, every round is timed at the cap's steady state
WARM_S = float(os.environ.get("BENCH_WARM_S", "2"))
# milliseconds of calls per implementation per round: the power controller swings the clock over ~1 s at the cap, so
# rounds of 1 s average over its swings (s24c, H100: the rounds' spread 0-4 % at 4096^3 and 8192^3, against 11-15 % at
# 8192^3 in rounds of 100 ms, s24a)
ROUND_MS = float(os.environ.get("BENCH_ROUND_MS", "1000"))
# BENCH_GEMM_COMPARE=fwd: the best tilec tiles also under their schedule's variants (persistent -> persistent-fwd),
# timed in the same interleaved rounds: an A/B of a pass config on the kernel the sweep chose
COMPARE = [c for c in os.environ.get("BENCH_GEMM_COMPARE", "").split(",") if c]
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 1024)]
if os.environ.get("BENCH_GEMM_SHAPES"):
    SHAPES = [tuple(int(x) for x in s.split("x")) for s in os.environ["BENCH_GEMM_SHAPES"].split(",")]
DTYPES = os.environ.get("BENCH_GEMM_DTYPES", "float16,bfloat16").split(",")
_GELU = os.environ.get("BENCH_GEMM_GELU_SHAPE", "4096x4096x1024")  # "none": no gemm+bias+gelu case
GELU_SHAPE = None if _GELU == "none" else tuple(int(x) for x in _GELU.split("x"))
# (block_M, block_N, block_K, num_stages, threads): the reference kernels' tile arguments
TILES = [(128, 256, 64, 3, 256), (128, 256, 64, 4, 256), (128, 128, 64, 4, 256), (128, 128, 64, 4, 128),
         (256, 128, 64, 3, 256), (192, 192, 64, 4, 384)]  # (192x192 on three consumer warpgroups: cuBLAS's at 3072^2)
# schedules: plain, persistent (pass config `tilec.persistent`), pingpong (`tilec.pingpong`, threads=128);
# each also as NAME-notma (`tilec.tma_store` off: the result in 16-byte stores)
# cluster (`tilec.cluster`, opt-in: pairs of blocks sharing a TMA multicast operand)
SCHEDULES = os.environ.get("BENCH_GEMM_SCHEDULES", "plain,cluster,persistent,pingpong").split(",")
CONFIGS = {"plain": {"tilec.pingpong": False, "tilec.cluster": False, "tilec.persistent": False},
           "cluster": {"tilec.pingpong": False, "tilec.cluster": True, "tilec.persistent": False},
           "persistent": {"tilec.persistent": True, "tilec.pingpong": False, "tilec.cluster": False},
           "persistent-cluster": {"tilec.persistent": True, "tilec.pingpong": False, "tilec.cluster": True},
           "pingpong": {"tilec.pingpong": True},  # (ping-pong is the default for threads=128)
           "pingpong-cluster": {"tilec.pingpong": True, "tilec.cluster": True}}
for _name in list(CONFIGS):  # each schedule with its result in 16-byte stores instead of TMA stores
    CONFIGS[f"{_name}-notma"] = {**CONFIGS[_name], "tilec.tma_store": False}
    CONFIGS[f"{_name}-unbalanced"] = {**CONFIGS[_name], "tilec.balanced_waves": False}  # a block per SM
    CONFIGS[f"{_name}-nofma"] = {**CONFIGS[_name], "tilec.fp_contract": False}  # (nvcc's --fmad=false)
    CONFIGS[f"{_name}-nostmatrix"] = {**CONFIGS[_name], "tilec.stmatrix": False}  # pairs by 4-byte stores
    CONFIGS[f"{_name}-nows"] = {**CONFIGS[_name], "tl.disable_warp_specialized": True}  # cp.async stages, wgmma
    CONFIGS[f"{_name}-percopy"] = {**CONFIGS[_name], "tilec.per_copy_tma": True}  # TMA or cp.async per copy
    CONFIGS[f"{_name}-alt"] = {**CONFIGS[_name], "tilec.alternate_k": True}  # odd rounds' k-tiles last to first
    CONFIGS[f"{_name}-fwd"] = {**CONFIGS[_name], "tilec.alternate_k": False}  # every round's k-tiles first to last
if os.environ.get("BENCH_GEMM_TILES"):  # e.g. "128x256x64x3x256,128x128x64x4x128"
    TILES = [tuple(int(x) for x in t.split("x")) for t in os.environ["BENCH_GEMM_TILES"].split(",")]
# Triton's tutorial configurations for Hopper-class GPUs (03-matrix-multiplication.py), plus two
# with 64-deep K steps: (BM, BN, BK, GROUP_M, num_stages, num_warps)
TRITON_CONFIGS = [(128, 256, 64, 8, 3, 8), (128, 256, 64, 8, 4, 8), (256, 128, 64, 8, 3, 8),
                  (64, 256, 32, 8, 4, 4), (128, 128, 32, 8, 4, 4), (128, 128, 64, 8, 4, 8),
                  (128, 64, 32, 8, 4, 4), (64, 128, 32, 8, 4, 4)]


# --------------------------------------------------------------------------- Triton


def _triton_kernel():
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def matmul_kernel(a, b, c, bias, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                      GROUP_M: tl.constexpr, GELU: tl.constexpr):
        pid = tl.program_id(0)
        num_m, num_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        group = GROUP_M * num_n
        first_m = (pid // group) * GROUP_M
        size_m = min(num_m - first_m, GROUP_M)
        pid_m = first_m + ((pid % group) % size_m)
        pid_n = (pid % group) // size_m
        rm = (pid_m * BM + tl.arange(0, BM)) % M
        rn = (pid_n * BN + tl.arange(0, BN)) % N
        rk = tl.arange(0, BK)
        pa = a + rm[:, None] * K + rk[None, :]
        pb = b + rk[:, None] * N + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            x = tl.load(pa, mask=rk[None, :] < K - k * BK, other=0.0)
            y = tl.load(pb, mask=rk[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(x, y, acc)
            pa += BK
            pb += BK * N
        if GELU:
            v = acc + tl.load(bias + rn)[None, :].to(tl.float32)
            inner = 0.7978845608 * (v + 0.044715 * v * v * v)
            acc = 0.5 * v * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0))
        cm = pid_m * BM + tl.arange(0, BM)
        cn = pid_n * BN + tl.arange(0, BN)
        mask = (cm[:, None] < M) & (cn[None, :] < N)
        tl.store(c + cm[:, None] * N + cn[None, :], acc.to(c.dtype.element_ty), mask=mask)

    def run(x, y, bias, config):
        bm, bn, bk, group, stages, warps = config
        m, k = x.shape
        n = y.shape[1]
        out = torch.empty(m, n, device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        matmul_kernel[grid](x, y, out, bias if bias is not None else out, m, n, k, BM=bm, BN=bn, BK=bk,
                            GROUP_M=group, GELU=bias is not None, num_stages=stages, num_warps=warps)
        return out

    return run


def tuned_triton(run, x, y, bias, ref, log: list) -> tuple[float, float, str, tuple] | None:
    """The best of TRITON_CONFIGS on these inputs: (ms, rel err, its name, config), every one logged."""
    best = None
    for config in TRITON_CONFIGS:
        try:
            err = rel_err(run(x, y, bias, config), ref)
        except Exception as e:  # noqa: BLE001 - a configuration over Triton's shared-memory budget
            log.append({"triton_config": config, "error": str(e).splitlines()[0][:200]})
            continue
        ms = float("nan") if ONCE or err > 2e-2 else bench_ms(lambda: run(x, y, bias, config), rep=100)
        log.append({"triton_config": config, "ms": ms, "rel_err": err})
        if err <= 2e-2 and (best is None or ms < best[0]):
            best = (ms, err, "x".join(map(str, config)), config)
    return best


# --------------------------------------------------------------------------- tilec


def sass_features(kernel) -> str:
    """Which of HGMMA / UTMALDG / SETMAXREG the kernel's SASS has ('' without cuobjdump)."""
    tool = shutil.which("cuobjdump")
    try:
        cubin = kernel._backend.emit("cubin")
    except Exception:  # noqa: BLE001 - no ptxas: no cubin to read
        return "no cubin"
    if tool is None:
        return "no cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([tool, "--dump-sass", f.name], capture_output=True, text=True).stdout
    found = [name for name in ("HGMMA", "UTMALDG", "SETMAXREG", "STSM") if name in sass]
    if "MULTICAST" in sass:  # UTMALDG.2D.MULTICAST: a cluster's shared operand
        found.append("MULTICAST")
    return " ".join(found) or "none"


def tilec_best(build, args, ref, flops: int, log: list, label: str):
    """Each tile configuration of a reference kernel: (ms, err, tiles, sass, kernel) of the fastest correct one."""
    best = None
    for tiles, schedule in [(t, s) for t in TILES for s in SCHEDULES if not s.startswith("pingpong") or t[4] == 128]:
        name = "x".join(map(str, tiles)) + ("" if schedule == "plain" else f" {schedule}")
        try:
            kernel = build(*tiles, CONFIGS[schedule])
            err = rel_err(kernel(*args), ref)
        except Exception as e:  # noqa: BLE001 - e.g. a configuration over the shared-memory budget
            log.append({"impl": label, "tiles": tiles, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"})
            print(f"  {label} {name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
            continue
        ms = float("nan") if ONCE or err > 1e-2 else bench_ms(lambda kernel=kernel: kernel(*args))
        sass = sass_features(kernel)
        log.append({"impl": label, "tiles": tiles, "schedule": schedule, "ms": ms, "rel_err": err, "sass": sass,
                    "tflops": flops / (ms * 1e-3) / 1e12})
        print(f"  {label} {name}: {ms * 1e3:.0f} us, err {err:.1e}, SASS {sass}", flush=True)
        if err <= 1e-2 and (best is None or ms < best[0]):
            best = (ms, err, name, sass, kernel)
    return best


def _tiles_schedule(name: str) -> tuple[tuple, str]:
    """The tiles and schedule of a name `tilec_best` gave ("128x256x64x4x256 persistent")."""
    tiles, _, schedule = name.partition(" ")
    return tuple(int(x) for x in tiles.split("x")), schedule or "plain"


@contextlib.contextmanager
def _only(tiles: tuple, schedule: str):
    """The sweep of `tilec_best` narrowed to one tile configuration and schedule."""
    global TILES, SCHEDULES
    saved = TILES, SCHEDULES
    TILES, SCHEDULES = [tiles], [schedule]
    try:
        yield
    finally:
        TILES, SCHEDULES = saved


def _warm_up(call) -> None:
    """`call` back to back for WARM_S seconds (the card into its power-capped steady state)."""
    end = time.perf_counter() + WARM_S
    while time.perf_counter() < end:
        for _ in range(8):
            call()
        torch.cuda.synchronize()


def _interleaved(results: dict, calls: dict, log: list, case: list) -> dict:
    """Each implementation's best again, in ROUNDS rounds that take them in turn (a rotating first),
    the median of its rounds reported: the ratios then compare kernels timed in the same power and
    thermal state. (Timed one after the other, the sweep's numbers drift with the card's clock: the
    first kernel timed on a cool card ran 10 % faster than the same kernel a minute later, run s6e.)"""
    names = list(calls)
    times: dict = {name: [] for name in names}
    _warm_up(calls[names[0]])
    for r in range(ROUNDS):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(bench_ms(calls[name], rep=ROUND_MS))
    out = dict(results)
    for name in names:
        ms, err, *extra = results[name]
        med = statistics.median(times[name])
        spread = (max(times[name]) - min(times[name])) / med
        out[name] = (med, err, *extra)
        log.append({"case": case, "impl": name, "sweep_ms": ms, "rounds_ms": times[name], "spread": spread})
        print(f"  {name}: sweep {ms * 1e3:.0f} us, rounds {' '.join(f'{t * 1e3:.0f}' for t in times[name])} us "
              f"(spread {100 * spread:.0f} %)", flush=True)
    return out


def main() -> int:
    torch.manual_seed(0)
    rows, log = [], []
    triton_run = None if os.environ.get("BENCH_NO_TRITON") == "1" else _triton_kernel()  # (sanitizer runs)
    cases = [("gemm", shape, dtype) for dtype in DTYPES for shape in SHAPES]
    cases += [("gemm+bias+gelu", GELU_SHAPE, dtype) for dtype in DTYPES if GELU_SHAPE is not None]
    for what, (m, n, k), dtype in cases:
        tdtype = getattr(torch, dtype)
        a = torch.randn(m, k, device="cuda", dtype=tdtype)
        b = torch.randn(k, n, device="cuda", dtype=tdtype)
        bias = torch.randn(n, device="cuda", dtype=tdtype) if what != "gemm" else None
        ref = a.float() @ b.float()
        if bias is not None:
            ref = torch.nn.functional.gelu(ref + bias.float(), approximate="tanh")
        flops = 2 * m * n * k
        print(f"{what} {m}x{n}x{k} {dtype}", flush=True)
        results, calls = {}, {}
        plain = lambda: a @ b  # noqa: E731
        results["cuBLAS a@b"] = (float("nan") if ONCE else bench_ms(plain), rel_err(plain(), a.float() @ b.float()), "")
        calls["cuBLAS a@b"] = plain
        if bias is not None:
            unfused = lambda: torch.nn.functional.gelu(a @ b + bias, approximate="tanh")  # noqa: E731
            results["torch unfused"] = (float("nan") if ONCE else bench_ms(unfused), rel_err(unfused(), ref), "")
            calls["torch unfused"] = unfused
        if triton_run is not None:
            tlog: list = []
            best = tuned_triton(triton_run, a, b, bias, ref, tlog)
            log.append({"case": [what, m, n, k, dtype], "triton": tlog})
            if best is not None:
                results["Triton tuned"] = best[:3]
                calls["Triton tuned"] = lambda config=best[3]: triton_run(a, b, bias, config)
        tdt = getattr(T, dtype)
        jit = matmul if bias is None else gemm_bias_gelu
        args = (a, b) if bias is None else (a, b, bias)

        def build(bm, bn, bk, s, t, configs, jit=jit):
            jit.pass_configs = dict(configs)
            return jit(m, n, k, bm, bn, bk, s, t, dtype=tdt)
        klog: list = []
        best = tilec_best(build, args, ref, flops, klog, "tilec")
        log.append({"case": [what, m, n, k, dtype], "tilec": klog})
        if best is not None:
            results["tilec"] = best[:4]
            calls["tilec"] = lambda kernel=best[4]: kernel(*args)
        for variant in COMPARE if best is not None else []:  # the best tiles again, its schedule's variant
            tiles, schedule = _tiles_schedule(best[2])
            schedule = f"{schedule}-{variant}"
            clog: list = []
            with _only(tiles, schedule):
                other = tilec_best(build, args, ref, flops, clog, f"tilec {schedule}")
            log.append({"case": [what, m, n, k, dtype], "tilec_compare": clog})
            if other is not None and other[2] != best[2]:
                results[f"tilec {schedule}"] = other[:4]
                calls[f"tilec {schedule}"] = lambda kernel=other[4]: kernel(*args)
        if best is not None and DYNAMIC and bias is None:  # the best tiles again, the kernel over T.dynamic sizes
            dyn_tiles, schedule = _tiles_schedule(best[2])

            def build_dynamic(bm, bn, bk, s, t, configs):
                matmul.pass_configs = dict(configs)
                return matmul(T.dynamic("m"), T.dynamic("n"), T.dynamic("k"), bm, bn, bk, s, t, dtype=tdt)
            dlog: list = []
            with _only(dyn_tiles, schedule):
                dbest = tilec_best(build_dynamic, args, ref, flops, dlog, "tilec T.dynamic")
            log.append({"case": [what, m, n, k, dtype], "tilec_dynamic": dlog})
            if dbest is not None:
                results["tilec T.dynamic"] = dbest[:4]
                calls["tilec T.dynamic"] = lambda kernel=dbest[4]: kernel(*args)
        if not ONCE and ROUNDS > 0:
            results = _interleaved(results, calls, log, [what, m, n, k, dtype])
        base = results["cuBLAS a@b"][0]
        triton_ms = results.get("Triton tuned", (float("nan"),))[0]
        for name, (ms, err, *extra) in results.items():
            tflops = flops / (ms * 1e-3) / 1e12
            rows.append([f"{what} {m}x{n}x{k}", dtype, name, " ".join(str(e) for e in extra), f"{ms * 1e3:.0f}",
                         f"{tflops:.0f}", f"{base / ms:.2f}", f"{triton_ms / ms:.2f}", f"{err:.1e}"])
            log.append({"case": [what, m, n, k, dtype], "impl": name, "ms": ms, "tflops": tflops, "rel_err": err,
                        "extra": extra})
    write_log("bench_gemm", {"device": device_name(), "rows": log})
    print(f"\nGEMM on {device_name()} (median of CUDA-event timings, L2 flushed, the best of each timed in "
          f"{ROUNDS} interleaved rounds; x = time ratio, >1 is faster)")
    print_table(["case", "dtype", "impl", "tiles / SASS", "us", "TFLOP/s", "x cuBLAS", "x Triton", "rel err"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
