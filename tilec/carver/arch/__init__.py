"""`tilec.carver.arch`: `driver` (device facts); TileLang's device models (`CUDA`, `CDNA`) import and refuse."""

from tilec.refused import module_getattr

from . import driver

__getattr__ = module_getattr("tilelang.carver.arch", "TileLang's device models feed its TVM schedule search")
__all__ = ["driver"]
