"""`tilec.jit`, `tilec.compile` and `JITKernel`: from a Python kernel to a callable.

Lazy style: `@jit(out_idx=...)` wraps a factory; calling it with sizes builds
(once per argument key) a `JITKernel`.  Eager style: `@jit` wraps the kernel
itself; calling it with tensors binds `T.const` sizes from their shapes,
builds (once per key) and runs.

An eager call is on the hot path: the kernel's source is parsed once per function and
compile-time arguments (`_BindingPlan`: which tensor axis gives which `T.const` size), so a
warm call binds sizes from shapes and looks the kernel up, as cheap as calling the
compiled kernel itself.
"""

from __future__ import annotations

import functools
import inspect

from tilec import compiler
from tilec.compiler.kernel_program import KernelProgram
from tilec.compiler.pass_configs import check_pass_configs
from tilec.errors import SourceLoc, TilecError
from tilec.language.program import PrimFunc, Symbol
from tilec.source import eager_tensor_params, is_eager, parse_function
from tilec.target import Target, check_target, resolve_target

# The frontend (and with it xDSL) is imported only to build a kernel: a process whose kernels
# all come from the cache never loads it.


def _build_eager(fn, spec: dict, consts: dict) -> KernelProgram:
    from tilec.frontend import build_eager

    return build_eager(fn, spec, consts)


class _BindingPlan:
    """How an eager kernel's `T.const` sizes follow from its tensors, for one specialization:
    the frontend's probe of the body (`probe_eager`), run once, as (tensor, its annotated
    shape and dtype, [(axis, size name)]) rows."""

    def __init__(self, jit_fn: JITFunction, spec: dict):
        from tilec.frontend import probe_eager

        self.jit_fn = jit_fn
        self.rows = [(name, shape, dtype, [(axis, d.name) for axis, d in enumerate(shape)
                                           if isinstance(d, Symbol) and not d.dynamic])
                     for name, shape, dtype in probe_eager(jit_fn.fn, spec)]
        self.const_names = {name for *_, axes in self.rows for _, name in axes}

    def bind(self, tensors: dict) -> dict:
        """The `T.const` sizes the given tensors' shapes bind; located errors for bad tensors."""
        consts: dict = {}
        for name, shape, dtype, axes in self.rows:
            t = tensors.get(name)
            if t is None:
                continue
            actual = getattr(t, "shape", None)
            if actual is None or not _is_tensor(t):
                self._fail(f"argument `{name}` must be a tensor, got {type(t).__name__}",
                           hint=_tensor_hint(dtype))
            if len(actual) != len(shape):
                self._fail(f"tensor `{name}` must have {len(shape)} dimensions, got shape {tuple(actual)}")
            for axis, size in axes:
                got = actual[axis]
                if got == 0:
                    self._fail(f"size {size} would be 0: this call passes `{name}` of shape {tuple(actual)}, "
                               "and a T.const size must be positive",
                               hint=f"skip the call for empty tensors, or declare the size with "
                                    f"`{size} = T.dynamic(\"{size}\")` to accept them")
                if consts.setdefault(size, got) != got:
                    self._fail(f"size {size} is {consts[size]} from an earlier tensor but {got} from `{name}`")
        return consts

    def _fail(self, msg: str, hint: str | None = None):
        raise TilecError(f"{self.jit_fn.fn.__name__}: {msg}", loc=self.jit_fn._loc, hint=hint)


_TENSOR_TYPES: set = set()  # types already seen to be torch tensors or numpy arrays


def _is_tensor(t) -> bool:
    if type(t) in _TENSOR_TYPES:
        return True
    import numpy as np

    from tilec.runtime import _is_torch

    if _is_torch(t) or isinstance(t, np.ndarray):
        _TENSOR_TYPES.add(type(t))
        return True
    return False


def _tensor_hint(dtype) -> str:
    from tilec.runtime import _TENSOR_HINT

    return _TENSOR_HINT.format(dtype=dtype.name if dtype is not None else "float32")


def _def_loc(fn) -> SourceLoc | None:
    try:
        fdef, file, first_line, indent = parse_function(fn)
    except TilecError:
        return None
    return SourceLoc(file, first_line + fdef.lineno - 1, indent + fdef.col_offset + 1)


