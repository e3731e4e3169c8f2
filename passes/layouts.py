"""Which layout a tile gets: the thread distributions the passes choose (coalesced element-wise
tiles, the SIMT gemm accumulator, the mma.sync and wgmma accumulators) in the algebra of
`tilec.dialects.tile.layout`."""

from __future__ import annotations

import math

from tilec.dialects import tile
from tilec.dialects.tile.layout import Layout, Mode

__all__ = ["default_layout", "gemm_accumulator_layout", "mma_accumulator_layout", "mma_warp_grid",
           "wgmma_accumulator_layout", "wgmma_register_a_layout"]


def _largest_divisor(n: int, ok) -> int:
    """The largest divisor d of n with ok(d) (1 at least): thread modes must multiply to exactly
    the threads they cover, or the threads past their product would alias others unreplicated."""
    return max(d for d in range(1, n + 1) if n % d == 0 and (d == 1 or ok(d)))


def _split(shape: tuple[int, ...], factors: list[tuple[int, str]]) -> list[list[tuple[int, str]]] | None:
    """Assigns (size, kind) factors, least significant first, to dims from the last one."""
    dims: list[list[tuple[int, str]]] = [[] for _ in shape]
    remaining = list(shape)
    d = len(shape) - 1
    for size, kind in factors:
        while size > 1:
            while d >= 0 and remaining[d] == 1:
                d -= 1
            if d < 0:
                return None
            take = math.gcd(size, remaining[d])
            if take == 1:
                return None
            dims[d].insert(0, (take, kind))
            remaining[d] //= take
            size //= take
    for d, r in enumerate(remaining):
        if r > 1:
            dims[d].insert(0, (r, "s"))
    return dims


def _assign_strides(dims: list[list[tuple[int, str]]], rep: list[int]) -> Layout:
    """Strides: thread modes and slot modes are numbered from the least significant factor."""
    t_stride, s_stride = 1, 1
    out = [[None] * len(modes) for modes in dims]
    for d in range(len(dims) - 1, -1, -1):
        for k in range(len(dims[d]) - 1, -1, -1):
            size, kind = dims[d][k]
            if kind == "t":
                out[d][k] = Mode(size, "t", t_stride)
                t_stride *= size
            else:
                out[d][k] = Mode(size, "s", s_stride)
                s_stride *= size
    rep_modes = []
    for size in rep:
        rep_modes.append(Mode(size, "t", t_stride))
        t_stride *= size
    return Layout(tuple(tuple(m for m in modes if m.size > 1) or (Mode(1, "s", 1),) for modes in out),
                  tuple(rep_modes))


