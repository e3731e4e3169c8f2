"""Reading a kernel's Python source: the `def`, where it sits, and what its body declares.

Light on purpose (no IR imports): the JIT decorator uses it when a module defines kernels,
and a run that finds every kernel in the cache never needs more.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from tilec.errors import TilecError


def parse_function(fn) -> tuple[ast.FunctionDef, str, int, int]:
    """The def of `fn`, its file, first line and the indentation removed by dedent."""
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
