"""Convolution helpers: `T.im2col` (the patch of an NHWC image a convolution's implicit gemm reads)."""

from __future__ import annotations

import tilec.language as T

from ..values import TileRef
from .operands import describe_, require_kernel, static_int
from .registry import handles


@handles("im2col")
def im2col(v, img, col, nhw_step, c_step, kernel, stride, dilation, pad):
    """col[i, j] = img[n, oh * S + kh * D - P, ow * S + kw * D - P, c] (0 outside the image) for output pixel
    m = nhw_step * bm + i = (n, oh, ow) and patch element k = c_step * bk + j = (kh, kw, c); built as a
    T.Parallel element loop over col."""
    from ..custom_layout import visit_generated  # custom_layout.py loads at the first T.im2col or T.Layout

    require_kernel(v, "T.im2col", whole_tiles=True)
    if not isinstance(img, TileRef) or img.scope != "global" or len(img.shape) != 4:
        raise v.b.error(f"T.im2col reads an NHWC image (a 4-D global tensor), got {describe_(img)}")
    if not isinstance(col, TileRef) or col.scope == "global" or len(col.shape) != 2:
        raise v.b.error(f"T.im2col writes a 2-D shared or fragment buffer, got {describe_(col)}")
    n, h, w, c = img.shape
    if any(d < 0 for d in img.shape):
        raise v.b.error("T.im2col needs the image's sizes at compile time (T.const, not T.dynamic)")
    k, s, d, p = (static_int(v, x, what) for x, what in ((kernel, "kernel"), (stride, "stride"),
                                                         (dilation, "dilation"), (pad, "pad")))
    oh, ow = (h + 2 * p - d * (k - 1) - 1) // s + 1, (w + 2 * p - d * (k - 1) - 1) // s + 1
    bm, bk = col.shape
    code = f"""
for _tl_i, _tl_j in _tl_T.Parallel({bm}, {bk}):
    _tl_m = _tl_nhw * {bm} + _tl_i
    _tl_k = _tl_c * {bk} + _tl_j
    _tl_h = (_tl_m // {ow}) % {oh} * {s} + _tl_k // {k * c} * {d} - {p}
    _tl_w = _tl_m % {ow} * {s} + (_tl_k // {c}) % {k} * {d} - {p}
    if _tl_m < {n * oh * ow} and _tl_k < {k * k * c} and _tl_h >= 0 and _tl_h < {h} and _tl_w >= 0 and _tl_w < {w}:
        _tl_col[_tl_i, _tl_j] = _tl_img[_tl_m // {oh * ow}, _tl_h, _tl_w, _tl_k % {c}]
    else:
        _tl_col[_tl_i, _tl_j] = 0
"""
    visit_generated(v, code, {"_tl_T": T, "_tl_img": img, "_tl_col": col, "_tl_nhw": v.rvalue(nhw_step),
                              "_tl_c": v.rvalue(c_step)})
