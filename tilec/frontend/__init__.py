"""Python kernels → tile IR, for both authoring styles.

- `build_prim_func(prim_func, out_idx)`: the lazy style; tensor parameters are
  annotated in the signature and evaluated by Python at definition time.
- `probe_eager(fn)` then `build_eager(fn, specialization, consts)`: the eager
  style; tensor parameters are annotated in the body, sizes come from
  `T.const` (bound from the tensors' shapes) and outputs from `T.empty`.

Both return a `KernelProgram`: the module plus what the runtime needs to call
it (which argument is which tensor, which are outputs, how dynamic sizes bind).
"""

from __future__ import annotations

import ast
import inspect
import operator

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FunctionType, IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from tilec.compiler.kernel_program import KernelProgram, Param
from tilec.dialects import tile
from tilec.dtypes import DType, as_dtype
from tilec.errors import SourceLoc, TilecError
from tilec.language.dtypes import is_pointer
from tilec.language.structure import AnnotationError, PrimFunc, SizeExpr, Symbol, Tensor

from .codegen import Frame, KernelVisitor, parse_function
from .semantic import Builder, describe
from .values import Scalar, TileRef


class _ProgramBuilder:
    """The parts of the visitor's job that concern the function's signature."""

    def __init__(self, fn, frame: Frame, builder: Builder, *, eager: bool, consts: dict | None = None):
        self.fn, self.frame, self.b, self.eager = fn, frame, builder, eager
        self.consts = consts or {}
        self.params: list[Param] = []
        self.block = Block()
        self.symbols: dict[str, Scalar] = {}

    # called by the visitor ------------------------------------------------
    def hint_for_unbound(self, name: str) -> str | None:
        if self.eager and name in inspect.signature(self.fn).parameters:
            return f"annotate tensor parameter `{name}` first: `{name}: T.Tensor(shape, dtype)`"
        return None

    def const_value(self, v, name: str):
        if not self.eager:
            raise v.b.error("T.const is for eager kernels (the @tilec.jit function itself holds the kernel)",
                            hint="in a T.prim_func factory, pass sizes as factory arguments")
        if name not in self.consts:
            raise v.b.error(f"T.const `{name}` is not bound",
                            hint=f"call the kernel with tensors whose shapes give {name}, or compile({name}=...)")
        value = self.consts[name]
        try:
            value = operator.index(value) if not isinstance(value, bool) else None
        except TypeError:
            value = None
        if value is None:
            raise v.b.error(f"T.const `{name}` must be bound to an integer size, got {self.consts[name]!r}",
                            hint=f"pass an int: compile({name}=...)")
        if value <= 0:
            raise v.b.error(f"T.const `{name}` = {value}: sizes must be positive",
                            hint=f"pass a positive {name} to compile(...); empty tensors need a T.dynamic size")
        return value

    def declare_param(self, v, name: str, spec: Tensor) -> TileRef:
        if not self.eager:
            raise v.b.error("tensor annotations in the body are for eager kernels; annotate prim_func parameters "
                            "in the signature")
        if name not in inspect.signature(self.fn).parameters:
            raise v.b.error(f"`{name}` is annotated as a tensor but is not a parameter of {self.fn.__name__}")
        return self._add_tensor(v, name, spec.shape, spec.dtype, spec.raw_dtype, is_output=False)

    def declare_output(self, v, shape, dtype: DType) -> TileRef:
        if not self.eager:
            raise v.b.error("T.empty is for eager kernels", hint="in a prim_func, choose outputs with out_idx")
        if v.kernel is not None:
            raise v.b.error("T.empty must come before `with T.Kernel(...)`")
        shape = tuple(shape) if isinstance(shape, list | tuple) else (shape,)
        return self._add_tensor(v, f"out{sum(p.is_output for p in self.params)}", shape, dtype, dtype,
                                is_output=True)

    def declare_workspace(self, v, shape, dtype: DType) -> TileRef:
        """`T.alloc_global`: a tensor parameter the runtime allocates at each call and never returns."""
        shape = tuple(shape) if isinstance(shape, list | tuple) else (shape,)
        ref = self._add_tensor(v, f"workspace{sum(p.workspace for p in self.params)}", shape, dtype, dtype,
                               is_output=True)
        self.params[-1].workspace = True
        return ref

    # ------------------------------------------------------------------------
    def _add_tensor(self, v, name, shape, dtype, raw_dtype, *, is_output) -> TileRef:
        if dtype is None:
            raise v.b.error(f"tensor `{name}`: unknown dtype {raw_dtype!r}")
        if dtype.name == "tfloat32":  # a tensor-core input precision: the tensor holds float32
            dtype = raw_dtype = as_dtype("float32")
        if not dtype.computable:
            raise v.b.error(f"tensor `{name}`: dtype {dtype.name} cannot be computed with by tilec (a storage "
                            "format)", hint="pass the data as bytes (T.uint8 / T.int8) and unpack it in the kernel")
        dims = []
        for d in shape:
            if isinstance(d, Scalar) and d.ssa in self.symbols_by_ssa():
                d = self.symbols_by_ssa()[d.ssa]
            if isinstance(d, Symbol):
                dims.append(d)
            elif isinstance(d, SizeExpr):  # `seq_len * 32`: the call's tensor binds or checks it
                if not d.symbols() or not all(x.dynamic for x in d.symbols()):
                    raise v.b.error(f"tensor `{name}`: size {d!r} must be an expression of T.dynamic sizes",
                                    hint="write T.const sizes as numbers (they are known when the kernel is built)")
                dims.append(d)
            elif isinstance(d, int) and not isinstance(d, bool):
                if d <= 0:
                    raise v.b.error(f"tensor `{name}`: sizes must be positive, got {d}" + self._size_origin(d),
                                    hint="a tensor dimension holds at least one element")
                dims.append(d)
            else:
                raise v.b.error(f"tensor `{name}`: sizes must be integers, T.const or T.dynamic, got {d!r}")
        arg = self.block.insert_arg(tile.TensorType([tile.DYNAMIC if isinstance(d, Symbol | SizeExpr) else d
                                                      for d in dims], dtype.ir), len(self.block.args))
        arg.name_hint = name if name.isidentifier() and not is_output else None
        self.params.append(Param(name, dtype, tuple(dims), is_output))
        ref = TileRef(arg, name)
        for axis, d in enumerate(dims):
            if isinstance(d, Symbol):  # every dynamic size of every tensor, for bounds and strides
                dim = v.b.emit(tile.DimOp(arg, axis)).results[0]
                dim.name_hint = d.name
                self.symbols.setdefault(d.name, Scalar(dim))
        for axis, d in enumerate(dims):
            if isinstance(d, SizeExpr):
                dim = v.b.emit(tile.DimOp(arg, axis)).results[0]
                form = d.affine()
                if form is not None and form[0].name not in self.symbols:  # a * s + b: s = (dim - b) / a
                    self.symbols[form[0].name] = Scalar(self._solve(v, dim, form[1], form[2]))
        return ref

    def _solve(self, v, dim, a: int, b: int):
        """(dim - b) / a as an index value (the launcher checked that it divides)."""
        def const(n):
            return v.b.emit(arith.ConstantOp(IntegerAttr(n, IndexType()), IndexType())).results[0]

        value = dim if b == 0 else v.b.emit(arith.SubiOp(dim, const(b))).results[0]
        return value if a == 1 else v.b.emit(arith.DivSIOp(value, const(a))).results[0]

    def add_scalar(self, v, name: str, dtype: DType) -> Scalar:
        """A scalar parameter (`max_seqlen: T.int32`): passed by value at each call, a run-time value
        in the kernel (an integer one may size the grid)."""
        if not dtype.computable or dtype.name == "tfloat32":
            raise v.b.error(f"scalar parameter `{name}`: dtype {dtype.name} cannot be computed with by tilec",
                            hint="use an integer type or float16 / bfloat16 / float32")
        arg = self.block.insert_arg(dtype.ir, len(self.block.args))
        arg.name_hint = name if name.isidentifier() else None
        self.params.append(Param(name, dtype, None, False))
        return Scalar(arg)

    def _size_origin(self, d: int) -> str:
        """Where a bad size came from, when it is a `T.const` bound by the caller."""
        names = [k for k, value in self.consts.items() if value == d and not isinstance(value, bool)]
        return f" (T.const {names[0]} = {d})" if names else ""

    def symbols_by_ssa(self) -> dict:
        return {s.ssa: Symbol(name) for name, s in self.symbols.items()}

    def resolve_symbol(self, v, sym: Symbol):
        """The value a `T.dynamic` size stands for inside the kernel: its run-time size."""
        if sym.name in self.symbols:
            return self.symbols[sym.name]
        if v.kernel is None:
            return sym  # not bound yet: the next tensor annotation binds it
        raise v.b.error(f"size `{sym.name}` is not the size of any tensor parameter",
                        hint="use it in a T.Tensor shape so that it can be bound at run time")


