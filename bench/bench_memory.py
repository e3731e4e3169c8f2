"""Memory-bound workloads: tilec vs torch vs Triton vs a device-to-device copy of the same bytes.

    python bench/bench_memory.py            # on the GPU machine; writes $OUT/bench_memory.json

| workload | shape | bytes moved (each input read once, each output written once) |
| --- | --- | --- |
| add      | 2^26 float16, C = A + B       | 3 · 2^26 · 2 B = 384 MiB |
| softmax  | 8192 × 1024 float16, by rows  | 2 · 16 MiB = 32 MiB |
| rmsnorm  | 8192 × 4096 float16, weight N | 2 · 64 MiB + 8 KiB |

The copy row moves the same bytes (half read, half written) with `dst.copy_(src)`: it is
the bandwidth ceiling the other rows are compared with ("% copy"). Every implementation is
checked against a float64 torch reference (‖out − ref‖/‖ref‖ < 1e-2, no NaN) before it is
timed; one that fails is reported and not timed. Times are medians of CUDA-event timed
runs with L2 flushed before each (bench/_common.py). "cold compile" is the median of 5
builds of the tilec kernel in fresh processes with TILEC_DISABLE_CACHE=1 (frontend,
passes, LLVM, ptxas; not the imports, not the module load).
"""

import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

import torch
from _common import (
    bench_ms,
    cold_compile_ms,
    device_name,
    gbps,
    graph_ms,
    print_table,
    rel_err,
    write_log,
)

import tilec as tilelang
import tilec.language as T
from elementwise_add import add  # noqa: E402 - examples/elementwise_add.py, as `make run` runs it

try:
    import triton
    import triton.language as tl
except ImportError:  # the table then has no Triton rows
    triton = None

N_ADD = 1 << 26
SOFTMAX_M, SOFTMAX_N = 8192, 1024
RMS_M, RMS_N = 8192, 4096
EPS = 1e-6
TOL = 1e-2

# --------------------------------------------------------------------------- #
# tilec kernels (TileLang style, as in shared/kernels)
# --------------------------------------------------------------------------- #


@tilelang.jit(out_idx=[1])
def softmax(M, N, block_M=4, threads=128, dtype=T.float16):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            row_max = T.alloc_fragment((block_M,), T.float32)
            row_sum = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp(x[i, j] - row_max[i])
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return main


@tilelang.jit
def rms_norm(X, W, block_M: int = 1, eps: float = EPS, threads: int = 256):
    M, N = T.const("M, N")
    X: T.Tensor((M, N), T.float16)
    W: T.Tensor((N,), T.float16)
    Y = T.empty((M, N), T.float16)
    with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
        x = T.alloc_fragment((block_M, N), T.float32)
        sq = T.alloc_fragment((block_M, N), T.float32)
        inv = T.alloc_fragment((block_M,), T.float32)
        w = T.alloc_shared((N,), T.float16)
        T.copy(X[bx * block_M, 0], x)
        T.copy(W[0], w)
        for i, j in T.Parallel(block_M, N):
            sq[i, j] = x[i, j] * x[i, j]
        T.reduce_sum(sq, inv, dim=1)
        for i in T.Parallel(block_M):
            inv[i] = T.rsqrt(inv[i] / N + eps)
        for i, j in T.Parallel(block_M, N):
            x[i, j] = x[i, j] * inv[i] * w[j]
        T.copy(x, Y[bx * block_M, 0])
    return Y


def build_tilec(name: str):
    """The compiled tilec kernel for a workload, as a callable on its inputs."""
    if name == "add":
        return add.compile(N=N_ADD, block=1024, threads=256)
    if name == "softmax":
        return softmax(SOFTMAX_M, SOFTMAX_N, block_M=4, threads=128)
    if name == "rmsnorm":
        return rms_norm.compile(M=RMS_M, N=RMS_N, block_M=1, threads=256)
    raise KeyError(name)


# --------------------------------------------------------------------------- #
# Triton kernels (tutorial style: one block of elements / one row per program)
# --------------------------------------------------------------------------- #

