"""Exact float → fp8 rounding (float8_e4m3fn, float8_e5m2), as torch casts and the GPU lowering computes.

numpy has no fp8 arithmetic of its own, and ml_dtypes' casts differ from torch's where it
matters to a TileLang program (e4m3 overflow gives NaN there, 448 in torch). The rule here is
torch's (checked over every f16 / bf16 code and random f32 in tests/targets/interp/test_fp8_rounding.py):

- the source is first rounded to float32 (a float64 value rounds twice, as in torch);
- round to nearest, ties to even, subnormals included; the sign of zero is kept;
- NaN → the NaN code with the source's sign (0x7F | sign);
- e4m3fn (no infinity): a magnitude that rounds above 448, and ±inf, saturate to ±448 (0x7E);
- e5m2: a magnitude that rounds above 57344 becomes ±inf (0x7C), ±inf stays ±inf.

`targets/nvptx/translate_fp8.py` emits the same on the GPU (cvt.rn.satfinite plus the fix-ups
that make it torch's rule). Decoding (fp8 → wider float) is exact and left to ml_dtypes.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = ["FLOAT8_DTYPES", "FORMATS", "Float8Format", "encode", "is_float8", "to_float8"]


class Float8Format:
    """One fp8 format: mantissa bits, exponent bias, largest finite value, overflow code."""

    def __init__(self, name: str, dtype, mantissa: int, bias: int, max_finite: float, overflow: int):
        self.name, self.dtype = name, np.dtype(dtype)
        self.mantissa, self.bias, self.max_finite, self.overflow = mantissa, bias, max_finite, overflow


FORMATS = {
    np.dtype(ml_dtypes.float8_e4m3fn): Float8Format("float8_e4m3fn", ml_dtypes.float8_e4m3fn, 3, 7, 448.0, 0x7E),
    np.dtype(ml_dtypes.float8_e5m2): Float8Format("float8_e5m2", ml_dtypes.float8_e5m2, 2, 15, 57344.0, 0x7C),
}
FLOAT8_DTYPES = tuple(FORMATS)


def is_float8(dtype) -> bool:
    return np.dtype(dtype) in FORMATS


def encode(x, dtype) -> np.ndarray:
    """The fp8 codes (uint8) of `x` (any float or integer array) in the format `dtype`."""
    fmt = FORMATS[np.dtype(dtype)]
    with np.errstate(invalid="ignore", over="ignore"):
        return _encode(np.asarray(x), fmt)


def _encode(f: np.ndarray, fmt: Float8Format) -> np.ndarray:
    if f.dtype != np.float32:
        f = f.astype(np.float32)
    bits = f.view(np.uint32)
    sign = ((bits >> 24) & 0x80).astype(np.uint8)
    v = np.abs(f).astype(np.float64)
    finite = np.isfinite(v)
    safe = np.where(finite, v, 0.0)
    emin = 1 - fmt.bias
    _, exp = np.frexp(safe)  # safe = m * 2**exp, m in [0.5, 1): floor(log2) = exp - 1
    e = np.maximum(exp - 1, emin)
    quantum = np.ldexp(1.0, e - fmt.mantissa)
    rounded = np.rint(safe / quantum) * quantum  # exact in float64; rint ties to even
    # encode the rounded magnitude: subnormal codes are multiples of 2**(emin - mantissa)
    _, rexp = np.frexp(rounded)
    re = rexp - 1
    normal = rounded >= np.ldexp(1.0, emin)
    sub_code = np.rint(rounded / np.ldexp(1.0, emin - fmt.mantissa))
    frac = np.where(normal, rounded / np.ldexp(1.0, np.where(normal, re, 0)) - 1.0, 0.0)
    norm_code = (re + fmt.bias) * (1 << fmt.mantissa) + np.rint(frac * (1 << fmt.mantissa))
    code = np.where(normal, norm_code, sub_code)
    code = np.where(rounded > fmt.max_finite, fmt.overflow, code)
    code = np.where(np.isinf(v), fmt.overflow, code)
    code = np.where(np.isnan(v), 0x7F, code)
    return code.astype(np.uint8) | sign


def to_float8(x, dtype):
    """`x` rounded to the fp8 `dtype` (an ml_dtypes dtype), torch's rule; a scalar stays a scalar."""
    codes = encode(x, dtype).view(np.dtype(dtype))
    return codes[()] if codes.ndim == 0 else codes
