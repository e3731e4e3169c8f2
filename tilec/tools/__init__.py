"""`tilec.tools`: TileLang's tools (`Analyzer`, `plot_layout`) analyse TVM IR; they import and refuse when used."""

from tilec.refused import module_getattr

__getattr__ = module_getattr("tilelang.tools", "TileLang's tools analyse TVM IR, which tilec does not produce; "
                             "kernel.get_ir('tile') prints tilec's IR")
