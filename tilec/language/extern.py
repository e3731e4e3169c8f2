"""TileLang names that build TVM TIR directly or splice in foreign CUDA source: `T.import_source`,
`T.call_extern`, `T.attr` with `T.comm_reducer` / `T.tvm_thread_allreduce`, `T.evaluate`,
`T.access_ptr`, `T.address_of`. They are out of tilec's scope (issue 11, item 6: tilec does not
emulate TVM and compiles no inline CUDA); inside a kernel each is a located error naming it, but
`T.access_ptr(...)` written as an operand of `T.ptx_cp_async`, which names the element copied."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def import_source(*args, **kwargs):
    """TileLang: splices CUDA source text into the generated kernel. Refused by tilec."""


@builtin
def call_extern(*args, **kwargs):
    """TileLang: calls an external (CUDA source) function by name. Refused by tilec."""


@builtin
def attr(*args, **kwargs):
    """TileLang: a TVM TIR attribute scope (`with T.attr(...)`). Refused by tilec."""


@builtin
def comm_reducer(*args, **kwargs):
    """TileLang: a TVM TIR commutative reducer for `T.tvm_thread_allreduce`. Refused by tilec."""


@builtin
def tvm_thread_allreduce(*args, **kwargs):
    """TileLang: TVM's cross-thread all-reduce intrinsic. Refused by tilec."""


@builtin
def evaluate(*args, **kwargs):
    """TileLang: evaluates a TIR expression for its side effect. Refused by tilec."""


@builtin
def access_ptr(base, access_type="r", *extents, offset=0, extent=None, ignore_last_ndim=0):
    """TileLang: a raw pointer to element `base` of a buffer (`A[i, j]`; a region or a whole
    buffer: its first element), for foreign code. tilec accepts it only written as an operand of
    `T.ptx_cp_async` (refused anywhere else), where it names the element the copy starts at:

    - `access_type`: "r", "w", "rw" (or 1, 2, 3), as TileLang checks it;
    - `offset`: more elements along a 1-D buffer; `ignore_last_ndim`: the last dims start at 0;
    - `extents` / `extent`: how far the pointer reaches, which tilec does not need (the copy's
      `num_elems` says what it copies).
    """


@builtin
def address_of(*args, **kwargs):
    """TileLang: the address of a buffer element, for `T.call_extern`. Refused by tilec."""


TIR_ONLY = ("import_source", "call_extern", "attr", "comm_reducer", "tvm_thread_allreduce", "evaluate",
            "access_ptr", "address_of")
"""The names above: refused wherever a kernel uses them (tilec/frontend/calls/extern.py)."""
