"""What the frontend hands the compiler: a kernel's tile IR and its calling convention
(which argument is which tensor, which are outputs, how dynamic sizes bind).

Light on purpose (no IR imports at module load): a kernel found in the cache is described
by these alone (`module` is then None).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilec.dtypes import DType
from tilec.errors import SourceLoc


@dataclass
class Param:
    """One argument of the kernel function: a global tensor or a scalar."""

    name: str
    dtype: DType
    shape: tuple | None  # ints and dynamic `Symbol`s; None for a scalar
    is_output: bool = False
    workspace: bool = False  # a T.alloc_global scratch tensor: allocated like an output, never returned


@dataclass
class KernelProgram:
    """A built kernel: its IR and the calling convention the runtime follows."""

    module: object  # the tile IR ModuleOp; None for a kernel restored from the cache
    name: str
    params: list[Param]
    returns: list[int] = field(default_factory=list)  # indices of params returned, in order
    loc: SourceLoc | None = None

    @property
    def func(self):
        """The `func.func` holding the kernel."""
        from xdsl.dialects import func

        return next(op for op in self.module.ops if isinstance(op, func.FuncOp))
