"""The CUDA driver side of the NVPTX target: what a launch needs beyond the module itself
(TMA tensor maps)."""
