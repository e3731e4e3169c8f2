"""The CUDA target's backend: tile IR → thread IR → LLVM IR → PTX → cubin, cached, launched.

    CudaBackend(program, target, pass_configs)
      │ key = sha256(tile IR, calling convention, target, pass configs, ptxas, versions)
      │ cache hit → LaunchSpec, PTX, cubin, stage IRs from TILEC_CACHE_DIR (no lowering), taken only
      │             if every field checks out and the entry is this program's (`_read_entry`), else a miss
      │ miss:  tilec.pipeline.lower_to_thread → (thread module, LaunchSpec, stage IRs)
      │        targets.nvptx.emit_llvm_ir → compile_llvm_ir (= emit_ptx, keeping the LLVM text)
      │        targets.nvptx.assemble (ptxas -v) when ptxas is found, else the driver JITs the PTX
      ▼
    launch(kernel, given, missing, sizes): check tensors, allocate outputs, evaluate the grid,
    load the module on first use (targets/cuda_runtime), launch on torch's current stream.

`.report` is ptxas's `PtxasReport` (registers, spills, shared memory) or None without ptxas.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import time
from dataclasses import asdict

from tilec import cache, config
from tilec.errors import TilecError

STAGES = ("tile", "tile-opt", "thread", "llvm", "ptx")
_EXT = {"tile": "mlir", "tile-opt": "mlir", "thread": "mlir", "llvm": "ll", "ptx": "ptx"}


def _current_stream(torch, device) -> int:
    """torch's current raw CUstream on `device` (the C fast path when torch has it)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device.index)
    return torch.cuda.current_stream(device).cuda_stream


class CacheMissError(TilecError):
    """A backend built from a memo's `build_key` (no tile IR in memory) found no usable cache entry."""


def spec_to_json(spec) -> str:
    return spec.to_json()


def spec_from_json(text: str):
    from tilec.launch import LaunchSpec

    return LaunchSpec.from_json(text)


def _report_to_json(report) -> dict | None:
    if report is None:
        return None
    return {"arch": report.arch, "log": report.log, "kernels": {n: asdict(k) for n, k in report.kernels.items()}}


def _report_from_json(data):
    if data is None:
        return None
    from tilec.targets.nvptx import KernelResources, PtxasReport

    return PtxasReport(data["arch"], {n: KernelResources(**k) for n, k in data["kernels"].items()}, data["log"])


_RESOURCE_FIELDS = ("name", "registers", "stack_frame_bytes", "spill_store_bytes", "spill_load_bytes",
                    "shared_bytes", "barriers")  # targets.nvptx.KernelResources' fields (not imported: LLVM)


