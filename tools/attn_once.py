"""The reference attention kernel launched a few times at one point, for a profiler (ncu, nsys):

    S=1024 D=128 ncu -k regex:^main -c 1 -s 2 --section SourceCounters -o /tmp/a python tools/attn_once.py

S, D, CAUSAL (0/1), TILES (block_M x block_N x stages x threads); B = 16384 / S sequences, 2048 / D heads
(bench/bench_attention.py's sweep)."""
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = next(p for p in (os.environ.get("TILEC_SHARED_KERNELS", ""), os.path.join(ROOT, ".gpu", "kernels"),
                           os.path.join(os.path.dirname(ROOT), "shared", "kernels"))
               if p and os.path.isfile(os.path.join(p, "flash_attention.py")))
sys.path.insert(0, KERNELS)
from flash_attention import flash_fwd  # noqa: E402  (the reference kernel, unmodified)

S = int(os.environ.get("S", "1024"))
D = int(os.environ.get("D", "128"))
B, H = 16384 // S, 2048 // D
causal = os.environ.get("CAUSAL", "0") == "1"
tiles = tuple(int(x) for x in os.environ.get("TILES", "128x128x2x256").split("x"))
kernel = flash_fwd(B, H, S, D, causal, *tiles)
q, k, v = (torch.randn(B, S, H, D, device="cuda").half() for _ in range(3))
for _ in range(3):
    kernel(q, k, v)
torch.cuda.synchronize()
print("done", B, S, H, D, causal, tiles)
