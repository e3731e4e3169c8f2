"""Calling a JITKernel: check the arguments, allocate outputs, run, return outputs.

Tensors may be torch tensors (CPU for the interpreter, CUDA for the GPU) or
numpy arrays; the outputs come back as the same kind as the inputs.
"""

from __future__ import annotations

import numpy as np

from tilec.compiler.launch import SCALAR_SIZE_PREFIX, SLOW
from tilec.errors import TilecError
from tilec.language.program import Symbol
from tilec.language.structure import SizeExpr


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def _to_numpy(t, dtype):
    if isinstance(t, np.ndarray):
        return t
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if dtype.name == "bfloat16" or dtype.name.startswith("float8"):
        import torch

        raw = t.contiguous().view(torch.int16 if dtype.bits == 16 else torch.uint8).numpy()
        return raw.view(dtype.numpy)
    return t.numpy()


def _from_numpy(a, like):
    import torch

    if a.dtype.name == "bfloat16":
        t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    elif a.dtype.name.startswith("float8"):  # ml_dtypes' fp8: torch reads the bytes
        t = torch.from_numpy(a.view(np.uint8)).view(getattr(torch, a.dtype.name))
    else:
        t = torch.from_numpy(a)
    return t.to(like.device) if like is not None else t


def _dtype_matches(t, dtype) -> bool:
    """Whether tensor or array `t` has element type `dtype` (identity test for torch: the hot path)."""
    return t.dtype is dtype.torch if _is_torch(t) else dtype == str(t.dtype)


_TENSOR_HINT = "pass a torch tensor (or a numpy array for the CPU targets), e.g. torch.tensor(values, dtype=torch.{dtype})"


def check_keywords(kernel, kwargs: dict) -> None:
    """A compiled kernel takes its tensors by position: a keyword argument is a located error."""
    if not kwargs:
        return
    params = kernel.params
    inputs = [p.name for p in params if not p.is_output]
    names = ", ".join(f"`{k}`" for k in kwargs)
    known = [k for k in kwargs if any(p.name == k for p in params)]
    what = "keyword argument" + ("s " if len(kwargs) > 1 else " ") + names
    raise TilecError(f"{kernel.program.name}: a compiled kernel takes its tensors by position, got {what}",
                     loc=kernel.program.loc,
                     hint=f"call it as {kernel.program.name}({', '.join(inputs)})" +
                     (" (the outputs are allocated and returned)" if len(inputs) < len(params) else "") +
                     ("" if known or not inputs else f"; its parameters are {', '.join(p.name for p in params)}"))


def check_host_data(kernel, given: dict) -> None:
    """Tensors the CPU targets read must hold data on the host (or on a GPU, copied back)."""
    for i, t in given.items():
        if _is_torch(t) and t.device.type == "meta":
            p = kernel.params[i]
            raise TilecError(f"{kernel.program.name}: argument {i} (`{p.name}`) is a meta-device tensor, which "
                             "has shape and dtype but no data to compute on", loc=kernel.program.loc,
                             hint="allocate it on a real device, e.g. torch.empty(shape, device='cpu') "
                                  "(or 'cuda' for a GPU target)")


def _signature(kernel) -> tuple[list[int], list[int], list[bool]]:
    """(input positions, output positions, whether each shape is static), computed once per kernel."""
    sig = getattr(kernel, "_signature", None)
    if sig is None:
        params = kernel.params
        sig = ([i for i, p in enumerate(params) if not p.is_output], [i for i, p in enumerate(params) if p.is_output],
               [p.shape is not None and not any(isinstance(d, Symbol | SizeExpr) for d in p.shape) for p in params])
        kernel._signature = sig
    return sig


def bind_arguments(kernel, args: list) -> tuple[list, list, dict]:
    """(inputs by param position, output positions, dynamic sizes) after checking every tensor."""
    params = kernel.params
    inputs, outputs, static = _signature(kernel)
    name = kernel.program.name
    if len(args) == len(inputs):
        given, missing = dict(zip(inputs, args)), outputs
    elif len(args) == len(params):
        given, missing = dict(enumerate(args)), []
    else:
        raise TilecError(f"{name} takes {len(inputs)} input tensor(s) (or all {len(params)} parameters), "
                         f"got {len(args)}", loc=kernel.program.loc)
    sizes: dict[str, int] = {}
    exprs: list = []  # dimensions that are expressions of sizes: bound and checked once the plain ones are
    for i, t in given.items():
        p = params[i]
        if p.shape is None:
            given[i] = scalar_argument(kernel, i, t, sizes)
            continue
        if not (_is_torch(t) or isinstance(t, np.ndarray)):
            raise TilecError(f"{name}: argument {i} (`{p.name}`) must be a tensor, got {type(t).__name__}",
                             loc=kernel.program.loc, hint=_TENSOR_HINT.format(dtype=p.dtype.name))
        if not _dtype_matches(t, p.dtype):
            got_dtype = str(t.dtype).removeprefix("torch.")
            raise TilecError(f"{name}: argument {i} (`{p.name}`) must be {p.dtype.name}, got {got_dtype}",
                             loc=kernel.program.loc, hint=f"convert it with .to({p.dtype.name})")
        shape = tuple(t.shape)
        if static[i] and shape == p.shape:
            continue  # the common case: nothing to bind
        if len(shape) != len(p.shape):
            raise TilecError(f"{name}: argument {i} (`{p.name}`) must have {len(p.shape)} dimensions, "
                             f"got shape {shape}", loc=kernel.program.loc)
        for want, got in zip(p.shape, shape):
            if isinstance(want, Symbol):
                if sizes.setdefault(want.name, got) != got:
                    raise TilecError(f"{name}: size {want.name} is {sizes[want.name]} from an earlier tensor "
                                     f"but {got} from `{p.name}`", loc=kernel.program.loc)
            elif isinstance(want, SizeExpr):
                exprs.append((want, got, p))
            elif want != got:
                raise TilecError(f"{name}: argument {i} (`{p.name}`) must have shape {tuple(p.shape)}, "
                                 f"got {shape}", loc=kernel.program.loc)
    if exprs:
        _bind_expressions(kernel, exprs, sizes)
    return given, missing, sizes


