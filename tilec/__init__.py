"""tilec: a tile-IR GPU compiler in Python with a TileLang-compatible surface.

`import tilec as tilelang` and `import tilec.language as T` are all a
TileLang user changes (or `python -m tilec.compat`, which maps the names).
The package-level names follow TileLang's `tilelang` package; the submodules
TileLang programs import (`autotuner`, `testing`, `profiler`, `layout`, `env`,
`utils`, `math`, `transform`, `carver`, `contrib`, `engine`) load on first use.
"""

import importlib as _importlib
import logging as _logging

from tilec import dataclass_code as _dataclass_code

_dataclass_code.install()  # before any dataclass is defined: tilec's and xDSL's (~0.07 s of a cold build)

from tilec import lazy_formats as _lazy_formats
from tilec import log as _log  # noqa: F401 - sets up the `tilec` logger (TILEC_LOG)
from tilec import profiler
from tilec._version import __version__
from tilec.autotune import autotune
from tilec.dtypes import DType as DataType
from tilec.env import disable_cache, enable_cache, env, is_cache_enabled
from tilec.errors import TilecError
from tilec.jit import JITKernel, compile, jit  # noqa: A004 - TileLang's name
from tilec.math import cdiv, next_power_of_2
from tilec.profiler import Profiler
from tilec.target import Target
from tilec.transform import PassConfigKey
from tilec.utils.tensor import TensorSupplyType

logger = _logging.getLogger("tilec")
_lazy_formats.install()  # xDSL's op formats parsed on first use (~0.08 s of a cold build)

_SUBMODULES = ("autotuner", "carver", "contrib", "engine", "language", "layout", "testing", "tools", "tvm", "utils")


def set_log_level(level) -> None:
    """Sets the level of tilec's logger ('DEBUG', 'INFO', ... or a logging level), as TileLang's does."""
    if isinstance(level, str):
        level = getattr(_logging, level.upper(), _logging.INFO)
    logger.setLevel(level)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return _importlib.import_module(f"tilec.{name}")
    raise AttributeError(f"module 'tilec' has no attribute {name!r}")


__all__ = ["DataType", "JITKernel", "PassConfigKey", "Profiler", "Target", "TensorSupplyType", "TilecError", "__version__",
           "autotune", "cdiv", "compile", "disable_cache", "enable_cache", "env", "is_cache_enabled", "jit",
           "logger", "next_power_of_2", "profiler", "set_log_level"]
