"""Load a cubin/PTX image and launch its kernel on torch's current stream.

Two loaders share one interface:

    kernel = load(image, "k", loader="pycuda", device=0)   # -> LoadedKernel
    kernel.launch(grid, block, smem_bytes, [Ptr(a.data_ptr()), n], stream)

- **pycuda** (the default when `import pycuda.driver` works). Uses the device's *primary*
  context, the one torch's runtime API uses (`Device(i).retain_primary_context()`, pushed
  and popped around every call; `make_context` would create a second context whose
  pointers and streams torch's tensors cannot be used with). pycuda's `Function._launch_kernel`
  takes only a pycuda `Stream` (or None for the legacy default stream) and pycuda cannot wrap
  a foreign `CUstream`, so a launch while torch's current stream is not the default stream
  is ordered through the legacy stream with two `wait_stream`s (see `_PycudaKernel.launch`).
  Inside CUDA-graph capture that bridge is illegal: use `TILEC_LOADER=cuda-bindings`.
- **cuda-bindings** (`from cuda.bindings import driver`): `cuModuleLoadData`,
  `cuModuleGetFunction`, `cuLaunchKernel` with `kernelParams` given as the address of an
  array of pointers into the packed arguments, launched on torch's stream handle directly.

Choose with `load(..., loader=...)`, the `execution_backend` argument of `tilec.jit`, or
`TILEC_LOADER=pycuda|cuda-bindings`. Driver failures become `TilecError`s naming the CUDA
error (`CUDA_ERROR_INVALID_VALUE`, ...).

Kernel arguments are `Ptr` (a device pointer, packed as a u64), Python ints (packed as
int64, the type of every dynamic size in tilec's launch ABI) and numpy scalars (packed as
their own type); a tensor map (`TensorMapArg`) is 128 bytes by value. `ParamLayout` lays out
the parameter buffer of one argument signature once (C rules, or the driver's offsets);
`pack_args` (pycuda's parameter buffer, identical to pycuda's `_build_arg_buf`) is pure.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import struct
import threading
from collections.abc import Sequence

import numpy as np

from tilec import config
from tilec.errors import TilecError

__all__ = ["LOADERS", "LoadedKernel", "ParamLayout", "Ptr", "available_loaders", "load", "pack_args",
           "resolve_loader"]

LOADERS = ("pycuda", "cuda-bindings")


_ALIASES = {"pycuda": "pycuda", "cuda-bindings": "cuda-bindings", "cuda_bindings": "cuda-bindings",
            "cuda-python": "cuda-bindings", "cuda": "cuda-bindings"}
# TileLang's execution_backend names ("cython", "ctypes", "nvrtc", "tvm_ffi", "torch") describe
# its host wrapper, which tilec does not have: they mean "the default loader" here.
_TILELANG_BACKENDS = ("auto", "", "cython", "ctypes", "nvrtc", "tvm_ffi", "torch", "dlpack")


class Ptr(int):
    """A device pointer kernel argument (packed as an unsigned 64-bit value)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Ptr(0x{int(self):x})"


# --------------------------------------------------------------------------- #
# Argument packing: pure functions, tested on the CPU
# --------------------------------------------------------------------------- #


class TensorMapArg(bytes):
    """A by-value kernel argument of 128 bytes aligned to 64: a TMA tensor map
    (`CUtensorMap`, passed as a `__grid_constant__` parameter)."""

    __slots__ = ()


def _arg_format(i: int, arg) -> str:
    """The `struct` character for one argument (pycuda's `_build_arg_buf` spelling)."""
    if isinstance(arg, TensorMapArg):
        return "128s"
    if isinstance(arg, Ptr):
        return "P"
    if isinstance(arg, np.number):
        return arg.dtype.char
    if isinstance(arg, bool):
        return "?"
    if isinstance(arg, int):
        return "q"
    raise TypeError(f"kernel argument {i}: unsupported type {type(arg).__name__}; "
                    f"use Ptr(...) for pointers, int for int64 sizes or a numpy scalar (np.float32(x))")


