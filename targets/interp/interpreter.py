"""Runs a tile-IR kernel with numpy: the semantic oracle of tilec.

`run(module, args)` checks the arguments against the function's parameters, compiles every
op once into a Python closure (a "runner") through one table keyed by op class, then runs the
function body: the ops before the kernel, then the kernel's grid, block by block.

    func.func --compile--> [runner, runner, kernel-runner[ body-runners... ], ...]
                                                    |
                                     for each block: fresh buffers, body(state)

A runner takes the `State`: the SSA environment, the lane mask of the enclosing `scf.if`
inside a `tile.parallel` (None: every lane), the parallel's lane indices and the block index,
and inside a `tile.warp_specialize` the role it runs (warp_roles.py: the two roles run
concurrently and meet at mbarriers; elsewhere the block runs in lockstep).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from tilec.dialects.tile import AsyncCommitOp, AsyncWaitOp, KernelOp, MakeTensorOp, TensorType
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block

from tilec.errors import error_at

from . import pointers, scalar_ops, threads, tile_ops, warp_roles
from .values import Tile, numpy_dtype, uniform


def _make_tensor(op, c):
    """`tile.make_tensor`: the host memory the address names (pointers.py), as a global tensor."""
    address, sizes, r = op.address, tuple(op.sizes), op.result
    dtype = numpy_dtype(op.result.type.element_type)
    if dtype is None:
        raise error_at(op, f"{op.name}: element type {op.result.type.element_type} is not supported by the interpreter")

    def run(st):
        dynamic = iter(uniform(st.env[s], op, "a tensor size") for s in sizes)
        shape = tuple(next(dynamic) if d < 0 else d for d in op.result.type.shape)
        if any(d <= 0 for d in shape):
            raise error_at(op, f"{op.name}: T.make_tensor sizes must be positive, got {shape}")
        where = pointers.address_of(uniform(st.env[address], op, "a tensor's address"))
        st.env[r] = Tile.whole(pointers.current().view(where, shape, dtype, op), is_global=True)

    return run


def _copy_group(op, c):
    return None  # cp.async groups: the interpreter's copies are done when issued


HANDLERS = {**scalar_ops.HANDLERS, **tile_ops.HANDLERS, **threads.HANDLERS, **warp_roles.HANDLERS,
            MakeTensorOp: _make_tensor, AsyncCommitOp: _copy_group, AsyncWaitOp: _copy_group}

Runner = Callable[["State"], None]


class State:
    __slots__ = ("block", "env", "lanes", "mask", "role", "roles")

    def __init__(self):
        self.env: dict = {}
        self.mask: np.ndarray | None = None
        self.lanes: tuple[np.ndarray, ...] | None = None
        self.block: tuple[int, ...] | None = None
        self.roles = None  # the baton of the tile.warp_specialize being run (warp_roles.py), None outside one
        self.role = 0  # this runner's role there: 0 producer, 1 consumer


class Compiler:
    """Turns blocks of ops into runners, once per `run`, with one handler table."""

    def __init__(self, handlers: dict | None = None, what: str = "the interpreter"):
        self.handlers = HANDLERS if handlers is None else handlers
        self.what = what

    def block(self, block: Block) -> Runner:
        runners = []
        for op in block.ops:
            build = self.handlers.get(type(op))
            if build is None:
                raise error_at(op, f"{op.name} is not supported by {self.what}")
            runner = build(op, self)
            if runner is not None:
                runners.append(runner)
        return _sequence(runners)


def _sequence(runners: list[Runner]) -> Runner:
    if len(runners) == 1:
        return runners[0]

    def run(st):
        for runner in runners:
            runner(st)

    return run


def _kernel_function(module: ModuleOp, func_name: str | None) -> FuncOp:
    funcs = [op for op in module.walk() if isinstance(op, FuncOp)]
    if func_name is not None:
        found = [f for f in funcs if f.sym_name.data == func_name]
        if not found:
            raise error_at(None, f"interp: no function @{func_name} in the module",
                           hint=f"functions: {', '.join('@' + f.sym_name.data for f in funcs) or 'none'}")
        return found[0]
    kernels = [f for f in funcs if any(isinstance(op, KernelOp) for op in f.walk())]
    if len(kernels) != 1:
        raise error_at(None, f"interp: expected one function with a tile.kernel, found {len(kernels)}",
                       hint="pass func_name= to choose one")
    return kernels[0]


def _bind_arguments(fn: FuncOp, args: Sequence, env: dict) -> None:
    """Binds `args` to the parameters of `fn`, checking dtypes and shapes."""
    params = fn.function_type.inputs.data
    name = f"@{fn.sym_name.data}"
    if len(args) != len(params):
        raise error_at(fn, f"{name} takes {len(params)} arguments, got {len(args)}")
    for index, (typ, arg, value) in enumerate(zip(params, args, fn.body.block.args)):
        where = f"argument {index} of {name}"
        if isinstance(typ, TensorType):
            env[value] = _bind_tensor(fn, where, typ, arg)
        else:
            env[value] = _bind_scalar(fn, where, typ, arg)


def _bind_tensor(fn: FuncOp, where: str, typ: TensorType, arg) -> Tile:
    dtype = numpy_dtype(typ.element_type)
    if dtype is None:
        raise error_at(fn, f"{where}: element type {typ.element_type} is not supported by the interpreter")
    if not isinstance(arg, np.ndarray):
        raise error_at(fn, f"{where}: expected a numpy array for {typ}, got {type(arg).__name__}")
    if arg.dtype != dtype:
        raise error_at(fn, f"{where}: expected dtype {dtype} ({typ.element_type}), got {arg.dtype}")
    want = tuple("?" if d < 0 else d for d in typ.shape)
    if arg.ndim != typ.rank or any(w != "?" and w != g for w, g in zip(want, arg.shape)):
        raise error_at(fn, f"{where}: expected shape ({', '.join(map(str, want))}), got {arg.shape}")
    return Tile.whole(arg, is_global=True)


def _bind_scalar(fn: FuncOp, where: str, typ, arg):
    dtype = numpy_dtype(typ)
    if dtype is None:
        raise error_at(fn, f"{where}: parameter type {typ} is not supported by the interpreter")
    if isinstance(arg, np.ndarray) and arg.ndim != 0:
        raise error_at(fn, f"{where}: expected a scalar of type {typ}, got an array of shape {arg.shape}")
    is_number = isinstance(arg, int | float | np.number | np.bool_)
    if not is_number or (dtype.kind in "biu" and not float(arg).is_integer()):
        raise error_at(fn, f"{where}: expected a scalar of type {typ}, got {arg!r}")
    return np.asarray(arg).astype(dtype)[()]


def run(module: ModuleOp, args: Sequence[np.ndarray | int | float], *, func_name: str | None = None) -> None:
    """Runs the kernel function of `module` on `args`; arrays are updated in place.

    `func_name` None picks the one `func.func` holding a `tile.kernel`.  Tensor parameters
    take numpy arrays of the element type (`np.float16`, `ml_dtypes.bfloat16`, `np.bool_` for
    i1, ...) whose static dims match; scalar parameters take Python or numpy numbers.
    An address a pointer table holds (`tile.make_tensor`) must be inside one of `args` or a live
    CPU torch tensor (pointers.py). Raises TilecError, located at the kernel's source where the IR
    records it.
    """
    fn = _kernel_function(module, func_name)
    state = State()
    _bind_arguments(fn, args, state.env)
    body = Compiler().block(fn.body.block)
    # exp(-inf), 0/0 in masked-off lanes and integer wrap-around are normal GPU arithmetic.
    with np.errstate(all="ignore"), pointers.registered(args):  # what T.make_tensor's addresses may name
        body(state)
