"""Recipes with matrix products and atomics.

    gemm    C = A·B over random tiles (tails in M, N and K), transpose_A / transpose_B, A or B
            in a fragment, T.Pipelined stages 0-4 / T.serial / range / no loop, warp policies,
            SIMT, mma.sync and wgmma (pass configs), swizzled operands, dtype changes on the
            operand copies, T.clear / T.fill / a loaded bias / clear_accum, then an epilogue:
            a copy, an element-wise expression, a row reduction, or a second gemm (P·V)
    atomic  T.atomic_add / max / min of whole tiles, of reduced rows, and of single elements
            inside T.Parallel, every block of the grid adding into the same outputs
"""

from __future__ import annotations

import math

import numpy as np

from .common import (
    Space,
    fill,
    maybe_swizzle,
    padded,
    parallel_assign,
    space,
    threads,
    tile_leaf,
    write_global,
    write_tile,
)
from .expr import Expr, Leaf, expression
from .known import avoid
from .program import DTYPES, UNIT, Off, Program, R, convert_unit
from .recipes import REDUCE_KINDS, reduce_ref

ENGINES = {"mma": {}, "mma_on": {"tilec.enable_mma": True}, "simt": {"tilec.enable_mma": False},
           "wgmma": {"tilec.enable_wgmma": True}}
POLICIES = (None, "Square", "FullRow", "FullCol")


def _tiles(d, engine: str) -> tuple[int, int, int]:
    while True:
        if engine == "wgmma" and d.chance(0.8):
            bm, bn, bk = d.choice((64, 128)), d.choice((16, 32, 64, 128)), d.choice((16, 32, 64))
        elif engine != "simt" or d.chance(0.5):
            bm, bn, bk = 16 * d.int(1, 6), 8 * d.int(1, 8), 16 * d.int(1, 4)
        else:
            bm, bn, bk = (d.choice((4, 8, 12, 16, 24, 32, 64)) for _ in range(3))
        if bm * bn <= 8192 and bm * bk <= 4096 and bk * bn <= 4096:
            return bm, bn, bk


def _gemm_threads(d, engine: str, elems: int):
    if engine == "wgmma" and d.chance(0.7):
        return d.choice((128, 256))
    return threads(d, elems)


