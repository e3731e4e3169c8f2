"""Kernel functions with several `T.Kernel`s on the GPU targets: one build per kernel, launched in
program order on the same arguments (TileLang's split + combine kernels, with `T.alloc_global`
scratch tensors between them).

`split(program)` gives one KernelProgram per `tile.kernel`: a clone of the function with the
other kernels erased, the same parameters and calling convention. `MultiKernelBackend` builds
each with the target's backend (sim or CUDA) and runs them one after the other: on the GPU on
torch's current stream, so each kernel sees everything the previous one wrote; outputs and
scratch tensors are allocated once per call, before the first.
"""

from __future__ import annotations

from tilec.compiler.kernel_program import KernelProgram


def kernel_count(program) -> int:
    from tilec.dialects import tile

    if program.module is None:
        return 1
    return sum(isinstance(op, tile.KernelOp) for op in program.func.body.block.ops)


def split(program) -> list[KernelProgram]:
    """One program per tile.kernel of `program`, in order."""
    from tilec.dialects import tile
    from tilec.errors import loc_of

    n = kernel_count(program)
    parts = []
    for i in range(n):
        module = program.module.clone()
        part = KernelProgram(module, program.name, program.params, list(program.returns), loc=program.loc)
        kernels = [op for op in part.func.body.block.ops if isinstance(op, tile.KernelOp)]
        part.loc = loc_of(kernels[i]) or program.loc
        for j, k in enumerate(kernels):
            if j != i:
                k.detach()
                k.erase()
        parts.append(part)
    return parts


class MultiKernelBackend:
    """The kernels of one function, each built by `make(part)`, run in program order."""

    build_key = None  # no single cache entry: each part has its own (so the frontend memo is skipped)

    def __init__(self, program, make):
        self.program = program
        self.parts = [make(p) for p in split(program)]

    @property
    def spec(self):
        return self.parts[0].spec

    def get_ir(self, stage: str) -> str:
        if stage == "tile":
            from tilec.dialects import print_ir

            return print_ir(self.program.module)
        return self._joined(lambda b: b.get_ir(stage))

    def kernel_source(self) -> str:
        return self._joined(lambda b: b.kernel_source())

    def launch_description(self) -> str:
        return self._joined(lambda b: b.launch_description())

    def emit(self, what: str) -> str:
        """A textual stage of every kernel (`tilec compile --emit`); a cubin (and its launch manifest)
        describes one kernel, so it is refused here."""
        if what in ("cubin", "ptx"):
            from tilec.errors import TilecError

            raise TilecError(f"{self.program.name} launches {len(self.parts)} kernels (one per T.Kernel): a {what} "
                             "file with its launch manifest holds one", loc=self.program.loc,
                             hint="write each T.Kernel as its own kernel function to deploy it, or emit an IR stage")
        return self._joined(lambda b: b.emit(what))

    def _joined(self, text) -> str:
        n = len(self.parts)
        return "\n".join(f"// kernel {i + 1} of {n} of {self.program.name}\n{text(b)}" for i, b in enumerate(self.parts))

    def run(self, arrays: list, sizes: dict) -> None:
        """sim: every part on the same host arrays, in order."""
        for part in self.parts:
            part.run(arrays, sizes)

    def launch(self, kernel, given: dict, missing: list, sizes: dict):
        """CUDA: outputs and scratch allocated once, then every part launched on all the tensors."""
        import torch

        from tilec.runtime import output_shape

        first, params = self.parts[0], self.program.params
        device = first.check_tensors(given) or torch.device("cuda", torch.cuda.current_device())
        tensors = dict(given)
        for i in missing:
            tensors[i] = torch.empty(output_shape(params[i], sizes, self.program.loc), dtype=params[i].dtype.torch,
                                     device=device)
        outs = None
        for part in self.parts:
            outs = part.launch(kernel, tensors, [], sizes)
        return outs
