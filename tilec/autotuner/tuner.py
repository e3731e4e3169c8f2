"""Autotuning: try each configuration of a `@tilec.jit` kernel, keep the fastest correct one.

    @tilec.autotune(configs=[{"block_M": 64}, {"block_M": 128}], ref_prog=torch_matmul)
    @tilec.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=None): ...

    kernel = matmul(1024, 1024, 1024)              # tunes → the best JITKernel (.config, .latency)
    kernel = matmul(1024, 1024, 1024, block_M=64)  # a tunable passed explicitly: no tuning, compiled as asked
    kernel = matmul.compile(1024, 1024, 1024)      # the tuned kernel (an eager kernel: not run)

As TileLang's: `configs` is a list of keyword-argument dicts or a callable taking the call's
arguments and returning one; a configuration that fails to compile, or whose outputs differ
from `ref_prog` on the same inputs, is skipped (and reported); the inputs are random
(`supply_type`), made by `supply_prog(params)`, or given with `set_autotune_inputs(...)`.
A tqdm progress bar shows the configurations (when tqdm is installed). The best configuration
is remembered per call arguments, in memory and on disk (`TILEC_AUTO_TUNING_DISABLE_CACHE=1`
turns the disk part off). An eager kernel called through the tuner runs with the best
configuration; a factory returns the best kernel.

`AutoTuner.from_kernel(factory, configs).set_compile_args(...).set_profile_args(...).run()`
is TileLang's explicit form for a factory returning a `T.prim_func`.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
from dataclasses import dataclass

from tilec import config
from tilec.compiler import cache
from tilec.errors import TilecError
from tilec.utils.tensor import TensorSupplyType

from .capture import get_autotune_inputs

log = logging.getLogger("tilec.autotune")

_CONFIG_KEYS_RESERVED = ("pass_configs",)


@dataclass
class AutotuneResult:
    """TileLang's result record: the best latency and config, the reference's latency, the kernel."""

    latency: float | None = None
    config: dict | None = None
    ref_latency: float | None = None
    libcode: str | None = None
    func: object = None
    kernel: object = None


def _progress(items, desc: str):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return items
    return tqdm(items, desc=desc, leave=False)


def _set_result(kernel, latency, config_, ref_latency):
    kernel.latency, kernel.config, kernel.ref_latency = latency, config_, ref_latency
    return kernel


class _Measure:
    """Compiles, checks and times one configuration with the tuner's profile settings."""

    def __init__(self, *, warmup, rep, supply_type, ref_prog, supply_prog, rtol, atol, max_mismatched_ratio,
                 skip_check, manual_check_prog):
        self.bench = {"warmup": warmup, "rep": rep}
        self.supply_type = supply_type or TensorSupplyType.Auto
        self.ref_prog, self.supply_prog = ref_prog, supply_prog
        self.check = None if skip_check or ref_prog is None else \
            {"ref_prog": ref_prog, "rtol": rtol, "atol": atol, "max_mismatched_ratio": max_mismatched_ratio}
        self.manual_check_prog = None if skip_check else manual_check_prog

    def inputs(self, kernel):
        given = get_autotune_inputs()
        if given is not None:
            return list(given)
        if self.supply_prog is not None:
            return list(self.supply_prog([p for p in kernel.params if not p.is_output]))
        return None

    def __call__(self, build, cfg: dict) -> dict:
        try:
            kernel = build(cfg)
            profiler = kernel.get_profiler(self.supply_type)
            ins = self.inputs(kernel)
            if self.check is not None:
                profiler.assert_allclose(**self.check, input_tensors=ins)
            if self.manual_check_prog is not None:
                ins_ = ins if ins is not None else profiler.inputs()
                self.manual_check_prog(kernel(*ins_), *ins_)
            ms = profiler.do_bench(input_tensors=ins, **self.bench)
        except (TilecError, AssertionError) as e:
            log.info("autotune: %s skipped: %s", cfg, str(e).splitlines()[0])
            return {"config": cfg, "error": str(e).splitlines()[0]}
        return {"config": cfg, "ms": float(ms), "kernel": kernel}