def _build(fn, *, eager: bool, initial: dict, consts: dict | None, declare) -> tuple[KernelProgram, list]:
    fdef, file, first_line, indent = parse_function(fn)
    frame = Frame(fn, file, first_line, indent, dict(initial))
    builder = Builder()
    program = _ProgramBuilder(fn, frame, builder, eager=eager, consts=consts)
    visitor = KernelVisitor(builder, frame, program)
    loc = SourceLoc(file, first_line + fdef.lineno - 1, indent + fdef.col_offset + 1)
    builder.loc = loc
    with builder.at_end_of(program.block):
        declare(visitor, program)
        visitor.visit_body(fdef.body)
    if not visitor.kernels:
        raise TilecError(f"{fn.__name__} has no `with T.Kernel(...)`: a kernel function launches one grid",
                         loc=loc, hint="put the kernel's body under `with T.Kernel(grid, threads=...) as bx:`")
    _sink_pointer_tensors(program.block)
    ret = func.ReturnOp()
    ret.location = builder.stamp(loc)
    program.block.add_op(ret)
    types = [a.type for a in program.block.args]
    fop = func.FuncOp(fn.__name__, FunctionType.from_lists(types, []), Region(program.block))
    fop.location = builder.stamp(loc)
    module = ModuleOp([fop])
    try:
        module.verify()
    except VerifyException as e:
        raise TilecError(f"internal compiler error: the built IR does not verify: {e}", loc=loc) from None
    return KernelProgram(module, fn.__name__, program.params, loc=loc), frame.returned


