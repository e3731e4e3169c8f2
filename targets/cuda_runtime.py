"""Temporary re-export: the CUDA loaders live in `tilec.targets.cuda.loader`.

Remove when bench/softmax_regimes.py imports `tilec.targets.cuda.loader`.
"""

from tilec.targets.cuda.loader import *  # noqa: F403 - the whole public interface, unchanged
from tilec.targets.cuda.loader import __all__  # noqa: F401
