"""tilec's dialects: `tile` (ours) and the upstream-named `nvvm` subset.

`context()` is the one place that says which dialects a tilec module may
contain; the CLI, the tests and the passes parse IR through it.
"""

from __future__ import annotations

from xdsl.context import Context


def print_ir(op) -> str:
    """The custom-syntax text of an IR operation (a module, usually), newline-terminated."""
    import io

    from xdsl.printer import Printer

    out = io.StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue() + "\n"


def walk_ops(root) -> list:
    """`root` and every op nested in it, in the order of xDSL's `root.walk()` (pre-order), as a list:
    xDSL's walk is a chain of generators, one per region, block and op (~2.5x slower on a lowered
    gemm's 4400 ops, where the thread passes that rewrite nothing walk every op)."""
    ops, stack = [], [root]
    while stack:
        op = stack.pop()
        ops.append(op)
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                inner = block.last_op
                while inner is not None:
                    stack.append(inner)
                    inner = inner.prev_op
    return ops


_IS_TERMINATOR: dict[type, bool] = {}  # per op class (traits are class-level): has_trait is ~5 µs a call


def append_op(block, op) -> None:
    """Adds `op` at the end of `block`, before its terminator if it has one already."""
    last = block.last_op
    if last is not None:
        terminator = _IS_TERMINATOR.get(type(last))
        if terminator is None:
            from xdsl.traits import IsTerminator

            terminator = _IS_TERMINATOR[type(last)] = last.has_trait(IsTerminator)
        if terminator:
            block.insert_op_before(op, last)
            return
    block.add_op(op)


def context() -> Context:
    """A fresh xDSL context with every dialect tilec's IR levels use."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.gpu import GPU
    from xdsl.dialects.llvm import LLVM
    from xdsl.dialects.math import Math
    from xdsl.dialects.memref import MemRef
    from xdsl.dialects.scf import Scf
    from xdsl.dialects.vector import Vector

    from tilec.dialects.tile import Tile

    ctx = Context()
    for dialect in (Builtin, Func, Arith, Math, Scf, MemRef, Vector, GPU, LLVM, Tile):
        ctx.load_dialect(dialect)
    try:
        from tilec.dialects.nvvm import NVVM
    except ImportError:  # the nvvm dialect is optional until the NVVM target lands
        pass
    else:
        ctx.load_dialect(NVVM)
    return ctx
