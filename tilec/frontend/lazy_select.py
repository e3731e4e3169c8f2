"""`T.if_then_else(c, a, b)` evaluates only the side `c` selects, as TVM's intrinsic does (a C `?:`).

Where a side may read a shared or local buffer (at an index that may hold only where `c` does:
`idx[k + i]` under `k + i < n`) and `c` is a run-time value, the side is built inside an
`scf.if` that yields its value; elsewhere (registers, global reads, which the lowering
predicates) both sides are built and a select picks one.
"""

from __future__ import annotations

import ast

from xdsl.dialects import scf
from xdsl.dialects.builtin import i1
from xdsl.ir import Block, Region

from . import calls
from .semantic import describe
from .values import Scalar, TileRef


def if_then_else(v, node: ast.Call, func):
    """`T.if_then_else(c, a, b)` (three positional arguments) in the kernel being visited by `v`."""
    cond = v.condition(v.rvalue(v.visit(node.args[0])), "T.if_then_else")
    if not isinstance(cond, Scalar) or not any(reads_on_chip(v, a) for a in node.args[1:]):
        return calls.call(v, node, func, [cond, v.visit(node.args[1]), v.visit(node.args[2])], {})
    values, blocks = [], [Block(), Block()]
    for side, block in zip(node.args[1:], blocks):
        v._var_loads.append({})  # a T.alloc_var loaded in one side is not there in the other
        try:
            with v.b.at_end_of(block):
                values.append(v.rvalue(v.visit(side)))
        finally:
            v._var_loads.pop()
    a, b = values
    if not all(isinstance(x, Scalar | int | float) for x in values):
        raise v.b.error(f"T.if_then_else selects between scalars, got {describe(a)} and {describe(b)}")
    typ = v.b.select_type(a, b)
    for value, block in zip(values, blocks):
        with v.b.at_end_of(block):
            v.b.emit(scf.YieldOp(v.b.to_ssa(value, typ)))
    op = v.b.emit(scf.IfOp(v.b.to_ssa(cond, i1), [typ], Region(blocks[0]), Region(blocks[1])))
    return Scalar(op.results[0])


def reads_on_chip(v, expr: ast.expr) -> bool:
    """Whether `expr` may read an element of a shared or local buffer: it indexes one, or
    something not known to be a global tensor or a fragment (an alias), or calls a macro."""
    for n in ast.walk(expr):
        if isinstance(n, ast.Subscript):
            value = v.frame.names.get(n.value.id) if isinstance(n.value, ast.Name) else None
            if not (isinstance(value, TileRef) and value.scope in ("global", "fragment")) and \
                    not isinstance(value, list | tuple | dict | str | int):
                return True
        elif isinstance(n, ast.Call) and not (isinstance(n.func, ast.Attribute) and
                                              isinstance(n.func.value, ast.Name)):
            return True  # a macro or a function of the kernel's file: what it reads is not known here
    return False
