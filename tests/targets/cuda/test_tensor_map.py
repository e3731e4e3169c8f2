"""TMA tensor maps on the host (targets/cuda/tensor_map.py): the arguments of
cuTensorMapEncodeTiled, the rules it enforces, the per-geometry cache. No GPU: the driver's
encoder is replaced by a recorder."""

from __future__ import annotations

import pytest

from tilec import TilecError
from tilec.targets.cuda.tensor_map import TensorMaps, TensorMapSpec, encode_arguments, tma_supported


def test_arguments_are_innermost_first_with_byte_strides():
    # A (M, K) row-major f16 tile of 128 x 64 with the 128-byte swizzle (HOPPER_KERNELS.md §2.1)
    spec = TensorMapSpec(tensor=0, dtype="f16", box=(128, 64), swizzle=128)
    args = encode_arguments(spec, 0x7F0000000000, shape=(4096, 1000), strides=(1000, 1))
    assert args["dims"] == [1000, 4096] and args["strides"] == [2000] and args["box"] == [64, 128]
    assert args["swizzle"] == 3 and args["dtype"] == 6 and args["oob_fill"] == 0 and args["rank"] == 2


@pytest.mark.parametrize("spec, shape, strides, reason", [
    (TensorMapSpec(0, "f16", (128, 64), 128), (64, 100), (100, 1), "stride of 200 bytes"),
    (TensorMapSpec(0, "f16", (128, 128), 128), (256, 256), (256, 1), "wider than its 128-byte swizzle"),
    (TensorMapSpec(0, "f16", (128, 4), 0), (256, 256), (256, 1), "multiple of 16"),
    (TensorMapSpec(0, "f32", (300, 8), 0), (512, 512), (512, 1), "each extent 1 to 256"),
    (TensorMapSpec(0, "f32", (8, 8), 0), (512, 512), (1, 512), "not contiguous"),
])  # fmt: skip
def test_what_tma_cannot_take(spec, shape, strides, reason):
    assert reason in tma_supported(spec, shape, strides)
    with pytest.raises(TilecError, match="cannot be read by TMA"):
        encode_arguments(spec, 0, shape, strides)


def test_misaligned_tensor_is_a_located_error():
    spec = TensorMapSpec(tensor=1, dtype="bf16", box=(64, 64), swizzle=128)
    with pytest.raises(TilecError, match="tensor argument 1 is not 16-byte aligned"):
        encode_arguments(spec, 0x1002, (128, 128), (128, 1))


def test_one_driver_call_per_geometry():
    calls = []
    spec = TensorMapSpec(tensor=0, dtype="f16", box=(64, 64), swizzle=128)
    maps = TensorMaps(spec, encoder=lambda args: calls.append(args) or bytes(128))
    for _ in range(3):
        assert maps.get(0x1000, (256, 256), (256, 1)) == bytes(128)
    maps.get(0x2000, (256, 256), (256, 1))  # another tensor: a new map
    maps.get(0x1000, (256, 512), (512, 1))  # the same address, another shape: a new map
    assert len(calls) == 3
    assert calls[1]["address"] == 0x2000 and calls[2]["dims"] == [512, 256]


def test_the_maps_stay_bounded():
    calls = []
    maps = TensorMaps(TensorMapSpec(0, "f16", (64, 64), 128), encoder=lambda args: calls.append(args) or bytes(128))
    for i in range(TensorMaps.LIMIT + 10):
        maps.get(0x1000 * (i + 1), (256, 256), (256, 1))
    assert len(maps._maps) <= TensorMaps.LIMIT and len(calls) == TensorMaps.LIMIT + 10


@pytest.mark.gpu
def test_the_libcuda_encoder_writes_the_maps_cuda_bindings_writes():
    """The ctypes call on libcuda (the default where it loads) and cuda-bindings' agree byte for byte."""
    import ctypes

    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from tilec.targets.cuda.tensor_map import _encode_with_driver, _LibcudaEncoder

    fast = _LibcudaEncoder(ctypes.CDLL("libcuda.so.1"))
    x = torch.empty(4, 1000, 3, 128, device="cuda", dtype=torch.float16)
    for spec, shape, strides in [(TensorMapSpec(0, "f16", (1, 128, 1, 64), 128), x.shape, x.stride()),
                                 (TensorMapSpec(0, "f16", (64, 64), 128), (4000, 384), (384, 1)),
                                 (TensorMapSpec(0, "f32", (128, 32), 0), (1000, 384), (384, 1))]:
        args = encode_arguments(spec, x.data_ptr(), shape, strides)
        assert fast(args) == _encode_with_driver(args)
        assert fast(args) == fast(args)  # the cached arrays of a geometry, reused
