"""Stand-in for `tvm.tirx`: importable, every name refuses when used (tilec builds no TIR expressions)."""

from tilec.refused import module_getattr

__getattr__ = module_getattr("tvm.tirx", "tilec builds no TVM TIR expressions (tirx is out of scope)")
