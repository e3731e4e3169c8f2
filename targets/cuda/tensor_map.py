"""TMA tensor maps: the 128-byte descriptors `cp.async.bulk.tensor` reads, encoded on the host.

A `TensorMapSpec` is what the compiler decided for one TMA copy (which kernel tensor, the
box, the swizzle, the element type); at launch, `TensorMaps(spec)` turns it into the
map for a tensor with `cuTensorMapEncodeTiled` (HOPPER_KERNELS.md §2.1). Maps are cached
per tensor geometry (address, shape, strides), so a warm launch of the same tensors makes no
driver call.

    spec = TensorMapSpec(tensor=0, dtype="f16", box=(128, 64), swizzle=128)   # box: outer first
    args = encode_arguments(spec, data_ptr, shape=(M, K), strides=(K, 1))    # pure, tested on the CPU
    blob = TensorMaps(spec).get(data_ptr, (M, K), (K, 1))                   # 128 bytes (driver)

Dims are given outermost first, as the tensor's shape; the driver wants them innermost first,
with byte strides for every dim but the innermost (which must be contiguous).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from tilec.errors import TilecError

__all__ = ["TensorMapSpec", "TensorMaps", "encode_arguments", "tma_supported"]

# CUtensorMapDataType, CUtensorMapSwizzle (cuda.h)
_DTYPE = {"u8": 0, "i8": 0, "u16": 1, "i16": 1, "u32": 2, "i32": 3, "u64": 4, "i64": 5, "f16": 6, "f32": 7,
          "f64": 8, "bf16": 9, "f8E4M3FN": 0, "f8E5M2": 0}  # fp8: copied as bytes (UINT8)
_BYTES = {"u8": 1, "i8": 1, "u16": 2, "i16": 2, "f16": 2, "bf16": 2, "u32": 4, "i32": 4, "f32": 4, "u64": 8,
          "i64": 8, "f64": 8, "f8E4M3FN": 1, "f8E5M2": 1}
_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
MAP_BYTES = 128


@dataclass(frozen=True)
class TensorMapSpec:
    """One TMA descriptor of a kernel: `tensor` is the kernel's tensor argument; `box` the
    shared tile's extent per tensor dim (outermost first, 1 for dims the tile does not span);
    `swizzle` the bytes of the shared tile's XOR swizzle (0, 32, 64, 128)."""

    tensor: int
    dtype: str
    box: tuple[int, ...]
    swizzle: int = 0

    def __post_init__(self):
        if self.dtype not in _DTYPE or self.swizzle not in _SWIZZLE:
            raise ValueError(f"TMA cannot copy {self.dtype} with a {self.swizzle}-byte swizzle")


def tma_supported(spec: TensorMapSpec, shape, strides) -> str | None:
    """Why a tensor of `shape` / element `strides` cannot be read through `spec` (None: it can).
    The rules of cuTensorMapEncodeTiled (cuda.h): rank 1-5, the innermost dim contiguous, every
    other stride a multiple of 16 bytes below 2^40, each box extent 1-256 with the inner one a
    multiple of 16 bytes and at most the swizzle span."""
    esize = _BYTES[spec.dtype]
    if not 1 <= len(shape) <= 5 or len(spec.box) != len(shape):
        return f"rank {len(shape)} (TMA takes 1 to 5 dims matching the box)"
    if strides[-1] != 1:
        return "its innermost dim is not contiguous"
    for s in strides[:-1]:
        if (s * esize) % 16 or s * esize >= 1 << 40:
            return f"a stride of {s * esize} bytes (TMA needs multiples of 16)"
    if any(not 1 <= b <= 256 for b in spec.box):
        return f"box {spec.box} (each extent 1 to 256)"
    inner = spec.box[-1] * esize
    if inner % 16:
        return f"an inner box of {inner} bytes (a multiple of 16 needed)"
    if spec.swizzle and inner > spec.swizzle:
        return f"an inner box of {inner} bytes, wider than its {spec.swizzle}-byte swizzle"
    if any(not 1 <= n < 1 << 32 for n in shape):
        return f"shape {tuple(shape)}"
    return None


def encode_arguments(spec: TensorMapSpec, address: int, shape, strides) -> dict:
    """The arguments of cuTensorMapEncodeTiled for a tensor at `address` (element strides,
    outermost first), innermost first as the driver takes them. Zeros fill out-of-bounds
    parts of a box (OOB_FILL_NONE), L2 promotion 128 bytes."""
    reason = tma_supported(spec, shape, strides)
    if reason is not None:
        raise TilecError(f"tensor argument {spec.tensor} cannot be read by TMA: {reason}")
    if address % 16:
        raise TilecError(f"tensor argument {spec.tensor} is not 16-byte aligned (address {address:#x}), "
                         "which its TMA copies need", hint="pass a tensor that starts on a 16-byte boundary "
                                                           "(e.g. .contiguous() or .clone() of the slice)")
    esize = _BYTES[spec.dtype]
    return {
        "dtype": _DTYPE[spec.dtype], "rank": len(shape), "address": address,
        "dims": [int(n) for n in reversed(shape)],
        "strides": [int(s) * esize for s in reversed(strides[:-1])],
        "box": [int(b) for b in reversed(spec.box)], "element_strides": [1] * len(shape),
        "interleave": 0, "swizzle": _SWIZZLE[spec.swizzle], "l2_promotion": 2, "oob_fill": 0,
    }


