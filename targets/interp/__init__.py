"""The interpreter target: runs tile IR with numpy on the CPU (`target="interp"`).

It is the semantic oracle of the compiler: the GPU targets must compute what it computes,
within floating-point tolerance.

    from tilec.targets.interp import run
    run(module, [a, b, c])          # c updated in place
"""

from .interpreter import run

__all__ = ["run"]
