"""Helpers the recipes share: thread counts, tiled index spaces, leaves, loops, fills."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .expr import Leaf
from .program import Off, Program, R, Tensor, Tile, clip, convert_unit, converted

LOOP_VARS = ("i", "j", "k")
SIZES = (1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 32, 48, 64, 100, 128)


PER_THREAD_MAX = 64  # tile elements a thread holds, at most (bounds the unrolled code and its compile time)


def threads(d, elems: int = 0):
    """32 to 1024 in steps of 32, mostly small (the simulator's cost grows with the block), as
    an int or, now and then, a [x, y] / [x, y, z] list; at least elems / PER_THREAD_MAX."""
    n = _threads(d)
    total = int(np.prod(n)) if isinstance(n, list) else n
    if total * PER_THREAD_MAX >= elems:
        return n
    return min(1024, 32 * -(-elems // (32 * PER_THREAD_MAX)))


def _threads(d):
    n = 32 * (d.int(1, 8) if d.chance(0.6) else d.int(1, 32))
    if d.chance(0.1):
        for y in (2, 4, 3, 8):
            if n % (32 * y) == 0 and d.chance(0.5):
                return [n // y, y] if d.chance(0.7) or y % 2 else [n // y, y // 2, 2]
    return n


@dataclass
class Space:
    """A tiled index space: tile extents `t`, block counts `g`, global extents `n` (with
    tails), and the grid dimension each tile dimension uses (the last tile dim is bx)."""

    t: tuple[int, ...]
    g: tuple[int, ...]
    n: tuple[int, ...]
    walk: int | None = None  # a tile dim walked by the loop variable `ko` instead of the grid

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(reversed([1 if k == self.walk else g for k, g in enumerate(self.g)]))

    def grid_dim(self, k: int) -> int:
        return len(self.t) - 1 - k

    def offs(self, prog: Program, shift=None) -> list[Off]:
        """Each dim's block offset (`by * 16`, or `ko * 16` for the walked dim), plus `shift`."""
        out = []
        for k, t in enumerate(self.t):
            o = Off(f"ko * {t}", lambda env, t=t: env.loops["ko"] * t) if k == self.walk else \
                prog.block_off(self.grid_dim(k), t)
            c = 0 if shift is None else shift[k]
            if c:
                o = Off(f"{o.text} {'+' if c > 0 else '-'} {abs(c)}", lambda env, o=o, c=c: o.fn(env) + c)
            out.append(o)
        return out

    def offsets(self, env) -> list[int]:
        return [env.loops["ko"] * t if k == self.walk else env.block[self.grid_dim(k)] * t
                for k, t in enumerate(self.t)]


def dynamic_sizes(d, prog: Program, sp: Space, p: float = 0.15):
    """Sometimes makes gridded dims T.dynamic sizes (bound from the tensors at the call):
    returns the shape source for tensors of the space's shape, or None."""
    if not d.chance(p):
        return None
    src = []
    for k, n in enumerate(sp.n):
        if k != sp.walk and d.chance(0.6):
            name = "MNK"[k]
            prog.symbols[name] = n
            src.append(name)
        else:
            src.append(str(n))
    if not prog.symbols:
        return None
    grid = []
    for k in reversed(range(len(sp.t))):
        grid.append(f"T.ceildiv({src[k]}, {sp.t[k]})" if src[k] in prog.symbols else str(sp.grid[sp.grid_dim(k)]))
    prog.grid_src = grid
    prog.tag("dynamic", True)
    return tuple(src)


def walk_loop(d, prog: Program, sp: Space):
    """The loop over the walked dim: T.serial, range, T.unroll or T.Pipelined with 0-3 stages."""
    n = sp.g[sp.walk]
    form = d.choice(("serial", "range", "pipelined", "unroll"))
    stages = d.int(0, 3)
    header = {"serial": f"T.serial({n})", "range": f"range({n})", "unroll": f"T.unroll({n})",
              "pipelined": f"T.Pipelined({n}, num_stages={stages})"}[form]
    prog.tag("loop", f"{form}{stages if form == 'pipelined' else ''}")
    return prog.loop("ko", header, n)


def maybe_walk(d, sp: Space, p: float = 0.25) -> Space:
    """Sometimes walks the first dim with a loop inside the block (at least two iterations)."""
    if not d.chance(p):
        return sp
    g = (max(sp.g[0], d.int(2, 3)),) + sp.g[1:]
    n = (g[0] * sp.t[0] - (d.int(0, sp.t[0] - 1) if d.chance(0.6) else 0),) + sp.n[1:]
    return Space(sp.t, g, n, walk=0)


def shift(d, sp: Space, p: float = 0.2):
    """Now and then a region starts off the tile grid: +1..+3, or -1 (below index 0 for the
    first block, unless known.py steers around that)."""
    from .known import avoid

    if not d.chance(p):
        return None
    options = (0, 1, 2, 3) if avoid("negative_global_index") else (-1, 0, 1, 2, 3)
    return [d.choice(options) for _ in sp.t]


def tile_shape(d, ndim: int, max_elems: int) -> tuple[int, ...]:
    while True:
        shape = tuple(d.choice(SIZES) for _ in range(ndim))
        if int(np.prod(shape)) <= max_elems:
            return shape
        max_elems *= 2 if d.chance(0.1) else 1  # hypothesis shrinks the sizes; a seed retries


def space(d, ndim: int, max_elems: int = 1024, max_blocks: int = 3) -> Space:
    t = tile_shape(d, ndim, max_elems)
    g = tuple(d.int(1, max_blocks) if d.chance(0.5) else 1 for _ in t)
    n = tuple(gk * tk if d.chance(0.3) else d.int((gk - 1) * tk + 1, gk * tk) for tk, gk in zip(t, g))
    return Space(t, g, n)


def block_slices(sp: Space, env, extents=None):
    """The block's region of a tensor of the space's shape: (tensor slices, tile slices)."""
    ext = sp.t if extents is None else extents
    return clip(sp.offsets(env), ext, sp.n)


def tile_leaf(tile: Tile, vars_: tuple[str, ...], exact: bool = False, bound: float = 3.0) -> Leaf:
    """`x[i, j]` for a tile of the loop's shape (or a broadcast `y[i]` of a lower-rank tile).
    `exact`: the tile holds input values unrounded (so a comparison on it is exact)."""
    return Leaf(f"{tile.name}[{', '.join(vars_)}]", tile.dtype, bound, lambda env: env.tiles[tile.name], exact)


def global_leaf(prog: Program, sp: Space, t: Tensor, shift_=None) -> Leaf:
    """`A[by * 16 + i, bx * 32 + j]` inside a T.Parallel over the tile: zero out of range."""
    offs = sp.offs(prog, shift_)
    vars_ = LOOP_VARS[: len(sp.t)]
    text = f"{t.name}[{', '.join(f'{o.text} + {v}' for o, v in zip(offs, vars_))}]"

    def get(env):
        v = np.zeros(sp.t)
        c = clip([o.fn(env) for o in offs], sp.t, t.shape)
        if c is not None:
            v[c[1]] = env.g[t.name].v[c[0]]
        return R.exact(v)

    return Leaf(text, t.dtype, 3.0, get)


def parallel_assign(prog: Program, shape, target: str, expr, write, branch=None, pre=(), extra=()) -> None:
    """`for i, j in T.Parallel(...): <target> = <expr>`; `write(env, R)` is the reference.
    With `branch` = (cond, expr2) the body is `if cond: target = expr / else: target = expr2`;
    `pre` lines open the body (per-iteration T.alloc_var temporaries), `extra` are more
    (target, expr, write) assignments after the first."""
    vars_ = LOOP_VARS[: len(shape)]
    prog.emit(f"for {', '.join(vars_)} in T.Parallel({', '.join(map(str, shape))}):")
    with prog.indent():
        for line in pre:
            prog.emit(line)
        if branch is None:
            prog.emit(f"{target} = {expr.text}")
        else:
            prog.emit(f"if {branch[0].text}:")
            prog.emit(f"    {target} = {expr.text}")
            prog.emit("else:")
            prog.emit(f"    {target} = {branch[1].text}")
        for t, e, _ in extra:
            prog.emit(f"{t} = {e.text}")

    def run(env):
        r = expr.fn(env)
        v, m, b = np.broadcast_to(r.v, shape), np.broadcast_to(r.m, shape), r.b
        if branch is not None:
            r2, c = branch[1].fn(env), np.broadcast_to(branch[0].fn(env), shape)
            v, m, b = np.where(c, v, r2.v), np.where(c, m, r2.m), max(b, r2.b)
        later = [(w, e.fn(env)) for _, e, w in extra]  # read before any of the loop's writes land
        write(env, R(np.array(v, dtype=np.float64), np.array(m, dtype=np.float64), b))
        for w, r in later:
            w(env, R(np.broadcast_to(r.v, shape).astype(np.float64), np.broadcast_to(r.m, shape).astype(np.float64),
                     r.b))

    prog.step(run)


def write_tile(tile: Tile, src_dtype: str):
    def write(env, r: R):
        env.tiles[tile.name] = R(converted(r.v, src_dtype, tile.dtype), r.m, r.b + convert_unit(src_dtype, tile.dtype))

    return write


def write_global(sp: Space, t: Tensor, src_dtype: str, offs: list[Off] | None = None):
    """A T.Parallel store into the block's region of `t` (at `offs` if given, else the
    space's block offsets): the out-of-range part is skipped."""

    def write(env, r: R):
        c = block_slices(sp, env) if offs is None else clip([o.fn(env) for o in offs], sp.t, t.shape)
        if c is None:
            return
        gl = env.g[t.name]
        gl.v[c[0]], gl.m[c[0]] = converted(r.v[c[1]], src_dtype, t.dtype), r.m[c[1]]
        gl.b = max(gl.b, r.b + convert_unit(src_dtype, t.dtype))

    return write


LOCAL_MAX = 64  # elements of a T.alloc_local tile (registers of every thread)


def scopes(shape, *options: str) -> tuple[str, ...]:
    """`options`, plus "local" when the tile is small enough to sit in every thread."""
    return options + (("local",) if int(np.prod(shape)) <= LOCAL_MAX else ())


def maybe_swizzle(d, prog: Program, tile: Tile, p: float = 0.3) -> None:
    """`T.annotate_layout({s: make_swizzled_layout(s)})` on a 2-D shared tile whose rows are
    a whole number of swizzle rows."""
    if tile.scope != "shared" or len(tile.shape) != 2 or not d.chance(p):
        return
    row_bytes = tile.shape[1] * (4 if tile.dtype == "float32" else 2)
    options = [s for s in (32, 64, 128) if row_bytes % s == 0]
    if not options:
        return
    nbytes = d.choice(options)
    arg = "" if nbytes == 128 and d.chance(0.5) else f", swizzle_bytes={nbytes}"
    prog.emit(f"T.annotate_layout({{{tile.name}: make_swizzled_layout({tile.name}{arg})}})")
    prog.tags["swizzle"] = True


def block_index(prog: Program, k: int) -> Off:
    return Off(prog.block(k), lambda env, k=k: env.block[k])


def broadcast_get(y: Tile, dim: int):
    """A reduced tile's R with the reduced dim put back (size 1), to broadcast in the loop."""

    def get(env):
        r = env.tiles[y.name]
        return R(np.expand_dims(r.v, dim), np.expand_dims(r.m, dim), r.b)

    return get


def padded(src: np.ndarray, offsets, extents) -> np.ndarray:
    v = np.zeros(extents)
    c = clip(list(offsets), tuple(extents), src.shape)
    if c is not None:
        v[c[1]] = src[c[0]]
    return v


def fill(prog: Program, tile: Tile, value: float) -> None:
    if value == 0.0 and prog.tags.get("_clear_style", 0) % 2 == 0:
        prog.emit(f"T.clear({tile.name})")
    else:
        prog.emit(f"T.fill({tile.name}, {value!r})")
    prog.tags["_clear_style"] = prog.tags.get("_clear_style", 0) + 1
    prog.step(lambda env: env.tiles.__setitem__(tile.name, R.exact(np.full(tile.shape, value))))
