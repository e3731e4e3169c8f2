"""The kinds of generated programs: each recipe draws a random valid kernel of one family.

Every recipe builds a `Program` (program.py): global tensors with tails (shapes that do not
divide by the tile), tiles in shared memory and fragments with dtype changes on the way, the
statements, and their reference steps.  Thread counts run from 32 to 1024 in steps of 32.

    elementwise  an expression over 1-3 inputs (global, fragment or shared; f16/bf16/f32)
    reduce       every reduce kind, every dim, clear or accumulate, chunked (pipelined) loops,
                 a broadcast epilogue (the softmax pattern)
    scan         cumsum / cummax, every dim, forward and reverse, in place or into a new tile
    copy         chains through shared and fragment tiles: dtype changes, swizzled layouts,
                 transposes, sub-regions of a larger shared tile, global to global
    gemm         random tiles, transposes, fragment A, stages, policies, SIMT / mma.sync /
                 wgmma, swizzles, clear_accum, epilogues
    atomic       add / max / min of tiles and of elements into contended global tensors
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from .common import (
    LOOP_VARS,
    Space,
    block_index,
    block_slices,
    broadcast_get,
    dynamic_sizes,
    fill,
    global_leaf,
    maybe_swizzle,
    maybe_walk,
    padded,
    parallel_assign,
    scopes,
    shift,
    space,
    threads,
    tile_leaf,
    walk_loop,
    write_global,
    write_tile,
)
from .expr import Expr, Leaf, condition, expression
from .known import avoid
from .program import DTYPES, UNIT, Off, Program, R, Tensor, Tile, clip, convert_unit

# --------------------------------------------------------------------------- #
# elementwise
# --------------------------------------------------------------------------- #


def elementwise(d) -> Program:
    ndim = d.int(1, 3)
    sp = maybe_walk(d, space(d, ndim, max_elems=1024))
    prog = Program("elementwise", threads(d, int(np.prod(sp.t))), sp.grid)
    prog.tag("ndim", ndim)
    vars_ = LOOP_VARS[:ndim]
    dyn = dynamic_sizes(d, prog, sp)
    inputs = [prog.tensor(f"A{n}", sp.n, d.choice(DTYPES), "in", dyn) for n in range(d.int(1, 3))]
    out = prog.tensor("B", sp.n, d.choice(DTYPES), "out", dyn)
    with walk_loop(d, prog, sp) if sp.walk is not None else nullcontext():
        _elementwise_body(d, prog, sp, inputs, out, vars_)
    return prog


def _elementwise_body(d, prog: Program, sp, inputs, out, vars_) -> None:
    leaves = []
    for a in inputs:
        path = d.choice(scopes(sp.t, "global", "fragment", "shared"))
        sh = shift(d, sp)
        if sh is not None:
            prog.tag("shift", True)
        if path == "global":
            leaves.append(global_leaf(prog, sp, a, sh))
            continue
        tile = prog.alloc(path, sp.t, d.choice(DTYPES))
        maybe_swizzle(d, prog, tile)
        prog.load(a, sp.offs(prog, sh), tile, form=d.choice(("point", "slice")))
        leaves.append(tile_leaf(tile, vars_, exact=convert_unit(a.dtype, tile.dtype) == 0))
        if tile.scope != "fragment" and d.chance(0.3):  # shared and local tiles index freely
            leaves.append(permuted_leaf(d, tile, vars_, exact=convert_unit(a.dtype, tile.dtype) == 0))
    for _ in range(d.int(0, 1)):  # an intermediate fragment computed from the inputs
        e = expression(d, leaves, d.int(1, 3))
        tmp = prog.alloc("fragment", sp.t, d.choice(DTYPES))
        parallel_assign(prog, sp.t, f"{tmp.name}[{', '.join(vars_)}]", e, write_tile(tmp, e.dtype))
        leaves.append(tile_leaf(tmp, vars_, exact=False, bound=e.bound))
    pre = []
    if d.chance(0.2):  # a per-iteration scalar: v = T.alloc_var(dtype, init=<expr>), read below
        exact = [leaf for leaf in leaves if leaf.exact]
        if exact and d.chance(0.4):  # a copy of an exact leaf: conditions may test it
            src = d.choice(exact)
            e0 = Expr(src.text, src.dtype, src.bound, src.get)
            vdt = "float32"
            v_exact = not avoid("if_on_alloc_var")
        else:
            e0, vdt, v_exact = expression(d, leaves, d.int(1, 2)), d.choice(DTYPES), False
        cond = condition(d, leaves) if d.chance(0.3) else None
        if cond is None:
            pre.append(f"v = T.alloc_var(T.{vdt}, init={e0.text})")
            get = _var_get(e0, vdt)
        else:  # assigned in the branches of an if
            e1 = expression(d, leaves, d.int(1, 2))
            pre += [f"v = T.alloc_var(T.{vdt})", f"if {cond.text}:", f"    v = {e0.text}", "else:", f"    v = {e1.text}"]
            get = _var_select(cond, _var_get(e0, vdt), _var_get(e1, vdt))
            v_exact = False
            prog.tag("alloc_var_branches", True)
        leaves = leaves + [Leaf("v", vdt, e0.bound, get, exact=v_exact)]
        prog.tag("alloc_var", True)
    e = expression(d, leaves, d.int(1, 4))
    branch = None
    if d.chance(0.2):  # an if/else statement in the loop body
        cond = condition(d, leaves)
        if cond is not None:
            branch = (cond, expression(d, leaves, d.int(1, 3)))
            prog.tag("branch", True)
    path = d.choice(("global", "fragment", "shared"))
    y = out if path == "global" else prog.alloc(path, sp.t, d.choice(DTYPES))
    # the branch whose conversion into y rounds most sets the bound
    src_dt = max([e.dtype] + ([branch[1].dtype] if branch else []), key=lambda t: convert_unit(t, y.dtype))
    out_offs = sp.offs(prog, shift(d, sp, p=0.1))  # a shifted store leaves its first rows unwritten
    extra = []
    if d.chance(0.25):  # a second output written by the same loop
        e2 = expression(d, leaves, d.int(1, 3))
        B2 = prog.tensor("B2", sp.n, d.choice(DTYPES), "out", out.shape_src)
        extra.append((f"B2[{', '.join(f'{o.text} + {v}' for o, v in zip(sp.offs(prog), vars_))}]", e2,
                      write_global(sp, B2, e2.dtype)))
        prog.tag("two_outputs", True)
    if path == "global":
        target = f"{out.name}[{', '.join(f'{o.text} + {v}' for o, v in zip(out_offs, vars_))}]"
        parallel_assign(prog, sp.t, target, e, write_global(sp, out, src_dt, out_offs), branch, pre, extra)
    else:
        parallel_assign(prog, sp.t, f"{y.name}[{', '.join(vars_)}]", e, write_tile(y, src_dt), branch, pre, extra)
        prog.store(y, out, out_offs, form=d.choice(("point", "slice")))


def permuted_leaf(d, tile: Tile, vars_, exact: bool) -> Leaf:
    """`s[t0 - 1 - i, j]` (reversed) or `s[(i + 3) % t0, j]` (rotated) along one dim."""
    k = d.int(0, len(tile.shape) - 1)
    n = tile.shape[k]
    rotate = d.int(1, max(1, n - 1)) if d.chance(0.5) else None
    idx = list(vars_)
    idx[k] = f"({vars_[k]} + {rotate}) % {n}" if rotate is not None else f"{n - 1} - {vars_[k]}"

    def perm(a):
        return np.roll(a, -rotate, axis=k) if rotate is not None else np.flip(a, axis=k)

    def get(env):
        r = env.tiles[tile.name]
        return R(perm(r.v).copy(), perm(r.m).copy(), r.b)

    return Leaf(f"{tile.name}[{', '.join(idx)}]", tile.dtype, 3.0, get, exact)


def _var_select(cond, get0, get1):
    def get(env):
        c, r0, r1 = cond.fn(env), get0(env), get1(env)
        return R(np.where(c, r0.v, r1.v), np.where(c, r0.m, r1.m), max(r0.b, r1.b))

    return get


def _var_get(e0, vdt: str):
    """A T.alloc_var temporary's value: its init expression, rounded to the var's dtype."""

    def get(env):
        r = e0.fn(env)
        return R(r.v, r.m, r.b + convert_unit(e0.dtype, vdt))

    return get


# --------------------------------------------------------------------------- #
# reduce
# --------------------------------------------------------------------------- #

REDUCE_KINDS = ("sum", "max", "min", "abssum", "absmax")


def reduce_ref(kind: str, x: R, dim: int, out_shape, dst_dtype: str, old: R | None) -> R:
    """The reduction of `x` along `dim` (combined with `old` when the reduction accumulates)."""
    n = x.v.shape[dim]
    if kind in ("sum", "abssum"):
        vals = np.abs(x.v) if kind == "abssum" else x.v
        r = R(vals.sum(dim), x.m.sum(dim), x.b + n * UNIT[dst_dtype])
    else:
        vals = np.abs(x.v) if kind == "absmax" else x.v
        red = vals.min(dim) if kind == "min" else vals.max(dim)
        r = R(red, x.m.max(dim), x.b + UNIT[dst_dtype])
    r = R(r.v.reshape(out_shape), r.m.reshape(out_shape), r.b)
    if old is None:
        return r
    if kind in ("sum", "abssum"):
        return R(old.v + r.v, old.m + r.m, max(old.b, r.b) + UNIT[dst_dtype])
    op = np.minimum if kind == "min" else np.maximum
    return R(op(old.v, r.v), np.maximum(old.m, r.m), max(old.b, r.b))


def _reduced(shape, dim):
    rest = tuple(s for k, s in enumerate(shape) if k != dim)
    return rest or (1,)


def _prelude(d, prog: Program, x: Tile, vars_) -> None:
    """Sometimes rewrites a loaded tile element-wise before it is used (in place).  Not a
    local tile: T.Parallel iterations run on different threads, and a local tile is per
    thread (a located error: read before this iteration wrote it)."""
    if not d.chance(0.3) or x.scope == "local":
        return
    e = expression(d, [tile_leaf(x, vars_)], d.int(1, 2))
    parallel_assign(prog, x.shape, f"{x.name}[{', '.join(vars_)}]", e, write_tile(x, e.dtype))


def reduce(d) -> Program:
    ndim = d.choice((1, 2, 2, 2, 3))
    sp = space(d, ndim, max_elems=2048)
    dim = d.int(0, ndim - 1)
    kind = d.choice(REDUCE_KINDS)
    chunked = d.chance(0.3)
    if chunked:  # the reduced dim is walked by a loop inside the block, not by the grid
        sp = Space(sp.t, tuple(1 if k == dim else g for k, g in enumerate(sp.g)), sp.n)
        iters = -(-sp.n[dim] // sp.t[dim])
        if iters == 1 and d.chance(0.7):
            n = list(sp.n)
            n[dim] = sp.t[dim] * d.int(2, 3) - d.int(0, sp.t[dim] - 1)
            sp = Space(sp.t, sp.g, tuple(n))
    prog = Program("reduce", threads(d, int(np.prod(sp.t))), sp.grid)
    prog.tag("reduce", kind)
    prog.tag("dim", dim)
    vars_ = LOOP_VARS[:ndim]
    X = prog.tensor("X", sp.n, d.choice(DTYPES), "in")
    out_shape = _reduced(sp.t, dim)
    y_dtype = d.choice(("float32", "float32", "float16", "bfloat16"))
    x_dtype = d.choice(("float32", "float32", "float16", "bfloat16"))
    x = prog.alloc(d.choice(scopes(sp.t, "fragment", "fragment", "shared")), sp.t, x_dtype)
    maybe_swizzle(d, prog, x, 0.2)
    y_scope = d.choice(scopes(out_shape, "fragment", "fragment", "shared"))
    if x.scope == "fragment" and avoid("reduce_fragment_to_shared"):
        y_scope = "fragment"
    y = prog.alloc(y_scope, out_shape, y_dtype)
    dim_text = d.choice((str(dim), str(dim - ndim))) if ndim > 1 or d.chance(0.5) else None
    dim_arg = "" if dim_text is None and dim == ndim - 1 else f", dim={dim_text if dim_text is not None else dim}"
    call = f"T.reduce_{kind}"
    offs = sp.offs(prog)
    if chunked:
        offs[dim] = Off(f"ko * {sp.t[dim]}", None)
        fill(prog, y, {"sum": 0.0, "abssum": 0.0, "max": -3.5, "absmax": 0.0, "min": 3.5}[kind])
        iters = -(-sp.n[dim] // sp.t[dim])
        loop = d.choice(("pipelined", "serial", "range"))
        stages = d.int(0, 3)
        header = {"pipelined": f"T.Pipelined(T.ceildiv({sp.n[dim]}, {sp.t[dim]}), num_stages={stages})",
                  "serial": f"T.serial({iters})", "range": f"range({iters})"}[loop]
        prog.tag("loop", f"{loop}{stages if loop == 'pipelined' else ''}")
        prog.emit(f"for ko in {header}:")
        with prog.indent():
            prog.emit(f"T.copy({prog.region(X, offs, sp.t, 'point')}, {x.name})")
            prog.emit(f"{call}({x.name}, {y.name}{dim_arg}, clear=False)")

        def run(env, x=x, y=y):
            old = env.tiles[y.name]
            for ko in range(iters):
                o = [ko * sp.t[k] if k == dim else env.block[sp.grid_dim(k)] * sp.t[k] for k in range(ndim)]
                v = padded(env.g[X.name].v, o, sp.t)
                xr = R(v, np.abs(v), convert_unit(X.dtype, x.dtype))
                old = reduce_ref(kind, xr, dim, out_shape, y.dtype, old)
            env.tiles[y.name] = old

        prog.step(run)
    else:
        prog.load(X, offs, x, form=d.choice(("point", "slice")))
        _prelude(d, prog, x, vars_)
        clear = d.chance(0.7)
        if not clear:
            fill(prog, y, d.choice((0.0, 1.0, -1.0)))
        masked = False
        if ndim == 2 and x.scope != "fragment" and y.scope == "fragment" and d.chance(0.4):
            masked = _serial_reduce(d, prog, kind, x, y, dim, clear)
        else:
            clear_arg = "" if clear and d.chance(0.5) else f", clear={clear}"
            prog.emit(f"{call}({x.name}, {y.name}{dim_arg}{clear_arg})")

        def run(env, x=x, y=y, clear=clear, masked=masked):
            xr = env.tiles[x.name]
            if masked:  # only the positive elements
                xr = R(np.where(xr.v > 0, xr.v, 0.0), np.where(xr.v > 0, xr.m, 0.0), xr.b)
            env.tiles[y.name] = reduce_ref(kind, xr, dim, out_shape, y.dtype, None if clear else env.tiles[y.name])

        prog.step(run)
    # outputs: the reduced tile (one entry per block along a gridded reduce dim) ...
    Y = prog.tensor("Y", tuple(1 if (k == dim and chunked) else (sp.g[k] if k == dim else n)
                               for k, n in enumerate(sp.n)), d.choice(DTYPES), "out")
    yoffs = [Off.const(0) if (k == dim and chunked) else block_index(prog, sp.grid_dim(k)) if k == dim else o
             for k, o in enumerate(sp.offs(prog))]
    extents = [None if k == dim else sp.t[k] for k in range(ndim)]
    epilogue = not chunked and ndim >= 2 and y.scope == "fragment" and d.chance(0.4) and \
        (x.scope == "fragment" or not avoid("broadcast_layout_conflict"))
    if ndim == 1 and d.chance(0.5):
        prog.store(y, Y, yoffs, form="point")
    elif (dim == ndim - 1 and ndim > 1 and avoid("trailing_index_copy")) or d.chance(0.2):
        _store_reduced(prog, y, Y, yoffs, dim, ndim)  # (then maybe read again by the epilogue's loop)
    else:
        prog.store(y, Y, yoffs, form="slice", extents=extents)
    # ... and the broadcast epilogue, x - y (softmax-like), when the block holds whole rows
    if epilogue:
        Z = prog.tensor("Z", sp.n, d.choice(DTYPES), "out")
        bvars = tuple(v for k, v in enumerate(vars_) if k != dim)
        yl = tile_leaf(y, bvars, exact=False, bound=3.0 * sp.t[dim])
        yl.get = broadcast_get(y, dim)
        e = expression(d, [tile_leaf(x, vars_, exact=False), yl], d.int(1, 2))
        if not avoid("broadcast_layout_conflict"):
            z = prog.alloc("fragment", sp.t, d.choice(DTYPES))
        else:
            z = x  # in place, as softmax does: the loop's layout is x's, which y derives from
        parallel_assign(prog, sp.t, f"{z.name}[{', '.join(vars_)}]", e, write_tile(z, e.dtype))
        prog.store(z, Z, sp.offs(prog))
    return prog


def _serial_reduce(d, prog: Program, kind: str, x: Tile, y: Tile, dim: int, clear: bool) -> bool:
    """The reduction written out: a T.alloc_var accumulator per T.Parallel element, a
    T.serial loop over the reduced dim (x is shared or local: fragments take loop variables
    only).  A sum may add only the positive elements (`if x > 0.0:`); returns whether it does."""
    n = x.shape[dim]
    at = (lambda k: f"{x.name}[i, {k}]") if dim == 1 else (lambda k: f"{x.name}[{k}, i]")
    elem = (lambda k: f"T.abs({at(k)})") if kind.startswith("abs") else at
    combine = {"sum": "acc + {}", "abssum": "acc + {}", "max": "T.max(acc, {})", "absmax": "T.max(acc, {})",
               "min": "T.min(acc, {})"}[kind]
    if clear and kind in ("max", "min"):
        init, start = elem(0), "1, "  # start from the first element
    else:
        init, start = (f"{y.name}[i]" if not clear else "0.0"), ""
    prog.emit(f"for i in T.Parallel({x.shape[1 - dim]}):")
    with prog.indent():
        prog.emit(f"acc = T.alloc_var(T.float32, init={init})")
        masked = kind in ("sum", "abssum") and d.chance(0.3)
        prog.emit(f"for k in T.serial({start}{n}):")
        with prog.indent():
            if masked:
                prog.emit(f"if {at('k')} > 0.0:")
                prog.emit(f"    acc = {combine.format(elem('k'))}")
            else:
                prog.emit(f"acc = {combine.format(elem('k'))}")
        prog.emit(f"{y.name}[i] = acc")
    prog.tag("serial_reduce", "masked" if masked else True)
    return masked


def _store_reduced(prog: Program, y: Tile, Y: Tensor, yoffs: list[Off], dim: int, ndim: int) -> None:
    """`Y[o0 + i, b1] = y[i]` in a T.Parallel over the reduced tile (out of range: skipped)."""
    kept = [k for k in range(ndim) if k != dim]
    vars_ = LOOP_VARS[: len(y.shape)]
    idx = []
    for k in range(ndim):
        idx.append(yoffs[k].text if k == dim else f"{yoffs[k].text} + {vars_[kept.index(k)]}")
    if ndim == 1:
        idx = [yoffs[0].text]
    prog.emit(f"for {', '.join(vars_)} in T.Parallel({', '.join(map(str, y.shape))}):")
    with prog.indent():
        prog.emit(f"{Y.name}[{', '.join(idx)}] = {y.name}[{', '.join(vars_)}]")

    def run(env):
        r = env.tiles[y.name]
        full = tuple(1 if k == dim else y.shape[kept.index(k)] for k in range(ndim)) if ndim > 1 else (1,)
        c = clip([o.fn(env) for o in yoffs], full, Y.shape)
        if c is None:
            return
        gl = env.g[Y.name]
        gl.v[c[0]] = r.v.reshape(full)[c[1]]
        gl.m[c[0]] = r.m.reshape(full)[c[1]]
        gl.b = max(gl.b, r.b + convert_unit(y.dtype, Y.dtype))

    prog.step(run)


# --------------------------------------------------------------------------- #
# scan
# --------------------------------------------------------------------------- #


def scan(d) -> Program:
    ndim = d.choice((1, 2, 2, 3))
    sp = space(d, ndim, max_elems=1024)
    dim = d.int(0, ndim - 1)
    op = d.choice(("cumsum", "cumsum", "cummax"))
    reverse = d.chance(0.5)
    prog = Program("scan", threads(d, int(np.prod(sp.t))), sp.grid)
    prog.tag("scan", f"{op}{'_rev' if reverse else ''}")
    vars_ = LOOP_VARS[:ndim]
    offs = sp.offs(prog)
    X = prog.tensor("X", sp.n, d.choice(DTYPES), "in")
    Y = prog.tensor("Y", sp.n, d.choice(DTYPES), "out")
    x = prog.alloc(d.choice(scopes(sp.t, "fragment", "fragment", "shared")), sp.t,
                   d.choice(("float32", "float32", "float16")))
    prog.load(X, offs, x, form=d.choice(("point", "slice")))
    _prelude(d, prog, x, vars_)
    inplace = d.chance(0.5) and not (x.scope == "local" and avoid("scan_into_local"))
    y_scopes = ("fragment", "shared") if avoid("scan_into_local") else scopes(sp.t, "fragment", "shared")
    y = x if inplace else prog.alloc(d.choice(y_scopes), sp.t, d.choice(("float32", "float16", "bfloat16")))
    args = [x.name] + ([] if inplace else [y.name] if d.chance(0.5) else [f"dst={y.name}"])
    if dim != 0 or d.chance(0.5):
        args.append(f"dim={dim}")
    if reverse or d.chance(0.3):
        args.append(f"reverse={reverse}")
    prog.emit(f"T.{op}({', '.join(args)})")

    def run(env, x=x, y=y):
        r = env.tiles[x.name]
        flip = (lambda a: np.flip(a, dim)) if reverse else (lambda a: a)
        if op == "cumsum":
            n = r.v.shape[dim]
            out = R(flip(np.cumsum(flip(r.v), dim)), flip(np.cumsum(flip(r.m), dim)), r.b + n * UNIT[y.dtype])
        else:
            out = R(flip(np.maximum.accumulate(flip(r.v), dim)), flip(np.maximum.accumulate(flip(r.m), dim)),
                    r.b + convert_unit(x.dtype, y.dtype))
        env.tiles[y.name] = out

    prog.step(run)
    prog.store(y, Y, offs, form=d.choice(("point", "slice")))
    return prog


# --------------------------------------------------------------------------- #
# copy
# --------------------------------------------------------------------------- #


def copy(d) -> Program:
    ndim = d.choice((1, 2, 2, 3))
    sp = space(d, ndim, max_elems=2048)
    global_to_global = d.chance(0.1)
    if not global_to_global:
        sp = maybe_walk(d, sp)
    prog = Program("copy", threads(d, int(np.prod(sp.t))), sp.grid)
    offs = sp.offs(prog)
    dyn = dynamic_sizes(d, prog, sp)
    A = prog.tensor("A", sp.n, d.choice(DTYPES), "in", dyn)
    if global_to_global:
        B = prog.tensor("B", sp.n, d.choice(DTYPES), "out", dyn)
        forms = d.choice((("slice", "slice"), ("point", "slice"), ("slice", "point")))  # one side gives the shape
        prog.emit(f"T.copy({prog.region(A, offs, sp.t, forms[0])}, {prog.region(B, offs, sp.t, forms[1])})")

        def run(env):
            c = block_slices(sp, env)
            if c is not None:
                gl = env.g[B.name]
                gl.v[c[0]], gl.m[c[0]] = env.g[A.name].v[c[0]], env.g[A.name].m[c[0]]
                gl.b = max(gl.b, convert_unit(A.dtype, B.dtype))

        prog.step(run)
        prog.tag("hops", "global")
        return prog
    hops = [d.choice(("copy", "copy", "transpose", "subregion", "scale", "reshape")) for _ in range(d.int(0, 3))]
    hops = [h if h != "transpose" or ndim == 2 else "copy" for h in hops]
    transposed = hops.count("transpose") % 2 == 1
    B = prog.tensor("B", tuple(reversed(sp.n)) if transposed else sp.n, d.choice(DTYPES), "out",
                    None if dyn is None else tuple(reversed(dyn)) if transposed else dyn)
    prog.tag("hops", "+".join(hops) or "load-store")
    with walk_loop(d, prog, sp) if sp.walk is not None else nullcontext():
        offs = sp.offs(prog)
        cur = prog.alloc(d.choice(scopes(sp.t, "shared", "fragment")), sp.t, d.choice(DTYPES))
        maybe_swizzle(d, prog, cur)
        sh = shift(d, sp)
        prog.load(A, sp.offs(prog, sh), cur, form=d.choice(("point", "slice")))
        for hop in hops:
            cur = _HOPS[hop](d, prog, cur)
        boffs = list(reversed(offs)) if transposed else offs
        sh = shift(d, sp, p=0.1)
        if sh is not None and not transposed:
            boffs = sp.offs(prog, sh)
        prog.store(cur, B, boffs, form=d.choice(("point", "slice")))
    return prog


def _hop_copy(d, prog: Program, cur: Tile) -> Tile:
    new = prog.alloc(d.choice(scopes(cur.shape, "shared", "fragment", "fragment")), cur.shape, d.choice(DTYPES))
    maybe_swizzle(d, prog, new)
    prog.emit(f"T.copy({cur.name}, {new.name})")
    prog.step(lambda env: env.tiles.__setitem__(new.name, _converted(env.tiles[cur.name], cur, new)))
    return new


def _hop_transpose(d, prog: Program, cur: Tile) -> Tile:
    """Through a T.Parallel that indexes the shared side freely: fragments are only indexed
    by the loop variables in order."""
    shape = tuple(reversed(cur.shape))
    scope = "shared" if cur.scope == "fragment" else d.choice(("shared", "fragment"))
    new = prog.alloc(scope, shape, d.choice(DTYPES))
    maybe_swizzle(d, prog, new)
    if cur.scope == "fragment":  # loop over the source: s[j, i] = f[i, j]
        prog.emit(f"for i, j in T.Parallel({cur.shape[0]}, {cur.shape[1]}):")
        with prog.indent():
            prog.emit(f"{new.name}[j, i] = {cur.name}[i, j]")
    else:  # loop over the destination: t[i, j] = s[j, i]
        prog.emit(f"for i, j in T.Parallel({shape[0]}, {shape[1]}):")
        with prog.indent():
            prog.emit(f"{new.name}[i, j] = {cur.name}[j, i]")

    def run(env):
        r = env.tiles[cur.name]
        env.tiles[new.name] = R(r.v.T.copy(), r.m.T.copy(), r.b + convert_unit(cur.dtype, new.dtype))

    prog.step(run)
    return new


def _hop_subregion(d, prog: Program, cur: Tile) -> Tile:
    """Through a region of a larger shared tile, optionally moved to a disjoint region of it."""
    pad = tuple(d.int(0, 3) for _ in cur.shape)
    big_shape = (2 * cur.shape[0] + pad[0],) + tuple(s + p for s, p in zip(cur.shape[1:], pad[1:]))
    big = prog.alloc("shared", big_shape, d.choice(DTYPES))
    start = [d.int(0, p) for p in pad]

    def region(starts):
        return f"{big.name}[{', '.join(f'{o}:{o + s}' for o, s in zip(starts, cur.shape))}]"

    prog.emit(f"T.copy({cur.name}, {region(start)})")
    last = start
    if d.chance(0.5):  # to the other half of dim 0: never overlapping
        moved = [start[0] + cur.shape[0]] + start[1:]
        prog.emit(f"T.copy({region(start)}, {region(moved)})")
        last = moved
    new = prog.alloc(d.choice(scopes(cur.shape, "shared", "fragment")), cur.shape, d.choice(DTYPES))
    prog.emit(f"T.copy({region(last)}, {new.name})")

    def run(env):
        r = env.tiles[cur.name]
        conv = convert_unit(cur.dtype, big.dtype) + convert_unit(big.dtype, new.dtype)
        env.tiles[new.name] = R(r.v, r.m, r.b + conv)

    prog.step(run)
    return new


def _hop_scale(d, prog: Program, cur: Tile) -> Tile:
    vars_ = LOOP_VARS[: len(cur.shape)]
    scope = d.choice(("shared", "fragment"))
    new = prog.alloc(scope, cur.shape, d.choice(DTYPES))
    c = d.choice((2.0, 0.5, -1.0))
    prog.emit(f"for {', '.join(vars_)} in T.Parallel({', '.join(map(str, cur.shape))}):")
    with prog.indent():
        prog.emit(f"{new.name}[{', '.join(vars_)}] = {cur.name}[{', '.join(vars_)}] * {c!r}")

    def run(env):
        r = env.tiles[cur.name]
        env.tiles[new.name] = R(r.v * c, r.m * abs(c), r.b + convert_unit(cur.dtype, new.dtype))

    prog.step(run)
    return new


def _hop_reshape(d, prog: Program, cur: Tile) -> Tile:
    """Through T.reshape views: read a shared or local tile as another shape into a new tile,
    and write that back through a view of a tile of the original shape."""
    if cur.scope == "fragment":
        return _hop_copy(d, prog, cur)
    total = int(np.prod(cur.shape))
    divisors = [a for a in range(2, total) if total % a == 0]
    shape2 = (total,)
    if divisors and d.chance(0.6):
        a = d.choice(divisors)
        shape2 = (a, total // a)
    mid = prog.alloc(d.choice(scopes(shape2, "shared", "fragment")), shape2, d.choice(DTYPES))
    prog.emit(f"T.copy(T.reshape({cur.name}, {shape2!r}), {mid.name})")
    new = prog.alloc(d.choice(scopes(cur.shape, "shared")), cur.shape, d.choice(DTYPES))
    prog.emit(f"T.copy({mid.name}, T.reshape({new.name}, {shape2!r}))")

    def run(env):
        r = env.tiles[cur.name]
        conv = convert_unit(cur.dtype, mid.dtype) + convert_unit(mid.dtype, new.dtype)
        env.tiles[new.name] = R(r.v, r.m, r.b + conv)

    prog.step(run)
    return new


def _converted(r: R, src: Tile, dst: Tile) -> R:
    return R(r.v, r.m, r.b + convert_unit(src.dtype, dst.dtype))


_HOPS = {"copy": _hop_copy, "transpose": _hop_transpose, "subregion": _hop_subregion, "scale": _hop_scale,
         "reshape": _hop_reshape}


