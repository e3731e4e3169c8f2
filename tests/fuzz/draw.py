"""Where a generator's choices come from: a seeded `random.Random`, or hypothesis.

Recipes only call `int`, `choice` and `chance`, so the same recipe runs from a seed (the CI
cases and the GPU script: deterministic, cheap, parallel) or under hypothesis (`cases()` in
generate.py: shrinking finds a smaller failing program on its own).
"""

from __future__ import annotations

import random
from collections.abc import Sequence


class Draw:
    """Choices from a seeded `random.Random`."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def int(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        return self.rng.randint(lo, hi)

    def choice(self, options: Sequence):
        return options[self.int(0, len(options) - 1)]

    def chance(self, p: float) -> bool:
        """True with probability `p` (the simpler answer, False, when shrinking)."""
        return self.int(0, 999) >= 1000 - int(p * 1000)


class HypothesisDraw(Draw):
    """Choices from hypothesis's `draw` (inside `st.composite`): shrinks towards the first option."""

    def __init__(self, draw):
        self.draw = draw

    def int(self, lo: int, hi: int) -> int:
        from hypothesis import strategies as st

        return self.draw(st.integers(lo, hi))
