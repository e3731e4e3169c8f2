"""Environment variables, read once here (STYLE 9); the TILELANG_* spellings count too."""

from __future__ import annotations

import os


def _env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(f"TILEC_{name}")
    if value is None:
        value = os.environ.get(f"TILELANG_{name}", default)
    return value


def _flag(name: str) -> bool:
    return (_env(name, "0") or "0").lower() in ("1", "true", "yes", "on")


DEBUG = _flag("DEBUG")
"""TILEC_DEBUG=1: internal errors keep their Python traceback."""
VERIFY = _flag("VERIFY")
"""TILEC_VERIFY=1: verify the IR after every pass."""
DUMP_IR = _env("DUMP_IR")
"""TILEC_DUMP_IR=dir: write the IR after every pass there."""
CACHE_DIR = _env("CACHE_DIR", os.path.join(os.path.expanduser("~"), ".tilec", "cache"))
DISABLE_CACHE = _flag("DISABLE_CACHE")
AUTO_TUNING_DISABLE_CACHE = _flag("AUTO_TUNING_DISABLE_CACHE")
DEFAULT_TARGET = _env("DEFAULT_TARGET", "auto")
LOG = (_env("LOG", "") or "").strip().lower()
"""TILEC_LOG=debug|info|warning (1: info): tilec's log messages on stderr (default: none)."""
LOADER = (_env("LOADER", "") or "").strip().lower()
"""TILEC_LOADER=pycuda|cuda-bindings: the CUDA loader when a kernel names none (default: pycuda if it imports)."""
