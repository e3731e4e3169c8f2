"""Reading a kernel's Python source: the `def`, where it sits, and what its body declares.

Light on purpose (no IR imports): the JIT decorator uses it when a module defines kernels,
and a run that finds every kernel in the cache never needs more.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap

from tilec.errors import TilecError


def parse_function(fn, *, lambdas: bool = False) -> tuple[ast.FunctionDef, str, int, int]:
    """The def of `fn`, its file, first line and the indentation removed by dedent. With `lambdas`
    (a helper the kernel calls, not a kernel), a lambda comes back as the def `return <its body>`."""
    if lambdas and getattr(fn, "__name__", None) == "<lambda>" and hasattr(fn, "__code__"):
        return _parse_lambda(fn)
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        raise TilecError(f"cannot read the source of {getattr(fn, '__name__', fn)}",
                         hint="kernels must be defined in a .py file, not typed into a REPL") from None
    source = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    tree = ast.parse(textwrap.dedent(source))
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):  # a lambda, or a def built by exec
        raise TilecError(f"{getattr(fn, '__name__', fn)} is not a `def` in its source file "
                         f"({inspect.getsourcefile(fn) or '<unknown>'}:{first_line})",
                         hint="write the kernel as a `def` decorated with @tilec.jit or @T.prim_func; a lambda "
                              "cannot be a kernel")
    return node, inspect.getsourcefile(fn) or "<unknown>", first_line, indent


def _parse_lambda(fn) -> tuple[ast.FunctionDef, str, int, int]:
    """A lambda's node, found in its whole file (its own source lines are a fragment of a statement:
    `"gelu": lambda v: ...,` does not parse alone), by its first line and, where a line holds
    several lambdas, by the columns of its code. Line numbers come back absolute (first line 1)."""
    code = fn.__code__
    file = inspect.getsourcefile(fn)
    lines = linecache.getlines(file) if file else []
    if not lines:
        raise TilecError("cannot read the source of a lambda the kernel calls",
                         hint="define helpers in a .py file, not typed into a REPL")
    tree = _parsed_file(file, "".join(lines))
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno]
    if len(found) > 1:  # several on one line: the one whose body spans the code's positions
        spots = {(line, col) for line, _, col, _ in code.co_positions() if line is not None and col is not None}
        found = [n for n in found if any((n.body.lineno, n.body.col_offset) <= spot <=
                                         (n.body.end_lineno, n.body.end_col_offset) for spot in spots)]
        inner = [n for n in found if not any(m is not n and n in ast.walk(m.body) for m in found)]
        found = inner if len(inner) == 1 else found
    if len(found) != 1:
        raise TilecError(f"cannot tell which lambda on {file}:{code.co_firstlineno} the kernel calls",
                         hint="write the helper with `def` (tilec inlines it as a @T.macro)")
    node = found[0]
    fdef = ast.FunctionDef(name="<lambda>", args=node.args, body=[ast.copy_location(ast.Return(node.body), node.body)],
                           decorator_list=[], returns=None, type_comment=None, type_params=[])
    return ast.fix_missing_locations(ast.copy_location(fdef, node)), file, 1, 0


_PARSED: dict[str, tuple[str, ast.Module]] = {}


def _parsed_file(file: str, source: str) -> ast.Module:
    """`file` parsed, once per text of it."""
    cached = _PARSED.get(file)
    if cached is None or cached[0] != source:
        cached = _PARSED[file] = (source, ast.parse(source))
    return cached[1]


def eager_tensor_params(fn) -> list[str]:
    """The parameters an eager kernel annotates as tensors in its body."""
    fdef, *_ = parse_function(fn)
    names = inspect.signature(fn).parameters
    return [s.target.id for s in fdef.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            and s.target.id in names and s.value is None]


def is_eager(fn) -> bool:
    """Whether `fn` is an eager kernel (its body opens `with T.Kernel`) rather than a factory."""
    fdef, *_ = parse_function(fn)
    for node in ast.walk(fdef):
        if isinstance(node, ast.FunctionDef) and node is not fdef:
            return False  # a factory defines the kernel inside
        if isinstance(node, ast.With):
            return True
    return False
