"""`tilec.jit`, `tilec.compile` and `JITKernel`: from a Python kernel to a callable.

Lazy style: `@jit(out_idx=...)` wraps a factory; calling it with sizes builds
(once per argument key) a `JITKernel`.  Eager style: `@jit` wraps the kernel
itself; calling it with tensors binds `T.const` sizes from their shapes,
builds (once per key) and runs.
"""

from __future__ import annotations

import functools
import inspect

from tilec import compiler
from tilec.errors import SourceLoc, TilecError
from tilec.language.program import PrimFunc, Symbol
from tilec.compiler.kernel_program import KernelProgram
from tilec.compiler.pass_configs import check_pass_configs
from tilec.source import eager_tensor_params, is_eager, parse_function
from tilec.target import Target, check_target, resolve_target

# The frontend (and with it xDSL) is imported only to build a kernel: a process whose kernels
# all come from the cache never loads it.


def _build_eager(fn, spec: dict, consts: dict) -> KernelProgram:
    from tilec.frontend import build_eager

    return build_eager(fn, spec, consts)

def _def_loc(fn) -> SourceLoc | None:
    try:
        fdef, file, first_line, indent = parse_function(fn)
    except TilecError:
        return None
    return SourceLoc(file, first_line + fdef.lineno - 1, indent + fdef.col_offset + 1)


class JITKernel:
    """A compiled kernel: call it with tensors; inspect its IR and source."""

    def __init__(self, program: KernelProgram, target: Target, pass_configs: dict | None = None, *,
                 execution_backend: str = "auto", build_key: str | None = None):
        self.program = program
        self.target = target
        self.pass_configs = pass_configs or {}
        self.out_idx = list(program.returns)
        self._backend = compiler.build(program, target, self.pass_configs, execution_backend=execution_backend,
                                       build_key=build_key)

    @property
    def params(self):
        return self.program.params

    def __call__(self, *args, **kwargs):
        from tilec import runtime

        if kwargs:
            runtime.check_keywords(self, kwargs)
        return runtime.launch(self, list(args))

    def get_ir(self, stage: str = "tile") -> str:
        return self._backend.get_ir(stage)

    def get_kernel_source(self) -> str:
        return self._backend.kernel_source()

    def get_host_source(self) -> str:
        p = self.program
        params = ", ".join(
            f"{q.name}: {'out ' if q.is_output else ''}{q.dtype.name}{list(q.shape) if q.shape is not None else ''}"
            for q in p.params)
        return f"launch {p.name}({params}) on {self.target.name}\n{self._backend.launch_description()}"

    def get_profiler(self, tensor_supply_type=None):
        from tilec.profiler import Profiler

        return Profiler(self, tensor_supply_type)


def compile(func, out_idx=None, target="auto", execution_backend="auto", verbose=False,  # noqa: A001
            pass_configs=None, compile_flags=None, target_host=None) -> JITKernel:
    """Compiles a bare `T.prim_func` into a `JITKernel`."""
    if not isinstance(func, PrimFunc):
        raise TilecError(f"tilec.compile takes a T.prim_func, got {type(func).__name__}",
                         hint="decorate the kernel function with @T.prim_func")
    from tilec.frontend import build_prim_func

    loc = _def_loc(func.fn)
    configs = check_pass_configs(pass_configs, loc)
    resolved = resolve_target(target, loc=loc)
    return JITKernel(build_prim_func(func, out_idx), resolved, configs, execution_backend=execution_backend)


