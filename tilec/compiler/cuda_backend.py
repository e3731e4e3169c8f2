"""The CUDA target's backend: a `CudaBuild` (cuda_build.py) launched on the GPU.

    launch(kernel, given, missing, sizes): check tensors, allocate outputs, evaluate the grid,
    load the module on first use (targets/cuda/loader.py), pack the arguments through the
    launch ABI's argument kinds (launch.py), launch on torch's current stream.
    call(kernel, args): the same for a kernel whose parameters are all tensors of fixed shapes,
    specialized once (`StaticCall`); SLOW where the call is not the one it expects.
"""

from __future__ import annotations

from tilec.compiler.cuda_build import CudaBuild
from tilec.compiler.launch import ARG_KINDS, SLOW
from tilec.errors import TilecError


def _current_stream(torch, device) -> int:
    """torch's current raw CUstream on `device` (the C fast path when torch has it)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device.index)
    return torch.cuda.current_stream(device).cuda_stream


class CudaBackend(CudaBuild):
    """Builds one KernelProgram for a CUDA target (CudaBuild) and launches it."""

    def __init__(self, program, target, pass_configs: dict | None = None, *, execution_backend: str = "auto",
                 build_key: str | None = None):
        self.execution_backend = execution_backend
        self._kernels: dict[int, object] = {}  # the loaded kernel per device
        self._grids: dict[tuple, tuple] = {}  # launch grid per binding of the dynamic sizes
        self._packers: list | None = None  # ArgKind.gpu_packer's function per kernel argument
        self._static: StaticCall | None | object = SLOW  # the fast call (None: none applies; SLOW: not built)
        super().__init__(program, target, pass_configs, build_key=build_key)

    def launch_description(self) -> str:
        spec, params = self.spec, self.program.params
        loader = next((k.loader for k in self._kernels.values()), None) or \
            f"{self.execution_backend} (chosen at the first launch)"
        image = "cubin" if self.cubin is not None else "PTX, JIT-compiled by the driver"
        lines = [f"kernel {spec.kernel_name}: {image} for {self.arch}, loader {loader}",
                 f"  grid  = {spec.grid}", f"  block = {tuple(spec.block)}",
                 f"  dynamic shared memory = {spec.smem_bytes} bytes", "  params:"]
        lines += [f"    {i}: {ARG_KINDS[kind].describe(value, params)}" for i, (kind, value) in enumerate(spec.args)]
        if self.report is not None and spec.kernel_name in self.report.kernels:
            r = self.report[spec.kernel_name]
            lines.append(f"  ptxas: {r.registers} registers, {r.shared_bytes} bytes static smem, "
                         f"{r.spill_store_bytes}/{r.spill_load_bytes} bytes spill stores/loads")
        return "\n".join(lines)

    # ---- launch ----------------------------------------------------------------------------
    def _loaded(self, device: int):
        kernel = self._kernels.get(device)
        if kernel is None:
            from tilec.targets.cuda import loader

            name = self.spec.kernel_name
            try:
                image = self.cubin if self.cubin is not None else self.ptx
                kernel = loader.load(image, name, loader=self.execution_backend, device=device)
            except TilecError:
                if self.cubin is None:
                    raise
                # e.g. a cubin for another arch than this device's: let the driver JIT the PTX
                kernel = loader.load(self.ptx, name, loader=self.execution_backend, device=device)
            self._kernels[device] = kernel
        return kernel

    def check_tensors(self, given: dict) -> object:
        """The one CUDA device of the given tensors (None if there are none); errors name the argument."""
        from tilec.runtime import _is_torch

        name, params, device = self.program.name, self.program.params, None
        for i, t in given.items():
            p = params[i]
            if p.shape is None:
                continue  # a scalar, passed by value
            if not _is_torch(t) or t.device.type != "cuda":
                where = t.device if _is_torch(t) else type(t).__name__
                raise TilecError(f"{name}: argument {i} (`{p.name}`) must be on cuda, got {where}",
                                 loc=self.program.loc, hint=f"pass a CUDA torch tensor (`{p.name}.cuda()`)")
            if device is None:
                device = t.device
            elif t.device != device:
                raise TilecError(f"{name}: argument {i} (`{p.name}`) is on {t.device} but earlier arguments "
                                 f"are on {device}; all tensors must be on one device", loc=self.program.loc)
            if not t.is_contiguous():
                raise TilecError(f"{name}: argument {i} (`{p.name}`) must be contiguous", loc=self.program.loc,
                                 hint=f"pass `{p.name}.contiguous()`")
        return device

    def packers(self) -> list:
        """Per kernel argument, in the spec's order, the function packing it (ArgKind.gpu_packer)."""
        if self._packers is None:
            self._packers = [ARG_KINDS[kind].gpu_packer(value, self) for kind, value in self.spec.args]
        return self._packers

    def kernel_args(self, tensors, sizes: dict) -> list:
        """The launch arguments of the call's `tensors` (indexed by parameter position)."""
        return [pack(tensors, sizes) for pack in self.packers()]

    def grid(self, device, sizes: dict) -> tuple:
        """The launch grid on `device` for a binding of the sizes (a persistent kernel's depends on
        the device's multiprocessors), evaluated once per binding."""
        size_key = (device.index, *sorted(sizes.items()))
        grid = self._grids.get(size_key)
        if grid is None:
            import torch

            processors = torch.cuda.get_device_properties(device).multi_processor_count if self.spec.grid.persistent \
                else None
            grid = self._grids[size_key] = tuple(int(g) for g in self.spec.grid.evaluate(sizes, processors))
        return grid

    def call(self, args: list):
        """The kernel's outputs, or SLOW where the fast call does not apply (the general path checks)."""
        fast = self._static
        if fast is SLOW:
            fast = self._static = StaticCall.build(self)
        return SLOW if fast is None else fast(args)

    def launch(self, kernel, given: dict, missing: list, sizes: dict):
        import torch

        from tilec.runtime import output_shape

        params = self.program.params
        device = self.check_tensors(given) or torch.device("cuda", torch.cuda.current_device())
        tensors = dict(given)
        for i in missing:
            tensors[i] = torch.empty(output_shape(params[i], sizes, self.program.loc), dtype=params[i].dtype.torch,
                                     device=device)
        grid = self.grid(device, sizes)
        if all(g > 0 for g in grid):
            args = self.kernel_args(tensors, sizes)
            loaded = self._loaded(device.index)
            stream = _current_stream(torch, device)
            loaded.launch(grid, self.spec.block, self.spec.smem_bytes, args, stream)
        outs = [tensors[i] for i in getattr(kernel, "out_idx", self.program.returns)]
        return None if not outs else outs[0] if len(outs) == 1 else outs


