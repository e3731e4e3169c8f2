"""DRAM reads of a persistent gemm under an LRU model of the L2, by rasterization and k order.

The model behind tile-alternate-k (bench/NOTES.md, session 19): P blocks run the tiles of the
grid in rounds (block b: tiles b, b + P, ...; round r: the tiles rP..rP + P - 1 in use_swizzle's
row order, panels alternating direction as tilec's lowering has them), all blocks in lockstep
through the k-steps of a round, each k-step reading the tile's A slice (block_M x block_K) and B
slice (block_K x block_N) through an LRU cache of whole slices. Forwards, it reproduces ncu's
DRAM reads of the reference gemm at 8192^3 (1.29 vs 1.33 GB at panel 10, 1.20 vs 1.20 at panel 16,
run s10b).

    python tools/l2_model.py                       # 8192^3, 128x256x64, P = 128, panel 10, 40/50/60 MB
    python tools/l2_model.py --shape 4096x4096x4096 --blocks 128 --panel 10 --l2 50
"""

from __future__ import annotations

import argparse
from collections import OrderedDict


def rasterized(t: int, gx: int, gy: int, panel: int) -> tuple[int, int]:
    """(bx, by) of linear tile t = bx + by·gx in use_swizzle's row order (convert.py `_rasterize`)."""
    width, total = gx * panel, gx * gy
    index = t // width
    stride = panel if index != -(-total // width) - 1 else (total - index * width) // gx
    within = t - index * width
    col = within // stride
    return (gx - col - 1 if index % 2 else col), within % stride + index * panel


def dram_bytes(shape, tiles, blocks: int, panel: int, l2_bytes: int, alternate: bool, element_bytes: int = 2) -> int:
    (m, n, k), (bm, bn, bk) = shape, tiles
    gx, gy, steps = n // bn, m // bm, k // bk
    cache: OrderedDict = OrderedDict()
    used = missed = 0
    sizes = {"A": bm * bk * element_bytes, "B": bk * bn * element_bytes}
    total = gx * gy
    for r in range(-(-total // blocks)):
        round_tiles = [rasterized(t, gx, gy, panel) for t in range(r * blocks, min(total, (r + 1) * blocks))]
        for s in (range(steps - 1, -1, -1) if alternate and r % 2 else range(steps)):
            for bx, by in round_tiles:
                for key in (("A", by, s), ("B", bx, s)):
                    if key in cache:
                        cache.move_to_end(key)
                        continue
                    size = sizes[key[0]]
                    missed += size
                    cache[key] = size
                    used += size
                    while used > l2_bytes:
                        used -= cache.popitem(last=False)[1]
    return missed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="8192x8192x8192")
    p.add_argument("--tiles", default="128x256x64")
    p.add_argument("--blocks", type=int, default=128, help="persistent blocks (balanced waves: 128 at 8192^3)")
    p.add_argument("--panel", type=int, default=10)
    p.add_argument("--l2", default="40,50,60", help="L2 sizes in MB")
    args = p.parse_args()
    shape = tuple(int(x) for x in args.shape.split("x"))
    tiles = tuple(int(x) for x in args.tiles.split("x"))
    for mb in (int(x) for x in args.l2.split(",")):
        fwd, alt = (dram_bytes(shape, tiles, args.blocks, args.panel, mb << 20, a) / 1e9 for a in (False, True))
        print(f"{args.shape} {args.tiles} P={args.blocks} panel {args.panel} L2 {mb} MB: forwards {fwd:.3f} GB, "
              f"alternating {alt:.3f} GB ({100 * (1 - alt / fwd):.0f} % less)", flush=True)


if __name__ == "__main__":
    main()
