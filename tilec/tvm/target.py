"""Stand-in for `tvm.target`: tilec's targets are names (`target="sm_90a"`) or `tilec.Target`."""

from tilec.refused import module_getattr

__getattr__ = module_getattr("tvm.target", "tilec takes targets as names such as 'cuda', 'sm_90a' or 'interp'")
