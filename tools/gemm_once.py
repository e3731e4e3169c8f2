"""The reference gemm launched a few times at one point, for a profiler (ncu):

    SCHEDULE=persistent-fwd ncu -k regex:^main -c 1 -s 2 --clock-control none \\
        --metrics dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum python tools/gemm_once.py

SHAPE (MxNxK), DTYPE, TILES (block_M x block_N x block_K x stages x threads), SCHEDULE (one of
bench/bench_gemm.py's CONFIGS: persistent, persistent-fwd, pingpong, ...), LAUNCHES (3)."""
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_gemm  # noqa: E402 - the reference gemm and the schedules' pass configs, as the bench has them

import tilec  # noqa: E402
import tilec.language as T  # noqa: E402

M, N, K = (int(x) for x in os.environ.get("SHAPE", "8192x8192x8192").split("x"))
dtype = os.environ.get("DTYPE", "float16")
tiles = tuple(int(x) for x in os.environ.get("TILES", "128x256x64x4x256").split("x"))
schedule = os.environ.get("SCHEDULE", "persistent")
kernel = tilec.jit(bench_gemm.matmul.fn, out_idx=[-1], pass_configs=bench_gemm.CONFIGS[schedule])(
    M, N, K, *tiles, dtype=getattr(T, dtype))
a, b = (torch.randn(*s, device="cuda", dtype=getattr(torch, dtype)) for s in ((M, K), (K, N)))
for _ in range(int(os.environ.get("LAUNCHES", "3"))):
    c = kernel(a, b)
torch.cuda.synchronize()
err = float((c.float() - a.float() @ b.float()).norm() / (a.float() @ b.float()).norm())
print("done", M, N, K, dtype, tiles, schedule, f"rel err {err:.1e}")