class AutoTuner:
    """What `@tilec.autotune(...)` makes of a `@tilec.jit` function (see the module docstring)."""

    def __init__(self, jit_fn, configs, *, warmup=25, rep=100, ref_prog=None, rtol=1e-2, atol=1e-2,
                 skip_check=False, max_mismatched_ratio=0.01, supply_type=None, supply_prog=None,
                 manual_check_prog=None, do_not_specialize=None):
        from tilec.jit import JITFunction

        if not isinstance(jit_fn, JITFunction):
            raise TilecError("@tilec.autotune must be stacked on a @tilec.jit function",
                             hint="write @tilec.autotune(...) above @tilec.jit(...)")
        if configs is None or not (callable(configs) or isinstance(configs, list | tuple)):
            raise TilecError("tilec.autotune needs configs=[{...}, ...] (or a function returning them)")
        functools.update_wrapper(self, jit_fn.fn)
        self.jit_fn = jit_fn
        self._configs = configs if callable(configs) else list(configs)
        if not callable(configs):
            self._check_configs(self._configs)
        self.measure = _Measure(warmup=warmup, rep=rep, supply_type=supply_type, ref_prog=ref_prog,
                                supply_prog=supply_prog, rtol=rtol, atol=atol, max_mismatched_ratio=max_mismatched_ratio,
                                skip_check=skip_check, manual_check_prog=manual_check_prog)
        self.do_not_specialize = tuple(do_not_specialize or ())
        self.results: list[dict] = []  # the last tuning run: config, ms or error
        self._best: dict = {}

    @property
    def configs(self):
        """The configurations: a list of dicts, or the function making them from the call's arguments."""
        return self._configs

    @configs.setter
    def configs(self, value) -> None:
        self._configs = value if callable(value) else self._check_configs(value)

    @property
    def check(self) -> dict | None:
        """The correctness check each configuration passes (ref_prog, rtol, atol, ...), None with skip_check."""
        return self.measure.check

    @staticmethod
    def _check_configs(configs) -> list[dict]:
        configs = list(configs)
        if not configs or not all(isinstance(c, dict) for c in configs):
            raise TilecError("tilec.autotune needs a non-empty list of dicts of keyword arguments")
        return configs

    def _configs_for(self, args: tuple, kwargs: dict) -> list[dict]:
        if not callable(self._configs):
            return self._configs
        return self._check_configs(self._configs(*args, **kwargs))

    def _tunables_given(self, configs: list[dict], args: tuple, kwargs: dict) -> bool:
        """Whether the call passes a tunable itself (then the kernel is compiled as asked, untuned)."""
        names = list(inspect.signature(self.jit_fn.fn).parameters)
        tunables = [k for k in configs[0] if k not in _CONFIG_KEYS_RESERVED]
        return any(k in kwargs for k in tunables) or any(k in names and names.index(k) < len(args) for k in tunables)

    def _memo_key(self, args: tuple, kwargs: dict):
        kept = {k: v for k, v in kwargs.items() if k not in self.do_not_specialize}
        key = (tuple(_freeze(a) for a in args), tuple(sorted((k, _freeze(v)) for k, v in kept.items())))
        try:
            hash(key)
        except TypeError:
            key = repr(key)
        return key

    def _disk_key(self, args: tuple, kwargs: dict, configs: list[dict]) -> str | None:
        if config.AUTO_TUNING_DISABLE_CACHE:
            return None
        return cache.memo_key(self.jit_fn.fn, tuple(_freeze(a) for a in args),
                              {k: _freeze(v) for k, v in kwargs.items()},
                              extra=("autotune", json.dumps(configs, sort_keys=True, default=str),
                                     repr(self.jit_fn.target)))

    # the kernel -----------------------------------------------------------------
    def _kernel(self, args: tuple, kwargs: dict, cfg: dict):
        """The JITKernel for these call arguments and one configuration (not run)."""
        merged = {**kwargs, **{k: v for k, v in cfg.items() if k not in _CONFIG_KEYS_RESERVED}}
        return self.jit_fn.get_kernel(*args, **merged)

    def best_config(self, *args, **kwargs) -> dict | None:
        """The tuned configuration for these arguments (None when the call passes the tunables itself)."""
        configs = self._configs_for(args, kwargs)
        if self._tunables_given(configs, args, kwargs):
            log.info("autotune: %s passes tunable arguments itself: compiled as given, not tuned",
                     self.jit_fn.fn.__name__)
            return None
        key = self._memo_key(args, kwargs)
        if key not in self._best:
            self._best[key] = self.tune(configs, args, kwargs)
        return self._best[key]

    def compile(self, *args, **kwargs):
        """The kernel with the best configuration for these arguments, built but not run."""
        best = self.best_config(*args, **kwargs)
        kernel = self._kernel(args, kwargs, best or {})
        if best is not None and getattr(kernel, "config", None) is None:
            _set_result(kernel, None, best, None)
        return kernel

    def get_kernel_source(self, *args, **kwargs) -> str:
        return self.compile(*args, **kwargs).get_kernel_source()

    def __call__(self, *args, **kwargs):
        best = self.best_config(*args, **kwargs)
        if not self.jit_fn._eager:
            return self.compile(*args, **kwargs)
        return self.jit_fn(*args, **{**kwargs, **{k: v for k, v in (best or {}).items()
                                                  if k not in _CONFIG_KEYS_RESERVED}})

    # tuning -------------------------------------------------------------------------
    def tune(self, configs: list[dict], args: tuple = (), kwargs: dict | None = None) -> dict:
        """The fastest correct configuration for these arguments (from the disk cache when known)."""
        kwargs = kwargs or {}
        disk = self._disk_key(args, kwargs, configs)
        if disk is not None:
            hit = cache.get(disk)
            if hit is not None and hit.get("config") in configs:
                return hit["config"]
        params = inspect.signature(self.jit_fn.fn).parameters
        self.results = []
        for cfg in _progress(configs, f"autotune {self.jit_fn.fn.__name__}"):
            unknown = [k for k in cfg if k not in params and k not in _CONFIG_KEYS_RESERVED]
            if unknown:
                raise TilecError(f"autotune config {cfg} names {unknown}, which {self.jit_fn.fn.__name__} does not take")
            self.results.append(self.measure(lambda c: self._kernel(args, kwargs, c), cfg))
        good = [r for r in self.results if "ms" in r]
        if not good:
            reasons = "; ".join(f"{r['config']}: {r['error']}" for r in self.results)
            raise TilecError(f"autotune: no configuration of {self.jit_fn.fn.__name__} compiled and passed the check "
                             f"({reasons})")
        winner = min(good, key=lambda r: r["ms"])
        _set_result(winner["kernel"], winner["ms"], winner["config"], None)
        for r in self.results:
            r.pop("kernel", None)
        if disk is not None:
            cache.put(disk, {"config": winner["config"], "results": self.results})
        return winner["config"]

    # TileLang's explicit form ---------------------------------------------------------
    @classmethod
    def from_kernel(cls, kernel, configs):
        """An explicit tuner for `kernel(**config)` returning a `T.prim_func` (TileLang's builder form)."""
        return _ExplicitTuner(kernel, configs)