class StaticCall:
    """The call of a kernel whose parameters are all tensors of fixed shapes, with every check,
    the outputs' allocation and the arguments' packing specialized once: a warm call reads each
    input's dtype, shape, device and address, allocates the outputs and launches.

    Any call it does not expect (another count, shape, dtype or device, a tensor not contiguous or
    not on the GPU, a numpy array) returns SLOW, and the general path (runtime.bind_arguments,
    CudaBackend.launch) checks it and says what is wrong; both launch the same bytes.
    """

    def __init__(self, backend: CudaBackend, torch):
        params = backend.program.params
        self.backend, self.torch, self.n_params = backend, torch, len(params)
        self.inputs = [i for i, p in enumerate(params) if not p.is_output]
        self.expect = [(params[i].dtype.torch, tuple(params[i].shape)) for i in self.inputs]
        self.outputs = [(i, tuple(p.shape), p.dtype.torch) for i, p in enumerate(params) if p.is_output]
        self.returns = list(backend.program.returns)  # a JITKernel's out_idx
        self.packers = backend.packers()
        self.devices: dict[int, tuple] = {}  # device index -> (torch.device, grid, loaded kernel)
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self.stream = raw if raw is not None else lambda index: torch.cuda.current_stream(index).cuda_stream

    @classmethod
    def build(cls, backend: CudaBackend) -> StaticCall | None:
        """The fast call of the backend's kernel, or None where its parameters or grid vary with the call."""
        params = backend.program.params
        if not params or all(p.is_output for p in params):
            return None  # no input tensor names the device
        for p in params:
            if p.shape is None or not all(type(d) is int for d in p.shape):
                return None  # a scalar, or a dimension bound per call
            try:
                p.dtype.torch
            except TypeError:
                return None  # no torch dtype: the general path says so
        if any(kind not in ("tensor", "tensormap") for kind, _ in backend.spec.args):
            return None
        if not all(backend.spec.grid.tiles({})):
            return None  # an empty grid: the general path returns the outputs unlaunched
        import torch

        return cls(backend, torch)

    def _device(self, index: int) -> tuple:
        device = self.torch.device("cuda", index)
        where = self.devices[index] = (device, self.backend.grid(device, {}), self.backend._loaded(index))
        return where

    def __call__(self, args: list):
        if len(args) != len(self.inputs):
            return SLOW
        tensor, index = self.torch.Tensor, None
        for t, (dtype, shape) in zip(args, self.expect):
            if not (isinstance(t, tensor) and t.is_cuda and t.dtype is dtype and t.shape == shape
                    and t.is_contiguous()):
                return SLOW
            if index is None:
                index = t.get_device()
            elif t.get_device() != index:
                return SLOW
        device, grid, loaded = self.devices.get(index) or self._device(index)
        tensors = [None] * self.n_params
        for i, t in zip(self.inputs, args):
            tensors[i] = t
        empty = self.torch.empty
        for i, shape, dtype in self.outputs:
            tensors[i] = empty(shape, dtype=dtype, device=device)
        spec, sizes = self.backend.spec, {}
        values = [pack(tensors, sizes) for pack in self.packers]
        loaded.launch(grid, spec.block, spec.smem_bytes, values, self.stream(index))
        outs = [tensors[i] for i in self.returns]
        return None if not outs else outs[0] if len(outs) == 1 else outs
