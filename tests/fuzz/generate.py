"""Generated fuzz cases: `generate(seed)` for a seeded case, `cases()` for hypothesis.

A `Case` is a `Program` (source text + reference) plus the seed of its input data.  Print
`case.source` to see the kernel; `python -m fuzz.generate SEED` (from tests/) prints one.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from .draw import Draw, HypothesisDraw
from .program import Program
from .recipes import copy, elementwise, reduce, scan
from .recipes_fused import fused
from .recipes_gemm import atomic, gemm

# How often each kind is drawn (out of the sum).
RECIPES = {"elementwise": elementwise, "reduce": reduce, "scan": scan, "copy": copy, "gemm": gemm,
           "atomic": atomic, "fused": fused}
WEIGHTS = {"elementwise": 3, "reduce": 3, "scan": 2, "copy": 3, "gemm": 3, "atomic": 2, "fused": 3}


@dataclass
class Case:
    seed: int  # the structure's seed (-1 under hypothesis)
    data_seed: int
    prog: Program

    @property
    def kind(self) -> str:
        return self.prog.kind

    @property
    def source(self) -> str:
        return self.prog.source()

    @property
    def threads(self) -> int:
        return self.prog.nthreads

    def data(self) -> dict:
        """name -> float64 array of every tensor's initial contents (already rounded to the
        tensor's dtype; outputs are NaN)."""
        import torch

        rng = np.random.default_rng(self.data_seed)
        out = {}
        for t in self.prog.tensors:
            if t.role == "out":
                out[t.name] = np.full(t.shape, np.nan)
                continue
            x = np.clip(rng.standard_normal(t.shape), -3.0, 3.0)
            out[t.name] = torch.from_numpy(x).to(getattr(torch, t.dtype)).double().numpy()
        return out

    def describe(self) -> str:
        return f"seed {self.seed} kind {self.kind} threads {self.prog.threads} configs {self.prog.pass_configs}"


def _kinds(kinds) -> list[str]:
    kinds = [k for k in WEIGHTS if k in RECIPES] if kinds is None else list(kinds)
    return [k for k in kinds for _ in range(WEIGHTS.get(k, 1))]


def build(d, kinds=None) -> Program:
    return RECIPES[d.choice(_kinds(kinds))](d)


def generate(seed: int, kinds=None) -> Case:
    """The case of `seed` (deterministic: the same seed gives the same kernel and data)."""
    return Case(seed, seed, build(Draw(seed), kinds))


def cases(kinds=None):
    """A hypothesis strategy of cases (shrinks to simpler kernels on failure)."""
    from hypothesis import strategies as st

    @st.composite
    def strategy(draw):
        prog = build(HypothesisDraw(draw), kinds)
        return Case(-1, draw(st.integers(0, 2**31 - 1)), prog)

    return strategy()


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        case = generate(int(arg))
        print(f"# {case.describe()}\n{case.source}")
