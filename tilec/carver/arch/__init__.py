"""`tilec.carver.arch`: `driver` (device facts), `CUDA` (the device model of `tilec.tools.Analyzer`); TileLang's
other device models (`CDNA`, ...) import and refuse."""

from tilec.refused import module_getattr

from . import driver
from .cuda import CUDA

__getattr__ = module_getattr("tilelang.carver.arch", "TileLang's device models feed its TVM schedule search")
__all__ = ["CUDA", "driver"]