def _sink_pointer_tensors(block: Block) -> None:
    """A `T.make_tensor` before `with T.Kernel` (TileLang's `A = T.make_tensor(a_ptr, (m, k))` of a
    `T.ptr` parameter) moves into each kernel that uses it: the tensor is the kernel's view of an
    address, which its operands (parameters, scalars computed before the kernel) give there."""
    kernels = [op for op in block.ops if isinstance(op, tile.KernelOp)]
    for op in [op for op in block.ops if isinstance(op, tile.MakeTensorOp)]:
        uses = list(op.result.uses)
        owners = [next((k for k in kernels if k.is_ancestor(use.operation)), None) for use in uses]
        if None in owners:
            continue  # also used outside the kernels: it stays where it is
        for kernel in dict.fromkeys(owners):
            body = kernel.body.block
            moved = op.clone()
            moved.result.name_hint = op.result.name_hint
            body.insert_op_before(moved, body.first_op) if body.first_op else body.add_op(moved)
            for use, owner in zip(uses, owners):
                if owner is kernel:
                    use.operation.operands[use.index] = moved.result
        block.erase_op(op)


def build_prim_func(pf: PrimFunc, out_idx=None) -> KernelProgram:
    """IR for a lazy-style `T.prim_func`; `out_idx` marks the outputs the runtime allocates."""

    def declare(v, program: _ProgramBuilder):
        try:
            specs = pf.param_specs()
        except AnnotationError as e:
            raise v.b.error(str(e), hint="annotations are evaluated where the kernel is defined (its globals "
                                         "and closure): define the names they use there") from None
        for name, ann in specs:
            if isinstance(ann, Tensor):
                v.frame.names[name] = program._add_tensor(v, name, ann.shape, ann.dtype, ann.raw_dtype,
                                                          is_output=False)
            elif is_pointer(ann):  # `p: T.ptr`: an address, passed by value as TileLang's int64
                v.frame.names[name] = program.add_scalar(v, name, as_dtype("int64"))
            elif as_dtype(ann) is not None:
                v.frame.names[name] = program.add_scalar(v, name, as_dtype(ann))
            else:
                raise v.b.error(f"parameter `{name}` of {pf.__name__} needs a T.Tensor(shape, dtype) annotation")

    program, _ = _build(pf.fn, eager=False, initial={}, consts=None, declare=declare)
    n = sum(not p.workspace for p in program.params)  # the signature's; T.alloc_global ones come after
    idx = [] if out_idx is None else [out_idx] if isinstance(out_idx, int) else out_idx
    if not isinstance(idx, list | tuple) or not all(isinstance(i, int) and not isinstance(i, bool) for i in idx):
        raise TilecError(f"out_idx must be an int or a list of ints, got {out_idx!r}", loc=program.loc,
                         hint="e.g. out_idx=[-1] for the last parameter")
    idx = list(idx)
    for i in idx:
        if not -n <= i < n:
            raise TilecError(f"out_idx {i} is out of range for {pf.__name__}, which has {n} parameters",
                             loc=program.loc)
        program.params[i % n].is_output = True
    program.returns = [i % n for i in idx]
    return program


