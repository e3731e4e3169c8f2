"""`break` and `continue` in run-time loops (`T.serial`, `range`, `T.unroll`).

A `tile.for` is structured: it cannot be left early. So a loop whose body breaks or continues
is rewritten on the AST before it is built: one exit flag per loop (a local variable, as
`T.alloc_var` makes: 0 running, 1 continuing, 2 broken) guards every statement after an exit
point with `if flag == 0:`, `break` sets it to 2 and `continue` to 1, and an iteration starts by
clearing a `continue` (`flag = flag & 2`). The iterations after a `break` then do nothing, as
CUDA's own `break` would leave them. Exits of inner loops belong to those loops.
"""

from __future__ import annotations

import ast

from xdsl.dialects.builtin import i32

from tilec.dialects import tile
from tilec.errors import TilecError

from .values import TileRef, VarRef

_LOOP_NODES = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_RUNNING, _CONTINUING, _BROKEN = 0, 1, 2


def exits_of(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """The `break` / `continue` statements of this loop body (not of loops nested in it)."""
    found: list[ast.stmt] = []
    todo: list[ast.AST] = list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Break | ast.Continue):
            found.append(node)
        elif not isinstance(node, _LOOP_NODES):
            todo.extend(ast.iter_child_nodes(node))
    return found


def prepare(v, node: ast.For, kind: str) -> tuple[ast.For, str]:
    """`node` with its exits turned into an exit flag, and the flag's name (bound in `v` until the
    loop is built; `release` unbinds it). Refuses loops that cannot take the rewrite."""
    exits = exits_of(node.body)
    what = "break" if isinstance(exits[0], ast.Break) else "continue"
    if kind not in ("serial", "unroll"):
        raise TilecError(f"`{what}` in a T.{kind} loop is not supported", loc=v.loc_of(exits[0]),
                         hint="only T.serial, range and T.unroll loops can be left early; guard the rest of the "
                              "body with an `if`")
    if v.parallel_loops:
        raise TilecError(f"`{what}` in a loop inside T.Parallel is not supported", loc=v.loc_of(exits[0]),
                         hint="guard the rest of the loop body with an `if` on a per-element condition")
    name = f"__tilec_exit_{id(node)}"
    flag = VarRef(TileRef(v.b.emit(tile.AllocOp(tile.BufferType((1,), i32, "local"))).results[0]))
    flag.tile.ssa.name_hint = "loop_exit"
    v.store_var(flag, _RUNNING)
    v.bind(name, flag)
    body = _rewrite(node.body, name)
    if any(isinstance(e, ast.Continue) for e in exits):
        first = node.body[0]
        clear = _located(ast.Assign(targets=[_name(name, ast.Store())],
                                    value=ast.BinOp(_name(name), ast.BitAnd(), ast.Constant(_BROKEN))), first)
        body = [clear, *body]
    loop = ast.copy_location(ast.For(target=node.target, iter=node.iter, body=body, orelse=[],
                                     type_comment=None), node)
    return loop, name


def release(v, name: str) -> None:
    v.frame.names.pop(name, None)
    v.frame.depth.pop(name, None)


def _rewrite(stmts: list[ast.stmt], name: str) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for k, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Break | ast.Continue):
            code = _BROKEN if isinstance(stmt, ast.Break) else _CONTINUING
            out.append(_located(ast.Assign(targets=[_name(name, ast.Store())], value=ast.Constant(code)), stmt))
            return out  # what follows an exit in the same block never runs
        if not exits_of([stmt]):
            out.append(stmt)
            continue
        out.append(_into_blocks(stmt, name))
        rest = stmts[k + 1:]
        if rest:
            test = ast.Compare(_name(name), [ast.Eq()], [ast.Constant(_RUNNING)])
            out.append(_located(ast.If(test=test, body=_rewrite(rest, name), orelse=[]), rest[0]))
        return out
    return out


def _into_blocks(stmt: ast.stmt, name: str) -> ast.stmt:
    """`stmt` (an `if`, a `with`, ...) with the exits in its statement lists rewritten."""
    fields = {}
    for field, value in ast.iter_fields(stmt):
        if isinstance(value, list) and value and all(isinstance(s, ast.stmt) for s in value):
            value = _rewrite(value, name)
        fields[field] = value
    return ast.copy_location(type(stmt)(**fields), stmt)


def _name(name: str, ctx: ast.expr_context | None = None) -> ast.Name:
    return ast.Name(id=name, ctx=ctx or ast.Load())


def _located(node: ast.stmt, at: ast.stmt) -> ast.stmt:
    ast.copy_location(node, at)
    for child in ast.walk(node):
        if child is not node and "lineno" in child._attributes:
            ast.copy_location(child, at)
    return node