def _is_int(value, low: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _grid_ok(grid) -> bool:
    """A GridExpr read from the cache: known ops, each reading only earlier values."""
    if not (isinstance(grid.program, list) and isinstance(grid.outputs, list) and len(grid.outputs) <= 3
            and all(_is_int(i) and i < len(grid.program) for i in grid.outputs)):
        return False
    for i, step in enumerate(grid.program):
        if not (isinstance(step, list) and step and isinstance(step[0], str)):
            return False
        op, args = step[0], step[1:]
        if op == "const":
            ok = len(args) == 1 and _is_int(args[0], -(1 << 62))
        elif op == "size":
            ok = len(args) == 1 and isinstance(args[0], str)
        else:
            arity = 1 if op == "copy" else 2 if op in grid._BINARY else -1
            ok = len(args) == arity and all(_is_int(a) and a < i for a in args)
        if not ok:
            return False
    return True


def _spec_ok(spec, n_params: int) -> bool:
    """A LaunchSpec read from the cache has the types and ranges a launch relies on."""
    if not (isinstance(spec.kernel_name, str) and len(spec.block) == 3 and all(_is_int(b, 1) for b in spec.block)
            and _is_int(spec.smem_bytes) and isinstance(spec.args, list) and _grid_ok(spec.grid)):
        return False
    return all(len(a) == 2 and ((a[0] == "tensor" and _is_int(a[1]) and a[1] < n_params)
                                or (a[0] == "size" and isinstance(a[1], str))) for a in spec.args)


def _report_ok(report) -> bool:
    if report is None:
        return True
    if not (isinstance(report, dict) and isinstance(report.get("arch"), str) and isinstance(report.get("log"), str)
            and isinstance(report.get("kernels"), dict)):
        return False
    for resources in report["kernels"].values():
        if not (isinstance(resources, dict) and set(resources) <= set(_RESOURCE_FIELDS)
                and isinstance(resources.get("name"), str)
                and all(_is_int(v) for k, v in resources.items() if k != "name")):
            return False
    return True


def _read_entry(entry: dict, program, arch: str):
    """(spec, ptx, cubin, ir, report) from a build cache entry, or None if any field is missing or
    of the wrong type, the build is another program's or another arch's, the PTX lacks the entry
    function or the cubin is not an ELF image: a miss, rebuilt; nothing damaged reaches the driver.
    (`cache.get` has already checked every byte against the hashes it stored.)"""
    try:
        if entry.get("program") != cache.program_fingerprint(program) or entry.get("arch") != arch:
            return None
        spec = spec_from_json(entry["launch"])
        ptx, cubin, ir, report = entry["ptx"], entry.get("cubin"), entry["ir"], entry.get("report")
        if not (_spec_ok(spec, len(program.params)) and spec.kernel_name == entry.get("kernel_name")
                and isinstance(ptx, bytes) and (cubin is None or (isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF"))
                and isinstance(ir, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in ir.items())
                and _report_ok(report)):
            return None
        ptx = ptx.decode()
        if not re.search(rf"\.entry\s+{re.escape(spec.kernel_name)}\b", ptx):
            return None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError):
        return None  # ValueError: bad JSON or UTF-8
    return spec, ptx, cubin, ir, report


def _ptxas_marker() -> str:
    """Which ptxas a build would use, cheaply (importing targets.nvptx loads LLVM: ~120 ms)."""
    candidates = [shutil.which("ptxas")] + [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    return "ptxas=" + ";".join(c or "" for c in candidates)


# --------------------------------------------------------------------------- #
# The backend
# --------------------------------------------------------------------------- #


class CudaBackend:
    """Compiles one KernelProgram for a CUDA target and launches it (see the module docstring)."""

    def __init__(self, program, target, pass_configs: dict | None = None, *, execution_backend: str = "auto",
                 build_key: str | None = None):
        self.program = program
        self.target = target
        self.pass_configs = dict(pass_configs or {})
        self.execution_backend = execution_backend
        self.build_key = build_key
        self.spec = None
        self.ptx = ""
        self.cubin: bytes | None = None
        self._report = None  # a PtxasReport, or its JSON form until first read (no LLVM import on a hit)
        self.module = None  # the thread-level ModuleOp after a fresh build; None after a cache hit
        self.ir: dict[str, str] = {}
        self._lazy: dict = {}  # stage → function printing it, after a fresh build
        self._tile_text: str | None = None
        self.from_cache = False
        self.compile_seconds = 0.0
        self._kernels: dict[int, object] = {}
        self._grids: dict[tuple, tuple] = {}  # launch grid per binding of the dynamic sizes
        self._build()

    # ---- build ---------------------------------------------------------------------------
    @property
    def report(self):
        """ptxas's PtxasReport (registers, spills, smem) for this module, or None without ptxas."""
        if isinstance(self._report, dict):
            self._report = _report_from_json(self._report)
        return self._report

    @property
    def arch(self) -> str:
        return self.target.arch or self.target.name

    def _fast_math(self) -> bool:
        return bool(self.pass_configs.get("tl.enable_fast_math", False)) and \
            not self.pass_configs.get("tl.disable_fast_math", False)

    def _key(self) -> str:
        from tilec.dialects import print_ir

        convention = cache.program_to_json(self.program)
        convention.pop("loc", None)
        self._tile_text = print_ir(self.program.module)
        return cache.key("cuda-backend", self._tile_text, convention, repr(self.target),
                         self.pass_configs, _ptxas_marker())

    def _build(self) -> None:
        start = time.perf_counter()
        if self.build_key is None:
            self.build_key = self._key()
        entry = cache.get(self.build_key)
        if entry is not None and self._restore(entry):
            self.from_cache = True
        elif self.program.module is None:
            raise CacheMissError(f"kernel {self.program.name}: no usable cached build {self.build_key[:12]} "
                                 "(missing, damaged, or another program's)",
                                 hint="build the program with the frontend (the memo's entry is stale)")
        else:
            self._compile()
            cache.put(self.build_key, self._entry())
        self.compile_seconds = time.perf_counter() - start
        if config.DUMP_IR:
            self._dump(config.DUMP_IR)

    def _compile(self) -> None:
        from tilec.targets.nvptx import (
            PtxasError,
            TranslationError,
            assemble,
            compile_llvm_ir,
            emit_llvm_ir,
            find_ptxas,
            kernel_names,
        )

        from tilec.pipeline import lower_to_thread
        from tilec.dialects import print_ir

        name = self.program.name
        module, spec, stage_ir = lower_to_thread(self.program, self.target, self.pass_configs)
        self.module, self.spec = module, spec
        self.ir = {"tile": self._tile_text or print_ir(self.program.module)}
        self._lazy = dict(stage_ir or {})
        if self.target.smem_per_block and spec.smem_bytes > self.target.smem_per_block:
            raise TilecError(f"kernel {name} needs {spec.smem_bytes} bytes of shared memory per block; "
                             f"{self.target.name} allows {self.target.smem_per_block}", loc=self.program.loc,
                             hint="use smaller tiles or fewer pipeline stages")
        index_bits = self._index_bits()
        try:
            llvm_ir = emit_llvm_ir(module, fast_math=self._fast_math(), index_bitwidth=index_bits)
            self.ptx = compile_llvm_ir(llvm_ir, self.arch)
        except TranslationError as e:
            raise TilecError(f"kernel {name}: NVPTX translation failed: {e}", loc=self.program.loc) from None
        self.ir["llvm"], self.ir["ptx"] = llvm_ir, self.ptx
        if spec.kernel_name not in kernel_names(self.ptx):
            raise TilecError(f"kernel {name}: the PTX has no entry {spec.kernel_name!r} "
                             f"(found {kernel_names(self.ptx)})")
        if find_ptxas() is not None:
            try:
                self.cubin, self._report = assemble(self.ptx, self.arch)
            except PtxasError as e:
                raise TilecError(f"kernel {name}: ptxas rejected the PTX:\n{e}", loc=self.program.loc,
                                 hint="TILEC_DUMP_IR=dir writes the PTX for inspection") from None

    def _index_bits(self) -> int:
        """The width of index arithmetic: `tl.config_index_bitwidth` when given, else 32 when every
        tensor is static and at most 2^30 elements (tiles that reach past an end stay far below
        2^31), which halves the integer instructions of address arithmetic; else 64."""
        configured = self.pass_configs.get("tl.config_index_bitwidth")
        if configured:
            return int(configured)
        for p in self.program.params:
            if p.shape is None:
                continue
            if not all(isinstance(d, int) for d in p.shape) or math.prod(p.shape) > 1 << 30:
                return 64
        return 32

    def _entry(self) -> dict:
        report = self._report if isinstance(self._report, dict) else _report_to_json(self._report)
        entry = {"kernel_name": self.spec.kernel_name, "launch": spec_to_json(self.spec), "ir": self.ir,
                 "report": report, "arch": self.arch, "program": cache.program_fingerprint(self.program),
                 "ptx": self.ptx.encode()}
        if self.cubin is not None:
            entry["cubin"] = self.cubin
        return entry

    def _restore(self, entry: dict) -> bool:
        """Takes a cached build (see `_read_entry`); False, changing nothing, if it is not usable."""
        restored = _read_entry(entry, self.program, self.arch)
        if restored is None:
            return False
        self.spec, self.ptx, self.cubin, self.ir, self._report = restored
        return True

    def _dump(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        for stage in self._lazy:
            self.get_ir(stage)
        base = os.path.join(folder, self.program.name)
        for i, stage in enumerate(STAGES):
            if stage in self.ir:
                with open(f"{base}.{i}-{stage}.{_EXT[stage]}", "w", encoding="utf-8") as f:
                    f.write(self.ir[stage])
        if self.cubin is not None:
            with open(f"{base}.cubin", "wb") as f:
                f.write(self.cubin)

    # ---- inspection ----------------------------------------------------------------------
    def get_ir(self, stage: str = "tile") -> str:
        if stage == "tile" and "tile" not in self.ir and self.program.module is not None:
            from tilec.dialects import print_ir

            return print_ir(self.program.module)
        if stage not in self.ir and stage in ("tile-opt", "thread") and self.program.module is not None:
            if stage not in self._lazy:  # built from the cache: lower again to show it
                from tilec.pipeline import lower_to_thread

                self._lazy = dict(lower_to_thread(self.program, self.target, self.pass_configs)[2])
            text = self._lazy[stage]
            self.ir[stage] = text() if callable(text) else text
        if stage not in self.ir:
            raise TilecError(f"unknown IR stage {stage!r} for kernel {self.program.name}",
                             hint=f"stages: {', '.join(s for s in STAGES if s in self.ir)}")
        return self.ir[stage]

    def kernel_source(self) -> str:
        return self.ptx

    def emit(self, kind: str) -> str | bytes:
        if kind == "cubin":
            if self.cubin is None:
                raise TilecError("no cubin: ptxas was not found (PATH, $CUDA_HOME/bin, nvidia-cuda-nvcc wheel)",
                                 hint="install the CUDA toolkit or `pip install nvidia-cuda-nvcc`, or emit ptx")
            return self.cubin
        return self.get_ir(kind)

    def launch_description(self) -> str:
        spec, params = self.spec, self.program.params
        loader = next((k.loader for k in self._kernels.values()), None) or \
            f"{self.execution_backend} (chosen at the first launch)"
        image = "cubin" if self.cubin is not None else "PTX, JIT-compiled by the driver"
        lines = [f"kernel {spec.kernel_name}: {image} for {self.arch}, loader {loader}",
                 f"  grid  = {spec.grid}", f"  block = {tuple(spec.block)}",
                 f"  dynamic shared memory = {spec.smem_bytes} bytes", "  params:"]
        for i, (kind, value) in enumerate(spec.args):
            if kind == "tensor":
                p = params[value]
                lines.append(f"    {i}: {p.name}: {p.dtype.name}* global, shape {tuple(p.shape)}"
                             f"{' (output)' if p.is_output else ''}")
            else:
                lines.append(f"    {i}: {value}: int64 (size)")
        if self.report is not None and spec.kernel_name in self.report.kernels:
            r = self.report[spec.kernel_name]
            lines.append(f"  ptxas: {r.registers} registers, {r.shared_bytes} bytes static smem, "
                         f"{r.spill_store_bytes}/{r.spill_load_bytes} bytes spill stores/loads")
        return "\n".join(lines)

    # ---- launch ----------------------------------------------------------------------------
    def _loaded(self, device: int):
        kernel = self._kernels.get(device)
        if kernel is None:
            from tilec.targets import cuda_runtime

            name = self.spec.kernel_name
            try:
                image = self.cubin if self.cubin is not None else self.ptx
                kernel = cuda_runtime.load(image, name, loader=self.execution_backend, device=device)
            except TilecError:
                if self.cubin is None:
                    raise
                # e.g. a cubin for another arch than this device's: let the driver JIT the PTX
                kernel = cuda_runtime.load(self.ptx, name, loader=self.execution_backend, device=device)
            self._kernels[device] = kernel
        return kernel

    def check_tensors(self, given: dict) -> object:
        """The one CUDA device of the given tensors (None if there are none); errors name the argument."""
        from tilec.runtime import _is_torch

        name, params, device = self.program.name, self.program.params, None
        for i, t in given.items():
            p = params[i]
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
        from tilec.targets.cuda_runtime import Ptr

        args = []
        for kind, value in self.spec.args:
            if kind == "tensor":
                args.append(Ptr(tensors[value].data_ptr()))
            elif kind == "tensormap":
                args.append(_tensor_map(value, tensors[value["tensor"]]))
            elif value in sizes:
                args.append(int(sizes[value]))
            else:
                raise TilecError(f"{self.program.name}: the size {value} is not bound by any input tensor",
                                 loc=self.program.loc)
        return args

    def launch(self, kernel, given: dict, missing: list, sizes: dict):
        import torch

        from tilec.runtime import output_shape

        params = self.program.params
        device = self.check_tensors(given) or torch.device("cuda", torch.cuda.current_device())
        tensors = dict(given)
        for i in missing:
            tensors[i] = torch.empty(output_shape(params[i], sizes, self.program.loc), dtype=params[i].dtype.torch,
                                     device=device)
        size_key = tuple(sorted(sizes.items()))
        grid = self._grids.get(size_key)
        if grid is None:
            grid = self._grids[size_key] = tuple(int(g) for g in self.spec.grid.evaluate(sizes))
        if all(g > 0 for g in grid):
            args = self.kernel_args(tensors, sizes)
            loaded = self._loaded(device.index)
            stream = _current_stream(torch, device)
            loaded.launch(grid, self.spec.block, self.spec.smem_bytes, args, stream)
        outs = [tensors[i] for i in getattr(kernel, "out_idx", self.program.returns)]
        return None if not outs else outs[0] if len(outs) == 1 else outs


_TENSOR_MAPS = None


def _tensor_map(desc: dict, tensor):
    """The launch argument of a TMA tensor map over `tensor` (encoded once per tensor geometry)."""
    global _TENSOR_MAPS
    from tilec.targets.cuda.tensor_map import TensorMapCache, TensorMapSpec
    from tilec.targets.cuda_runtime import TensorMapArg

    if _TENSOR_MAPS is None:
        _TENSOR_MAPS = TensorMapCache()
    spec = TensorMapSpec(desc["tensor"], desc["dtype"], tuple(desc["box"]), desc["swizzle"])
    return TensorMapArg(_TENSOR_MAPS.get(spec, tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride())))
