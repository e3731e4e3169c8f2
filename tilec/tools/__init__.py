"""`tilec.tools`: `Analyzer` (a roofline estimate from tilec's tile IR, see analyzer.py); TileLang's other
tools (`plot_layout`, ...) analyse TVM IR: they import and refuse when used."""

from tilec.refused import module_getattr

from .analyzer import AnalysisResult, Analyzer

__getattr__ = module_getattr("tilelang.tools", "TileLang's tools analyse TVM IR, which tilec does not produce; "
                             "kernel.get_ir('tile') prints tilec's IR")
__all__ = ["AnalysisResult", "Analyzer"]
