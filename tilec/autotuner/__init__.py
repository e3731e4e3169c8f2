"""`tilec.autotuner`: TileLang's autotuning API (`tilelang.autotuner`).

    from tilec.autotuner import autotune, AutoTuner, set_autotune_inputs
"""

from tilec.autotuner.tuner import AutoTuner, AutotuneResult, autotune
from tilec.autotuner.capture import get_autotune_inputs, set_autotune_inputs

__all__ = ["AutoTuner", "AutotuneResult", "autotune", "get_autotune_inputs", "set_autotune_inputs"]
