"""targets/cuda/loader.py on the CPU: argument packing and loader choice (no driver needed)."""

import ctypes
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
    assert rt.ctypes_params([]) == ((), ())


def test_ctypes_params_for_cuda_bindings():
    values, types = rt.ctypes_params([Ptr(0x1000), 17, np.float32(0.5), np.int32(-1)])
    assert values == (0x1000, 17, 0.5, -1)
    assert types == (ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_int32)
    assert type(values[0]) is int  # not the Ptr subclass: cuda-bindings checks isinstance(int)


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
