"""The `fused` kind: several tile ops in a row on one block tile, so layouts, barriers and
buffers of different ops meet (what real kernels do: softmax, layernorm, attention).

A 2-D fragment `cur` is loaded from X and then goes through 2-4 stages drawn from:

    ew        an element-wise expression of cur (and another input), in place or into a new fragment
    rownorm   reduce cur along a dim, then combine the reduced vector back into cur (x - max, x / sum)
    scan      T.cumsum / T.cummax of cur along a dim, in place
    shared    cur through a shared tile and back (transposed when the tile is square)
    gemm      cur (as float16/bfloat16 in shared memory) times an input W: the tile's shape changes

and is stored to Y.  Every stage keeps to what the CUDA target accepts: a fragment is written
only by loops of its own shape, and a reduced vector is read back only in a loop over its
source (see known.py for the refusals this steers around).
"""

from __future__ import annotations

import math

import numpy as np

from .common import (
    fill,
    maybe_swizzle,
    parallel_assign,
    space,
    threads,
    tile_leaf,
    write_tile,
)
from .expr import expression
from .program import DTYPES, UNIT, Program, R, convert_unit
from .recipes import REDUCE_KINDS, reduce_ref

STAGES = ("ew", "rownorm", "scan", "shared", "gemm")


class _State:
    def __init__(self, tile, bound: float):
        self.tile, self.bound = tile, bound


def fused(d) -> Program:
    sp = space(d, 2, max_elems=2048, max_blocks=2)
    prog = Program("fused", threads(d, int(np.prod(sp.t))), sp.grid)
    X = prog.tensor("X", sp.n, d.choice(DTYPES), "in")
    cur = prog.alloc("fragment", sp.t, d.choice(("float32", "float32", "float16")))
    prog.load(X, sp.offs(prog), cur, form=d.choice(("point", "slice")))
    st = _State(cur, 3.0)
    stages = [d.choice(STAGES) for _ in range(d.int(2, 4))]
    prog.tag("stages", "+".join(stages))
    for stage in stages:
        _STAGES[stage](d, prog, st)
    shape = st.tile.shape
    Y = prog.tensor("Y", (sp.n[0], shape[1] * sp.g[1]), d.choice(DTYPES), "out")
    prog.store(st.tile, Y, [prog.block_off(1, shape[0]), prog.block_off(0, shape[1])],
               form=d.choice(("point", "slice")))
    return prog


def _ew(d, prog: Program, st: _State) -> None:
    t = st.tile
    leaves = [tile_leaf(t, ("i", "j"), exact=False, bound=st.bound)]
    if d.chance(0.4):  # a second operand loaded from another input
        W = prog.tensor(prog.fresh("W"), t.shape, d.choice(DTYPES), "in")
        w = prog.alloc(d.choice(("fragment", "shared")), t.shape, d.choice(DTYPES))
        prog.load(W, [_zero(), _zero()], w)
        leaves.append(tile_leaf(w, ("i", "j"), exact=convert_unit(W.dtype, w.dtype) == 0))
    e = expression(d, leaves, d.int(1, 3))
    out = t if d.chance(0.6) else prog.alloc("fragment", t.shape, d.choice(("float32", "float16")))
    parallel_assign(prog, t.shape, f"{out.name}[i, j]", e, write_tile(out, e.dtype))
    st.tile, st.bound = out, e.bound


def _rownorm(d, prog: Program, st: _State) -> None:
    t = st.tile
    dim = d.int(0, 1)
    kind = d.choice(REDUCE_KINDS)
    vec = prog.alloc("fragment", (t.shape[1 - dim],), "float32")
    prog.emit(f"T.reduce_{kind}({t.name}, {vec.name}, dim={dim})")
    prog.step(lambda env: env.tiles.__setitem__(vec.name, reduce_ref(kind, env.tiles[t.name], dim, vec.shape,
                                                                      vec.dtype, None)))
    vb = st.bound * (t.shape[dim] if kind.endswith("sum") else 1)
    v_at = "i" if dim == 1 else "j"
    op = d.choice(("sub", "div", "mul"))
    text = {"sub": f"{t.name}[i, j] - {vec.name}[{v_at}]",
            "div": f"{t.name}[i, j] / (T.abs({vec.name}[{v_at}]) + 1.0)",
            "mul": f"{t.name}[i, j] * {vec.name}[{v_at}]"}[op]
    if op == "mul" and st.bound * vb > 1e4:
        op, text = "sub", f"{t.name}[i, j] - {vec.name}[{v_at}]"
    prog.emit("for i, j in T.Parallel({}, {}):".format(*t.shape))
    with prog.indent():
        prog.emit(f"{t.name}[i, j] = {text}")

    def run(env):
        x, v = env.tiles[t.name], env.tiles[vec.name]
        vv, vm = (v.v[:, None], v.m[:, None]) if dim == 1 else (v.v[None, :], v.m[None, :])
        u = UNIT[_compute_dtype(t.dtype)]
        if op == "sub":
            r = R(x.v - vv, x.m + vm, max(x.b, v.b) + u)
        elif op == "mul":
            r = R(x.v * vv, x.m * vm, x.b + v.b + u)
        else:
            c = np.abs(vv) + 1.0
            r = R(x.v / c, x.m / c + np.abs(x.v) * (vm + 1.0) / c**2 + np.abs(x.v / c), max(x.b, v.b + u) + u)
        env.tiles[t.name] = R(r.v, r.m, r.b + convert_unit(_compute_dtype(t.dtype), t.dtype))

    prog.step(run)
    st.bound = {"sub": st.bound + vb, "div": st.bound, "mul": st.bound * vb}[op]
    prog.tags.setdefault("rownorm", set()).add(f"{kind}/{dim}/{op}")


