"""`tilec.carver`: the parts of TileLang's `carver` that programs use outside the tuner.

`carver.arch.driver` answers device questions (`get_num_sms()`); the carver's schedule
templates and roller (`MatmulTemplate`, ...) search TVM schedules and are not provided: they
import and refuse when used.
"""

from tilec.refused import module_getattr

from . import arch

__getattr__ = module_getattr("tilelang.carver", "the carver's schedule search works on TVM IR, which tilec does not emulate")
__all__ = ["arch"]