def arg_format(args: Sequence) -> str:
    return "".join(_arg_format(i, a) for i, a in enumerate(args))


_STANDARD = {1: "b", 2: "h", 4: "i", 8: "q"}  # a native integer char of n bytes, in struct's standard mode


def _standard_char(ch: str) -> str:
    """The `struct` character of standard size ("=" mode) that packs like native `ch`."""
    if ch == "P":
        return "Q"
    if ch in "hHiIlLqQnN":
        std = _STANDARD[struct.calcsize(ch)]
        return std.upper() if ch.isupper() else std
    return ch  # b B ? e f d and "128s" are the same in both modes


class ParamLayout:
    """The parameter buffer of one argument signature: each argument's (offset, size) and one
    `struct.Struct` that packs them all, built once per signature so a launch is a single pack.

    Without `offsets`, C struct rules (native alignment; a tensor map on 64 bytes), as pycuda's
    `_build_arg_buf` lays out a buffer. With them, the (offset, size) the driver gives for each
    parameter (cuFuncGetParamInfo): a by-value parameter's alignment is relative to where the
    driver puts the parameter space, so a tensor map does not land where C rules place it.
    """

    def __init__(self, args: Sequence, offsets: Sequence[tuple[int, int]] | None = None):
        chars = [_arg_format(i, a) for i, a in enumerate(args)]
        if offsets is None:
            offsets, end = [], 0
            for ch in chars:
                size = struct.calcsize(ch)
                align = 64 if ch == "128s" else size
                end = -(-end // align) * align
                offsets.append((end, size))
                end += size
        elif len(offsets) != len(args):
            raise TilecError(f"the kernel takes {len(offsets)} parameters, {len(args)} were given")
        fmt, at = ["="], 0
        for i, (ch, (offset, size)) in enumerate(zip(chars, offsets)):
            if struct.calcsize(ch) != size:
                raise TilecError(f"kernel argument {i}: {struct.calcsize(ch)} bytes for a parameter of {size}")
            if offset < at:
                raise TilecError(f"kernel argument {i}: offset {offset} overlaps the argument before it")
            fmt.append(f"{offset - at}x{_standard_char(ch)}" if offset > at else _standard_char(ch))
            at = offset + size
        end = max((o + n for o, n in offsets), default=0)
        self.struct = struct.Struct("".join(fmt) + (f"{end - at}x" if end > at else ""))
        self.offsets = [o for o, _ in offsets]

    def pack(self, args: Sequence) -> bytes:
        return self.struct.pack(*args)


def pack_args(args: Sequence) -> bytes:
    """The kernel parameter buffer: C struct layout (native alignment), as pycuda builds it.

    Equivalent to `pycuda.driver._build_arg_buf` for Ptr (a `DeviceAllocation`-like "P"),
    numpy scalars and int64 (`np.int64(x)`): `_pvt_struct.pack` is `struct.pack` in native mode.
    """
    return ParamLayout(args).pack(args)


def param_offsets(image: bytes, name: str, device: int) -> list[tuple[int, int]]:
    """(offset, size) of each parameter of kernel `name` in `image`, as the driver lays them out
    (cuda-bindings' cuFuncGetParamInfo on a second load of the image in the primary context)."""
    from cuda.bindings import driver

    ctx = _bindings_context(device)
    _check(driver.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
    try:
        module = _check(driver.cuModuleLoadData(image), f"loading kernel {name!r} for its parameter layout")
        try:
            function = _check(driver.cuModuleGetFunction(module, name.encode()), f"cuModuleGetFunction({name!r})")
            offsets, i = [], 0
            while True:
                err, offset, size = driver.cuFuncGetParamInfo(function, i)
                if err != driver.CUresult.CUDA_SUCCESS:
                    break
                offsets.append((int(offset), int(size)))
                i += 1
            return offsets
        finally:
            driver.cuModuleUnload(module)
    finally:
        _check(driver.cuCtxPopCurrent(), "cuCtxPopCurrent")


def _image_bytes(image: bytes | str) -> bytes:
    """Module image bytes; PTX text must reach the driver NUL-terminated."""
    if isinstance(image, str):
        image = image.encode()
    if not image.startswith(b"\x7fELF") and not image.endswith(b"\0"):
        image += b"\0"
    return image


# --------------------------------------------------------------------------- #
# Loader choice
# --------------------------------------------------------------------------- #


def _importable(loader: str) -> bool:
    try:
        if loader == "pycuda":
            import pycuda.driver  # noqa: F401
        else:
            from cuda.bindings import driver  # noqa: F401
    except ImportError:
        return False
    return True


def available_loaders() -> list[str]:
    return [name for name in LOADERS if _importable(name)]


def resolve_loader(requested: str | None = None) -> str:
    """The loader for `requested` ("auto"/None: TILEC_LOADER, else pycuda, else cuda-bindings)."""
    name = (requested or "auto").strip().lower()
    if name in _TILELANG_BACKENDS:
        name = config.LOADER or "auto"
    if name == "auto":
        found = available_loaders()
        if not found:
            raise TilecError("no CUDA loader is installed", hint="pip install pycuda (or cuda-bindings)")
        return found[0]
    if name not in _ALIASES:
        raise TilecError(f"unknown CUDA loader {requested!r}", hint=f"use one of {', '.join(LOADERS)}")
    name = _ALIASES[name]
    if not _importable(name):
        raise TilecError(f"the {name} loader was asked for but cannot be imported",
                         hint=f"install it, or use {', '.join(n for n in LOADERS if n != name)}")
    return name


# --------------------------------------------------------------------------- #
# Loaded kernels
# --------------------------------------------------------------------------- #

_DEFAULT_SMEM_LIMIT = 48 * 1024  # above this, dynamic shared memory must be opted into per function


class LoadedKernel:
    """One kernel of a loaded module, on one device."""

    loader: str = ""

    def __init__(self, name: str, device: int):
        self.name, self.device = name, device
        self._smem_opt_in = _DEFAULT_SMEM_LIMIT

    def launch(self, grid: Sequence[int], block: Sequence[int], smem_bytes: int, args: Sequence,
               stream: int = 0) -> None:
        raise NotImplementedError

    def _dims(self, grid, block) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        if type(grid) is tuple and type(block) is tuple and len(grid) == len(block) == 3:
            return grid, block  # the backend's own (ints, evaluated once per binding)
        g = tuple(int(x) for x in grid) + (1,) * (3 - len(grid))
        b = tuple(int(x) for x in block) + (1,) * (3 - len(block))
        return g, b


def _device_index(device: int | None) -> int:
    if device is not None:
        return int(device)
    import torch

    return torch.cuda.current_device()


def load(image: bytes | str, kernel_name: str, *, loader: str | None = None,
         device: int | None = None) -> LoadedKernel:
    """Load a cubin (bytes) or PTX (str/bytes) and return `kernel_name` from it."""
    name = resolve_loader(loader)
    device = _device_index(device)
    _ensure_torch_context(device)
    cls = _PycudaKernel if name == "pycuda" else _BindingsKernel
    return cls(_image_bytes(image), kernel_name, device)


def _ensure_torch_context(device: int) -> None:
    """Makes torch create (and make current) the device's primary context first."""
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        torch.cuda.init()
        with torch.cuda.device(device):
            torch.cuda.current_stream(device)


# ---- pycuda --------------------------------------------------------------------------------

_PYCUDA_ERRORS = {  # pycuda reports cuGetErrorString's text; map the common ones to their names
    "invalid argument": "CUDA_ERROR_INVALID_VALUE",
    "out of memory": "CUDA_ERROR_OUT_OF_MEMORY",
    "invalid device context": "CUDA_ERROR_INVALID_CONTEXT",
    "device kernel image is invalid": "CUDA_ERROR_INVALID_IMAGE",
    "a PTX JIT compilation failed": "CUDA_ERROR_INVALID_PTX",
    "the provided PTX was compiled with an unsupported toolchain.": "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    "named symbol not found": "CUDA_ERROR_NOT_FOUND",
    "too many resources requested for launch": "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
    "an illegal memory access was encountered": "CUDA_ERROR_ILLEGAL_ADDRESS",
    "unspecified launch failure": "CUDA_ERROR_LAUNCH_FAILED",
    "no kernel image is available for execution on the device": "CUDA_ERROR_NO_BINARY_FOR_GPU",
    "invalid resource handle": "CUDA_ERROR_INVALID_HANDLE",
    "misaligned address": "CUDA_ERROR_MISALIGNED_ADDRESS",
    "an illegal instruction was encountered": "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "operation not permitted when stream is capturing": "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
}


def _pycuda_error(what: str, err: Exception) -> TilecError:
    text = str(err)
    detail = text.split("failed:", 1)[-1].strip()
    name = next((n for msg, n in _PYCUDA_ERRORS.items() if detail.startswith(msg)), "CUDA error")
    return TilecError(f"{what}: {name} ({text})")


_pycuda_lock = threading.Lock()
_pycuda_contexts: dict[int, object] = {}
_pycuda_live: list = []  # modules to drop while their context can still be pushed (atexit)


def _pycuda_context(device: int):
    import pycuda.driver as drv

    with _pycuda_lock:
        ctx = _pycuda_contexts.get(device)
        if ctx is None:
            drv.init()
            ctx = drv.Device(device).retain_primary_context()
            _pycuda_contexts[device] = ctx
            if len(_pycuda_contexts) == 1:
                atexit.register(_pycuda_shutdown)
        return ctx


def _pycuda_shutdown() -> None:
    """Unload modules with their (primary) context pushed, before interpreter teardown."""
    import pycuda.driver as drv

    for kernel in _pycuda_live:
        ctx = _pycuda_contexts.get(kernel.device)
        with contextlib.suppress(Exception):  # best effort at exit
            ctx.push()
            try:
                kernel._function = kernel._module = None
            finally:
                drv.Context.pop()
    _pycuda_live.clear()


class _PycudaKernel(LoadedKernel):
    loader = "pycuda"

    def __init__(self, image: bytes, name: str, device: int):
        super().__init__(name, device)
        import pycuda.driver as drv

        self._drv = drv
        self._kinds: tuple = ()
        self._layout: ParamLayout | None = None
        self._image = image
        self._offsets: list[tuple[int, int]] | None = None
        self._ctx = _pycuda_context(device)
        self._ctx.push()
        try:
            self._module = drv.module_from_buffer(image)
            self._function = self._module.get_function(name)
        except drv.Error as e:
            raise _pycuda_error(f"loading kernel {name!r} on cuda:{device}", e) from None
        finally:
            drv.Context.pop()
        _pycuda_live.append(self)

    def launch(self, grid, block, smem_bytes, args, stream=0) -> None:
        drv = self._drv
        grid, block = self._dims(grid, block)
        kinds = tuple(map(type, args))
        if kinds != self._kinds:  # a kernel's argument types never change: lay the buffer out once
            offsets = None
            if TensorMapArg in kinds:
                if self._offsets is None:
                    self._offsets = param_offsets(self._image, self.name, self.device)
                offsets = self._offsets
            self._kinds, self._layout = kinds, ParamLayout(args, offsets)
        buf = self._layout.pack(args)
        self._ctx.push()
        try:
            if smem_bytes > self._smem_opt_in:
                self._function.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, int(smem_bytes))
                self._smem_opt_in = int(smem_bytes)
            if not stream:
                self._function._launch_kernel(grid, block, buf, int(smem_bytes), None)
            else:
                self._launch_bridged(grid, block, buf, int(smem_bytes))
        except drv.Error as e:
            raise _pycuda_error(f"launching {self.name} grid={grid} block={block} smem={smem_bytes}", e) from None
        finally:
            drv.Context.pop()

    def _launch_bridged(self, grid, block, buf, smem) -> None:
        """Launch on the legacy stream, ordered after and before torch's current stream.

        pycuda cannot launch on a foreign CUstream; torch's side streams are non-blocking, so
        the order is made explicit: legacy waits for current, kernel, current waits for legacy.
        """
        import torch

        if torch.cuda.is_current_stream_capturing():
            raise TilecError("the pycuda loader cannot launch inside CUDA-graph capture",
                             hint="set TILEC_LOADER=cuda-bindings (or execution_backend='cuda-bindings')")
        current = torch.cuda.current_stream(self.device)
        legacy = torch.cuda.default_stream(self.device)
        legacy.wait_stream(current)
        self._function._launch_kernel(grid, block, buf, smem, None)
        current.wait_stream(legacy)


# ---- cuda-bindings -------------------------------------------------------------------------

_bindings_lock = threading.Lock()
_bindings_contexts: dict[int, object] = {}


def _check(result, what: str):
    """cuda-bindings returns (CUresult, *values); raise a TilecError unless CUDA_SUCCESS."""
    from cuda.bindings import driver

    err, *values = result if isinstance(result, tuple) else (result,)
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        name = name.decode() if isinstance(name, bytes) else getattr(err, "name", str(err))
        raise TilecError(f"{what}: {name}")
    return values[0] if len(values) == 1 else tuple(values)


def _bindings_context(device: int):
    from cuda.bindings import driver

    with _bindings_lock:
        ctx = _bindings_contexts.get(device)
        if ctx is None:
            _check(driver.cuInit(0), "cuInit")
            dev = _check(driver.cuDeviceGet(device), f"cuDeviceGet({device})")
            ctx = _check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
            _bindings_contexts[device] = ctx
        return ctx


class _BindingsKernel(LoadedKernel):
    loader = "cuda-bindings"

    def __init__(self, image: bytes, name: str, device: int):
        super().__init__(name, device)
        from cuda.bindings import driver

        self._driver = driver
        self._kinds: tuple = ()
        self._layout: ParamLayout | None = None
        self._ctx = _bindings_context(device)
        self._push()
        try:
            self._image = image  # cuModuleLoadData reads it during the call only; kept for clarity
            self._module = _check(driver.cuModuleLoadData(image), f"loading kernel {name!r} on cuda:{device}")
            self._function = _check(driver.cuModuleGetFunction(self._module, name.encode()),
                                    f"cuModuleGetFunction({name!r})")
        finally:
            self._pop()

    def _push(self):
        _check(self._driver.cuCtxPushCurrent(self._ctx), "cuCtxPushCurrent")

    def _pop(self):
        _check(self._driver.cuCtxPopCurrent(), "cuCtxPopCurrent")

    def launch(self, grid, block, smem_bytes, args, stream=0) -> None:
        driver = self._driver
        (gx, gy, gz), (bx, by, bz) = self._dims(grid, block)
        kinds = tuple(map(type, args))
        if kinds != self._kinds:
            self._kinds, self._layout = kinds, ParamLayout(args)
        layout = self._layout
        # kernelParams as the driver takes it: an array of pointers into the packed arguments (the
        # form cuda-bindings accepts as an int; by-value tensor maps need it)
        buf = ctypes.create_string_buffer(layout.pack(args), layout.struct.size or 1)
        base = ctypes.addressof(buf)
        params = (ctypes.c_void_p * max(len(args), 1))(*[base + o for o in layout.offsets])
        self._push()
        try:
            if smem_bytes > self._smem_opt_in:
                attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                _check(driver.cuFuncSetAttribute(self._function, attr, int(smem_bytes)),
                       f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES={smem_bytes}) for {self.name}")
                self._smem_opt_in = int(smem_bytes)
            _check(driver.cuLaunchKernel(self._function, gx, gy, gz, bx, by, bz, int(smem_bytes),
                                         driver.CUstream(int(stream)), ctypes.addressof(params), 0),
                   f"launching {self.name} grid={(gx, gy, gz)} block={(bx, by, bz)} smem={smem_bytes}")
            del buf, params  # the argument bytes the driver read during the call
        finally:
            self._pop()
