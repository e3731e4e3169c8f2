"""Register-allocation hints (`T.set_max_nreg`, `T.disable_warp_group_reg_alloc`, ...): see language/hints.py."""

from __future__ import annotations

from tilec.compiler.pass_configs import report

from .operands import require_kernel, static_int
from .registry import handles, handles_each


@handles("disable_warp_group_reg_alloc", "no_set_max_nreg")
def no_reallocation(v):
    require_kernel(v, "a register-allocation hint")  # holds by construction: tilec emits no setmaxnreg


@handles_each({"set_max_nreg": 2, "inc_max_nreg": 1, "dec_max_nreg": 1, "annotate_producer_reg_dealloc": 1,
               "annotate_consumer_reg_alloc": 1})
def register_count(name: str, _arity: int):
    def handler(v, reg_count, is_inc=None):
        require_kernel(v, f"T.{name}")
        count = static_int(v, reg_count, "reg_count")
        if v.ws is not None and v.ws.role == "threads" and name in ("set_max_nreg", "inc_max_nreg", "dec_max_nreg"):
            from .. import thread_roles

            increase = name == "inc_max_nreg" or name == "set_max_nreg" and bool(static_int(v, is_inc, "is_inc"))
            thread_roles.set_max_nreg(v, count, increase)
            return
        report(f"T.{name}({count}) is not applied: tilec emits setmaxnreg only in the warp-specialized kernels it "
               "builds itself (the kernel computes the same, with the registers ptxas assigns)", v.b.loc)

    return handler
