"""FlashAttention forward on Hopper: the reference kernel through tilec against cuDNN and
FlashAttention-2 (torch's scaled_dot_product_attention backends), measured in the same run.

    python bench/bench_attention.py                        # B=2 S=8192 H=16 D=128 f16, causal and not
    BENCH_ATTN_SHAPES=2x8192x16x128,2x4096x16x64 python bench/bench_attention.py   # BxSxHxD
    BENCH_ATTN_TILES=128x128x2x256,128x64x2x256 python bench/bench_attention.py     # bMxbNxstagesxthreads
    BENCH_ONCE=1 python bench/bench_attention.py           # each kernel once, checked, no timing

The tilec kernel is `shared/kernels/flash_attention.py` unmodified ([batch, seq, heads, dim]
tensors), with each tile configuration of BENCH_ATTN_TILES, warp-specialized (the sm_90a
default) and with `tl.disable_warp_specialized` (cp.async stages); the fastest correct one is
reported. The baselines read the same tensors as [batch, heads, seq, dim] views. Every
implementation is checked against a float32 attention of the same inputs (computed per head
group) before it is timed (median of CUDA-event timings, L2 flushed). FLOPs: 4 B H S^2 D, half
of it causal. The SASS column: HGMMA (wgmma; `RS` counts those with a register A, the P V gemm),
UTMALDG (TMA) and SETMAXREG (warp specialization). Writes $OUT/bench_attention.json when OUT is set.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

import torch
from kernels_dir import reference_kernels  # bench/kernels_dir.py

HERE = os.path.dirname(os.path.abspath(__file__))



sys.path.insert(0, reference_kernels())
from flash_attention import flash_fwd  # shared/kernels/flash_attention.py

import tilec

sys.path.pop(0)
sys.modules.pop("_common", None)
sys.path.insert(0, HERE)
from _common import bench_ms, device_name, print_table, rel_err, write_log

ONCE = os.environ.get("BENCH_ONCE") == "1"
SHAPES = [(2, 8192, 16, 128)]
if os.environ.get("BENCH_ATTN_SHAPES"):
    SHAPES = [tuple(int(x) for x in s.split("x")) for s in os.environ["BENCH_ATTN_SHAPES"].split(",")]
CAUSAL = [c == "1" for c in os.environ.get("BENCH_ATTN_CAUSAL", "0,1").split(",")]
# (block_M, block_N, num_stages, threads)
TILES = [(128, 128, 2, 256), (128, 128, 3, 256), (128, 64, 2, 256), (128, 64, 3, 256), (64, 64, 2, 128)]
if os.environ.get("BENCH_ATTN_TILES"):
    TILES = [tuple(int(x) for x in t.split("x")) for t in os.environ["BENCH_ATTN_TILES"].split(",")]
MODES = {"ws": {}, "cp.async": {"tl.disable_warp_specialized": True}}


def reference(q, k, v, causal: bool) -> torch.Tensor:
    """float32 attention, [batch, seq, heads, dim], a few heads at a time (S^2 scores in float32)."""
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    group = max(1, (1 << 30) // (q.shape[1] * q.shape[1] * 4))  # about 1 GB of scores at a time
    for b in range(q.shape[0]):
        for h in range(0, q.shape[2], group):
            qs, ks, vs = (t[b:b + 1, :, h:h + group].float().transpose(1, 2) for t in (q, k, v))
            with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
                o = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs, is_causal=causal)
            out[b:b + 1, :, h:h + group] = o.transpose(1, 2)
    return out


def _cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    for site in sys.path:
        path = os.path.join(site, "nvidia", "cu13", "bin", "cuobjdump")
        if os.path.isfile(path):
            return path
    return None


def sass_features(kernel) -> str:
    tool = _cuobjdump()
    try:
        cubin = kernel._backend.emit("cubin")
    except Exception:  # noqa: BLE001 - no ptxas: no cubin to read
        return "no cubin"
    if tool is None:
        return "no cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([tool, "--dump-sass", f.name], capture_output=True, text=True, check=False).stdout
    hgmma = [line for line in sass.splitlines() if "HGMMA" in line]
    rs = sum(bool(re.search(r"HGMMA\S* R\d+, R\d+, gdesc", line)) for line in hgmma)
    found = [f"HGMMA {len(hgmma)} (RS {rs})"] if hgmma else []
    found += [name for name in ("UTMALDG", "SETMAXREG") if name in sass]
    found += ["HMMA"] if "HMMA" in sass else []
    return " ".join(found) or "none"


def tilec_best(shape, causal, args, ref, flops, log):
    b, s, h, d = shape
    best = None
    for tiles in TILES:
        for mode, configs in MODES.items():
            name = "x".join(map(str, tiles)) + " " + mode
            try:
                prim = flash_fwd.__wrapped__(b, h, s, d, causal, block_M=tiles[0], block_N=tiles[1],
                                             num_stages=tiles[2], threads=tiles[3])
                kernel = tilec.compile(prim, out_idx=[3], target="cuda", pass_configs=configs)
                err = rel_err(kernel(*args), ref)
            except Exception as e:  # noqa: BLE001 - e.g. a configuration over the shared-memory budget
                log.append({"tiles": tiles, "mode": mode, "error": f"{type(e).__name__}: {str(e)[:300]}"})
                print(f"  tilec {name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
                continue
            ms = float("nan") if ONCE or err > 1e-2 else bench_ms(lambda kernel=kernel: kernel(*args))
            sass = sass_features(kernel)
            tflops = flops / (ms * 1e-3) / 1e12
            log.append({"tiles": tiles, "mode": mode, "ms": ms, "rel_err": err, "sass": sass, "tflops": tflops})
            print(f"  tilec {name}: {ms * 1e3:.0f} us, {tflops:.0f} TFLOP/s, err {err:.1e}, SASS {sass}", flush=True)
            if err <= 1e-2 and (best is None or ms < best[0]):
                best = (ms, err, name, sass)
    return best


def sdpa(backend, q, k, v, causal):
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))  # [B, H, S, D] views of the [B, S, H, D] tensors

    def run():
        with torch.nn.attention.sdpa_kernel(backend):
            return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)

    return run


def main() -> int:
    torch.manual_seed(0)
    rows, log = [], []
    backends = {"cuDNN": torch.nn.attention.SDPBackend.CUDNN_ATTENTION,
                "FlashAttention-2": torch.nn.attention.SDPBackend.FLASH_ATTENTION}
    for shape in SHAPES:
        b, s, h, d = shape
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.float16) for _ in range(3))
        for causal in CAUSAL:
            flops = 4 * b * h * s * s * d // (2 if causal else 1)
            ref = reference(q, k, v, causal)
            label = f"B{b} S{s} H{h} D{d}{' causal' if causal else ''}"
            print(label, flush=True)
            results = {}
            for name, backend in backends.items():
                run = sdpa(backend, q, k, v, causal)
                try:
                    err = rel_err(run(), ref)
                except RuntimeError as e:  # a backend that does not take this shape
                    print(f"  {name}: {str(e).splitlines()[0][:200]}", flush=True)
                    continue
                results[name] = (float("nan") if ONCE else bench_ms(run), err, "")
            klog: list = []
            best = tilec_best(shape, causal, (q, k, v), ref, flops, klog)
            log.append({"case": label, "tilec": klog})
            if best is not None:
                results["tilec"] = best
            cudnn = results.get("cuDNN", (float("nan"),))[0]
            fa2 = results.get("FlashAttention-2", (float("nan"),))[0]
            for name, (ms, err, *extra) in results.items():
                tflops = flops / (ms * 1e-3) / 1e12
                rows.append([label, name, " ".join(str(e) for e in extra), f"{ms * 1e3:.0f}", f"{tflops:.0f}",
                             f"{cudnn / ms:.2f}", f"{fa2 / ms:.2f}", f"{err:.1e}"])
                log.append({"case": label, "impl": name, "ms": ms, "tflops": tflops, "rel_err": err, "extra": extra})
    write_log("bench_attention", {"device": device_name(), "rows": log})
    print(f"\nAttention forward on {device_name()} (median of CUDA-event timings, L2 flushed; x = time ratio, "
          ">1 is faster)")
    print_table(["case", "impl", "tiles / SASS", "us", "TFLOP/s", "x cuDNN", "x FA2", "rel err"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
