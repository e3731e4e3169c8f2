"""Which fp8 dtypes the GPU computes with (`determine_fp8_type`): e4m3fn / e5m2 on CUDA."""

from __future__ import annotations

from tilec.dtypes import BY_NAME

__all__ = ["determine_fp8_type", "determine_torch_fp8_type"]


def determine_fp8_type(fp8_format: str = "e4m3"):
    """T.float8_e4m3fn for "e4m3", T.float8_e5m2 for "e5m2" (tilec targets CUDA, which uses the OCP formats)."""
    if fp8_format not in ("e4m3", "e5m2"):
        raise ValueError(f"Unsupported FP8 format: {fp8_format}")
    return BY_NAME["float8_e4m3fn" if fp8_format == "e4m3" else "float8_e5m2"]


def determine_torch_fp8_type(fp8_format: str = "e4m3"):
    return determine_fp8_type(fp8_format).torch