if triton is not None:

    @triton.jit
    def _triton_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    @triton.jit
    def _triton_softmax(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(in_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
        num = tl.exp(x - tl.max(x, axis=0))
        y = num / tl.sum(num, axis=0)
        tl.store(out_ptr + row * n_cols + offs, y.to(out_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _triton_rmsnorm(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * n_cols + offs, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def triton_add(a, b):
    out = torch.empty_like(a)
    _triton_add[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out


def triton_softmax(x):
    out = torch.empty_like(x)
    _triton_softmax[(x.shape[0],)](out, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]), num_warps=4)
    return out


def triton_rmsnorm(x, w):
    out = torch.empty_like(x)
    _triton_rmsnorm[(x.shape[0],)](x, w, out, x.shape[1], EPS, BLOCK=triton.next_power_of_2(x.shape[1]),
                                   num_warps=8)
    return out


# --------------------------------------------------------------------------- #
# Workloads
# --------------------------------------------------------------------------- #


def _randn(*shape):
    return torch.randn(*shape, device="cuda", dtype=torch.float32).to(torch.float16)


def _rms_ref(x, w):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w.double()


WORKLOADS = {
    "add": {
        "shape": "2^26 f16", "inputs": lambda: (_randn(N_ADD), _randn(N_ADD)), "nbytes": 3 * N_ADD * 2,
        "ref": lambda a, b: a.double() + b.double(), "torch": lambda a, b: a + b,
        "triton": lambda a, b: triton_add(a, b)},
    "softmax": {
        "shape": f"{SOFTMAX_M}x{SOFTMAX_N} f16", "inputs": lambda: (_randn(SOFTMAX_M, SOFTMAX_N),),
        "nbytes": 2 * SOFTMAX_M * SOFTMAX_N * 2, "ref": lambda x: torch.softmax(x.double(), dim=-1),
        "torch": lambda x: torch.softmax(x, dim=-1), "triton": lambda x: triton_softmax(x)},
    "rmsnorm": {
        "shape": f"{RMS_M}x{RMS_N} f16", "inputs": lambda: (_randn(RMS_M, RMS_N), _randn(RMS_N)),
        "nbytes": 2 * RMS_M * RMS_N * 2 + RMS_N * 2, "ref": _rms_ref,
        "torch": lambda x, w: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, EPS),
        "triton": lambda x, w: triton_rmsnorm(x, w)},
}


GRAPH_BYTES = 256 << 20  # the input sets a graph rotates over: several times the 50 MB L2


def input_sets(name: str, first: tuple) -> list[tuple]:
    """`first` and fresh input sets, together at least GRAPH_BYTES (and two sets)."""
    per_set = sum(t.numel() * t.element_size() for t in first)
    return [first] + [WORKLOADS[name]["inputs"]() for _ in range(max(1, -(-GRAPH_BYTES // per_set) - 1))]


def _copy_ms(nbytes: int) -> tuple[float, float]:
    """`dst.copy_(src)` moving `nbytes` in all (nbytes/2 read, nbytes/2 written): single call, graph."""
    half = nbytes // 4  # float16 elements
    srcs = [(_randn(half), torch.empty(half, device="cuda", dtype=torch.float16))
            for _ in range(max(2, -(-GRAPH_BYTES // (2 * half))))]
    src, dst = srcs[0]
    return bench_ms(lambda: dst.copy_(src)), graph_ms(lambda s, d: d.copy_(s), srcs)


def _graph_kernel(kernel):
    """The same compiled kernel loaded with cuda-bindings, which can launch inside graph capture."""
    from tilec.jit import JITKernel

    return JITKernel(kernel.program, kernel.target, kernel.pass_configs, execution_backend="cuda-bindings")


def run_impl(name: str, impl: str, fn, inputs, ref, nbytes: int, copy_gbps: float | None,
             copy_graph: float | None = None, sets: list | None = None) -> dict:
    row = {"workload": name, "impl": impl, "bytes": nbytes}
    try:
        err = rel_err(fn(*inputs), ref)
        torch.cuda.synchronize()
        fresh = WORKLOADS[name]["inputs"]()  # fresh inputs: the same function on any valid input
        err = max(err, rel_err(fn(*fresh), WORKLOADS[name]["ref"](*fresh)))
        row["rel_err"] = err
        if not err < TOL:
            row["status"] = f"FAIL: relative error {err:.2e} >= {TOL:.0e}"
            return row
        row["ms"] = bench_ms(lambda: fn(*inputs))
        row["gbps"] = gbps(nbytes, row["ms"])
        row["pct_copy"] = 100 * row["gbps"] / copy_gbps if copy_gbps else None
        if sets is not None:
            row["graph_ms"] = graph_ms(_graph_kernel(fn) if impl == "tilec" else fn, sets)
            row["graph_gbps"] = gbps(nbytes, row["graph_ms"])
            row["graph_pct_copy"] = 100 * row["graph_gbps"] / copy_graph if copy_graph else None
        row["status"] = "ok"
    except Exception as e:  # noqa: BLE001 - one broken implementation must not end the table
        row["status"] = f"ERROR: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        row["traceback"] = traceback.format_exc()
    return row


def main() -> int:
    if not torch.cuda.is_available():
        print("bench_memory needs a CUDA GPU")
        return 1
    torch.manual_seed(0)
    script = os.path.abspath(__file__)
    rows, compile_ms = [], {}
    for name, w in WORKLOADS.items():
        inputs = w["inputs"]()
        ref = w["ref"](*inputs)
        nbytes = w["nbytes"]
        copy_ms, copy_graph_ms = _copy_ms(nbytes)
        copy_gbps, copy_graph = gbps(nbytes, copy_ms), gbps(nbytes, copy_graph_ms)
        rows.append({"workload": name, "impl": "copy", "bytes": nbytes, "ms": copy_ms, "gbps": copy_gbps,
                     "pct_copy": 100.0, "graph_ms": copy_graph_ms, "graph_gbps": copy_graph,
                     "graph_pct_copy": 100.0, "status": "ok"})
        sets = input_sets(name, inputs)
        impls = {"torch": w["torch"]}
        try:
            start = time.perf_counter()
            kernel = build_tilec(name)
            impls["tilec"] = kernel
            print(f"{name}: tilec build {1e3 * (time.perf_counter() - start):.0f} ms (this process)", flush=True)
        except Exception as e:  # noqa: BLE001
            rows.append({"workload": name, "impl": "tilec", "status": f"BUILD ERROR: {type(e).__name__}: {e}",
                         "traceback": traceback.format_exc()})
        if triton is not None:
            impls["triton"] = w["triton"]
        for impl, fn in impls.items():
            row = run_impl(name, impl, fn, inputs, ref, nbytes, copy_gbps, copy_graph, sets)
            rows.append(row)
            print(f"{name:8s} {impl:7s} {row['status']}", flush=True)
        if "tilec" in impls:
            compile_ms[name] = cold_compile_ms(script, name)
            ptx_ms = cold_compile_ms(script, name, mode="ptx")
            for row in rows:
                if row["workload"] == name and row["impl"] == "tilec":
                    row["cold_compile_ms"] = compile_ms[name]
                    row["to_ptx_ms"] = ptx_ms
        del inputs, ref, sets
        torch.cuda.empty_cache()

    for row in rows:
        if row.get("status", "ok") != "ok" and "traceback" in row:
            print(f"\n--- {row['workload']} / {row['impl']} ---\n{row['traceback']}", file=sys.stderr)
    write_log("bench_memory", {"device": device_name(), "torch": torch.__version__,
                               "triton": getattr(triton, "__version__", None), "rows": rows})
    print(f"\nmemory-bound workloads on {device_name()}: single calls (median, L2 flushed by a 256 MB write) | "
          "graph: back to back in one CUDA graph over 256 MB of rotating inputs; % copy = vs copy_ of the same bytes")
    table = [[r["workload"], r["impl"], WORKLOADS[r["workload"]]["shape"], r.get("ms") and r["ms"] * 1e3,
              r.get("gbps"), r.get("pct_copy"), r.get("graph_ms") and r["graph_ms"] * 1e3, r.get("graph_gbps"),
              r.get("graph_pct_copy"), r.get("rel_err") and f"{r['rel_err']:.1e}",
              r.get("to_ptx_ms"), r.get("cold_compile_ms"), r["status"][:40]] for r in rows]
    print_table(["workload", "impl", "shape", "us", "GB/s", "% copy", "graph us", "GB/s", "% copy", "rel err",
                 "source→PTX ms", "→cubin ms", "status"], table)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


def cold_compile(name: str, mode: str = "build") -> None:
    """Times one build: "build" is the whole JIT build (PTX and ptxas); "ptx" stops at the PTX."""
    if mode == "ptx":
        from tilec.pipeline import lower_to_thread
        from tilec.target import resolve_target
        from tilec.targets.nvptx import emit_ptx

        jit_fn, kwargs = {"add": (add, {"N": N_ADD, "block": 1024, "threads": 256}),
                          "softmax": (softmax, {"M": SOFTMAX_M, "N": SOFTMAX_N, "block_M": 4, "threads": 128}),
                          "rmsnorm": (rms_norm, {"M": RMS_M, "N": RMS_N, "block_M": 1, "threads": 256})}[name]
        start = time.perf_counter()
        program = jit_fn.build_program(**kwargs)
        module, _, _ = lower_to_thread(program, resolve_target("sm_90a"), {})
        emit_ptx(module, "sm_90a")
    else:
        start = time.perf_counter()
        build_tilec(name)
    print(json.dumps({"ms": 1e3 * (time.perf_counter() - start)}))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--cold-compile":
        cold_compile(sys.argv[2], *sys.argv[3:])
        raise SystemExit(0)
    raise SystemExit(main())
