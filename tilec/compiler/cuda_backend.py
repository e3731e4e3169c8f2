"""The CUDA target's backend: a `CudaBuild` (cuda_build.py) launched on the GPU.

    launch(kernel, given, missing, sizes): check tensors, allocate outputs, evaluate the grid,
    load the module on first use (targets/cuda/loader.py), pack the arguments through the
    launch ABI's argument kinds (launch.py), launch on torch's current stream.
"""

from __future__ import annotations

from tilec.compiler.cuda_build import CudaBuild
from tilec.compiler.launch import ARG_KINDS
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
        self._packers: list | None = None  # (ArgKind.gpu_value, value) per kernel argument
        self.state: dict = {}  # per-kernel launch state an argument kind keeps (e.g. encoded descriptors)
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

    def kernel_args(self, tensors: dict, sizes: dict) -> list:
        """The launch arguments, in the spec's order, each packed by its kind."""
        packers = self._packers
        if packers is None:
            packers = self._packers = [(ARG_KINDS[kind].gpu_value, value) for kind, value in self.spec.args]
        return [pack(value, tensors, sizes, self) for pack, value in packers]

    def launch(self, kernel, given: dict, missing: list, sizes: dict):
        import torch

        from tilec.runtime import output_shape

        params = self.program.params
        device = self.check_tensors(given) or torch.device("cuda", torch.cuda.current_device())
        tensors = dict(given)
        for i in missing:
            tensors[i] = torch.empty(output_shape(params[i], sizes, self.program.loc), dtype=params[i].dtype.torch,
                                     device=device)
        size_key = (device.index, *sorted(sizes.items()))
        grid = self._grids.get(size_key)
        if grid is None:
            processors = torch.cuda.get_device_properties(device).multi_processor_count if self.spec.grid.persistent \
                else None
            grid = self._grids[size_key] = tuple(int(g) for g in self.spec.grid.evaluate(sizes, processors))
        if all(g > 0 for g in grid):
            args = self.kernel_args(tensors, sizes)
            loaded = self._loaded(device.index)
            stream = _current_stream(torch, device)
            loaded.launch(grid, self.spec.block, self.spec.smem_bytes, args, stream)
        outs = [tensors[i] for i in getattr(kernel, "out_idx", self.program.returns)]
        return None if not outs else outs[0] if len(outs) == 1 else outs
