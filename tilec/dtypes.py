"""Element types: one `DType` per name, and its IR, numpy and torch spellings.

`T.float16`, `"float16"`, `"half"` and `torch.float16` all normalize to the
same `DType`; the frontend, the interpreter and the runtime meet here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class DType:
    """A scalar element type, named as in TileLang (`float16`, `int32`, ...)."""

    name: str
    bits: int
    kind: str  # "float", "int", "uint" or "bool"

    def __repr__(self) -> str:
        return f"T.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return self.name == other.name
        found = _lookup(other)
        return found is not None and found.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __call__(self, value=None):
        raise RuntimeError(f"T.{self.name}(...) is only usable inside @tilec.jit kernels")

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint", "bool")

    @cached_property
    def ir(self):
        """The xDSL builtin type."""
        from xdsl.dialects import builtin as b

        if self.kind == "float":
            return {
                "float16": b.Float16Type(),
                "bfloat16": b.BFloat16Type(),
                "float32": b.Float32Type(),
                "float64": b.Float64Type(),
                "float8_e4m3fn": b.Float8E4M3FNType(),
                "float8_e5m2": b.Float8E5M2Type(),
            }[self.name]
        if self.kind == "uint":
            return b.IntegerType(self.bits, b.Signedness.UNSIGNED)
        return b.IntegerType(self.bits)

    @cached_property
    def numpy(self) -> np.dtype:
        if self.name == "bfloat16":
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        if self.name.startswith("float8"):
            import ml_dtypes

            return np.dtype(getattr(ml_dtypes, self.name))
        return np.dtype("bool" if self.kind == "bool" else self.name)

    @cached_property
    def torch(self):
        import torch

        return getattr(torch, self.name)


_ALL = [
    DType("float16", 16, "float"),
    DType("bfloat16", 16, "float"),
    DType("float32", 32, "float"),
    DType("float64", 64, "float"),
    DType("float8_e4m3fn", 8, "float"),
    DType("float8_e5m2", 8, "float"),
    DType("int8", 8, "int"),
    DType("int16", 16, "int"),
    DType("int32", 32, "int"),
    DType("int64", 64, "int"),
    DType("uint8", 8, "uint"),
    DType("bool", 1, "bool"),
]
BY_NAME = {d.name: d for d in _ALL}
_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "bf16": "bfloat16",
            "fp16": "float16", "fp32": "float32", "int": "int32", "uint8_t": "uint8"}


def _lookup(value) -> DType | None:
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        name = _ALIASES.get(value, value)
        return BY_NAME.get(name)
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        value = np.dtype(value)
        for d in _ALL:
            if d.numpy == value:
                return d
        return None
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        return BY_NAME.get(str(value).removeprefix("torch."))
    return None


def as_dtype(value) -> DType | None:
    """The `DType` for a DType, a name or alias, a numpy or a torch dtype; None if none."""
    return _lookup(value)


def from_ir(typ) -> DType:
    """The `DType` of an xDSL scalar type (index maps to int64)."""
    from xdsl.dialects import builtin as b

    if isinstance(typ, b.IndexType):
        return BY_NAME["int64"]
    for d in _ALL:
        if d.ir == typ:
            return d
    raise KeyError(f"no tilec dtype for IR type {typ}")
