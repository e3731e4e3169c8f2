"""`tilec.autotune`: the decorator; the tuner itself lives in `tilec.autotuner` (TileLang's module name)."""

from tilec.autotuner.tuner import AutoTuner, AutotuneResult, autotune

__all__ = ["AutoTuner", "AutotuneResult", "autotune"]
