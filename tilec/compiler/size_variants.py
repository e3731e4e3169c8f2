"""A kernel of dynamic sizes built for the sizes it will mostly see, and for all of them.

A run-time size among a tensor's inner dims (K of A[M, K], N of B[K, N]) is a row stride: whether
it is a multiple of 16 bytes decides whether TMA can read the tensor (a tensor map's strides are
16-byte multiples) and whether its rows take 16-byte vector copies. Nothing known at compile time,
a gemm over `T.dynamic` sizes would get neither: element-wise copies, no warp specialization.
So, as TileLang's dynamic vectorization checks the sizes at run time, the kernel is built with
those sizes assumed multiples of 16 bytes of their tensors' elements (pass config
`tilec.aligned_sizes`, on by default; the tile IR's `func.func` carries the multiples,
`tile.ALIGNED_SIZES`), and the launcher checks a call's sizes: one that is not such a multiple
runs a build for the multiples its sizes do have (K = 4100 halves: rows of 8-byte multiples,
8-byte copies), made at the first call of that kind.

    size_multiples(program)   {size name: multiple} the assumption needs, {} for static kernels
    size_class(needed, sizes) {size name: the part of its multiple that a call's size has}
    annotate(module, program, multiples)  the multiples onto the kernel's func.func
    SizeVariants              the backend of such a kernel: a build per size class, made on demand
"""

from __future__ import annotations

import math

from tilec.errors import TilecError

CONFIG = "tilec.aligned_sizes"
TMA_BYTES = 16  # a tensor map's strides, and the widest vector copy, in bytes


def size_multiples(program) -> dict[str, int]:
    """The multiple each run-time size must be for the aligned build: 16 bytes of the elements of
    every tensor it is an inner dim of (a size only ever the outermost dim is no stride: none)."""
    from tilec.language.structure import Symbol

    needed: dict[str, int] = {}
    for p in program.params:
        if p.shape is None or p.dtype.bits < 8:
            continue
        for d in p.shape[1:]:
            if isinstance(d, Symbol) and d.dynamic:
                needed[d.name] = max(needed.get(d.name, 1), TMA_BYTES // min(p.dtype.bytes, TMA_BYTES))
    return needed


def annotate(module, program, multiples: dict[str, int] | None = None) -> None:
    """`tile.ALIGNED_SIZES` on the kernel's func.func: per argument, per dim, the multiple its size is
    in this build (`multiples`, by size name: every occurrence of the size; by default the whole
    `size_multiples`; else 1)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, i64

    from tilec.dialects import tile
    from tilec.language.structure import Symbol

    needed = size_multiples(program) if multiples is None else multiples
    if not any(m > 1 for m in needed.values()):
        return
    rows = [[needed.get(d.name, 1) if isinstance(d, Symbol) else 1 for d in (p.shape or ())] for p in program.params]
    for f in module.ops:
        if isinstance(f, func.FuncOp):
            f.attributes[tile.ALIGNED_SIZES] = ArrayAttr([DenseArrayBase.from_list(i64, r) for r in rows])


def size_class(needed: dict[str, int], sizes: dict) -> dict[str, int]:
    """Per size, the part of its wanted multiple (a power of two) that the call's size is a multiple of."""
    return {name: math.gcd(int(sizes.get(name, 0)), m) for name, m in needed.items()}


def unmet(needed: dict[str, int], sizes: dict) -> list[str]:
    """The sizes of a call that are not the multiples the aligned build assumes."""
    return [name for name, m in needed.items() if sizes.get(name, 0) % m]


class SizeVariants:
    """The backend of a kernel with run-time inner sizes: the aligned build (`CONFIG`), and for calls
    whose sizes are not its multiples a build for the multiples they have (`size_class`), each made at
    the first call of its class. Everything but the launch (the IR, the source, the spec) is the
    aligned build's."""

    def __init__(self, program, make, pass_configs: dict, needed: dict[str, int], *, build_key=None, make_program=None):
        self._program, self._make, self._configs, self.needed = program, make, pass_configs, needed
        self._make_program = make_program
        self.aligned = make(program, {**pass_configs, CONFIG: True}, build_key)
        self._builds: dict[tuple, object] = {tuple(sorted(needed.items())): self.aligned}

    def __getattr__(self, name):  # (only for what this class does not define)
        return getattr(self.aligned, name)

    def for_sizes(self, sizes: dict):
        """The build that runs a call of these sizes."""
        found = size_class(self.needed, sizes)
        key = tuple(sorted(found.items()))
        build = self._builds.get(key)
        if build is None:
            program = self._program
            if program.module is None:  # restored from the cache: the frontend runs again for this build
                if self._make_program is None:
                    raise TilecError(f"kernel {program.name}: sizes {unmet(self.needed, sizes)} are not multiples "
                                     "of 16 bytes and the build for them needs the kernel's source",
                                     loc=program.loc, hint="compile the kernel again (tilec.compile)")
                program = self._program = self._make_program()
            assumed = found if any(m > 1 for m in found.values()) else False
            build = self._builds[key] = self._make(program, {**self._configs, CONFIG: assumed}, None)
        return build

    @property
    def variants(self) -> list:
        """The builds made so far: the aligned one first, then one per size class a call needed."""
        return list(self._builds.values())

    def launch(self, kernel, given: dict, missing: list, sizes: dict):
        return self.for_sizes(sizes).launch(kernel, given, missing, sizes)

    def run(self, arrays: list, sizes: dict) -> None:
        self.for_sizes(sizes).run(arrays, sizes)

    def call(self, args: list):
        from tilec.compiler.launch import SLOW

        call = getattr(self.aligned, "call", None)  # (fixed shapes only: none here, the general path binds sizes)
        return SLOW if call is None else call(args)
