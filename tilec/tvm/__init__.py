"""An import-only stand-in for TVM (`from tilelang import tvm`, `import tvm` under tilec.compat).

tilec does not emulate TVM (issue 11, item 6). What TileLang programs take from it and tilec
can give: `DataType` (tilec's dtype: `DataType("float16").bits`). Everything else imports (so
a program that only imports it, or names it in an annotation, runs) and raises
`tilec.refused.NotEmulated` when used: `tirx` expression building, `tvm.target.Target`, ...
"""

from tilec.dtypes import DType as DataType
from tilec.refused import module_getattr

from . import target, tirx

__getattr__ = module_getattr("tvm")
__all__ = ["DataType", "target", "tirx"]