class JITFunction:
    """What `@tilec.jit` returns; see the module docstring for the two styles."""

    def __init__(self, fn, *, out_idx=None, target="auto", pass_configs=None, verbose=False,
                 execution_backend="auto", **_options):
        if isinstance(fn, PrimFunc):
            raise TilecError(f"@tilec.jit wraps a kernel function or a factory returning a T.prim_func, got the "
                             f"T.prim_func {fn.__name__} itself", loc=_def_loc(fn.fn),
                             hint="compile it with tilec.compile(prim_func, out_idx=...), or return it from a "
                                  "factory decorated with @tilec.jit")
        if not inspect.isfunction(fn) or fn.__name__ == "<lambda>":
            code = getattr(fn, "__code__", None)
            raise TilecError(f"@tilec.jit needs a function defined with `def`, got {fn!r}",
                             loc=SourceLoc(code.co_filename, code.co_firstlineno, 1) if code is not None else None,
                             hint="tilec reads the kernel's source, so write it as a def in a .py file")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.execution_backend = execution_backend
        self.out_idx = out_idx
        self.target = target
        self.pass_configs = check_pass_configs(pass_configs, _def_loc(fn))
        check_target(target, loc=_def_loc(fn))
        self.verbose = verbose
        self._kernels: dict = {}
        self._eager = is_eager(fn)
        self._tensor_params = eager_tensor_params(fn) if self._eager else []

    def _key(self, values: dict):
        def freeze(x):
            if isinstance(x, list | tuple):
                return tuple(freeze(i) for i in x)
            if isinstance(x, dict):
                return tuple(sorted((k, freeze(v)) for k, v in x.items()))
            try:
                hash(x)
                return x
            except TypeError:
                return repr(x)

        return freeze(values)

    def _build(self, key_args: dict, make_program) -> JITKernel:
        """A kernel for these arguments: from the disk memo when possible, skipping the frontend."""
        target = resolve_target(self.target)
        memo = None
        if target.kind == "cuda":
            from tilec.compiler import cache

            memo = cache.memo_key(self.fn, (), key_args, target.name, self.pass_configs,
                                  extra=(repr(self.out_idx),))
            hit = memo and cache.memo_get(memo)
            if hit:
                from tilec.compiler.cuda_build import CacheMissError

                try:
                    return JITKernel(cache.program_from_json(hit["program"]), target, self.pass_configs,
                                     execution_backend=self.execution_backend, build_key=hit["build_key"])
                except CacheMissError:
                    pass  # the build it points at is gone: build again
        kernel = JITKernel(make_program(), target, self.pass_configs, execution_backend=self.execution_backend)
        if memo:
            cache.memo_put(memo, kernel.program, kernel._backend.build_key)
        return kernel

    # lazy -----------------------------------------------------------------
    def _lazy(self, *args, **kwargs) -> JITKernel:
        try:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
        except TypeError as e:
            raise TilecError(f"bad call of {self.fn.__name__}: {e}", loc=_def_loc(self.fn)) from None
        bound.apply_defaults()
        key = self._key(dict(bound.arguments))
        if key not in self._kernels:
            self._kernels[key] = self._build(dict(bound.arguments), lambda: self.build_program(*args, **kwargs))
        return self._kernels[key]

    def build_program(self, *args, **kwargs) -> KernelProgram:
        """The tile IR program for these arguments, without building code for a target."""
        from tilec.frontend import build_eager, build_prim_func

        if not self._eager:
            prim = self.fn(*args, **kwargs)
            if not isinstance(prim, PrimFunc):
                raise TilecError(f"@tilec.jit factory {self.fn.__name__} must return a T.prim_func",
                                 loc=_def_loc(self.fn))
            return build_prim_func(prim, self.out_idx)
        spec, consts = self._split_eager_kwargs(kwargs)
        return build_eager(self.fn, spec, consts)

    def _split_eager_kwargs(self, kwargs: dict) -> tuple[dict, dict]:
        sig = inspect.signature(self.fn)
        spec = {k: v for k, v in kwargs.items() if k in sig.parameters and k not in self._tensor_params}
        consts = {k: v for k, v in kwargs.items() if k not in spec}
        for name, p in sig.parameters.items():
            if name not in self._tensor_params and name not in spec:
                if p.default is inspect.Parameter.empty:
                    raise TilecError(f"{self.fn.__name__}: compile-time argument `{name}` is missing",
                                     loc=_def_loc(self.fn))
                spec[name] = p.default
        return spec, consts

    # eager ----------------------------------------------------------------
    def compile(self, **kwargs) -> JITKernel:
        """Builds an eager kernel for explicit `T.const` sizes and compile-time arguments."""
        if not self._eager:
            return self._lazy(**kwargs)
        spec, consts = self._split_eager_kwargs(kwargs)
        self._check_const_names(consts, spec)
        return self._eager_kernel(spec, consts)

    def _check_const_names(self, consts: dict, spec: dict) -> None:
        from tilec.frontend import probe_eager

        sizes = {d.name for _, shape, _ in probe_eager(self.fn, spec) for d in shape
                 if isinstance(d, Symbol) and not d.dynamic}
        unknown = sorted(set(consts) - sizes)
        if unknown:
            raise TilecError(f"{self.fn.__name__}.compile: {', '.join(unknown)} "
                             f"{'is' if len(unknown) == 1 else 'are'} neither a parameter nor a T.const size",
                             loc=_def_loc(self.fn),
                             hint=f"its T.const sizes: {', '.join(sorted(sizes)) or 'none'}; its parameters: "
                                  f"{', '.join(inspect.signature(self.fn).parameters)}")

    def _eager_kernel(self, spec: dict, consts: dict) -> JITKernel:
        spec, _ = self._split_eager_kwargs(spec)
        key = (self._key(spec), self._key(consts))
        if key not in self._kernels:
            self._kernels[key] = self._build({"spec": spec, "consts": consts},
                                             lambda: _build_eager(self.fn, spec, consts))
        return self._kernels[key]

    def _bind_consts(self, tensors: dict, spec: dict) -> dict:
        import numpy as np

        from tilec.frontend import probe_eager
        from tilec.runtime import _TENSOR_HINT, _is_torch

        consts: dict = {}
        for name, shape, dtype in probe_eager(self.fn, spec):
            t = tensors.get(name)
            if t is None:
                continue
            if not (_is_torch(t) or isinstance(t, np.ndarray)):
                raise TilecError(f"{self.fn.__name__}: argument `{name}` must be a tensor, got {type(t).__name__}",
                                 loc=_def_loc(self.fn),
                                 hint=_TENSOR_HINT.format(dtype=dtype.name if dtype is not None else "float32"))
            actual = tuple(t.shape)
            if len(actual) != len(shape):
                raise TilecError(f"{self.fn.__name__}: tensor `{name}` must have {len(shape)} dimensions, "
                                 f"got shape {actual}", loc=_def_loc(self.fn))
            for want, got in zip(shape, actual):
                if isinstance(want, Symbol) and not want.dynamic:
                    if got == 0:
                        raise TilecError(f"{self.fn.__name__}: size {want.name} would be 0: this call passes "
                                         f"`{name}` of shape {actual}, and a T.const size must be positive",
                                         loc=_def_loc(self.fn),
                                         hint=f"skip the call for empty tensors, or declare the size with "
                                              f"`{want.name} = T.dynamic(\"{want.name}\")` to accept them")
                    if consts.setdefault(want.name, got) != got:
                        raise TilecError(f"{self.fn.__name__}: size {want.name} is {consts[want.name]} from an "
                                         f"earlier tensor but {got} from `{name}`", loc=_def_loc(self.fn))
        return consts

    def __call__(self, *args, **kwargs):
        if not self._eager:
            return self._lazy(*args, **kwargs)
        try:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
        except TypeError as e:
            raise TilecError(f"bad call of {self.fn.__name__}: {e}", loc=_def_loc(self.fn)) from None
        tensors = {k: v for k, v in bound.arguments.items() if k in self._tensor_params}
        for k, value in bound.arguments.items():
            if k not in self._tensor_params and (hasattr(value, "shape") and hasattr(value, "dtype")):
                raise TilecError(f"{self.fn.__name__}: argument `{k}` is a tensor, but the kernel does not annotate "
                                 "it, so it would be a compile-time value", loc=_def_loc(self.fn),
                                 hint=f"annotate it in the body: `{k}: T.Tensor(shape, dtype)`")
        spec, _ = self._split_eager_kwargs({k: v for k, v in bound.arguments.items() if k not in self._tensor_params})
        kernel = self._eager_kernel(spec, self._bind_consts(tensors, spec))
        order = [p.name for p in kernel.params if not p.is_output]
        missing = [n for n in order if n not in tensors]
        if missing:
            raise TilecError(f"{self.fn.__name__}: tensor argument(s) {', '.join(missing)} missing",
                             loc=_def_loc(self.fn))
        return kernel(*[tensors[n] for n in order])


def jit(func=None, *, out_idx=None, target="auto", execution_backend="auto", verbose=False, pass_configs=None,
        compile_flags=None, debug_root_path=None):
    """Decorator for kernels, bare (`@jit`) or with options (`@jit(out_idx=[-1])`)."""
    if func is None:
        return functools.partial(jit, out_idx=out_idx, target=target, execution_backend=execution_backend,
                                 verbose=verbose, pass_configs=pass_configs, compile_flags=compile_flags)
    return JITFunction(func, out_idx=out_idx, target=target, pass_configs=pass_configs, verbose=verbose,
                       execution_backend=execution_backend)

