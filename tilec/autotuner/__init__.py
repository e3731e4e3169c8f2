"""`tilec.autotuner`: TileLang's autotuning API (`tilelang.autotuner`).

    from tilec.autotuner import autotune, AutoTuner, set_autotune_inputs
"""

from tilec.autotune import AutoTuner, autotune
from tilec.autotuner.capture import get_autotune_inputs, set_autotune_inputs

__all__ = ["AutoTuner", "autotune", "get_autotune_inputs", "set_autotune_inputs"]
