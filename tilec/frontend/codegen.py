"""`KernelVisitor`: the Python AST of a kernel → tile dialect IR.

One `visit_<Node>` per supported construct, in grammar order (statements, then
expressions).  Compile-time Python values fold as Python; run-time values are
`values.Scalar` / `TileRef` / `Access` wrappers around SSA values.  Every op
gets the absolute file:line:col of the node being visited; a Python construct
without a visitor is a located "unsupported" error, never silently ignored.
"""

from __future__ import annotations

import ast
import builtins as py_builtins
import inspect
from contextlib import contextmanager
from dataclasses import dataclass, field

from xdsl.dialects import scf
from xdsl.dialects.builtin import IndexType, i1
from xdsl.ir import Block, Region

from tilec import config
from tilec.dialects import tile
from tilec.dtypes import as_dtype
from tilec.errors import SourceLoc, TilecError
from tilec.language.structure import SizeExpr, Symbol, Tensor, is_symbolic
from tilec.source import parse_function

from . import calls, lazy_select, loop_exits
from .fragment_growth import grow_fragment
from .semantic import Builder, describe, is_compile_time
from .values import Access, BarrierRef, Scalar, SliceIndex, TileRef, VarRef

_BINOP = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
}
_CMPOP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_PY_COMPARE = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
               ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}
_UNSUPPORTED_HINTS = {
    "While": "use `for k in T.serial(n)` with a bound, or T.Pipelined",
    "Lambda": "define a @T.macro function instead",
    "Try": "kernels cannot raise or catch exceptions; use T.device_assert",
    "Raise": "use T.device_assert(cond, msg) inside kernels",
    "Global": "pass the value as a parameter instead",
    "Nonlocal": "pass the value as a parameter instead",
    "Delete": "names cannot be deleted inside kernels",
    "ClassDef": "define classes outside the kernel",
    "FunctionDef": "define helpers outside the kernel and decorate them with @T.macro",
    "Await": "kernels are not async",
}


def _slice_extent(node: ast.Slice) -> ast.expr | None:
    """`n` for a slice written `s:s + n` whose start reads memory or calls (`idx[i]:idx[i] + n`), so the
    start is read once and the extent is n."""
    upper, lower = node.upper, node.lower
    if lower is None or not (isinstance(upper, ast.BinOp) and isinstance(upper.op, ast.Add)):
        return None
    if ast.dump(upper.left) != ast.dump(lower):
        return None
    if not any(isinstance(n, ast.Subscript | ast.Call) for n in ast.walk(lower)):
        return None  # arithmetic on names evaluates to the same value twice (the affine extent sees it)
    return upper.right


MAX_MACRO_DEPTH = 24
"""T.macro calls inlined inside one another at most (a recursive macro must stop before)."""


@dataclass
class Frame:
    """The Python scope being visited: the kernel's function or an inlined macro."""

    fn: object
    file: str
    first_line: int
    indent: int
    names: dict = field(default_factory=dict)
    depth: dict = field(default_factory=dict)
    returned: list = field(default_factory=list)

    def lookup_outer(self, name: str):
        """A name from the function's closure, globals or builtins."""
        code = self.fn.__code__
        if self.fn.__closure__ and name in code.co_freevars:
            cell = self.fn.__closure__[code.co_freevars.index(name)]
            try:
                return True, cell.cell_contents
            except ValueError:
                return False, None
        if name in self.fn.__globals__:
            return True, self.fn.__globals__[name]
        if hasattr(py_builtins, name):
            return True, getattr(py_builtins, name)
        return False, None