class JITKernel:
    """A compiled kernel: call it with tensors; inspect its IR and source."""

    def __init__(self, program: KernelProgram, target: Target, pass_configs: dict | None = None, *,
                 execution_backend: str = "auto", build_key: str | None = None, make_program=None):
        self.program = program
        # restored through the memo (program.module None): the frontend, run again when an IR stage needs it
        self._make_program = make_program
        self.target = target
        self.pass_configs = pass_configs or {}
        self.out_idx = list(program.returns)
        self._backend = compiler.build(program, target, self.pass_configs, execution_backend=execution_backend,
                                       build_key=build_key, make_program=make_program)

    @property
    def params(self):
        return self.program.params

    def __call__(self, *args, **kwargs):
        runtime = _runtime()
        if kwargs:
            runtime.check_keywords(self, kwargs)
        return runtime.launch(self, list(args))

    def get_ir(self, stage: str = "tile") -> str:
        if self.program.module is None and self._make_program is not None and stage in ("tile", "tile-opt", "thread"):
            self.program.module = self._make_program().module  # the same program: the memo's fingerprint matched
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
    from tilec.compiler import paused_gc
    from tilec.frontend import build_prim_func

    loc = _def_loc(func.fn)
    configs = check_pass_configs(pass_configs, loc, compile_flags)
    resolved = resolve_target(target, loc=loc)
    with paused_gc():
        return JITKernel(build_prim_func(func, out_idx), resolved, configs, execution_backend=execution_backend)


_RUNTIME = None


def _runtime():
    """tilec.runtime, imported on the first call (it pulls in numpy; `import tilec` stays light)."""
    global _RUNTIME
    if _RUNTIME is None:
        from tilec import runtime

        _RUNTIME = runtime
    return _RUNTIME