class _ExplicitTuner:
    """`AutoTuner.from_kernel(factory, configs).set_compile_args(...).set_profile_args(...).run(...)`."""

    def __init__(self, factory, configs):
        self.factory, self.configs = factory, configs
        self.compile_args: dict = {}
        self.profile_args: dict = {}

    def set_compile_args(self, out_idx=None, target="auto", execution_backend="auto", target_host=None,
                         verbose=False, pass_configs=None):
        self.compile_args = {"out_idx": out_idx, "target": target, "execution_backend": execution_backend,
                             "pass_configs": pass_configs}
        return self

    def set_profile_args(self, warmup=25, rep=100, timeout=30, supply_type=None, ref_prog=None, supply_prog=None,
                         rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False, manual_check_prog=None,
                         cache_input_tensors=False):
        self.profile_args = {"supply_type": supply_type, "ref_prog": ref_prog, "supply_prog": supply_prog,
                             "rtol": rtol, "atol": atol, "max_mismatched_ratio": max_mismatched_ratio,
                             "skip_check": skip_check, "manual_check_prog": manual_check_prog}
        return self

    def run(self, warmup: int = 25, rep: int = 100, timeout: int = 30) -> AutotuneResult:
        from tilec.jit import compile as compile_prim

        configs = self.configs() if callable(self.configs) else list(self.configs)
        measure = _Measure(warmup=warmup, rep=rep, **{"supply_type": None, "ref_prog": None, "supply_prog": None,
                                                      "rtol": 1e-2, "atol": 1e-2, "max_mismatched_ratio": 0.01,
                                                      "skip_check": False, "manual_check_prog": None,
                                                      **self.profile_args})
        results = [measure(lambda c: compile_prim(self.factory(**c), **self.compile_args), cfg)
                   for cfg in _progress(configs, f"autotune {getattr(self.factory, '__name__', 'kernel')}")]
        good = [r for r in results if "ms" in r]
        if not good:
            reasons = "; ".join(f"{r['config']}: {r['error']}" for r in results)
            raise TilecError(f"autotune: no configuration compiled and passed the check ({reasons})")
        best = min(good, key=lambda r: r["ms"])
        kernel = _set_result(best["kernel"], best["ms"], best["config"], None)
        return AutotuneResult(latency=best["ms"], config=best["config"], libcode=kernel.get_kernel_source(),
                              func=self.factory(**best["config"]), kernel=kernel)