def _compute_dtype(dtype: str) -> str:
    """Binary ops of a tile element with a float32 vector meet in float32 (semantic.py)."""
    return "float32" if dtype != "float32" else dtype


def _scan(d, prog: Program, st: _State) -> None:
    t = st.tile
    if t.dtype != "float32" or st.bound * max(t.shape) > 1e4:
        return _ew(d, prog, st)
    dim, reverse = d.int(0, 1), d.chance(0.5)
    op = d.choice(("cumsum", "cummax"))
    prog.emit(f"T.{op}({t.name}, dim={dim}{', reverse=True' if reverse else ''})")

    def run(env):
        r = env.tiles[t.name]
        flip = (lambda a: np.flip(a, dim)) if reverse else (lambda a: a)
        if op == "cumsum":
            env.tiles[t.name] = R(flip(np.cumsum(flip(r.v), dim)), flip(np.cumsum(flip(r.m), dim)),
                                  r.b + t.shape[dim] * UNIT[t.dtype])
        else:
            env.tiles[t.name] = R(flip(np.maximum.accumulate(flip(r.v), dim)),
                                  flip(np.maximum.accumulate(flip(r.m), dim)), r.b)

    prog.step(run)
    if op == "cumsum":
        st.bound *= t.shape[dim]
    return None


def _shared(d, prog: Program, st: _State) -> None:
    t = st.tile
    s = prog.alloc("shared", t.shape, d.choice(DTYPES))
    maybe_swizzle(d, prog, s)
    prog.emit(f"T.copy({t.name}, {s.name})")
    back = prog.alloc("fragment", t.shape, d.choice(("float32", "float16")))
    square = t.shape[0] == t.shape[1]
    transpose = square and d.chance(0.6)
    if transpose:
        prog.emit("for i, j in T.Parallel({}, {}):".format(*t.shape))
        with prog.indent():
            prog.emit(f"{back.name}[i, j] = {s.name}[j, i]")
    else:
        prog.emit(f"T.copy({s.name}, {back.name})")

    def run(env):
        r = env.tiles[t.name]
        v, m = (r.v.T, r.m.T) if transpose else (r.v, r.m)
        b = r.b + convert_unit(t.dtype, s.dtype) + convert_unit(s.dtype, back.dtype)
        env.tiles[back.name] = R(v.copy(), m.copy(), b)

    prog.step(run)
    st.tile = back


def _gemm(d, prog: Program, st: _State) -> None:
    t = st.tile
    if st.bound > 200:
        return _ew(d, prog, st)
    dt = d.choice(("float16", "bfloat16"))
    m, k = t.shape
    n = d.choice((8, 16, 32))
    if m * n > 4096 or k > 128:
        return _ew(d, prog, st)
    a = prog.alloc("shared", (m, k), dt, "a")
    W = prog.tensor(prog.fresh("W"), (k, n), dt, "in")
    b = prog.alloc("shared", (k, n), dt, "b")
    c = prog.alloc("fragment", (m, n), "float32", "c")
    prog.emit(f"T.copy({t.name}, {a.name})")
    prog.load(W, [_zero(), _zero()], b)
    fill(prog, c, 0.0)
    prog.emit(f"T.gemm({a.name}, {b.name}, {c.name})")

    def run(env):
        r, w = env.tiles[t.name], env.tiles[b.name]
        budget = r.b + convert_unit(t.dtype, dt) + w.b + (k + 2) * UNIT["float32"]
        env.tiles[c.name] = R(r.v @ w.v, r.m @ w.m, budget)

    prog.step(run)
    st.tile, st.bound = c, st.bound * 3.0 * math.sqrt(k) * 2
    prog.tag("gemm", True)
    return None


def _zero():
    from .program import Off

    return Off.const(0)


_STAGES = {"ew": _ew, "rownorm": _rownorm, "scan": _scan, "shared": _shared, "gemm": _gemm}
