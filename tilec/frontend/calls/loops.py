"""Loops inside kernels: `T.Parallel`, `T.Pipelined`, `T.serial` / `range`, `T.unroll`, `T.vectorized`.

These builtins are never called: the visitor's `visit_For` hands the loop to `emit_loop`.
"""

from __future__ import annotations

import ast
import inspect

import tilec.language as T
from tilec.compiler.pass_configs import report
from tilec.dialects import tile
from xdsl.dialects.builtin import StringAttr

from ..values import Scalar
from .operands import describe_, require_kernel, static_int


def _loop_targets(v, target, count: int, what: str) -> list[str]:
    if isinstance(target, ast.Name):
        names = [target.id]
    elif isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        names = [e.id for e in target.elts]
    else:
        raise v.b.error(f"the targets of {what} must be names")
    if len(names) != count:
        raise v.b.error(f"{what} has {count} dimension{'s' if count != 1 else ''} but the loop names {len(names)}")
    return names


def emit_loop(v, node, kind: str, args: list, kwargs: dict) -> None:
    """`for target in T.<kind>(*args, **kwargs): body` → `tile.parallel` or `tile.for`."""
    require_kernel(v, f"T.{kind}" if kind != "serial" else "a loop")
    if kind in ("Parallel", "Pipelined") and v.parallel_loops:
        raise v.b.error(f"T.{kind} cannot be used inside T.Parallel" +
                        (": T.Parallel loops do not nest" if kind == "Parallel" else ""),
                        hint="merge the loops into one T.Parallel with more extents, e.g. "
                             "`for i, j in T.Parallel(m, n)`" if kind == "Parallel" else
                             "loop over the inner dimension with T.serial")
    if kind == "Parallel":
        _emit_parallel(v, node, args, kwargs)
        return
    opts, asked = {}, None
    if kind == "Pipelined":
        bound = inspect.signature(T.Pipelined.__wrapped__).bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        start, stop, step = (0, a["start"], 1) if a["stop"] is None else (a["start"], a["stop"], 1)
        opts = {"num_stages": static_int(v, a["num_stages"], "num_stages")}
        if a["order"] is not None:
            opts["order"] = list(a["order"])
        if a["stage"] is not None:
            opts["stage"] = list(a["stage"])
        asked = _schedule_hints(v, node, {name: a[name] for name in ("order", "stage", "group", "sync")})
        kind = "pipelined"
    else:
        kwargs.pop("explicit", None)
        if kwargs:
            raise v.b.error(f"loop got unexpected arguments {sorted(kwargs)}")
        args = [v.rvalue(a) for a in args if a is not None]
        if not 1 <= len(args) <= 3:
            raise v.b.error(f"a loop takes 1 to 3 bounds, got {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
    if isinstance(step, int) and step <= 0:
        raise v.b.error(f"loop step must be positive, got {step}")
    (name,) = _loop_targets(v, node.target, 1, "a loop")
    bounds = [v.index_ssa(x) for x in (v.rvalue(start), v.rvalue(stop), v.rvalue(step))]
    if v.parallel_loops and tile.varies_per_element(bounds, v.parallel_loops[-1]):
        raise v.b.error("the bounds of a loop inside T.Parallel must be the same for every element, but these "
                        "depend on the T.Parallel variables (or on per-element values)",
                        hint="loop up to the largest bound and guard the body with an `if` on the element's own "
                             "bound")
    op = v.b.emit(tile.ForOp(*bounds, kind, **opts))
    if kind == "pipelined" and asked is not None:
        op.attributes[tile.STAGES_ASKED] = StringAttr(asked)
    with v.runtime_region(op.body.block):
        v.bind_loop_var(name, Scalar(op.induction_var))
        v.visit_body(node.body)
    v.b.verify(op)


def _gemm_statements(node) -> list[int]:
    """The indices of the loop body's top-level statements that hold a `T.gemm` call."""
    def has_gemm(stmt) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "gemm"
                   for n in ast.walk(stmt))

    return [i for i, stmt in enumerate(node.body) if has_gemm(stmt)]


