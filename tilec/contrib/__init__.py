"""`tilec.contrib`: TileLang's `contrib` helpers that programs use (`nvcc.get_target_compute_version`)."""

from . import nvcc

__all__ = ["nvcc"]
