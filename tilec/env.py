"""`tilec.env`: the environment a run sees (`tilelang.env`), and switching the kernel cache on and off.

    tilec.env.TILELANG_CACHE_DIR      # where compiled kernels are cached (TILEC_CACHE_DIR)
    tilec.disable_cache()             # this process compiles every kernel afresh

The values come from `tilec.config` (read once from TILEC_* / TILELANG_* variables);
`enable_cache` / `disable_cache` change the process's setting, as TileLang's do.
"""

from __future__ import annotations

from tilec import config

__all__ = ["disable_cache", "enable_cache", "env", "is_cache_enabled"]


class Environment:
    """TileLang's `env` object: attribute names as TileLang spells them, values from tilec.config."""

    @property
    def TILELANG_CACHE_DIR(self) -> str:  # noqa: N802 - TileLang's name
        return config.CACHE_DIR

    @property
    def TILELANG_DISABLE_CACHE(self) -> str:  # noqa: N802
        return "1" if config.DISABLE_CACHE else "0"

    @property
    def TILELANG_AUTO_TUNING_DISABLE_CACHE(self) -> str:  # noqa: N802
        return "1" if config.AUTO_TUNING_DISABLE_CACHE else "0"

    @property
    def TILELANG_DEFAULT_TARGET(self) -> str:  # noqa: N802
        return str(config.DEFAULT_TARGET)

    def is_cache_enabled(self) -> bool:
        return not config.DISABLE_CACHE

    def enable_cache(self) -> None:
        config.DISABLE_CACHE = False

    def disable_cache(self) -> None:
        config.DISABLE_CACHE = True

    def is_autotune_cache_disabled(self) -> bool:
        return config.AUTO_TUNING_DISABLE_CACHE

    def get_default_target(self) -> str:
        return str(config.DEFAULT_TARGET)

    def is_light_import(self) -> bool:
        return False


env = Environment()
is_cache_enabled = env.is_cache_enabled
enable_cache = env.enable_cache
disable_cache = env.disable_cache