def _schedule_hints(v, node, given: dict) -> str | None:
    """TileLang's hand schedule of a T.Pipelined body: `stage` (with `group`, the statements of each
    stage entry; without it, one entry per top-level statement) is honoured where it speaks of
    attention's two gemms: P V a stage after Q K^T asks for the rotated loop (returned as "rotated"),
    both in one stage for the loop as written ("as_written"). `order` and `sync`, and `stage` of
    any other body, are reported by name: tilec orders a stage's statements itself, and stages its
    copies on the producer's TMA ring (or cp.async stages) num_stages deep."""
    stage, group = given.get("stage"), given.get("group")
    asked, honoured = None, set()
    if stage is not None:
        stages = [static_int(v, x, "a T.Pipelined stage") for x in stage]
        groups = [list(g) for g in group] if group is not None else [[i] for i in range(len(stages))]
        if len(groups) != len(stages):
            raise v.b.error(f"T.Pipelined has {len(stages)} stage= entries for {len(groups)} group= entries",
                            hint="give one stage per group (or per top-level statement of the body)")
        of = {int(i): stages[g] for g, members in enumerate(groups) for i in members}
        gemms = _gemm_statements(node)
        if len(gemms) == 2 and all(i in of for i in gemms):
            first, second = of[gemms[0]], of[gemms[1]]
            if second == first + 1:
                asked = "rotated"
            elif second == first:
                asked = "as_written"
        if asked is not None:
            honoured = {"stage", "group"}
    named = [name for name, value in given.items() if value is not None and name not in honoured]
    if named:
        report(f"T.Pipelined({', '.join(n + '=' for n in named)}) is not applied as written: tilec schedules "
               "the loop itself (its copies on a TMA ring of num_stages stages filled by a producer warp "
               "on sm_90a, cp.async stages elsewhere; stage= is honoured where it places attention's P V "
               "gemm one stage after Q K^T, or both in one stage)", v.b.loc)
    return asked


def _parallel_hints(v, prefer_async, annotations) -> None:
    """TileLang's scheduling hints of T.Parallel: accepted, and reported by name when they ask for
    something (tilec decides how a T.Parallel's copies move by itself)."""
    prefer_async = v.rvalue(prefer_async) if prefer_async is not None else False
    if not isinstance(prefer_async, bool):
        raise v.b.error(f"T.Parallel(prefer_async=...) takes True or False, got {describe_(prefer_async)}")
    if prefer_async:
        report("T.Parallel(prefer_async=True) is not applied: tilec moves a T.Parallel's global -> shared "
               "copies with ordinary loads and stores; its T.copy into shared tiles of T.Pipelined loops are "
               "asynchronous (cp.async or TMA) without the hint", v.b.loc)
    if annotations is None:
        return
    annotations = v.rvalue(annotations)
    if not isinstance(annotations, dict):
        raise v.b.error(f"T.Parallel(annotations=...) takes a dict, got {describe_(annotations)}")
    if annotations:
        report(f"T.Parallel(annotations={{{', '.join(map(repr, annotations))}}}) is not applied: they are TVM "
               f"loop annotations, which tilec's lowering does not read", v.b.loc)


def _emit_parallel(v, node, args: list, kwargs: dict) -> None:
    kwargs.pop("coalesced_width", None)
    _parallel_hints(v, kwargs.pop("prefer_async", False), kwargs.pop("annotations", None))
    if kwargs:
        raise v.b.error(f"T.Parallel got unexpected arguments {sorted(kwargs)}")
    extents = [v.rvalue(a) for a in args]
    for e in extents:
        if not isinstance(e, int) or isinstance(e, bool) or e <= 0:
            raise v.b.error(f"T.Parallel extents must be positive compile-time integers, got {describe_(e)}",
                            hint="T.Parallel covers a tile; loop over run-time sizes with T.serial")
    names = _loop_targets(v, node.target, len(extents), "T.Parallel")
    op = v.b.emit(tile.ParallelOp(extents))
    v.parallel_loops.append(op)
    v.parallel_names.append(names)
    try:
        with v.runtime_region(op.body.block):
            for name, arg in zip(names, op.body.block.args):
                v.bind_loop_var(name, Scalar(arg))
            v.visit_body(node.body)
    finally:
        v.parallel_loops.pop()
        v.parallel_names.pop()
    from ..parallel_vars import privatize  # loaded at the first T.Parallel

    v.privatized.extend(privatize(op, v.b.stamp(v.b.loc)))
    v.b.verify(op)
