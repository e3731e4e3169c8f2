"""`tilec.autotune`: try each configuration of a `@tilec.jit` factory, keep the fastest correct one.

    @tilec.autotune(configs=[{"block_M": 64}, {"block_M": 128}], ref_prog=torch_matmul)
    @tilec.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128): ...

    kernel = matmul(1024, 1024, 1024)   # compiles, checks and times each config → the best JITKernel

Each configuration's keyword arguments are added to the call's.  A configuration that fails
to compile, or whose outputs differ from `ref_prog` on the same random inputs, is skipped
(and reported); the best one is remembered per call arguments, in memory and on disk
(`TILEC_AUTO_TUNING_DISABLE_CACHE=1` turns the disk part off).
"""

from __future__ import annotations

import functools
import inspect
import json
import logging

from tilec import config
from tilec.compiler import cache
from tilec.errors import TilecError

log = logging.getLogger("tilec.autotune")


class AutoTuner:
    """What `@tilec.autotune(...)` makes of a `@tilec.jit` factory."""

    def __init__(self, jit_fn, configs, *, warmup=25, rep=100, ref_prog=None, rtol=1e-2, atol=1e-2,
                 skip_check=False, max_mismatched_ratio=0.01):
        from tilec.jit import JITFunction

        if not isinstance(jit_fn, JITFunction):
            raise TilecError("@tilec.autotune must be stacked on a @tilec.jit function",
                             hint="write @tilec.autotune(...) above @tilec.jit(...)")
        configs = list(configs() if callable(configs) else configs)
        if not configs or not all(isinstance(c, dict) for c in configs):
            raise TilecError("tilec.autotune needs a non-empty list of dicts of keyword arguments")
        functools.update_wrapper(self, jit_fn.fn)
        self.jit_fn = jit_fn
        self.configs = configs
        self.bench = {"warmup": warmup, "rep": rep}
        self.check = None if skip_check or ref_prog is None else \
            {"ref_prog": ref_prog, "rtol": rtol, "atol": atol, "max_mismatched_ratio": max_mismatched_ratio}
        self.results: list[dict] = []  # the last tuning run: config, ms or error
        self._best: dict = {}

    def _disk_key(self, args: tuple, kwargs: dict) -> str | None:
        if config.AUTO_TUNING_DISABLE_CACHE:
            return None
        return cache.memo_key(self.jit_fn.fn, args, kwargs, extra=("autotune", json.dumps(self.configs,
                                                                                       sort_keys=True, default=str),
                                                                   repr(self.jit_fn.target)))

    def __call__(self, *args, **kwargs):
        key = (args, tuple(sorted(kwargs.items())))
        try:
            hash(key)
        except TypeError:
            key = repr(key)
        if key not in self._best:
            self._best[key] = self.tune(*args, **kwargs)
        best = self._best[key]
        return self.jit_fn(*args, **{**kwargs, **best})

    def tune(self, *args, **kwargs) -> dict:
        """The fastest correct configuration for these arguments (from the disk cache when known)."""
        disk = self._disk_key(args, kwargs)
        if disk is not None:
            hit = cache.get(disk)
            if hit is not None and hit.get("config") in self.configs:
                return hit["config"]
        params = inspect.signature(self.jit_fn.fn).parameters
        self.results = []
        for cfg in self.configs:
            unknown = [k for k in cfg if k not in params]
            if unknown:
                raise TilecError(f"autotune config {cfg} names {unknown}, which {self.jit_fn.fn.__name__} does not take")
            self.results.append(self._measure(cfg, args, kwargs))
        good = [r for r in self.results if "ms" in r]
        if not good:
            reasons = "; ".join(f"{r['config']}: {r['error']}" for r in self.results)
            raise TilecError(f"autotune: no configuration of {self.jit_fn.fn.__name__} compiled and passed the check "
                             f"({reasons})")
        best = min(good, key=lambda r: r["ms"])["config"]
        if disk is not None:
            cache.put(disk, {"config": best, "results": self.results})
        return best

    def _measure(self, cfg: dict, args: tuple, kwargs: dict) -> dict:
        try:
            kernel = self.jit_fn(*args, **{**kwargs, **cfg})
            profiler = kernel.get_profiler()
            if self.check is not None:
                profiler.assert_allclose(**self.check)
            ms = profiler.do_bench(**self.bench)
        except (TilecError, AssertionError) as e:
            log.info("autotune: %s skipped: %s", cfg, str(e).splitlines()[0])
            return {"config": cfg, "error": str(e).splitlines()[0]}
        return {"config": cfg, "ms": float(ms)}


def autotune(configs=None, warmup=25, rep=100, timeout=None, ref_prog=None, rtol=1e-2, atol=1e-2, skip_check=False,
             max_mismatched_ratio=0.01, **_options):
    """Decorator stacked on `@tilec.jit`: compiles, checks and times each config, keeps the best."""
    if configs is None:
        raise TilecError("tilec.autotune needs configs=[{...}, ...]")

    def wrap(jit_fn):
        return AutoTuner(jit_fn, configs, warmup=warmup, rep=rep, ref_prog=ref_prog, rtol=rtol, atol=atol,
                         skip_check=skip_check, max_mismatched_ratio=max_mismatched_ratio)

    return wrap