def _report_unapplied(**options) -> None:
    """Options tilec's tuner does not act on: a warning naming each one set (never silently dropped)."""
    import warnings

    from tilec.errors import TilecWarning

    for name, (value, default) in options.items():
        if value != default:
            warnings.warn(f"tilec.autotune: {name}={value!r} is not applied (tilec compiles and times each "
                          "configuration in turn, in-process, with no time limit or early stop)", TilecWarning,
                          stacklevel=3)


def _freeze(x):
    if isinstance(x, list | tuple):
        return tuple(_freeze(i) for i in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    if hasattr(x, "shape") and hasattr(x, "dtype"):  # a tensor: its shape and dtype are what a kernel depends on
        return ("tensor", tuple(x.shape), str(x.dtype))
    return x


def autotune(func=None, *, configs=None, warmup=25, rep=100, timeout=100, supply_type=None, ref_prog=None,
             supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False,
             manual_check_prog=None, cache_input_tensors=False, do_not_specialize=None, early_stop=False,
             early_stop_factor=2.0):
    """Decorator stacked on `@tilec.jit`: compiles, checks and times each config, keeps the best."""
    if callable(func):
        raise TilecError("tilec.autotune needs arguments: @tilec.autotune(configs=[...]) above @tilec.jit")
    if configs is None:
        raise TilecError("tilec.autotune needs configs=[{...}, ...]")
    _report_unapplied(timeout=(timeout, 100), early_stop=(early_stop, False),
                      cache_input_tensors=(cache_input_tensors, False))

    def wrap(jit_fn):
        return AutoTuner(jit_fn, configs, warmup=warmup, rep=rep, ref_prog=ref_prog, rtol=rtol, atol=atol,
                         skip_check=skip_check, max_mismatched_ratio=max_mismatched_ratio, supply_type=supply_type,
                         supply_prog=supply_prog, manual_check_prog=manual_check_prog,
                         do_not_specialize=do_not_specialize)

    return wrap
