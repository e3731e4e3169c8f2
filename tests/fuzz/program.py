"""A generated kernel under construction: its Python source text and its numpy semantics.

A `Program` collects the kernel body statement by statement and, beside each, a reference
step: a function of one block's `Env` that updates float64 arrays.  `reference()` runs the
steps for every block of the grid, so a program carries its own oracle, and `source()` is a
self-contained module that can be printed, saved and pasted into a regression test.

Error model.  A reference value is an `R`: value `v`, magnitude `m` and budget `b`, meaning
|computed - v| <= b * m elementwise to first order.  `m` bounds the sizes of the terms that
built the value (|A|·|B| for A·B, Σ|x| for a sum, |x| for a copy) and `b` adds up the unit
roundoffs of the roundings on the way (one per operation in its dtype, K - 1 for a K-term
sum, one per narrowing conversion).  This is the textbook forward error bound, so a correct
kernel stays inside it, while a wrong element (a wrong index, a missed write, a bad
cross-thread combine) lands orders of magnitude outside.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

UNIT = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24}
APPROX = 2.0**-21  # f32 MUFU approximations (ex2, lg2, rcp) and tilec's tanh/erf polynomials
DTYPES = ("float16", "bfloat16", "float32")
BLOCK_VARS = ("bx", "by", "bz")


def convert_unit(src: str, dst: str) -> float:
    """The relative rounding error of converting a `src` value to `dst` (bf16 -> f16: none in
    f16's normal range; `converted` models the rest)."""
    if src == dst or dst == "float32" or (src == "bfloat16" and dst == "float16"):
        return 0.0
    return UNIT[dst]


def converted(v: np.ndarray, src: str, dst: str) -> np.ndarray:
    """The reference value after a `src` -> `dst` conversion that `convert_unit` calls exact:
    bf16 -> f16 is exact only in f16's normal range; below 2^-14 the hardware rounds to f16's
    subnormal grid (2^-24 apart), above 65504 it gives inf. Other conversions keep the value
    (their rounding is in the budget)."""
    if src == "bfloat16" and dst == "float16":
        with np.errstate(over="ignore"):
            return np.asarray(v, dtype=np.float64).astype(np.float16).astype(np.float64)
    return v


@dataclass
class R:
    """A reference value: float64 value, magnitude (same shape) and a scalar error budget."""

    v: np.ndarray
    m: np.ndarray
    b: float = 0.0

    @staticmethod
    def exact(v) -> R:
        v = np.asarray(v, dtype=np.float64)
        return R(v, np.abs(v), 0.0)


@dataclass(frozen=True)
class Tensor:
    """A global tensor parameter. role: "in" (read only), "out" (poisoned with NaN, every
    element the program writes is checked, the others must stay NaN), "acc" (random initial
    values the kernel accumulates into with atomics)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    role: str
    shape_src: tuple[str, ...] | None = None  # with T.dynamic sizes: ("M", "64")

    @property
    def shape_text(self) -> str:
        if self.shape_src is None:
            return repr(self.shape)
        return f"({', '.join(self.shape_src)}{',' if len(self.shape_src) == 1 else ''})"


@dataclass(frozen=True)
class Tile:
    """A buffer the kernel allocates: scope "shared", "fragment" or "local" (per thread: every
    thread holds the whole tile)."""

    name: str
    scope: str
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class Off:
    """One dimension's offset of a global region: its source text and its value in a block."""

    text: str
    fn: object  # Env -> int

    @staticmethod
    def const(c: int) -> Off:
        return Off(str(c), lambda env, c=c: c)


@dataclass
class Global:
    """A tensor's reference state: value (NaN where nothing was written), magnitude, budget."""

    v: np.ndarray
    m: np.ndarray
    b: float = 0.0


@dataclass
class Env:
    """One block's reference state."""

    block: tuple[int, ...]
    g: dict  # tensor name -> Global (shared by all blocks)
    tiles: dict = field(default_factory=dict)  # tile name -> R
    loops: dict = field(default_factory=dict)  # loop variable -> its current iteration


def clip(offsets: list[int], extents: tuple[int, ...], shape: tuple[int, ...]):
    """(tensor slices, tile slices) of the in-bounds part of a region, or None if empty."""
    gs, ts = [], []
    for o, e, n in zip(offsets, extents, shape):
        lo, hi = max(o, 0), min(o + e, n)
        if hi <= lo:
            return None
        gs.append(slice(lo, hi))
        ts.append(slice(lo - o, hi - o))
    return tuple(gs), tuple(ts)


class Program:
    """A kernel's source and reference, built statement by statement."""

    def __init__(self, kind: str, threads, grid: tuple[int, ...], pass_configs: dict | None = None):
        self.kind, self.threads, self.grid = kind, threads, tuple(grid)
        self.pass_configs = dict(pass_configs or {})
        self.tensors: list[Tensor] = []
        self.tiles: list[Tile] = []
        self.lines: list[str] = []
        self.steps: list = []
        self.tags: dict = {}  # what a case exercises, for the report's counts
        self.symbols: dict = {}  # T.dynamic name -> its value in this case's tensors
        self.grid_src: list[str] | None = None  # the grid's source text, when it depends on a symbol
        self._depth = 2
        self._names = itertools.count()

    # -- building ---------------------------------------------------------------------
    @property
    def nthreads(self) -> int:
        return int(np.prod(self.threads)) if isinstance(self.threads, list | tuple) else int(self.threads)

    def block(self, k: int) -> str:
        return BLOCK_VARS[k]

    def block_off(self, k: int, t: int) -> Off:
        """The offset `b_k * t` of grid dimension k's block."""
        return Off(f"{BLOCK_VARS[k]} * {t}", lambda env, k=k, t=t: env.block[k] * t)

    def tensor(self, name: str, shape, dtype: str, role: str, shape_src=None) -> Tensor:
        t = Tensor(name, tuple(shape), dtype, role, None if shape_src is None else tuple(shape_src))
        self.tensors.append(t)
        return t

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self._names)}"

    def alloc(self, scope: str, shape, dtype: str, prefix: str | None = None) -> Tile:
        tile = Tile(self.fresh(prefix or {"shared": "s", "fragment": "f", "local": "l"}[scope]), scope, tuple(shape),
                    dtype)
        self.tiles.append(tile)
        fn = f"alloc_{scope}"
        self.emit(f"{tile.name} = T.{fn}({tuple(shape)!r}, T.{dtype})")
        return tile

    def emit(self, line: str) -> None:
        self.lines.append("    " * self._depth + line)

    def step(self, fn) -> None:
        """Adds a reference step (Env -> None), run in statement order for every block."""
        self.steps.append(fn)

    @contextmanager
    def indent(self):
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    @contextmanager
    def loop(self, var: str, header: str, count: int):
        """`for var in <header>:` around the statements emitted inside; their reference steps
        run `count` times with `env.loops[var]` set."""
        self.emit(f"for {var} in {header}:")
        outer, self.steps = self.steps, []
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            inner, self.steps = self.steps, outer

            def run(env, inner=inner):
                for it in range(count):
                    env.loops[var] = it
                    for fn in inner:
                        fn(env)

            self.steps.append(run)

    def tag(self, key: str, value) -> None:
        self.tags[key] = value

    # -- output -------------------------------------------------------------------------
    def source(self) -> str:
        params = ", ".join(f"{t.name}: T.Tensor({t.shape_text}, T.{t.dtype})" for t in self.tensors)
        grid = self.grid_src or [str(g) for g in self.grid]
        symbols = [f'{name} = T.dynamic("{name}")' for name in self.symbols]
        names = [BLOCK_VARS[k] for k in range(len(self.grid))]
        bound = names[0] if len(names) == 1 else f"({', '.join(names)})"
        threads = list(self.threads) if isinstance(self.threads, list | tuple) else self.threads
        head = [
            "import tilec.language as T",
            "from tilec.layout import make_swizzled_layout",
            "",
            *symbols,
            "",
            "",
            "@T.prim_func",
            f"def main({params}):",
            f"    with T.Kernel({', '.join(grid)}, threads={threads}) as {bound}:",
        ]
        return "\n".join(head + self.lines) + "\n"

    def reference(self, data: dict) -> dict:
        """Runs the steps for every block on `data` (tensor name -> float64 array): the
        reference state of every tensor, outputs NaN where nothing was written."""
        g = {}
        for t in self.tensors:
            x = np.asarray(data[t.name], dtype=np.float64)
            if t.role == "out":
                g[t.name] = Global(np.full(t.shape, np.nan), np.zeros(t.shape))
            else:
                g[t.name] = Global(x.copy(), np.abs(x))
        for block in itertools.product(*[range(n) for n in self.grid]):
            env = Env(block, g)
            for fn in self.steps:
                fn(env)
        return g

    # -- common statements ------------------------------------------------------------------
    def region(self, t: Tensor, offs: list[Off], extents: tuple[int, ...], form: str) -> str:
        """`A[o0, o1]` (point form) or `A[o0:o0 + e0, ...]` (slice form) for a copy operand."""
        if form == "point":
            return f"{t.name}[{', '.join(o.text for o in offs)}]"
        parts = []
        for o, e in zip(offs, extents):
            parts.append(o.text if e is None else f"{o.text}:{o.text} + {e}" if o.text != "0" else f"0:{e}")
        return f"{t.name}[{', '.join(parts)}]"

    def load(self, t: Tensor, offs: list[Off], tile: Tile, form: str = "point", extents=None) -> None:
        """`T.copy(A[offs], tile)`: out-of-range elements read as zero.  `extents` (None for an
        integer index) give a slice-form region whose squeezed shape is the tile's."""
        ext = _default_extents(tile, t) if extents is None else tuple(extents)
        self.emit(f"T.copy({self.region(t, offs, ext, form)}, {tile.name})")
        full = tuple(1 if e is None else e for e in ext)

        def run(env, t=t, offs=offs, tile=tile):
            v = np.zeros(full)
            c = clip([o.fn(env) for o in offs], full, t.shape)
            if c is not None:
                v[c[1]] = env.g[t.name].v[c[0]]
            v = converted(v.reshape(tile.shape), t.dtype, tile.dtype)
            env.tiles[tile.name] = R(v, np.abs(v), convert_unit(t.dtype, tile.dtype))

        self.step(run)

    def store(self, tile: Tile, t: Tensor, offs: list[Off], form: str = "point", extents=None) -> None:
        """`T.copy(tile, B[offs])`: only the in-range part is written."""
        ext = _default_extents(tile, t) if extents is None else tuple(extents)
        self.emit(f"T.copy({tile.name}, {self.region(t, offs, ext, form)})")
        full = tuple(1 if e is None else e for e in ext)

        def run(env, tile=tile, t=t, offs=offs):
            r = env.tiles[tile.name]
            c = clip([o.fn(env) for o in offs], full, t.shape)
            if c is None:
                return
            gl = env.g[t.name]
            gl.v[c[0]] = converted(r.v.reshape(full)[c[1]], tile.dtype, t.dtype)
            gl.m[c[0]] = r.m.reshape(full)[c[1]]
            gl.b = max(gl.b, r.b + convert_unit(tile.dtype, t.dtype))

        self.step(run)


def _default_extents(tile: Tile, t: Tensor) -> tuple[int, ...]:
    """A point-form region's extents: the tile's shape, unit dims in front for a lower rank."""
    return (1,) * (len(t.shape) - len(tile.shape)) + tile.shape
