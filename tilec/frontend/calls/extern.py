"""The refusals of TileLang's TIR-only and foreign-source names (tilec/language/extern.py)."""

from __future__ import annotations

from tilec.language.extern import TIR_ONLY

from .registry import handles

_WHY = {
    "import_source": "splices CUDA source into the kernel",
    "call_extern": "calls a function of foreign (CUDA source) code",
    "attr": "opens a TVM TIR attribute scope",
    "comm_reducer": "builds a TVM TIR reducer",
    "tvm_thread_allreduce": "is TVM's cross-thread all-reduce intrinsic",
    "evaluate": "evaluates a TVM TIR expression",
    "access_ptr": "takes a raw buffer pointer for foreign code",
    "address_of": "takes a raw element address for foreign code",
}

_HINT = {
    "attr": "reduce across threads with a fragment and T.reduce_sum / T.reduce_max (or T.atomic_add into shared "
            "memory)",
    "comm_reducer": "reduce across threads with a fragment and T.reduce_sum / T.reduce_max",
    "tvm_thread_allreduce": "reduce across threads with a fragment and T.reduce_sum / T.reduce_max",
    "access_ptr": "tilec takes T.access_ptr only written as an operand of T.ptx_cp_async: "
                  "T.ptx_cp_async(T.access_ptr(S[i, j], \"w\", 8), T.access_ptr(A[k, j], \"r\", 8), 8)",
}


def refusal(v, name: str):
    """The located error for `T.<name>`."""
    return v.b.error(f"T.{name} {_WHY[name]}: tilec compiles TileLang kernels without TVM or foreign CUDA source, "
                     "so it is out of scope",
                     hint=_HINT.get(name, "write the computation with T.* operations inside the kernel"))


def _refuse(name: str):
    def handler(v, *args, **kwargs):
        raise refusal(v, name)

    return handler


for _name in TIR_ONLY:
    handles(_name)(_refuse(_name))