def _canonical_wgmma(d) -> tuple[int, int, int, int]:
    """Tiles and threads that wgmma takes (m64 rows per warpgroup, K-major A of 32-128 bytes
    rows, n a multiple of 16): most wgmma cases, so the path is exercised, not declined."""
    threads_ = d.choice((128, 128, 256))
    bm = 64 * (threads_ // 128) * d.choice((1, 1, 2))
    bn = d.choice((16, 32, 64, 128) if bm == 64 else (16, 32, 64))
    return bm, bn, d.choice((16, 32, 64)), threads_


def gemm(d) -> Program:
    engine = d.choice(("mma", "mma_on", "simt", "wgmma"))
    dt = d.choice(("float16", "bfloat16"))
    if engine == "simt" and d.chance(0.3):
        dt = "float32"
    canonical = engine == "wgmma" and d.chance(0.7)
    if canonical:
        bm, bn, bk, threads_ = _canonical_wgmma(d)
    else:
        bm, bn, bk = _tiles(d, engine)
        threads_ = _gemm_threads(d, engine, bm * bn)
    gm, gn, kiters = d.int(1, 2), d.int(1, 2), d.choice((1, 1, 2, 3, 4))
    M = gm * bm - (d.int(0, bm - 1) if d.chance(0.6) else 0)
    N = gn * bn - (d.int(0, bn - 1) if d.chance(0.6) else 0)
    K = kiters * bk - (d.int(0, bk - 1) if d.chance(0.5) else 0)
    ta, tb = (False if canonical else d.chance(0.3)), d.chance(0.4)
    prog = Program("gemm", threads_, (gn, gm), ENGINES[engine])
    prog.tag("engine", engine + ("_canonical" if canonical else ""))
    if d.chance(0.15):  # block rasterization: the blocks' indices are permuted, the result is not
        prog.emit(d.choice(("T.use_swizzle(2)", "T.use_swizzle(panel_size=4)", "T.use_swizzle(2, order=\"col\")")))
        prog.tag("use_swizzle", True)
    in_dt = {"A": dt, "B": dt}
    for name in in_dt:
        if dt != "float32" and d.chance(0.15):
            in_dt[name] = "float32"  # converted on the copy into the operand tile
    A = prog.tensor("A", (K, M) if ta else (M, K), in_dt["A"], "in")
    B = prog.tensor("B", (N, K) if tb else (K, N), in_dt["B"], "in")
    c_dt = "float16" if dt == "float16" and d.chance(0.1) else "float32"
    init = d.choice(("clear", "fill", "bias", "clear_accum")) if d.chance(0.4) else "clear"
    if init == "bias":
        prog.tensor("Cin", (M, N), d.choice(DTYPES), "in")
    a = prog.alloc("fragment" if d.chance(0.2) and not canonical else "shared", (bk, bm) if ta else (bm, bk), dt, "a")
    b_frag = d.chance(0.1) and not canonical and not (a.scope == "fragment" and avoid("gemm_fragment_a_and_b"))
    b = prog.alloc("fragment" if b_frag else "shared", (bn, bk) if tb else (bk, bn), dt, "b")
    c = prog.alloc("fragment", (bm, bn), c_dt, "c")
    for t in (a, b):  # (a hand-annotated swizzle makes the wgmma path decline: not in canonical cases)
        maybe_swizzle(d, prog, t, 0.05 if canonical else 0.3)
    if init in ("clear", "fill"):
        fill(prog, c, 0.0)
    elif init == "bias":
        prog.emit(f"T.copy(Cin[by * {bm}, bx * {bn}], {c.name})")
    loop = d.choice(("pipelined", "pipelined", "serial", "range", "none" if kiters == 1 else "serial"))
    stages = d.int(0, 4)
    kk = "ko" if loop != "none" else "0"
    koff = f"{kk} * {bk}" if loop != "none" else "0"
    a_at = f"A[{koff}, by * {bm}]" if ta else f"A[by * {bm}, {koff}]"
    b_at = f"B[bx * {bn}, {koff}]" if tb else f"B[{koff}, bx * {bn}]"
    opts = []
    if ta:
        opts.append("transpose_A=True")
    if tb:
        opts.append("transpose_B=True")
    policy = d.choice(POLICIES)
    if policy is not None:
        opts.append(f"policy=T.GemmWarpPolicy.{policy}")
    if init == "clear_accum":
        opts.append("clear_accum=True")
    body = [f"T.copy({a_at}, {a.name})", f"T.copy({b_at}, {b.name})"]
    scale = 1.0
    prep = d.choice(("none", "none", "scale", "stage"))
    if prep == "scale":  # rewrite the loaded operand in the loop (exactly: a power of two)
        scale = d.choice((0.5, 2.0, -1.0))
        body.append(f"for i, k in T.Parallel({a.shape[0]}, {a.shape[1]}):")
        body.append(f"    {a.name}[i, k] = {a.name}[i, k] * {scale!r}")
    elif prep == "stage":  # load into a staging tile of A's dtype, convert into the operand
        stg = prog.alloc("shared", a.shape, A.dtype, "stage")
        body[0] = f"T.copy({a_at}, {stg.name})"
        body.insert(1, f"T.copy({stg.name}, {a.name})" if d.chance(0.5) else
                    f"for i, k in T.Parallel({a.shape[0]}, {a.shape[1]}):\n    {a.name}[i, k] = {stg.name}[i, k]")
    prog.tag("prep", prep)
    body.append(f"T.gemm({a.name}, {b.name}, {c.name}{''.join(', ' + o for o in opts)})")
    body = [line for chunk in body for line in chunk.split("\n")]
    if loop == "none":
        for line in body:
            prog.emit(line)
    else:
        header = {"pipelined": f"T.Pipelined(T.ceildiv({K}, {bk}), num_stages={stages})",
                  "serial": f"T.serial(T.ceildiv({K}, {bk}))", "range": f"range({-(-K // bk)})"}[loop]
        prog.emit(f"for ko in {header}:")
        with prog.indent():
            for line in body:
                prog.emit(line)
    prog.tag("loop", f"{loop}{stages if loop == 'pipelined' else ''}")
    prog.tag("gemm", f"{'T' if ta else 'N'}{'T' if tb else 'N'}/{a.scope[0]}{b.scope[0]}/{policy or 'default'}")
    iters = -(-K // bk)

    def run(env):
        by, bx = env.block[1], env.block[0]
        acc, mag = np.zeros((bm, bn)), np.zeros((bm, bn))
        if init == "bias":
            v = padded(env.g["Cin"].v, (by * bm, bx * bn), (bm, bn))
            acc, mag = v.copy(), np.abs(v)
        for ko in range(iters):
            if init == "clear_accum":
                acc, mag = np.zeros((bm, bn)), np.zeros((bm, bn))
            av = padded(env.g["A"].v, (ko * bk, by * bm) if ta else (by * bm, ko * bk), a.shape)
            bv = padded(env.g["B"].v, (bx * bn, ko * bk) if tb else (ko * bk, bx * bn), b.shape)
            av, bv = (av.T if ta else av) * scale, (bv.T if tb else bv)
            acc, mag = acc + av @ bv, mag + np.abs(av) @ np.abs(bv)
        budget = convert_unit(A.dtype, dt) + convert_unit(B.dtype, dt) + (K + 2) * UNIT[c_dt]
        env.tiles[c.name] = R(acc, mag, budget)

    prog.step(run)
    _epilogue(d, prog, c, M, N, bm, bn, K, dt)
    return prog


def _epilogue(d, prog: Program, c, M: int, N: int, bm: int, bn: int, K: int, dt: str) -> None:
    offs = [prog.block_off(1, bm), prog.block_off(0, bn)]
    kind = d.choice(("copy", "copy", "parallel", "shared", "fragment", "reduce", "chain"))
    prog.tag("epilogue", kind)
    if kind in ("copy", "shared"):
        C = prog.tensor("C", (M, N), d.choice(DTYPES), "out")
        src = c
        if kind == "shared":
            src = prog.alloc("shared", (bm, bn), d.choice(DTYPES))
            prog.emit(f"T.copy({c.name}, {src.name})")
            def to_shared(env, src=src):
                r = env.tiles[c.name]
                env.tiles[src.name] = R(r.v, r.m, r.b + convert_unit(c.dtype, src.dtype))

            prog.step(to_shared)
        prog.store(src, C, offs, form=d.choice(("point", "slice")))
        return
    if kind == "fragment":  # into a plain fragment (a layout change), then element-wise, then out
        f = prog.alloc("fragment", (bm, bn), d.choice(DTYPES))
        prog.emit(f"T.copy({c.name}, {f.name})")
        e = expression(d, [tile_leaf(f, ("i", "j"), exact=False, bound=4.0 * math.sqrt(K))], d.int(1, 2))

        def to_fragment(env):
            r = env.tiles[c.name]
            env.tiles[f.name] = R(r.v, r.m, r.b + convert_unit(c.dtype, f.dtype))

        prog.step(to_fragment)
        parallel_assign(prog, (bm, bn), f"{f.name}[i, j]", e, write_tile(f, e.dtype))
        C = prog.tensor("C", (M, N), d.choice(DTYPES), "out")
        prog.store(f, C, offs, form=d.choice(("point", "slice")))
        return
    if kind == "parallel":
        C = prog.tensor("C", (M, N), d.choice(DTYPES), "out")
        bias = prog.tensor("bias", (N,), d.choice(DTYPES), "in")
        leaves = [tile_leaf(c, ("i", "j"), exact=False, bound=4.0 * math.sqrt(K)), _bias_leaf(bias, bn)]
        e = expression(d, leaves, d.int(1, 3))
        sp = Space((bm, bn), tuple(-(-x // t) for x, t in ((M, bm), (N, bn))), (M, N))
        parallel_assign(prog, (bm, bn), f"C[by * {bm} + i, bx * {bn} + j]", e, write_global(sp, C, e.dtype))
        return
    if kind == "reduce":
        rk = d.choice(REDUCE_KINDS)
        if d.chance(0.3):  # along the rows: one partial per block row
            r = prog.alloc("fragment", (bn,), "float32")
            prog.emit(f"T.reduce_{rk}({c.name}, {r.name}, dim=0)")
            prog.step(lambda env: env.tiles.__setitem__(r.name, reduce_ref(rk, env.tiles[c.name], 0, (bn,),
                                                                            "float32", None)))
            gm = -(-M // bm)
            prog.tensor("Y", (gm, N), "float32", "out")
            prog.store(r, next(t for t in prog.tensors if t.name == "Y"),
                       [Off("by", lambda env: env.block[1]), prog.block_off(0, bn)], form="slice", extents=(None, bn))
            prog.tag("epilogue", "reduce0")
            return
        r = prog.alloc("fragment", (bm,), "float32")
        prog.emit(f"T.reduce_{rk}({c.name}, {r.name}, dim=1)")
        prog.step(lambda env: env.tiles.__setitem__(r.name, reduce_ref(rk, env.tiles[c.name], 1, (bm,), "float32",
                                                                        None)))
        gn = -(-N // bn)
        prog.tensor("Y", (M, gn), "float32", "out")
        prog.emit(f"for i in T.Parallel({bm}):")
        with prog.indent():
            prog.emit(f"Y[by * {bm} + i, bx] = {r.name}[i]")

        def run(env):
            by, bx = env.block[1], env.block[0]
            rr = env.tiles[r.name]
            lo, hi = by * bm, min(by * bm + bm, M)
            gl = env.g["Y"]
            gl.v[lo:hi, bx], gl.m[lo:hi, bx] = rr.v[: hi - lo], rr.m[: hi - lo]
            gl.b = max(gl.b, rr.b)

        prog.step(run)
        return
    # chain: P = C in the operand dtype through shared memory, O = P·V (attention's second gemm)
    bd = d.choice((8, 16, 32)) if prog.kind == "gemm" else 16
    pdt = dt
    p = prog.alloc("shared", (bm, bn), pdt, "p")
    prog.tensor("V", (N, bd), pdt, "in")
    v = prog.alloc("shared", (bn, bd), pdt, "v")
    o = prog.alloc("fragment", (bm, bd), "float32", "o")
    gn = -(-N // bn)
    O = prog.tensor("O", (M, gn * bd), d.choice(DTYPES), "out")
    prog.emit(f"T.copy({c.name}, {p.name})")
    prog.emit(f"T.copy(V[bx * {bn}, 0], {v.name})")
    fill(prog, o, 0.0)
    prog.emit(f"T.gemm({p.name}, {v.name}, {o.name})")

    def run(env):
        bx = env.block[0]
        cr = env.tiles[c.name]
        vv = padded(env.g["V"].v, (bx * bn, 0), (bn, bd))
        b = cr.b + convert_unit(c.dtype, pdt) + (bn + 2) * UNIT["float32"]
        env.tiles[o.name] = R(cr.v @ vv, cr.m @ np.abs(vv), b)

    prog.step(run)
    prog.store(o, O, [prog.block_off(1, bm), prog.block_off(0, bd)])


def _bias_leaf(bias, bn: int) -> Leaf:
    def get(env):
        v = padded(env.g[bias.name].v, (env.block[0] * bn,), (bn,))[None, :]
        return R.exact(v)

    return Leaf(f"{bias.name}[bx * {bn} + j]", bias.dtype, 3.0, get)


# --------------------------------------------------------------------------- #
# atomic
# --------------------------------------------------------------------------- #

_COMBINE = {"add": np.add, "max": np.maximum, "min": np.minimum}


def atomic(d) -> Program:
    sp = space(d, 2, max_elems=1024)
    prog = Program("atomic", threads(d, int(np.prod(sp.t))), sp.grid)
    kind = d.choice(("add", "add", "max", "min"))
    form = d.choice(("tile", "rows", "element"))
    prog.tag("atomic", f"{kind}/{form}")
    t0, t1 = sp.t
    X = prog.tensor("X", sp.n, d.choice(DTYPES), "in")
    x = prog.alloc(d.choice(("fragment", "fragment", "shared")), sp.t, d.choice(("float32", "float16")))
    prog.load(X, sp.offs(prog), x, form=d.choice(("point", "slice")))
    out_dt = "float32" if kind == "add" or d.chance(0.6) else d.choice(("float16", "bfloat16"))
    combine = _COMBINE[kind]
    fn = f"T.atomic_{kind}"
    if form == "tile":  # every block combines its whole tile into the same (t0, t1) output
        prog.tensor("Out", sp.t, out_dt, "acc")
        dst = d.choice(("Out", "Out[0, 0]", f"Out[0:{t0}, 0:{t1}]"))
        prog.emit(f"{fn}({dst}, {x.name})")
        contrib = lambda env: env.tiles[x.name]
    elif form == "rows":  # reduce the tile's columns first, then one atomic per column
        if x.scope != "fragment":
            x2 = prog.alloc("fragment", sp.t, x.dtype)
            prog.emit(f"T.copy({x.name}, {x2.name})")
            prog.step(lambda env, x=x, x2=x2: env.tiles.__setitem__(x2.name, env.tiles[x.name]))
            x = x2
        s = prog.alloc("fragment", (t1,), "float32")
        rk = {"add": "sum", "max": "max", "min": "min"}[kind]
        prog.emit(f"T.reduce_{rk}({x.name}, {s.name}, dim=0)")
        prog.step(lambda env, x=x: env.tiles.__setitem__(s.name, reduce_ref(rk, env.tiles[x.name], 0, (t1,),
                                                                            "float32", None)))
        prog.tensor("Out", (t1,), out_dt, "acc")
        prog.emit(f"{fn}({d.choice(('Out[0]', 'Out'))}, {s.name})")
        contrib = lambda env: env.tiles[s.name]
    else:  # element atomics inside T.Parallel: Out[j] op= f(x[i, j])
        if avoid("parallel_atomic_replicated") and (t0 * t1 % (8 * prog.nthreads) or t1 & (t1 - 1)):
            form = "element-fallback"  # the known bug's condition (as far as measured): skip
            t0, t1 = 8, 32
            prog.threads = 32
            x = prog.alloc(x.scope, (t0, t1), x.dtype)
            X2 = prog.tensor("X2", (t0, t1), X.dtype, "in")
            prog.load(X2, [Off.const(0), Off.const(0)], x)
            sp = Space((t0, t1), sp.g, sp.n)
        prog.tensor("Out", (t1,), out_dt, "acc")
        e = expression(d, [tile_leaf(x, ("i", "j"), exact=convert_unit(X.dtype, x.dtype) == 0)], d.int(0, 2))
        if kind == "add" and d.chance(0.15) and not avoid("invariant_atomic_in_parallel"):
            e = Expr("1.0", "float32", 1.0, lambda env: R(np.ones(sp.t), np.ones(sp.t), 0.0))  # counts iterations
        prog.emit(f"for i, j in T.Parallel({t0}, {t1}):")
        with prog.indent():
            prog.emit(f"{fn}(Out[j], {e.text})")

        def contrib(env):
            r = e.fn(env)
            v, m = np.broadcast_to(r.v, sp.t), np.broadcast_to(r.m, sp.t)
            red = v.sum(0) if kind == "add" else (v.max(0) if kind == "max" else v.min(0))
            mm = m.sum(0) if kind == "add" else m.max(0)
            return R(red, mm, r.b + (t0 * UNIT[out_dt] if kind == "add" else 0.0))

    def run(env):
        r = contrib(env)
        gl = env.g["Out"]
        gl.v = combine(gl.v, r.v.reshape(gl.v.shape))
        gl.m = (gl.m + r.m.reshape(gl.v.shape)) if kind == "add" else np.maximum(gl.m, r.m.reshape(gl.v.shape))
        step = UNIT[out_dt] if kind == "add" else convert_unit(x.dtype, out_dt)
        gl.b = max(gl.b, r.b) + step

    prog.step(run)
    return prog
