"""Import-only stand-in for `tilelang.cuda.intrinsics` (TileLang's hand-written MMA / layout emitters over TVM TIR).

Programs that import it load; every name refuses when used (tilec.refused). Write the
computation with T.gemm, which tilec lowers to mma.sync / wgmma itself.
"""

from tilec.refused import module_getattr

__getattr__ = module_getattr("tilelang.cuda.intrinsics", "TileLang's CUDA intrinsic emitters generate TVM TIR, which tilec does not emulate: use T.gemm")