class KernelVisitor(ast.NodeVisitor):
    """Builds tile IR for one kernel function (and the macros it calls)."""

    def __init__(self, builder: Builder, frame: Frame, program):
        self.b = builder
        self.frame = frame
        self.program = program  # tilec.frontend.KernelProgramBuilder: params, outputs, consts
        self.kernel: tile.KernelOp | None = None
        self.block_indices: list[Scalar] = []
        self.runtime_depth = 0
        self._shadowed: list[dict] = []  # per open runtime_region: outer bindings its loop variables hide
        self.parallel_loops: list[tile.ParallelOp] = []  # the T.Parallel loops being built, outermost first
        self.parallel_names: list[list[str]] = []  # their loop variables' names
        self.macros: list[str] = []  # the T.macro calls being inlined, outermost first
        self.kernels = 0  # `with T.Kernel` blocks opened so far (a kernel function has at least one)
        self.privatized: list = []  # per-thread buffers given a private copy in a T.Parallel (parallel_vars)
        self.custom_layouts: dict = {}  # global tensor SSA -> its T.Layout (custom_layout.py)
        self.fragment_growth: dict = {}  # fragment SSA -> FragmentGrowth (a T.Parallel indexing past its shape)
        self.ws = None  # the warp-specialized role being built (warp_specialize.WsState)
        self._guards = 0  # run-time `if`s being built around the current statement
        self._var_loads: list[dict] = []  # per subscript being read: T.alloc_var -> its value, loaded once

    # ------------------------------------------------------------------ #
    # Locations and dispatch
    # ------------------------------------------------------------------ #
    def loc_of(self, node: ast.AST) -> SourceLoc:
        f = self.frame
        return SourceLoc(f.file, f.first_line + node.lineno - 1, f.indent + node.col_offset + 1)

    def visit(self, node: ast.AST):
        saved = self.b.loc
        if hasattr(node, "lineno"):
            self.b.loc = self.loc_of(node)
        try:
            return super().visit(node)
        except (TilecError, Warning):  # (a warning the process made an error: the user's policy, as it is)
            raise
        except RecursionError:
            raise TilecError("the kernel nests too deeply for the compiler (expressions, loops or macro calls "
                             "inside one another)", loc=self.b.loc,
                             hint="split deep expressions into named steps") from None
        except Exception as e:  # an internal compiler error, located at the user's line
            if config.DEBUG:
                raise
            raise TilecError(f"internal compiler error: {type(e).__name__}: {e}", loc=self.b.loc,
                             hint="set TILEC_DEBUG=1 for the compiler traceback and report it") from None
        finally:
            self.b.loc = saved

    def generic_visit(self, node: ast.AST):
        kind = type(node).__name__
        raise self.b.error(f"unsupported Python construct `{kind}` in a kernel",
                           hint=_UNSUPPORTED_HINTS.get(kind, "rewrite it with the T.* language"))

    def visit_body(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.visit(stmt)
            if self.frame.returned:
                return

    # ------------------------------------------------------------------ #
    # Names and scopes
    # ------------------------------------------------------------------ #
    def lookup(self, name: str):
        if name in self.frame.names:
            value = self.frame.names[name]
        else:
            found, value = self.frame.lookup_outer(name)
            if not found:
                hint = self.program.hint_for_unbound(name) if self.program is not None else None
                raise self.b.error(f"name `{name}` is not defined", hint=hint)
        if isinstance(value, Symbol) and self.program is not None and value.dynamic:
            return self.program.resolve_symbol(self, value)
        return value

    def bind(self, name: str, value) -> None:
        frame = self.frame
        old = frame.names.get(name)
        if isinstance(old, VarRef) and not isinstance(value, VarRef):
            self.store_var(old, value)
            return
        if name in frame.names and frame.depth.get(name, 0) < self.runtime_depth and not isinstance(value, VarRef):
            raise self.b.error(
                f"`{name}` is assigned inside a run-time loop or `if` but defined outside it",
                hint=f"declare it with `{name} = T.alloc_var(dtype)` to carry its value across iterations and branches",
            )
        if isinstance(value, Scalar | TileRef) and not value.ssa.name_hint and name.isidentifier():
            value.ssa.name_hint = name
        if isinstance(value, VarRef) and not value.tile.ssa.name_hint and name.isidentifier():
            value.tile.ssa.name_hint = name
        frame.names[name] = value
        frame.depth.setdefault(name, self.runtime_depth)
        if name in frame.depth and frame.depth[name] > self.runtime_depth:
            frame.depth[name] = self.runtime_depth

    @contextmanager
    def runtime_region(self, block: Block, carried: bool = True):
        """Visits into `block` of a run-time construct; names bound inside stay inside.

        With `carried`, the block may run many times or not at all (a loop
        or a branch), so names from outside cannot be reassigned in it.
        """
        before = set(self.frame.names)
        frame = self.frame
        shadowed: dict = {}
        self._shadowed.append(shadowed)
        self.runtime_depth += carried
        try:
            with self.b.at_end_of(block):
                yield
        finally:
            self.runtime_depth -= carried
            self._shadowed.pop()
            for name in set(frame.names) - before:
                del frame.names[name]
                frame.depth.pop(name, None)
            for name, (value, depth) in shadowed.items():  # a loop variable's name means the outer value again
                frame.names[name] = value
                frame.depth[name] = depth

    def bind_loop_var(self, name: str, value) -> None:
        """Binds a loop variable inside its loop's `runtime_region`: it shadows an outer binding of
        the same name (as TileLang scopes loop variables) until the loop ends."""
        frame = self.frame
        if name in frame.names and self._shadowed and name not in self._shadowed[-1]:
            self._shadowed[-1][name] = (frame.names.pop(name), frame.depth.pop(name, 0))
        self.bind(name, value)
        frame.depth[name] = self.runtime_depth

    # ------------------------------------------------------------------ #
    # Values
    # ------------------------------------------------------------------ #
    def rvalue(self, value):
        """`value` as something usable in an expression: loads accesses and variables."""
        if isinstance(value, Access):
            return self.load(value)
        if isinstance(value, VarRef):
            cache = self._var_loads[-1] if self._var_loads else None
            if cache is not None and value.tile.ssa in cache:
                return cache[value.tile.ssa]
            zero = self.b.const(0, IndexType())
            loaded = Scalar(self.b.emit(tile.LoadOp(value.tile.ssa, [zero])).results[0])
            if cache is not None:
                cache[value.tile.ssa] = loaded
            return loaded
        return value

    def index_ssa(self, value):
        value = self.rvalue(value)
        if isinstance(value, float) or (isinstance(value, Scalar) and not value.is_int):
            raise self.b.error(f"tile indices must be integers, got {describe(value)}")
        if not isinstance(value, int | Scalar):
            raise self.b.error(f"tile indices must be integers, got {describe(value)}")
        return self.b.to_ssa(value, IndexType())

    def check_point(self, access: Access) -> None:
        ref = access.tile
        if not access.is_point:
            raise self.b.error(f"a slice of {ref} cannot be used as a scalar",
                               hint="use T.copy for regions, or index every dimension")
        if len(access.indices) != len(ref.shape):
            raise self.b.error(
                f"{ref} has {len(ref.shape)} dimensions but is indexed with {len(access.indices)}",
                hint=f"index it as {ref}[{', '.join('i' + str(k) for k in range(len(ref.shape)))}]")

    def condition(self, value, what: str):
        """`value` as a condition: a compile-time value or a run-time scalar, never a tile."""
        value = self.rvalue(value)
        if isinstance(value, TileRef):
            raise self.b.error(f"{what} needs a scalar condition, got {describe(value)}",
                               hint="index the tile to compare one element")
        return value

    def undecided(self, cond, what: str) -> bool:
        """A condition on sizes not bound yet: skipped while probing an eager kernel's signature
        (the real build decides it), a located error anywhere else."""
        if not is_symbolic(cond):
            return False
        if getattr(self.program, "probing", False):
            return True
        raise self.b.error(f"{what} on {cond!r}: the size is not known at this point",
                           hint="sizes from T.dynamic are run-time values inside the kernel; T.const sizes are "
                                "bound from the tensors")

    def require_kernel(self, what: str) -> None:
        """Run-time work (element access, run-time `if`, asserts) happens inside the one T.Kernel."""
        if self.kernel is None:
            raise self.b.error(f"{what} is only possible inside `with T.Kernel(...)`",
                               hint="move it into the kernel body; outside it, only sizes are computed")

    def load(self, access: Access) -> Scalar:
        self.require_kernel(f"reading an element of {access.tile}")
        self.check_point(access)
        self.check_static_bounds(access, [self.rvalue(i) for i in access.indices])
        indices = [self.index_ssa(i) for i in self.element_indices(access)]
        return Scalar(self.b.emit(tile.LoadOp(access.tile.ssa, indices)).results[0])

    def check_static_bounds(self, access: Access, indices) -> None:
        """An element of a fragment or local buffer (registers) indexed by T.Parallel variables (plus
        constants) must lie inside the buffer for every iteration: a located error otherwise, before any
        target runs it (the interpreter would stop there; a GPU would use another register)."""
        ref = access.tile
        if ref.scope not in ("fragment", "local") or not self.parallel_loops or self._guards:
            return
        extents = {arg: n for loop in self.parallel_loops for arg, n in zip(loop.body.block.args, loop.shape)}
        for dim, index in enumerate(indices):
            a = self.b.affine_of(index)
            if a is None or not a.terms or not all(ssa in extents for ssa, _ in a.terms):
                continue
            lo = a.const + sum(min(0, k * (extents[ssa] - 1)) for ssa, k in a.terms)
            hi = a.const + sum(max(0, k * (extents[ssa] - 1)) for ssa, k in a.terms)
            if lo < 0 or hi >= ref.shape[dim]:
                error = self.b.error(f"index {dim} of {ref} takes values {lo} to {hi} over the T.Parallel loop, but "
                                   f"dimension {dim} has size {ref.shape[dim]}",
                                   hint="make the buffer as large as the loop, or loop over the buffer's own extent "
                                        "(TileLang may accept this where its layout inference sizes the fragment "
                                        "by the loop, but the elements past the declared size are not the "
                                        "buffer's)")
                if ref.scope != "fragment" or lo < 0:
                    raise error
                grow_fragment(self, ref, dim, hi + 1, error)

    def element_indices(self, access: Access) -> tuple:
        """The indices an element access addresses: its own, or through the tensor's custom T.Layout."""
        layout = self.custom_layouts.get(access.tile.ssa)
        if layout is None:
            return access.indices
        from .custom_layout import physical_indices  # loaded by the T.Layout that made `layout`

        return physical_indices(self, access.tile, layout, access.indices)

    def store(self, access: Access, value) -> None:
        self.require_kernel(f"writing an element of {access.tile}")
        self.check_point(access)
        value = self.rvalue(value)
        if isinstance(value, TileRef):
            raise self.b.error(f"cannot store {describe(value)} into one element", hint="use T.copy(src, dst)")
        self.check_static_bounds(access, [self.rvalue(i) for i in access.indices])
        indices = [self.index_ssa(i) for i in self.element_indices(access)]
        ssa = self.b.to_ssa(value, access.tile.type.element_type)
        self.check_fragment_write(access.tile, indices)
        self.b.emit(tile.StoreOp(ssa, access.tile.ssa, indices))

    def check_fragment_write(self, ref: TileRef, indices) -> None:
        """Inside T.Parallel, each fragment element is written by one iteration (tile.parallel's rule)."""
        if not self.parallel_loops or ref.scope != "fragment":
            return
        loop = self.parallel_loops[-1]
        missing = tile.missing_loop_dims(indices, loop)
        if missing:
            names = [self.parallel_names[-1][d] for d in missing]
            raise self.b.error(
                f"this write to fragment {ref} does not use the T.Parallel variable"
                f"{'s' if len(names) > 1 else ''} {', '.join(f'`{n}`' for n in names)}, so every iteration along "
                f"{'them' if len(names) > 1 else 'it'} writes the same element",
                hint="write it from a T.Parallel over the fragment's own dimensions, or make it as large as "
                     "the loop and reduce it with T.reduce_*")

    def store_var(self, var: VarRef, value) -> None:
        zero = self.b.const(0, IndexType())
        value = self.rvalue(value)
        self.b.emit(tile.StoreOp(self.b.to_ssa(value, var.tile.type.element_type), var.tile.ssa, [zero]))

    def assign(self, target: ast.expr, value) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, value)
        elif isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, tuple | list) or len(value) != len(target.elts):
                raise self.b.error(f"cannot unpack {describe(value)} into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v)
        elif isinstance(target, ast.Subscript):
            dest = self.visit(target)
            if not isinstance(dest, Access):
                raise self.b.error(f"cannot assign to an element of {describe(dest)}")
            self.store(dest, value)
        else:
            raise self.b.error(f"cannot assign to `{ast.unparse(target)}` in a kernel")

    # ------------------------------------------------------------------ #
    # Statements
    # ------------------------------------------------------------------ #
    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.visit(node.value)

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        if isinstance(value, Access):
            value = self.rvalue(value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        op = _BINOP[type(node.op)]
        if isinstance(node.target, ast.Name):
            current = self.rvalue(self.lookup(node.target.id))
            self.assign(node.target, self.b.binop(op, current, self.rvalue(self.visit(node.value))))
            return
        dest = self.visit(node.target)
        if not isinstance(dest, Access):
            raise self.b.error(f"cannot update {describe(dest)} in place",
                               hint="update elements inside `for i, j in T.Parallel(...)`")
        new = self.b.binop(op, self.load(dest), self.rvalue(self.visit(node.value)))
        self.store(dest, new)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        annotation = self.visit(node.annotation)
        if not isinstance(node.target, ast.Name):
            raise self.b.error("only names can be annotated in a kernel")
        name = node.target.id
        if isinstance(annotation, Tensor):
            if node.value is not None:
                raise self.b.error(f"tensor parameter `{name}` is bound by the caller; remove `= ...`")
            self.bind(name, self.program.declare_param(self, name, annotation))
            return
        if node.value is None:
            raise self.b.error(f"annotation of `{name}` without a value",
                               hint="tensor parameters are annotated as `A: T.Tensor(shape, dtype)`")
        value = self.rvalue(self.visit(node.value))
        if as_dtype(annotation) is not None and not isinstance(value, TileRef):
            value = self.b.cast(value, annotation) if isinstance(value, Scalar) else value
        self.bind(name, value)

    def visit_If(self, node: ast.If) -> None:
        cond = self.condition(self.visit(node.test), "`if`")
        if self.undecided(cond, "`if`"):
            return
        if not isinstance(cond, Scalar):
            self.visit_body(node.body if cond else node.orelse)
            return
        self.require_kernel("a run-time `if`")
        c = self.b.to_ssa(cond, i1)
        then_block, else_block = Block(), Block()
        op = self.b.emit(scf.IfOp(c, [], Region(then_block), Region(else_block) if node.orelse else None))
        then_block.add_op(scf.YieldOp())
        self._guards += 1  # accesses under a run-time condition may be in bounds only where it holds
        try:
            with self.runtime_region(then_block):
                self.visit_body(node.body)
            if node.orelse:
                else_block.add_op(scf.YieldOp())
                with self.runtime_region(else_block):
                    self.visit_body(node.orelse)
        finally:
            self._guards -= 1
        self.b.verify(op)

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.b.error("`for ... else` is not supported in kernels")
        iterable = node.iter
        if isinstance(iterable, ast.Call):
            func = self.visit(iterable.func)
            if func is range or calls.builtin_name(func) in calls.LOOPS:
                args, kwargs = self._arguments(iterable)
                kind = "serial" if func is range else calls.builtin_name(func)
                if not loop_exits.exits_of(node.body):
                    calls.emit_loop(self, node, kind, args, kwargs)
                    return
                node, flag = loop_exits.prepare(self, node, kind)
                try:
                    calls.emit_loop(self, node, kind, args, kwargs)
                finally:
                    loop_exits.release(self, flag)
                return
        values = self.visit(iterable)
        if not isinstance(values, list | tuple | range):
            raise self.b.error(f"cannot iterate over {describe(values)} in a kernel",
                               hint="use T.Parallel, T.Pipelined, T.serial or range")
        for v in values:  # a compile-time sequence: unrolled
            self.assign(node.target, v)
            self.visit_body(node.body)

    def visit_With(self, node: ast.With) -> None:
        if len(node.items) != 1 or not isinstance(node.items[0].context_expr, ast.Call):
            raise self.b.error("only `with T.Kernel(...) as ...:` is supported in kernels")
        item = node.items[0]
        func = self.visit(item.context_expr.func)
        if calls.builtin_name(func) == "attr":
            from .calls.extern import refusal

            raise refusal(self, "attr")
        if calls.builtin_name(func) != "Kernel":
            raise self.b.error(f"`with {ast.unparse(item.context_expr.func)}(...)` is not supported",
                               hint="kernels open their grid with `with T.Kernel(grid..., threads=N) as bx:`")
        args = [self.rvalue(self.visit(a)) for a in item.context_expr.args]
        kwargs = self._keywords(item.context_expr.keywords)
        calls.emit_kernel(self, node, item.optional_vars, args, kwargs)

    def visit_Return(self, node: ast.Return) -> None:
        value = None if node.value is None else self.visit(node.value)
        if isinstance(value, Access):
            value = self.rvalue(value)
        self.frame.returned.append(value)

    def visit_Break(self, node: ast.Break | ast.Continue) -> None:
        word = "break" if isinstance(node, ast.Break) else "continue"
        raise self.b.error(f"`{word}` leaves only a run-time loop (T.serial, range, T.unroll) here",
                           hint="a loop over a Python sequence is unrolled at compile time: guard the rest of its "
                                "body with an `if`")

    visit_Continue = visit_Break

    def visit_Pass(self, node: ast.Pass) -> None:
        pass  # nothing to build

    def visit_Assert(self, node: ast.Assert) -> None:
        cond = self.rvalue(self.visit(node.test))
        if self.undecided(cond, "`assert`"):
            return
        msg = "" if node.msg is None else str(self.visit(node.msg))
        if isinstance(cond, Scalar):
            self.require_kernel("a run-time `assert`")
            self.b.emit(tile.DeviceAssertOp(self.b.to_ssa(cond, i1), msg))
        elif not cond:
            raise self.b.error(f"assertion failed: {msg or ast.unparse(node.test)}")

    # ------------------------------------------------------------------ #
    # Expressions
    # ------------------------------------------------------------------ #
    def visit_BoolOp(self, node: ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        result = self.rvalue(self.visit(node.values[0]))
        for value_node in node.values[1:]:
            if is_compile_time(result) and (not result if op == "and" else result):
                return result  # short-circuit at compile time
            result = self.b.logical(op, result, self.rvalue(self.visit(value_node)))
        return result

    def visit_BinOp(self, node: ast.BinOp):
        left, right = self.rvalue(self.visit(node.left)), self.rvalue(self.visit(node.right))
        op = _BINOP[type(node.op)]
        if not isinstance(left, Scalar) and not isinstance(right, Scalar):
            try:
                return {"+": lambda: left + right, "-": lambda: left - right, "*": lambda: left * right,
                        "/": lambda: left / right, "//": lambda: left // right, "%": lambda: left % right,
                        "**": lambda: left**right}.get(op, lambda: self.b.binop(op, left, right))()
            except TypeError:
                raise self.b.error(f"unsupported operands for {op}: {describe(left)} and {describe(right)}") from None
            except ZeroDivisionError:
                raise self.b.error("division by zero in a compile-time expression") from None
        for v in (left, right):
            if not isinstance(v, Scalar | bool | int | float):
                raise self.b.error(f"unsupported operand for {op}: {describe(v)}",
                                   hint="index tiles element-wise inside T.Parallel")
        return self.b.binop(op, left, right)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        value = self.rvalue(self.visit(node.operand))
        if isinstance(node.op, ast.USub):
            return self.b.negate(value)
        if isinstance(node.op, ast.UAdd):
            return value
        if isinstance(node.op, ast.Not):
            return self.b.logical_not(value)
        if isinstance(node.op, ast.Invert) and is_compile_time(value):
            return ~value
        if isinstance(node.op, ast.Invert) and isinstance(value, Scalar) and value.is_int and not value.is_index:
            if value.is_bool:
                return self.b.logical_not(value)
            return self.b.binop("^", value, (1 << value.type.width.data) - 1)  # every bit flipped
        raise self.b.error(f"unsupported unary operator {type(node.op).__name__}")

    def visit_IfExp(self, node: ast.IfExp):
        cond = self.rvalue(self.visit(node.test))
        if not isinstance(cond, Scalar):
            return self.visit(node.body if cond else node.orelse)
        return self.b.select(cond, self.rvalue(self.visit(node.body)), self.rvalue(self.visit(node.orelse)))

    def visit_Compare(self, node: ast.Compare):
        left = self.rvalue(self.visit(node.left))
        result = True
        for op, right_node in zip(node.ops, node.comparators):
            right = self.rvalue(self.visit(right_node))
            if isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn):
                if isinstance(left, Scalar) or isinstance(right, Scalar):
                    raise self.b.error(f"`{type(op).__name__}` needs compile-time operands")
                value = {ast.Is: lambda: left is right, ast.IsNot: lambda: left is not right,
                         ast.In: lambda: left in right, ast.NotIn: lambda: left not in right}[type(op)]()
            elif is_symbolic(left) or is_symbolic(right):
                value = SizeExpr(_CMPOP[type(op)], (left, right))
            elif not isinstance(left, Scalar) and not isinstance(right, Scalar):
                try:  # compile-time values (None, strings, dtypes, ...) compare as Python does
                    value = _PY_COMPARE[type(op)](left, right)
                except TypeError:
                    raise self.b.error(f"cannot compare {describe(left)} with {describe(right)}") from None
            else:
                value = self.b.binop(_CMPOP[type(op)], left, right)
            result = self.b.logical("and", result, value) if result is not True else value
            left = right
        return result

    def visit_Call(self, node: ast.Call):
        func = self.visit(node.func)
        name = calls.builtin_name(func)
        if name == "if_then_else" and len(node.args) == 3 and not node.keywords:
            return lazy_select.if_then_else(self, node, func)
        if name == "ptx_cp_async":  # its operands are T.access_ptr(...) of the elements copied
            return calls.call(self, node, func, *calls.pointer_arguments(self, node))
        return calls.call(self, node, func, *self._arguments(node))

    def _arguments(self, call: ast.Call) -> tuple[list, dict]:
        """A call's positional arguments (`*sequence` unpacked) and keyword arguments."""
        args = []
        for a in call.args:
            args.extend(self.visit(a.value) if isinstance(a, ast.Starred) else [self.visit(a)])
        return args, self._keywords(call.keywords)

    def _keywords(self, keywords: list[ast.keyword]) -> dict:
        """A call's keyword arguments, `**mapping` (a compile-time dict) unpacked in place."""
        kwargs = {}
        for k in keywords:
            if k.arg is not None:
                kwargs[k.arg] = self.visit(k.value)
                continue
            mapping = self.visit(k.value)
            if not isinstance(mapping, dict) or not all(isinstance(key, str) for key in mapping):
                raise self.b.error(f"`**{ast.unparse(k.value)}` must be a dict with string keys known when the "
                                   "kernel is compiled")
            kwargs.update(mapping)
        return kwargs

    def visit_Lambda(self, node: ast.Lambda):
        """A Python function of compile-time values (as TileLang evaluates one: `T.Layout(shape, lambda
        i, j: [j, i])`); its free names are the kernel's values where the lambda is written."""
        fn = self._python_eval(node, node.body)
        fn.__tilec_lambda__ = (node, self.frame)
        return fn

    def _python_eval(self, node: ast.expr, body: ast.AST, *, runtime_ok: bool = True):
        """`node` evaluated by Python, its free names (those of `body` it does not bind) being the
        kernel's values; with `runtime_ok` False, a run-time value among them is a located error."""
        bound = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if isinstance(node, ast.Lambda):
            a = node.args
            bound |= {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x is not None}
        free = {n.id for n in ast.walk(body) if isinstance(n, ast.Name) and n.id not in bound}
        scope = {"__builtins__": py_builtins}
        for name in sorted(free):
            if name in self.frame.names or self.frame.lookup_outer(name)[0]:
                value = self.lookup(name)
                if not runtime_ok and isinstance(value, Scalar | TileRef | Access | VarRef | BarrierRef):
                    raise self.b.error(f"a comprehension is computed at compile time, but `{name}` is a run-time "
                                       "value", hint="loop over run-time values with T.serial or T.Parallel")
                scope[name] = value
        code = compile(ast.fix_missing_locations(ast.Expression(node)), self.frame.file, "eval")
        try:
            return eval(code, scope)  # noqa: S307 - the kernel's own source, as Python runs it
        except RuntimeError as e:
            if "only usable inside" not in str(e):
                raise
            raise self.b.error(f"a comprehension is computed by Python at compile time: {e}",
                               hint="build IR with a `for` loop instead") from None

    def visit_ListComp(self, node: ast.ListComp):
        """A comprehension of compile-time values (`sum((n + b - 1) // b for n in sizes)`), as Python computes it."""
        return self._python_eval(node, node, runtime_ok=False)

    visit_GeneratorExp = visit_SetComp = visit_DictComp = visit_ListComp

    def call_lambda(self, fn, args: list, kwargs: dict):
        """A kernel lambda called with run-time values: its body is traced where it is called (as
        TileLang traces a Python function of PrimExprs), with its parameters bound to the arguments."""
        node, frame = fn.__tilec_lambda__
        names = [a.arg for a in node.args.args]
        if kwargs or node.args.vararg or node.args.kwonlyargs or len(args) > len(names) or \
                len(args) < len(names) - len(node.args.defaults):
            raise self.b.error("a lambda called with run-time values takes its arguments by position",
                               hint="write the helper with `def` (tilec traces it as a @T.macro)")
        defaults = [self.visit(d) for d in node.args.defaults]
        values = list(args) + defaults[len(defaults) - (len(names) - len(args)):]
        saved, self.frame = self.frame, frame
        outer = {n: frame.names[n] for n in names if n in frame.names}
        try:
            frame.names.update(zip(names, values))
            return self.visit(node.body)
        finally:
            for n in names:
                frame.names.pop(n, None)
            frame.names.update(outer)
            self.frame = saved

    def visit_Constant(self, node: ast.Constant):
        return node.value

    def visit_Attribute(self, node: ast.Attribute):
        base = self.visit(node.value)
        if isinstance(base, Access | VarRef):
            base = self.rvalue(base)
        if isinstance(base, TileRef | Scalar):
            return calls.attribute(self, base, node.attr)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            if getattr(base, "__name__", "") in ("tilec.language", "tilelang.language"):
                message, hint = calls.unknown_language_name(node.attr)
                raise self.b.error(message, hint=hint) from None
            raise self.b.error(f"{describe(base)} has no attribute `{node.attr}`") from None

    def visit_Subscript(self, node: ast.Subscript):
        """`base[indices]`; the indices read each T.alloc_var once (nothing stores between them), so that
        `X[off + i * n:off + (i + 1) * n]` has the extent n."""
        self._var_loads.append({})
        try:
            return self._subscript(node)
        finally:
            self._var_loads.pop()

    def _subscript(self, node: ast.Subscript):
        base = self.visit(node.value)
        index_node = node.slice
        elements = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
        if isinstance(base, TileRef):
            return Access(base, tuple(self.subscript_index(e) for e in elements))
        if isinstance(base, VarRef):
            return Access(base.tile, tuple(self.subscript_index(e) for e in elements))
        if isinstance(base, BarrierRef):
            if base.index is not None or len(elements) != 1:
                raise self.b.error("an array of barriers takes one index: `bars[i]`")
            return BarrierRef(base.ssa, self.index_ssa(self.visit(index_node)))
        key = self.rvalue(self.visit(index_node))
        if isinstance(key, Scalar):
            raise self.b.error(f"{describe(base)} cannot be indexed by a run-time value",
                               hint="Python lists are compile-time; use a shared or local buffer instead")
        try:
            return base[key]
        except (TypeError, IndexError, KeyError) as e:
            raise self.b.error(f"cannot index {describe(base)} with {key!r}: {e}") from None

    def subscript_index(self, node: ast.expr):
        if isinstance(node, ast.Slice):
            if node.step is not None:
                raise self.b.error("strided slices of tiles are not supported")
            start = None if node.lower is None else self.rvalue(self.visit(node.lower))
            extent = _slice_extent(node)
            if extent is not None:  # `s:s + n` with a run-time s (a loaded index): the extent is n
                stop = self.b.binop("+", start, self.rvalue(self.visit(extent)))
            else:
                stop = None if node.upper is None else self.rvalue(self.visit(node.upper))
            return SliceIndex(start, stop)
        return self.rvalue(self.visit(node))

    def visit_Name(self, node: ast.Name):
        return self.lookup(node.id)

    def visit_List(self, node: ast.List):
        return [self.visit(e) for e in node.elts]

    def visit_Tuple(self, node: ast.Tuple):
        return tuple(self.visit(e) for e in node.elts)

    def visit_Dict(self, node: ast.Dict):
        return {self.visit(k): self.visit(v) for k, v in zip(node.keys, node.values)}

    def visit_JoinedStr(self, node: ast.JoinedStr):
        parts = []
        for v in node.values:
            value = self.visit(v.value) if isinstance(v, ast.FormattedValue) else v.value
            parts.append(str(value))
        return "".join(parts)

    # ------------------------------------------------------------------ #
    # Macros
    # ------------------------------------------------------------------ #
    def inline_macro(self, macro, node: ast.Call, args: list, kwargs: dict):
        fn = macro.fn
        if len(self.macros) >= MAX_MACRO_DEPTH:
            chain = " -> ".join(self.macros[:3] + ["..."] + self.macros[-2:] + [fn.__name__])
            recursive = fn.__name__ in self.macros
            raise self.b.error(
                f"T.macro {fn.__name__} is inlined {MAX_MACRO_DEPTH} calls deep ({chain})" +
                (": it calls itself without stopping" if recursive else ""),
                hint="macros are expanded at compile time, so a recursive macro needs a base case decided by "
                     "compile-time values (an `if` on a Python int); loop with T.serial for run-time repetition")
        try:
            fdef, file, first_line, indent = parse_function(fn, lambdas=True)
        except TilecError as e:
            if e.loc is not None:
                raise
            raise self.b.error(e.msg, hint=e.hint) from None  # at the call
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as e:
            raise self.b.error(f"bad call of T.macro {fn.__name__}: {e}") from None
        bound.apply_defaults()
        frame = Frame(fn, file, first_line, indent, dict(bound.arguments))
        frame.depth = {name: self.runtime_depth for name in frame.names}
        saved, self.frame = self.frame, frame
        self.macros.append(fn.__name__)
        try:
            self.visit_body(fdef.body)
        finally:
            self.frame = saved
            self.macros.pop()
        return frame.returned[0] if frame.returned else None

