"""Element types: one `DType` per name, and its IR, numpy and torch spellings.

A `DType` is a `str` (its canonical name), as TileLang's dtypes are: `getattr(torch, T.bfloat16)`
and `f"{T.float16}"` work, and `T.float16 == "float16"`. `T.float16`, `"float16"`, `"half"`,
`torch.float16`, `np.float16` and `T.dtype("half")` all normalize to the same object
(`as_dtype`, or `DType(x)`, which raises for what is not a dtype); the frontend, the
interpreter and the runtime meet here.

`tfloat32` (TileLang's tensor-core input precision) is stored and computed as float32, which
is at least as precise. Some names are storage formats with no arithmetic in tilec (`int4`,
the fp4 and fp6 formats, `float8_e8m0fnu`): they are dtypes (their bits,
their torch storage type) but have no IR type, so a kernel that computes with one gets a
located error naming the dtype (`computable` is False).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

_COMPUTABLE = {"float16", "bfloat16", "float32", "tfloat32", "float64", "float8_e4m3fn", "float8_e5m2", "int8", "int16", "int32",
               "int64", "uint8", "uint16", "uint32", "uint64", "bool"}


class DType(str):
    """A scalar element type, named as in TileLang (`float16`, `int32`, ...); a `str` of that name."""

    def __new__(cls, value="float32"):
        found = _PYTHON.get(value) if isinstance(value, type) else None
        found = found or _lookup(value)
        if found is None:
            raise TypeError(f"Invalid DataType {value!r} ({type(value).__name__}): expected a dtype name such as "
                            f"'float16', a torch or numpy dtype, or int / float / bool")
        return found

    @classmethod
    def _define(cls, name: str, bits: int, kind: str, torch_name: str | None = None) -> DType:
        self = str.__new__(cls, name)
        object.__setattr__(self, "_facts", (bits, kind, torch_name if torch_name is not None else name))
        return self

    def __setattr__(self, name, value):
        if name in type(self).__dict__ and isinstance(type(self).__dict__[name], cached_property):
            object.__setattr__(self, name, value)  # cached_property's own store
            return
        raise AttributeError(f"DType {self.name} is immutable")

    def __getnewargs__(self):
        return (str(self),)

    # -- facts ----------------------------------------------------------------
    @property
    def name(self) -> str:
        return str.__str__(self)

    @property
    def bits(self) -> int:
        return self._facts[0]

    @property
    def kind(self) -> str:
        """"float", "int", "uint" or "bool"."""
        return self._facts[1]

    @property
    def bytes(self) -> int:
        return max(self.bits // 8, 1)

    itemsize = bytes

    @property
    def lanes(self) -> int:
        return 1

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint", "bool")

    @property
    def computable(self) -> bool:
        """Whether kernels can compute with it (it has an IR type); storage-only names cannot."""
        return self.name in _COMPUTABLE

    def is_float8(self) -> bool:
        return self.name.startswith("float8")

    def is_float4(self) -> bool:
        return self.name.startswith("float4")

    def is_unsigned(self) -> bool:
        return self.kind == "uint"

    def is_boolean(self) -> bool:
        return self.kind == "bool"

    # -- str behaviour --------------------------------------------------------
    def __repr__(self) -> str:
        return f"T.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return self.name == other.name
        found = _lookup(other)
        return found is not None and found.name == self.name

    def __ne__(self, other) -> bool:
        return not self == other

    __hash__ = str.__hash__

    def __call__(self, value=None):
        raise RuntimeError(f"T.{self.name}(...) is only usable inside @tilec.jit kernels")

    # -- spellings ------------------------------------------------------------
    @cached_property
    def ir(self):
        """The xDSL builtin type."""
        from xdsl.dialects import builtin as b

        if not self.computable:
            raise TypeError(f"dtype {self.name} has no IR type in tilec: it is a storage format, not computed with")
        if self.kind == "float":
            return {
                "float16": b.Float16Type(),
                "bfloat16": b.BFloat16Type(),
                "float32": b.Float32Type(),
                "tfloat32": b.Float32Type(),  # tensor-core input precision: computed in float32 (more precise)
                "float64": b.Float64Type(),
                "float8_e4m3fn": b.Float8E4M3FNType(),
                "float8_e5m2": b.Float8E5M2Type(),
            }[self.name]
        if self.kind == "uint":
            return b.IntegerType(self.bits, b.Signedness.UNSIGNED)
        return b.IntegerType(self.bits)

    @cached_property
    def numpy(self) -> np.dtype:
        import ml_dtypes

        if self.name == "bfloat16" or self.name.startswith(("float8", "float4", "float6")):
            return np.dtype(getattr(ml_dtypes, self.name.replace("_unpacked", "fn")))
        if self.name == "int4":
            return np.dtype(ml_dtypes.int4)
        if self.name == "tfloat32":
            return np.dtype(np.float32)
        return np.dtype("bool" if self.kind == "bool" else self.name)

    @cached_property
    def torch(self):
        import torch

        name = self._facts[2]
        found = getattr(torch, name, None)
        if found is None:
            raise TypeError(f"this torch has no {name} (the storage type of {self.name})")
        return found

    def as_torch(self):
        """The torch dtype a tensor of this dtype has (the storage type for int4, fp4, tfloat32)."""
        return self.torch


_ALL = [
    DType._define("float16", 16, "float"),
    DType._define("bfloat16", 16, "float"),
    DType._define("float32", 32, "float"),
    DType._define("float64", 64, "float"),
    DType._define("float8_e4m3fn", 8, "float"),
    DType._define("float8_e5m2", 8, "float"),
    DType._define("float8_e8m0fnu", 8, "float"),
    DType._define("float6_e2m3fn", 6, "float", "uint8"),
    DType._define("float6_e3m2fn", 6, "float", "uint8"),
    DType._define("float4_e2m1fn", 4, "float", "int8"),
    DType._define("tfloat32", 32, "float", "float32"),
    DType._define("int4", 4, "int", "int8"),
    DType._define("int8", 8, "int"),
    DType._define("int16", 16, "int"),
    DType._define("int32", 32, "int"),
    DType._define("int64", 64, "int"),
    DType._define("uint8", 8, "uint"),
    DType._define("uint16", 16, "uint"),
    DType._define("uint32", 32, "uint"),
    DType._define("uint64", 64, "uint"),
    DType._define("bool", 1, "bool"),
]
BY_NAME = {d.name: d for d in _ALL}
_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "bf16": "bfloat16",
            "fp16": "float16", "fp32": "float32", "int": "int32", "uint8_t": "uint8", "short": "int16",
            "long": "int64", "uint": "uint32", "ulong": "uint64", "float8_e4m3": "float8_e4m3fn",
            "custom[tfloat32]": "tfloat32", "float4_e2m1": "float4_e2m1fn"}
_PYTHON = {bool: BY_NAME["bool"], int: BY_NAME["int32"], float: BY_NAME["float32"]}
"""`T.dtype(int)` and friends (as TileLang maps Python types); `as_dtype` does not, so a Python
annotation such as `n: int` stays a Python annotation."""


def _lookup(value) -> DType | None:
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        name = _ALIASES.get(value, value)
        return BY_NAME.get(name)
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        value = np.dtype(value)
        for d in _ALL:
            if d.computable and d.numpy == value:
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
        if d.computable and d.ir == typ:
            return d
    raise KeyError(f"no tilec dtype for IR type {typ}")
