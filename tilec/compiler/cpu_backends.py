"""The two CPU targets' backends: "interp" runs the tile IR with numpy (targets/interp); "sim"
runs the CUDA target's passes and lowering and simulates the thread-level IR per thread
(targets/interp/simt.py), the lowering's oracle where no GPU is at hand."""

from __future__ import annotations

from tilec.compiler.launch import ARG_KINDS
from tilec.errors import TilecError

SIM_PROCESSORS = 3
"""The multiprocessors the simulator pretends to have: a persistent kernel's blocks then each loop
over several tiles, and unevenly (3 does not divide most grids)."""


class InterpBackend:
    """Runs the tile IR with numpy (targets/interp)."""

    def __init__(self, program):
        from tilec.compiler.checks import check_gpu_limits

        self.program = program
        check_gpu_limits(program)

    def get_ir(self, stage: str) -> str:
        from tilec.dialects import print_ir

        if stage != "tile":
            raise TilecError(f"the interpreter target has only the 'tile' IR stage, not {stage!r}",
                             loc=self.program.loc, hint="compile for 'sim' or a GPU target to see the later stages")
        return print_ir(self.program.module)

    def kernel_source(self) -> str:
        return self.get_ir("tile")

    def launch_description(self) -> str:
        return "numpy interpreter: one block at a time, tiles as arrays"

    def run(self, arrays: list, sizes: dict) -> None:
        from tilec.targets.interp import run

        run(self.program.module, arrays, func_name=self.program.name)


class SimBackend:
    """The CUDA target's passes and lowering, with the thread-level IR run on the CPU."""

    def __init__(self, program, target, pass_configs: dict):
        from tilec.compiler import checks, lower
        from tilec.compiler import pass_configs as configs

        self.program = program
        self.lowered = lower.lower_to_thread(program, target, pass_configs, dump_dir=configs.dump_dir(pass_configs) or "")
        checks.check_lowered_shared_memory(program, target, self.lowered)
        self.spec = self.lowered.spec
        self._printed: dict[str, str] = {}

    @property
    def module(self):
        """The thread-level ModuleOp the simulator runs."""
        return self.lowered.thread

    def get_ir(self, stage: str) -> str:
        from tilec.compiler.lower import STAGES
        from tilec.dialects import print_ir

        if stage == "tile":
            return print_ir(self.program.module)
        if stage not in STAGES:
            raise TilecError(f"the sim target has the IR stages tile, {', '.join(STAGES)}; not {stage!r}",
                             loc=self.program.loc)
        if stage not in self._printed:
            self._printed[stage] = self.lowered.stage(stage)
        return self._printed[stage]

    def kernel_source(self) -> str:
        return self.get_ir("thread")

    def launch_description(self) -> str:
        s = self.spec
        return f"simulated CUDA launch: block {s.block}, {s.smem_bytes} bytes of shared memory, args {s.args}"

    def run(self, arrays: list, sizes: dict) -> None:
        from tilec.targets.interp.simt import run_kernel

        args = [ARG_KINDS[kind].host_value(value, arrays, sizes) for kind, value in self.spec.args]
        run_kernel(self.module, args, self.spec.grid.evaluate(sizes, SIM_PROCESSORS), self.spec.block, self.spec.smem_bytes,
                   self.spec.kernel_name)