def _encode_with_driver(args: dict) -> bytes:
    """cuTensorMapEncodeTiled through cuda-bindings: the map's 128 bytes."""
    from cuda.bindings import driver

    rank = args["rank"]
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    err, tmap = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType(args["dtype"]), rank, args["address"], [u64(d) for d in args["dims"]],
        [u64(s) for s in args["strides"]], [u32(b) for b in args["box"]], [u32(e) for e in args["element_strides"]],
        driver.CUtensorMapInterleave(args["interleave"]), driver.CUtensorMapSwizzle(args["swizzle"]),
        driver.CUtensorMapL2promotion(args["l2_promotion"]), driver.CUtensorMapFloatOOBfill(args["oob_fill"]))
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        raise TilecError(f"cuTensorMapEncodeTiled({args}): {name.decode() if isinstance(name, bytes) else name}")
    return ctypes.string_at(tmap.getPtr(), MAP_BYTES)


class _LibcudaEncoder:
    """cuTensorMapEncodeTiled called through ctypes on libcuda itself. cuda-bindings builds a
    Python object per argument (~170 us a map on the H200's host, run s9f); a kernel that stores
    by TMA into a tensor allocated per call (`out_idx`) encodes a map at every launch, so that
    cost made a 60 us gemm host-bound. Here the argument arrays of a geometry are built once."""

    def __init__(self, lib: ctypes.CDLL):
        fn = lib.cuTensorMapEncodeTiled
        fn.restype = ctypes.c_int
        u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, u32p, u32p,
                       ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        self._fn = fn
        self._arrays: dict[tuple, tuple] = {}
        self._out = ctypes.create_string_buffer(MAP_BYTES + 64)  # a CUtensorMap is 64-byte aligned
        self._at = (ctypes.addressof(self._out) + 63) & ~63

    def __call__(self, args: dict) -> bytes:
        key = (tuple(args["dims"]), tuple(args["strides"]), tuple(args["box"]), tuple(args["element_strides"]))
        arrays = self._arrays.get(key)
        if arrays is None:
            if len(self._arrays) > 1024:
                self._arrays.clear()
            arrays = self._arrays[key] = ((ctypes.c_uint64 * len(key[0]))(*key[0]),
                                          (ctypes.c_uint64 * max(len(key[1]), 1))(*key[1]),
                                          (ctypes.c_uint32 * len(key[2]))(*key[2]),
                                          (ctypes.c_uint32 * len(key[3]))(*key[3]))
        err = self._fn(self._at, args["dtype"], args["rank"], args["address"], *arrays, args["interleave"],
                       args["swizzle"], args["l2_promotion"], args["oob_fill"])
        if err:
            raise TilecError(f"cuTensorMapEncodeTiled({args}): CUresult {err}")
        return ctypes.string_at(self._at, MAP_BYTES)


_DEFAULT_ENCODER = None


def default_encoder():
    """The libcuda encoder where libcuda loads (a GPU machine), else cuda-bindings'; made once."""
    global _DEFAULT_ENCODER
    if _DEFAULT_ENCODER is None:
        try:
            _DEFAULT_ENCODER = _LibcudaEncoder(ctypes.CDLL("libcuda.so.1"))
        except (OSError, AttributeError):
            _DEFAULT_ENCODER = _encode_with_driver
    return _DEFAULT_ENCODER


class TensorMaps:
    """The maps of one `spec` by tensor geometry (address, shape, strides): one driver call per
    geometry. A kernel's launch keeps one per tensor-map argument (ArgKind `tensormap`)."""

    LIMIT = 256  # tensors come and go (an output allocated per call): keep it bounded

    def __init__(self, spec: TensorMapSpec, encoder=None):
        self.spec = spec
        self._encoder = encoder if encoder is not None else default_encoder()
        self._maps: dict[tuple, bytes] = {}

    def get(self, address: int, shape, strides) -> bytes:
        key = (address, tuple(shape), tuple(strides))
        blob = self._maps.get(key)
        if blob is None:
            if len(self._maps) >= self.LIMIT:
                self._maps.clear()
            blob = self._maps[key] = self._encoder(encode_arguments(self.spec, address, shape, strides))
        return blob