def _bind_expressions(kernel, exprs: list, sizes: dict) -> None:
    """Sizes that are expressions of T.dynamic sizes (`seq_len * 32`): an affine one of a size no
    plain dimension bound binds it (seq_len = 4096 / 32), then each must equal its tensor's extent."""
    name, loc = kernel.program.name, kernel.program.loc
    for want, got, p in exprs:
        form = want.affine()
        if form is None or form[0].name in sizes:
            continue
        sym, a, b = form
        if (got - b) % a or (got - b) // a < 0:
            raise TilecError(f"{name}: a dimension of `{p.name}` is {want!r}, but {got} is not {a} * "
                             f"{sym.name} + {b} for any size {sym.name}", loc=loc)
        sizes[sym.name] = (got - b) // a
    for want, got, p in exprs:
        try:
            value = want.evaluate(sizes)
        except KeyError as e:
            raise TilecError(f"{name}: a dimension of `{p.name}` is {want!r}, whose size {e.args[0]} no tensor "
                             f"binds", loc=loc, hint=f"give a tensor a plain dimension {e.args[0]}") from None
        if value != got:
            raise TilecError(f"{name}: a dimension of `{p.name}` is {want!r} = {value}, got {got}", loc=loc)
        sizes[repr(want)] = got  # the kernel's size argument of that dimension (compiler/lower.py)


def scalar_argument(kernel, i: int, value, sizes: dict):
    """The value of scalar parameter `i` (a Python or numpy number of its kind), recorded in `sizes` if an integer."""
    p = kernel.params[i]
    name = kernel.program.name
    if isinstance(value, np.generic):
        value = value.item()
    integral = p.dtype.name.startswith(("int", "uint")) or p.dtype.name == "bool"
    ok = isinstance(value, bool | int) if integral else isinstance(value, bool | int | float)
    if not ok:
        tensor = _is_torch(value) or isinstance(value, np.ndarray)
        hint = "a T.ptr parameter takes an address: pass tensor.data_ptr()" if tensor and p.dtype.name == "int64" \
            else f"pass a Python {'int' if integral else 'float'}"
        raise TilecError(f"{name}: argument {i} (`{p.name}`) is a {p.dtype.name} scalar, got {type(value).__name__}",
                         loc=kernel.program.loc, hint=hint)
    if integral:
        value = int(value)
        sizes[SCALAR_SIZE_PREFIX + p.name] = value
    return value


def output_shape(param, sizes: dict, loc) -> tuple[int, ...]:
    shape = []
    for d in param.shape:
        if isinstance(d, SizeExpr):
            try:
                d = d.evaluate(sizes)
            except KeyError as e:
                raise TilecError(f"the size {e.args[0]} of output `{param.name}` is not bound by any input",
                                 loc=loc) from None
        elif isinstance(d, Symbol):
            if d.name not in sizes:
                raise TilecError(f"the size {d.name} of output `{param.name}` is not bound by any input", loc=loc)
            d = sizes[d.name]
        shape.append(d)
    return tuple(shape)


def launch(kernel, args: list):
    backend = kernel._backend
    if kernel.target.kind not in ("interp", "sim"):
        call = getattr(backend, "call", None)  # a GPU backend's call specialized to its kernel
        if call is not None:
            outs = call(args)
            if outs is not SLOW:
                return outs
        given, missing, sizes = bind_arguments(kernel, args)
        return backend.launch(kernel, given, missing, sizes)
    given, missing, sizes = bind_arguments(kernel, args)
    check_host_data(kernel, given)
    params = kernel.params
    like = next((t for t in given.values() if _is_torch(t)), None)
    arrays = [None] * len(params)
    for i, t in given.items():
        arrays[i] = t if params[i].shape is None else _to_numpy(t, params[i].dtype)
    for i in missing:
        arrays[i] = np.zeros(output_shape(params[i], sizes, kernel.program.loc), params[i].dtype.numpy)
    from tilec.targets.interp.pointers import registered

    with registered(arrays):  # the memory the addresses of a pointer table (T.make_tensor) may name
        backend.run(arrays, sizes)
    for i, t in given.items():  # torch tensors written by the kernel get the new values
        if params[i].shape is not None and _is_torch(t) and (t.device.type != "cpu" or not np.shares_memory(arrays[i], _to_numpy(t, params[i].dtype))):
            t.copy_(_from_numpy(arrays[i], t))
    outs = [arrays[i] if like is None else _from_numpy(arrays[i], like) for i in kernel.out_idx]
    return None if not outs else outs[0] if len(outs) == 1 else outs
