"""The one user-facing error type, and how it points at the kernel's source.

Every user mistake becomes a `TilecError` built through `error_at`, which
finds the Python file:line:col of an AST node, an IR operation (its
`FileLineColLoc`) or an explicit location.  The message reads like Python's
and MLIR's:

    gemm.py:42:9: error: T.copy shapes differ: src (128, 64) vs dst (64, 64)
        T.copy(A[by * 128, k * 64], A_s)
        ^
    hint: make both sides the same shape
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    """A 1-based line and column in a file."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class TilecError(Exception):
    """A mistake in a kernel or in how it is compiled, located in the user's source.

    Built only with keywords: `TilecError(msg, loc=..., hint=..., notes=(...))`.
    `notes` are `(SourceLoc, message)` pairs, such as "first use here".
    """

    def __init__(self, msg: str, *, loc: SourceLoc | None = None, hint: str | None = None,
                 notes: tuple[tuple[SourceLoc, str], ...] = ()):
        self.msg, self.loc, self.hint, self.notes = msg, loc, hint, tuple(notes)
        super().__init__(self.render())

    def render(self) -> str:
        return render("error", self.msg, self.loc, self.hint, self.notes)


def render(kind: str, msg: str, loc: SourceLoc | None, hint: str | None = None,
           notes: tuple[tuple[SourceLoc, str], ...] = ()) -> str:
    """`msg` as an `error` or a `warning` at `loc`, with its notes and hint (TilecError's text)."""
    lines = [_located(loc, kind, msg)]
    for note_loc, note in notes:
        lines.append(_located(note_loc, "note", note))
    if hint:
        lines.append(f"hint: {hint}")
    return "\n".join(lines)


def _located(loc: SourceLoc | None, kind: str, msg: str) -> str:
    if loc is None:
        return f"{kind}: {msg}"
    text = f"{loc}: {kind}: {msg}"
    source = linecache.getline(loc.file, loc.line).rstrip("\n")
    if source:
        text += f"\n    {source}\n    {' ' * (loc.col - 1)}^"
    return text


def loc_of(where) -> SourceLoc | None:
    """The source location of an IR operation, a `SourceLoc`, or None."""
    if where is None or isinstance(where, SourceLoc):
        return where
    location = getattr(where, "location", None)
    if location is not None and location.name == "file_line_loc":
        return SourceLoc(location.filename.data, location.line.data, location.column.data)
    return None


def error_at(where, msg: str, *, hint: str | None = None,
             notes: tuple[tuple[SourceLoc, str], ...] = ()) -> TilecError:
    """A `TilecError` at `where`: a `SourceLoc`, an IR op with a location, or None."""
    return TilecError(msg, loc=loc_of(where), hint=hint, notes=notes)


class TilecWarning(UserWarning):
    """Something tilec accepted but does not do as asked (e.g. a TileLang pass config it cannot
    apply), reported through `warnings` and the `tilec` logger (TILEC_LOG)."""


class TilecRaceWarning(TilecWarning):
    """A race the simulator found in a kernel: two accesses to shared memory that nothing orders, or
    a write into a tile a wgmma still reads, whose result on the GPU depends on timing. A located
    warning (once per place, as `warnings` shows them) and the simulation goes on;
    `-W error::tilec.errors.TilecRaceWarning` (this project's tests) makes it an exception."""
