"""The dtype names of the kernel language (`T.float16`, `T.float`, `T.dtype(x)`, ...).

Every name is a `tilec.dtypes.DType`, which is a `str` as TileLang's dtypes are.
`T.dtype(x)` normalizes a name, a torch / numpy dtype or int / float / bool. The storage-only
names (`int4`, `tfloat32`, fp4, fp6, `float8_e8m0fnu`) exist so programs that mention them
import; computing with one in a kernel is a located error naming it.
"""

from __future__ import annotations

from tilec.dtypes import BY_NAME, DType

dtype = DType
AnyDType = DType | str

float16 = BY_NAME["float16"]
bfloat16 = BY_NAME["bfloat16"]
float32 = BY_NAME["float32"]
float64 = BY_NAME["float64"]
float8_e4m3fn = BY_NAME["float8_e4m3fn"]
float8_e4m3 = float8_e4m3fn  # TileLang's CUDA spelling
float8_e5m2 = BY_NAME["float8_e5m2"]
float8_e8m0fnu = BY_NAME["float8_e8m0fnu"]
float6_e2m3fn = BY_NAME["float6_e2m3fn"]
float6_e3m2fn = BY_NAME["float6_e3m2fn"]
float4_e2m1fn = BY_NAME["float4_e2m1fn"]
tfloat32 = BY_NAME["tfloat32"]
int4 = BY_NAME["int4"]
int8 = BY_NAME["int8"]
int16 = BY_NAME["int16"]
int32 = BY_NAME["int32"]
int64 = BY_NAME["int64"]
uint8 = BY_NAME["uint8"]
uint16 = BY_NAME["uint16"]
uint32 = BY_NAME["uint32"]
uint64 = BY_NAME["uint64"]
bool = BY_NAME["bool"]  # noqa: A001 - TileLang's name
half = float16
float = float32  # noqa: A001 - TileLang's name
double = float64
short = int16
int = int32  # noqa: A001 - TileLang's name
long = int64
uint = uint32


class PointerType:
    """TileLang's `T.ptr`: a device address. `T.Tensor([n], T.ptr)` is a table of them (an int64
    tensor of `data_ptr()`s, as TileLang passes it), `p: T.ptr` a 64-bit scalar parameter;
    `T.make_tensor(p, shape, dtype)` views the memory there as a global tensor. `T.ptr(dtype)`
    names a typed pointer, which is the same thing to tilec (the tensor's dtype comes from
    `T.make_tensor`)."""

    def __init__(self, dtype=None, storage_scope: str = "global"):
        self.dtype, self.storage_scope = dtype, storage_scope

    def __call__(self, dtype=None, storage_scope: str = "global", *, is_size_var: bool = False) -> PointerType:
        if storage_scope != "global":
            raise ValueError(f"T.ptr: tilec's pointers address global memory, got storage_scope={storage_scope!r}")
        return PointerType(dtype, storage_scope)

    def __repr__(self) -> str:
        return "T.ptr" if self.dtype is None else f"T.ptr({self.dtype!r})"


ptr = PointerType()


def is_pointer(value) -> bool:
    """Whether `value` names TileLang's pointer type: `T.ptr`, `T.ptr(dtype)` or TVM's "handle"."""
    return isinstance(value, PointerType) or (type(value) is str and value == "handle")


def __getattr__(name: str):
    """`_TORCH_DTYPE_TO_STR`, TileLang's table of torch dtypes to dtype names (its examples import
    it), built on first use so that importing the language does not import torch."""
    if name != "_TORCH_DTYPE_TO_STR":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import torch

    table = {getattr(torch, n): str(d) for n, d in BY_NAME.items() if isinstance(getattr(torch, n, None), torch.dtype)}
    globals()[name] = table
    return table


__all__ = [
    "AnyDType", "bfloat16", "bool", "double", "dtype", "float", "float16", "float32", "float4_e2m1fn", "float64",
    "float6_e2m3fn", "float6_e3m2fn", "float8_e4m3", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "half",
    "int", "int16", "int32", "int4", "int64", "int8", "is_pointer", "long", "PointerType", "ptr", "short", "tfloat32", "uint", "uint16", "uint32",
    "uint64", "uint8",
]