def default_layout(shape: tuple[int, ...], threads: int, vec: int) -> Layout:
    """Coalesced and vectorizable: each warp covers `32 * vec` consecutive elements of the
    last dim with one access per thread; the other warps take the rows (outer dims)
    first, so that a reduction along the last dim stays inside a warp when it can.

    For (4, 1024) over 128 threads with vec 8: `(4t32)x(4s8,32t1,8s1)`, one row per warp.
    """
    while vec > 1 and shape[-1] % vec:
        vec //= 2
    lane_threads = 1  # a power of two dividing the thread count (the modes must tile the threads)
    while lane_threads * 2 <= min(32, threads) and (shape[-1] // vec) % (lane_threads * 2) == 0 and \
            threads % (lane_threads * 2) == 0:
        lane_threads *= 2
    rest = threads // lane_threads
    dims: list[list[tuple[int, str]]] = [[] for _ in shape]
    last_slots = shape[-1] // (vec * lane_threads)
    for d in range(len(shape) - 2, -1, -1):  # the other warps go to the rows first
        take = math.gcd(rest, shape[d])
        if shape[d] // take > 1:
            dims[d].append((shape[d] // take, "s"))
        if take > 1:
            dims[d].append((take, "t"))
        rest //= take
    take = math.gcd(rest, last_slots)  # then further along the last dim
    rest //= take
    dims[-1] = [(last_slots // take, "s"), (take, "t"), (lane_threads, "t"), (vec, "s")]
    dims = [[(n, k) for n, k in modes if n > 1] for modes in dims]
    if all(k == "s" for modes in dims for _, k in modes) and lane_threads == 1 and threads > 1:
        return _row_major_layout(shape, threads, vec)
    return _assign_strides(dims, [rest] if rest > 1 else [])


def _row_major_layout(shape: tuple[int, ...], threads: int, vec: int) -> Layout:
    """Row-major elements dealt to threads `vec` at a time (for last dims too short for a warp)."""
    numel = math.prod(shape)
    while vec > 1 and (numel % vec or shape[-1] % vec):
        vec //= 2
    users = _largest_divisor(threads, lambda u: (numel // vec) % u == 0)
    factors = [(vec, "s"), (users, "t")]
    dims = _split(shape, factors)
    if dims is None:  # shapes that do not factor: one thread per element chunk
        dims = _split(shape, [(1, "s")])
        users = 1
    return _assign_strides(dims, [threads // users] if threads // users > 1 else [])


def gemm_accumulator_layout(m: int, n: int, threads: int) -> Layout:
    """The SIMT gemm accumulator: threads in a tm x tn grid, each owning a
    (m/tm) x (n/tn) micro-tile whose columns come in runs of up to 4.

    The tn threads of a row group are the fast ones (stride 1), so a row group sits
    in one warp and a row reduction needs only butterflies: for 64x64 over 128
    threads, `(8s4,8t16)x(16t1,4s1)`.
    """
    vec = 4
    while vec > 1 and n % vec:
        vec //= 2
    tn = 1
    while tn * 2 <= min(threads, 16) and (n // vec) % (tn * 2) == 0 and threads % (tn * 2) == 0:
        tn *= 2
    tm = _largest_divisor(threads // tn, lambda t: m % t == 0)
    rep = threads // (tm * tn)
    col_slots = n // (tn * vec)
    dims = (
        (Mode(m // tm, "s", vec * col_slots), Mode(tm, "t", tn)),
        (Mode(col_slots, "s", vec), Mode(tn, "t", 1), Mode(vec, "s", 1)),
    )
    return Layout(tuple(tuple(x for x in modes if x.size > 1) or (Mode(1, "s", 1),) for modes in dims),
                  (Mode(rep, "t", tn * tm),) if rep > 1 else ())


def mma_warp_grid(m: int, n: int, warps: int, policy: tile.GemmPolicy | str) -> tuple[int, int] | None:
    """(warps along M, warps along N) for m16n8k16 tiles of an m x n accumulator, or None."""
    if m % 16 or n % 8:
        return None
    options = [(wm, warps // wm) for wm in range(1, warps + 1) if warps % wm == 0]
    options = [(wm, wn) for wm, wn in options if (m // 16) % wm == 0 and (n // 8) % wn == 0]
    if policy == tile.GemmPolicy.FULL_ROW:
        options = [o for o in options if o[1] == 1] or options
    elif policy == tile.GemmPolicy.FULL_COL:
        options = [o for o in options if o[0] == 1] or options
    if not options:
        return None
    # square: the most even warp tile (its rows and columns closest), as TileLang's policy
    return min(options, key=lambda o: abs(m // o[0] - n // o[1]))


def mma_accumulator_layout(m: int, n: int, threads: int, policy: tile.GemmPolicy | str = tile.GemmPolicy.SQUARE) -> Layout | None:
    """The layout of an m x n f32 accumulator of mma.sync m16n8k16 over the block's warps.

    Within one 16x8 tile, lane = (row % 8) * 4 + (col % 8) // 2 and register
    (row // 8) * 2 + col % 2 (PTX ISA, "Matrix Fragments for mma.m16n8k16"); a warp
    repeats the tile rm x rn times, and the warps form a wm x wn grid.
    """
    if threads % 32:
        return None
    grid = mma_warp_grid(m, n, threads // 32, policy)
    if grid is None:
        return None
    wm, wn = grid
    rm, rn = m // 16 // wm, n // 8 // wn
    dims = (  # each warp owns a contiguous (m/wm) x (n/wn) block of the tile
        (Mode(wm, "t", 32 * wn), Mode(rm, "s", 4 * rn), Mode(2, "s", 2), Mode(8, "t", 4)),
        (Mode(wn, "t", 32), Mode(rn, "s", 4), Mode(4, "t", 1), Mode(2, "s", 1)),
    )
    return Layout(tuple(tuple(x for x in modes if x.size > 1) for modes in dims))


def wgmma_accumulator_layout(m: int, n: int, threads: int) -> Layout | None:
    """The layout of an m x n f32 accumulator of wgmma m64nNk16 over the block's warpgroups.

    Warpgroup g owns rows [g m/G, (g+1) m/G) in m64 blocks (one instruction each); inside one,
    thread t (warp w, lane l) holds register i at row 16 w + 8 ((i >> 1) & 1) + l / 4 and
    column 8 (i >> 2) + 2 (l % 4) + (i & 1) (HOPPER_KERNELS.md §1.4, CUTLASS CLayout_64xN).
    Slot r (n/2) + i is register i of the warpgroup's m64 block r.
    """
    if n > 256:
        return None
    return _warpgroup_rows_layout(m, n, threads)


def wgmma_register_a_layout(m: int, k: int, threads: int) -> Layout | None:
    """The layout of an m x k A operand that wgmma m64nNk16 reads from registers (the RS form).

    Register j (j < 4) of the k16 step s of m64 block r packs slots r (k/2) + 8 s + 2 j and
    + 1: A element (row, col) of thread t at row 16 w + 8 ((e >> 1) & 1) + l / 4, column
    16 s + 8 (e >> 2) + 2 (l % 4) + (e & 1) for its e-th element of the step (CUTLASS's
    ALayout_64x16 == CLayout_64x16). That is the accumulator layout of an m x k wgmma result, so
    an f32 accumulator converted to 16 bits (attention's P = S) is an A operand in place: no
    data moves between threads (FA3's `convert_layout_acc_Aregs`).
    """
    if k % 16:
        return None
    return _warpgroup_rows_layout(m, k, threads)


def _warpgroup_rows_layout(m: int, n: int, threads: int) -> Layout | None:
    if threads % 128 or n % 8:
        return None
    groups = threads // 128
    if m % (64 * groups):
        return None
    reps = m // 64 // groups
    # with one m64 block per warpgroup, the warpgroup and its 4 warps are one mode (8t32 for two
    # warpgroups): the mma.sync full-row layout of the same rows is written the same way, so the
    # two kinds of accumulator can share row fragments (an attention's S and O)
    warps = (Mode(4 * groups, "t", 32),) if reps == 1 else (Mode(groups, "t", 128), Mode(reps, "s", n // 2),
                                                             Mode(4, "t", 32))
    dims = (
        (*warps, Mode(2, "s", 2), Mode(8, "t", 4)),
        (Mode(n // 8, "s", 4), Mode(4, "t", 1), Mode(2, "s", 1)),
    )
    return Layout(tuple(tuple(x for x in modes if x.size > 1) for modes in dims))
