"""`tilec.engine`: TileLang's `engine` hooks that programs register (`callback`)."""

from . import callback
from .callback import register_cuda_postproc, register_cuda_postproc_callback

__all__ = ["callback", "register_cuda_postproc", "register_cuda_postproc_callback"]