def build_eager(fn, specialization: dict, consts: dict) -> KernelProgram:
    """IR for an eager kernel with its compile-time arguments and T.const sizes bound."""
    program, returned = _build(fn, eager=True, initial=specialization, consts=consts, declare=lambda v, p: None)
    by_arg = {p.name: i for i, p in enumerate(program.params)}
    outputs = returned[0] if returned else None
    outputs = [] if outputs is None else list(outputs) if isinstance(outputs, tuple | list) else [outputs]
    for out in outputs:
        if not isinstance(out, TileRef) or out.name not in by_arg or not program.params[by_arg[out.name]].is_output:
            raise TilecError("an eager kernel returns the tensors it declared with T.empty", loc=program.loc)
        program.returns.append(by_arg[out.name])
    return program


class _ProbeProgram:
    """The signature side of a probe: `T.const` sizes stay `Symbol`s, annotations are recorded."""

    probing = True

    def __init__(self, fn):
        self.fn = fn
        self.specs: list[tuple[str, tuple, DType | None]] = []

    def hint_for_unbound(self, name: str) -> str | None:
        if name in inspect.signature(self.fn).parameters:
            return f"annotate tensor parameter `{name}` first: `{name}: T.Tensor(shape, dtype)`"
        return None

    def const_value(self, v, name: str):
        return Symbol(name, dynamic=False)

    def declare_param(self, v, name: str, spec: Tensor):
        self.specs.append((name, spec.shape, spec.dtype))
        return None  # the probe builds no IR: a statement that uses the tensor before the kernel fails there

    def declare_output(self, v, shape, dtype):
        return None

    def declare_workspace(self, v, shape, dtype):
        return None

    def resolve_symbol(self, v, sym: Symbol):
        return sym


def probe_eager(fn, specialization: dict) -> list[tuple[str, tuple, DType | None]]:
    """(name, shape, dtype) of each tensor annotation, with `T.const` sizes as `Symbol`s.

    The statements before the first `with` (T.Kernel) run as Python at compile time, as
    in the real build: `T.const` / `T.dynamic` sizes, ordinary assignments
    (`dtype = T.float32`, `shape = [M, N]`) and the tensor annotations, so the sizes
    can be matched against the caller's tensors before the kernel is built.
    """
    fdef, file, first_line, indent = parse_function(fn)
    frame = Frame(fn, file, first_line, indent, dict(specialization))
    builder = Builder()
    program = _ProbeProgram(fn)
    visitor = KernelVisitor(builder, frame, program)
    builder.loc = SourceLoc(file, first_line + fdef.lineno - 1, indent + fdef.col_offset + 1)
    with builder.at_end_of(Block()):
        for stmt in fdef.body:
            if isinstance(stmt, ast.With) or frame.returned:
                break
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
                _check_size_names(visitor, stmt.value)
            visitor.visit(stmt)
    return program.specs


def _check_size_names(visitor: KernelVisitor, call: ast.Call) -> None:
    """T.const / T.dynamic take the size names as a string (a located error before anything is built)."""
    fname = ast.unparse(call.func)
    if not fname.endswith(("const", "dynamic", "symbolic")):
        return
    visitor.b.loc = visitor.loc_of(call)
    args = [visitor.visit(a) for a in call.args]
    if not args or not isinstance(args[0], str) or not args[0].strip():
        what = fname.rsplit(".", 1)[-1]
        raise visitor.b.error(f"T.{what} takes the size names as a string, got "
                              f"{describe(args[0]) if args else 'nothing'}",
                              hint=f'e.g. N = T.{what}("N") or M, N = T.{what}("M, N")')