class JITFunction:
    """What `@tilec.jit` returns; see the module docstring for the two styles."""

    def __init__(self, fn, *, out_idx=None, target="auto", pass_configs=None, verbose=False,
                 execution_backend="auto", compile_flags=None, **_options):
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
        self._kernels: dict = {}
        self._by_shapes: dict = {}
        self.execution_backend = execution_backend
        self.out_idx = out_idx
        self._loc = _def_loc(fn)  # the kernel's def, for located errors (read once)
        self.target = target
        self._compile_flags = compile_flags  # nvcc's: under every pass_configs set (explicit keys win)
        self.pass_configs = pass_configs
        self.verbose = verbose
        self._eager = is_eager(fn)
        self._tensor_params = eager_tensor_params(fn) if self._eager else []
        self._signature = inspect.signature(fn)
        self._names = list(self._signature.parameters)
        # every parameter plain positional-or-keyword: a call by position binds by zip
        params = list(self._signature.parameters.values())
        self._positional = all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params)
        self._n_required = max((i + 1 for i, p in enumerate(params) if p.default is inspect.Parameter.empty),
                               default=0)
        self._plans: dict = {}  # frozen specialization -> _BindingPlan
        self._default_spec: tuple | None = None  # (frozen key, spec) for calls passing tensors only
        # The warm path: a call passing exactly the tensors, by position, as the signature's first
        # parameters; keyed by their shapes (which decide every T.const size) -> (kernel, input order).
        n = len(self._tensor_params)
        self._n_by_shapes = n if self._positional and set(self._names[:n]) == set(self._tensor_params) else -1

    # what the kernels are built with: setting either builds new kernels on the next call
    @property
    def pass_configs(self) -> dict:
        return self._pass_configs

    @pass_configs.setter
    def pass_configs(self, configs) -> None:
        self._pass_configs = check_pass_configs(configs, self._loc, self._compile_flags)
        self._forget_kernels()

    @property
    def target(self):
        return self._target

    @target.setter
    def target(self, target) -> None:
        check_target(target, loc=self._loc)
        self._target = target
        self._forget_kernels()

    def _forget_kernels(self) -> None:
        self._kernels.clear()
        self._by_shapes.clear()

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
        from tilec.compiler import paused_gc

        with paused_gc():
            return self._build_now(key_args, make_program)

    def _build_now(self, key_args: dict, make_program) -> JITKernel:
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
                                     execution_backend=self.execution_backend, build_key=hit["build_key"],
                                     make_program=make_program)
                except CacheMissError:
                    pass  # the build it points at is gone: build again
        kernel = JITKernel(make_program(), target, self.pass_configs, execution_backend=self.execution_backend)
        if memo and kernel._backend.build_key:  # several T.Kernels: no one build to point at
            cache.memo_put(memo, kernel.program, kernel._backend.build_key)
        return kernel

    # lazy -----------------------------------------------------------------
    def _lazy(self, *args, **kwargs) -> JITKernel:
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TilecError(f"bad call of {self.fn.__name__}: {e}", loc=self._loc) from None
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
                                 loc=self._loc)
            return build_prim_func(prim, self.out_idx)
        spec, consts = self._split_eager_kwargs(kwargs)
        return build_eager(self.fn, spec, consts)

    def _split_eager_kwargs(self, kwargs: dict) -> tuple[dict, dict]:
        sig = self._signature
        spec = {k: v for k, v in kwargs.items() if k in sig.parameters and k not in self._tensor_params}
        consts = {k: v for k, v in kwargs.items() if k not in spec}
        for name, p in sig.parameters.items():
            if name not in self._tensor_params and name not in spec:
                if p.default is inspect.Parameter.empty:
                    raise TilecError(f"{self.fn.__name__}: compile-time argument `{name}` is missing",
                                     loc=self._loc)
                spec[name] = p.default
        return spec, consts

    # eager ----------------------------------------------------------------
    def compile(self, *args, **kwargs) -> JITKernel:
        """Builds an eager kernel for explicit `T.const` sizes and compile-time arguments; given a
        call's arguments (tensors, whose shapes bind the sizes), the kernel that call runs, built and
        not run, as TileLang's `compile(*args)` (`get_kernel`)."""
        if args:
            return self.get_kernel(*args, **kwargs)
        if not self._eager:
            return self._lazy(**kwargs)
        spec, consts = self._split_eager_kwargs(kwargs)
        self._check_const_names(consts, spec)
        return self._eager_kernel(spec, consts)

    def _check_const_names(self, consts: dict, spec: dict) -> None:
        sizes = self._plan(self._key(spec), spec).const_names
        unknown = sorted(set(consts) - sizes)
        if unknown:
            raise TilecError(f"{self.fn.__name__}.compile: {', '.join(unknown)} "
                             f"{'is' if len(unknown) == 1 else 'are'} neither a parameter nor a T.const size",
                             loc=self._loc,
                             hint=f"its T.const sizes: {', '.join(sorted(sizes)) or 'none'}; its parameters: "
                                  f"{', '.join(inspect.signature(self.fn).parameters)}")

    def _eager_kernel(self, spec: dict, consts: dict) -> JITKernel:
        spec, _ = self._split_eager_kwargs(spec)
        key = (self._key(spec), self._key(consts))
        if key not in self._kernels:
            self._kernels[key] = self._build({"spec": spec, "consts": consts},
                                             lambda: _build_eager(self.fn, spec, consts))
        return self._kernels[key]

    def _plan(self, spec_key, spec: dict) -> _BindingPlan:
        """The binding plan for a specialization: the body is probed once per key."""
        plan = self._plans.get(spec_key)
        if plan is None:
            plan = self._plans[spec_key] = _BindingPlan(self, spec)
        return plan

    def _arguments(self, args: tuple, kwargs: dict) -> dict:
        """The call's arguments by parameter name (a plain positional call binds by zip)."""
        if not kwargs and self._positional and self._n_required <= len(args) <= len(self._names):
            return dict(zip(self._names, args))
        try:
            return dict(self._signature.bind(*args, **kwargs).arguments)
        except TypeError as e:
            raise TilecError(f"bad call of {self.fn.__name__}: {e}", loc=self._loc) from None

    def _specialization(self, others: dict) -> tuple:
        """(frozen key, spec) of the compile-time arguments; cached for a call passing tensors only."""
        if not others and self._default_spec is not None:
            return self._default_spec
        spec, _ = self._split_eager_kwargs(others)
        keyed = (self._key(spec), spec)
        if not others:
            self._default_spec = keyed
        return keyed

    _BY_SHAPES_LIMIT = 256  # distinct shape tuples remembered (T.dynamic sizes vary freely)

    def __call__(self, *args, **kwargs):
        if not self._eager:
            return self._lazy(*args, **kwargs)
        if not kwargs and len(args) == self._n_by_shapes:
            try:
                hit = self._by_shapes.get(tuple([a.shape for a in args]))
            except (AttributeError, TypeError):  # not tensors: the checks below say so
                hit = None
            if hit is not None:  # these shapes bound this kernel before: nothing else to check
                kernel, order = hit
                return _runtime().launch(kernel, [args[i] for i in order])  # = kernel(*...), a frame less
        kernel, tensors, order, compile_time_args = self._resolve(args, kwargs)
        if not kwargs and len(args) == self._n_by_shapes and not compile_time_args:
            if len(self._by_shapes) >= self._BY_SHAPES_LIMIT:
                self._by_shapes.clear()
            self._by_shapes[tuple([a.shape for a in args])] = (kernel, [self._names.index(n) for n in order])
        return kernel(*[tensors[n] for n in order])

    def _resolve(self, args: tuple, kwargs: dict):
        """(kernel, tensors by name, input order, whether compile-time arguments were passed) for an eager
        call: binds the sizes, builds once per key."""
        arguments = self._arguments(args, kwargs)
        tensors, others = {}, {}
        for k, value in arguments.items():
            if k in self._tensor_params:
                tensors[k] = value
            elif hasattr(value, "shape") and hasattr(value, "dtype"):
                raise TilecError(f"{self.fn.__name__}: argument `{k}` is a tensor, but the kernel does not annotate "
                                 "it, so it would be a compile-time value", loc=self._loc,
                                 hint=f"annotate it in the body: `{k}: T.Tensor(shape, dtype)`")
            else:
                others[k] = value
        spec_key, spec = self._specialization(others)
        consts = self._plan(spec_key, spec).bind(tensors)
        kernel = self._kernels.get((spec_key, tuple(sorted(consts.items()))))  # = self._key(consts): ints
        if kernel is None:
            kernel = self._eager_kernel(spec, consts)
        order = kernel.__dict__.get("_eager_inputs")
        if order is None:
            order = kernel._eager_inputs = [p.name for p in kernel.params if not p.is_output]
        if len(tensors) < len(order):
            missing = [n for n in order if n not in tensors]
            if missing:
                raise TilecError(f"{self.fn.__name__}: tensor argument(s) {', '.join(missing)} missing",
                                 loc=self._loc)
        return kernel, tensors, order, bool(others)

    def get_kernel(self, *args, **kwargs) -> JITKernel:
        """The kernel a call with these arguments runs, built (once per key) but not run.

        A factory takes its sizes (as a call does); an eager kernel takes tensors (their shapes
        bind its `T.const` sizes) or the sizes themselves, as `compile()` does.
        """
        if not self._eager:
            return self._lazy(*args, **kwargs)
        if not args and not any(_is_tensor(v) for v in kwargs.values()):
            return self.compile(**kwargs)
        return self._resolve(args, kwargs)[0]

    def get_kernel_source(self, *args, **kwargs) -> str:
        """The kernel source (PTX on the GPU targets) of the kernel these arguments build; see `get_kernel`."""
        return self.get_kernel(*args, **kwargs).get_kernel_source()

    def get_tir(self, *args, **kwargs) -> KernelProgram:
        """The kernel's program before any target (TileLang's TIR; tilec's is tile IR): what
        `tilec.tools.Analyzer.analysis` reads; `str()` of its `.module` prints it."""
        return self.build_program(*args, **kwargs)


def jit(func=None, *, out_idx=None, target="auto", execution_backend="auto", verbose=False, pass_configs=None,
        compile_flags=None, debug_root_path=None):
    """Decorator for kernels, bare (`@jit`) or with options (`@jit(out_idx=[-1])`)."""
    if func is None:
        return functools.partial(jit, out_idx=out_idx, target=target, execution_backend=execution_backend,
                                 verbose=verbose, pass_configs=pass_configs, compile_flags=compile_flags)
    return JITFunction(func, out_idx=out_idx, target=target, pass_configs=pass_configs, verbose=verbose,
                       execution_backend=execution_backend, compile_flags=compile_flags)

