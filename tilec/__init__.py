"""tilec: a tile-IR GPU compiler in Python with a TileLang-compatible surface.

`import tilec as tilelang` and `import tilec.language as T` are all a
TileLang user changes.
"""

from tilec import log as _log  # noqa: F401 - sets up the `tilec` logger (TILEC_LOG)
from tilec import profiler
from tilec._version import __version__
from tilec.autotune import autotune
from tilec.errors import TilecError
from tilec.jit import JITKernel, compile, jit  # noqa: A004 - TileLang's name
from tilec.target import Target

__all__ = ["JITKernel", "Target", "TilecError", "__version__", "autotune", "compile", "jit", "profiler"]
