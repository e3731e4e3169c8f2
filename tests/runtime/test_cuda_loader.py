"""targets/cuda/loader.py on the CPU: argument packing and loader choice (no driver needed)."""

import struct

import numpy as np
import pytest

from tilec import config
from tilec.targets.cuda import loader as rt
from tilec.targets.cuda.loader import Ptr

from tilec import TilecError


def test_pointers_and_sizes_pack_as_u64_and_i64():
    buf = rt.pack_args([Ptr(0x7F0000001000), Ptr(0x10), 5000])
    assert len(buf) == 24
    assert struct.unpack("<QQq", buf) == (0x7F0000001000, 0x10, 5000)


def test_numpy_scalars_keep_their_type_and_c_alignment():
    # int32 then a pointer: 4 bytes of padding before the 8-byte-aligned pointer, as in C
    buf = rt.pack_args([np.int32(7), Ptr(0xABC), np.float32(1.5), np.int64(-3)])
    assert len(buf) == 4 + 4 + 8 + 4 + 4 + 8
    assert struct.unpack("<i4xQf4xq", buf) == (7, 0xABC, 1.5, -3)


def test_pack_matches_pycuda_build_arg_buf_format():
    # pycuda's _build_arg_buf: np.number -> dtype.char, device pointers -> "P"
    args = [Ptr(1), np.int64(2), np.float32(3.0)]
    assert rt.arg_format(args) == "P" + np.dtype(np.int64).char + np.dtype(np.float32).char
    assert rt.pack_args(args) == struct.pack("Plf", 1, 2, 3.0)


def test_empty_argument_list():
    assert rt.pack_args([]) == b""
    assert rt.ParamLayout([]).offsets == []


def test_layout_offsets_follow_c_rules():
    args = [np.int8(1), Ptr(0x1000), np.float16(0.5), 17, np.uint32(9), np.float64(2.0), True]
    layout = rt.ParamLayout(args)
    assert layout.offsets == [0, 8, 16, 24, 32, 40, 48]
    native = struct.pack("bPeqId?", 1, 0x1000, 0.5, 17, 9, 2.0, True)
    assert layout.pack(args) == native and layout.struct.size == len(native)


def test_tensor_map_is_64_byte_aligned_by_c_rules():
    blob = rt.TensorMapArg(bytes(range(128)))
    args = [Ptr(0xAB), blob, np.int32(-2)]
    layout = rt.ParamLayout(args)
    assert layout.offsets == [0, 64, 192]
    buf = layout.pack(args)
    assert len(buf) == 196 and buf[64:192] == bytes(blob) and buf[8:64] == bytes(56)
    assert struct.unpack_from("<Q", buf, 0) == (0xAB,) and struct.unpack_from("<i", buf, 192) == (-2,)


def test_layout_at_the_drivers_offsets():
    blob = rt.TensorMapArg(b"\x11" * 128)
    args = [blob, Ptr(0x20), 5]
    layout = rt.ParamLayout(args, [(0, 128), (128, 8), (136, 8)])
    buf = layout.pack(args)
    assert buf == b"\x11" * 128 + struct.pack("<Qq", 0x20, 5)
    padded = rt.ParamLayout([Ptr(1), blob], [(0, 8), (64, 128)])  # the driver may leave a gap
    assert padded.pack([Ptr(1), blob]) == struct.pack("<Q", 1) + bytes(56) + b"\x11" * 128


def test_layout_mismatching_the_driver_is_an_error():
    with pytest.raises(TilecError, match="takes 2 parameters, 1 were given"):
        rt.ParamLayout([Ptr(1)], [(0, 8), (8, 8)])
    with pytest.raises(TilecError, match="kernel argument 0: 4 bytes for a parameter of 8"):
        rt.ParamLayout([np.int32(1)], [(0, 8)])
    with pytest.raises(TilecError, match="kernel argument 1: offset 4 overlaps"):
        rt.ParamLayout([Ptr(1), Ptr(2)], [(0, 8), (4, 8)])


@pytest.mark.parametrize("bad", [1.5, "x", None, object()])
def test_unsupported_argument_types(bad):
    with pytest.raises(TypeError, match="kernel argument 1"):
        rt.pack_args([Ptr(1), bad])


def test_ptx_is_nul_terminated_cubin_untouched():
    assert rt._image_bytes(".version 8.0\n") == b".version 8.0\n\0"
    assert rt._image_bytes(b".version 8.0\n\0") == b".version 8.0\n\0"
    elf = b"\x7fELF\x02\x01\x01" + b"\0" * 9
    assert rt._image_bytes(elf) == elf


def test_resolve_loader(monkeypatch):
    monkeypatch.setattr(rt, "_importable", lambda name: name == "cuda-bindings")
    monkeypatch.setattr(config, "LOADER", "")
    assert rt.resolve_loader() == "cuda-bindings"
    assert rt.resolve_loader("cython") == "cuda-bindings"  # TileLang's names mean "default"
    assert rt.resolve_loader("cuda_bindings") == "cuda-bindings"
    with pytest.raises(TilecError, match="pycuda loader was asked for"):
        rt.resolve_loader("pycuda")
    with pytest.raises(TilecError, match="unknown CUDA loader"):
        rt.resolve_loader("opencl")
    monkeypatch.setattr(rt, "_importable", lambda name: True)
    assert rt.resolve_loader() == "pycuda"  # pycuda is the default when both import
    monkeypatch.setattr(config, "LOADER", "cuda-bindings")
    assert rt.resolve_loader() == "cuda-bindings"
    assert rt.resolve_loader("pycuda") == "pycuda"  # an explicit choice beats the environment


def test_no_loader_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(rt, "_importable", lambda name: False)
    monkeypatch.setattr(config, "LOADER", "")
    with pytest.raises(TilecError, match="no CUDA loader"):
        rt.resolve_loader()


def test_pycuda_error_names():
    err = rt._pycuda_error("launching k", RuntimeError("cuLaunchKernel failed: too many resources requested for launch"))
    assert "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" in str(err) and "launching k" in str(err)
