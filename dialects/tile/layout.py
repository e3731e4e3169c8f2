"""The layout algebra of fragments: which thread holds which element of a register tile, in which slot.

The IR attribute `#tile.fragment<"...">` (types.py) carries a `Layout` in the text form below; the
passes choose layouts (tilec.passes.layouts) and the lowering walks them.

A fragment of shape (n0, n1, ...) spread over T threads is described per
dimension by *modes*, most significant first.  A mode has a size, a kind
(`t` for thread, `s` for slot) and a stride in that space:

    index_d = sum(coord_k * prod(size of the modes after k in dim d))
    thread  = sum(coord_k * stride_k  for thread modes) + replication part
    slot    = sum(coord_k * stride_k  for slot modes)

Replication modes are thread modes that map to no dimension: every thread
along them holds the same elements (a row reduction's result is replicated
over the threads that shared the row).  This is CuTe's layout algebra cut down
to what the SIMT path needs; tensor-core fragments are layouts of this form
too (mma.sync m16n8k16 accumulators are thread and slot modes).

Text form, used in `#tile.fragment<"...">`:  `(8s4,8t16)x(16t1,4s1)|r()`
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Mode:
    size: int
    kind: str  # "t" or "s"
    stride: int

    def __str__(self) -> str:
        return f"{self.size}{self.kind}{self.stride}"


@dataclass(frozen=True)
class Layout:
    """A fragment layout: per-dimension modes plus replicated thread modes."""

    dims: tuple[tuple[Mode, ...], ...]
    rep: tuple[Mode, ...] = ()

    # -- text ---------------------------------------------------------------
    def __str__(self) -> str:
        dims = "x".join("(" + ",".join(map(str, modes)) + ")" for modes in self.dims)
        return f"{dims}|r({','.join(map(str, self.rep))})"

    @staticmethod
    def parse(text: str) -> Layout:
        dims_text, rep_text = text.split("|")

        def modes(group: str) -> tuple[Mode, ...]:
            return tuple(Mode(int(a), k, int(b)) for a, k, b in re.findall(r"(\d+)([ts])(\d+)", group))

        dims = tuple(modes(g) for g in re.findall(r"\(([^)]*)\)", dims_text))
        return Layout(dims, modes(rep_text))

    # -- facts --------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(math.prod(m.size for m in modes) for modes in self.dims)

    @property
    def num_slots(self) -> int:
        return math.prod(m.size for modes in self.dims for m in modes if m.kind == "s")

    @property
    def num_threads(self) -> int:
        return math.prod(m.size for m in self.thread_modes())

    def thread_modes(self) -> list[Mode]:
        return [m for modes in self.dims for m in modes if m.kind == "t"] + list(self.rep)

    def slot_coords(self, slot: int) -> list[list[int | None]]:
        """Per dimension, the coordinate of each slot mode for `slot` (None for thread modes)."""
        return [[(slot // m.stride) % m.size if m.kind == "s" else None for m in modes] for modes in self.dims]

    def index_parts(self, slot: int) -> list[tuple[int, list[tuple[Mode, int]]]]:
        """Per dimension: (constant part from the slot, [(thread mode, its weight)])."""
        parts = []
        for modes in self.dims:
            const, threads, weight = 0, [], 1
            for m in reversed(modes):
                if m.kind == "s":
                    const += ((slot // m.stride) % m.size) * weight
                else:
                    threads.append((m, weight))
                weight *= m.size
            parts.append((const, threads))
        return parts

    def slot_of(self, index: tuple[int, ...]) -> int:
        """The slot holding logical `index` (whatever thread holds it)."""
        slot = 0
        for modes, i in zip(self.dims, index):
            for m, coord in zip(modes, _coords(modes, i)):
                if m.kind == "s":
                    slot += coord * m.stride
        return slot

    def thread_of(self, index: tuple[int, ...]) -> int:
        """The first thread holding logical `index` (replicas add the rep modes)."""
        thread = 0
        for modes, i in zip(self.dims, index):
            for m, coord in zip(modes, _coords(modes, i)):
                if m.kind == "t":
                    thread += coord * m.stride
        return thread

    # -- algebra ------------------------------------------------------------
    def reduce(self, dim: int) -> Layout:
        """The layout of a reduction along `dim`: its thread modes become replication."""
        dims = [modes for d, modes in enumerate(self.dims) if d != dim]
        gone = [m for m in self.dims[dim] if m.kind == "t"]
        slots = sorted((m for modes in dims for m in modes if m.kind == "s"), key=lambda m: m.stride)
        renumber, stride = {}, 1
        for m in slots:  # compact the slot space of what is left
            renumber[m] = stride
            stride *= m.size
        dims = tuple(tuple(Mode(m.size, "s", renumber[m]) if m.kind == "s" else m for m in modes) for modes in dims)
        if not dims:
            dims = ((Mode(1, "s", 1),),)
        return Layout(dims, self.rep + tuple(gone))

    def translate_slot(self, other: Layout, slot: int) -> int:
        """The slot of `other` (same threads, other slot numbering) holding `self`'s `slot`."""
        if other == self:
            return slot
        total = 0
        for coords, modes in zip(self.slot_coords(slot), other.dims):
            total += sum(c * m.stride for c, m in zip(coords, modes) if c is not None)
        return total

    def reshaped(self, shape: tuple[int, ...]) -> Layout | None:
        """The same threads and slots seen with another row-major shape (`T.reshape` of a fragment):
        the modes of all dims in order, split again at the new dims' sizes (a mode straddling two
        dims splits in two where its size divides); None where one does not divide."""
        modes = [m for dim in self.dims for m in dim if m.size > 1]
        if math.prod(m.size for m in modes) != math.prod(shape):
            return None
        dims: list[tuple[Mode, ...]] = []
        for n in reversed(shape):
            inner: list[Mode] = []
            while n > 1:
                if not modes:
                    return None
                m = modes.pop()
                if m.size <= n:
                    if n % m.size:
                        return None
                    inner.insert(0, m)
                    n //= m.size
                    continue
                if m.size % n:
                    return None
                inner.insert(0, Mode(n, m.kind, m.stride))  # the low part of the mode: this dim's
                modes.append(Mode(m.size // n, m.kind, m.stride * n))  # the high part: the dims before
                n = 1
            dims.insert(0, _merged(inner) or (Mode(1, "s", 1),))
        if modes:
            return None
        return Layout(tuple(dims), self.rep)

    def same_threads(self, other: Layout) -> bool:
        """Whether `other` holds each element on the same threads as `self` (slots may differ)."""
        strip = lambda lay: (tuple(tuple((m.size, m.kind, m.stride if m.kind == "t" else 0) for m in modes)
                                   for modes in lay.dims), tuple(sorted((m.size, m.stride) for m in lay.rep)))
        return strip(self) == strip(other)


def _merged(modes: list[Mode]) -> tuple[Mode, ...]:
    """Adjacent modes of one kind that are one mode (`8t2,2t1` is `16t1`), merged."""
    out: list[Mode] = []
    for m in modes:
        if out and out[-1].kind == m.kind and out[-1].stride == m.stride * m.size:
            out[-1] = Mode(out[-1].size * m.size, m.kind, m.stride)
        else:
            out.append(m)
    return tuple(out)


def _coords(modes: tuple[Mode, ...], index: int) -> list[int]:
    coords = []
    for m in reversed(modes):
        coords.append(index % m.size)
        index //= m.size
    return coords[::-1]
