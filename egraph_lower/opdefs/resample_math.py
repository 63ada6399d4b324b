"""The arithmetic of interpolation (`resample.py`), as PyTorch's CPU kernels compute it, per spatial axis.

Interpolating one axis of length L to O outputs is a matrix W [O, L] applied along that axis; the
interpolation of several axes applies each axis's matrix in turn (the modes are separable). Row o of
W holds the weights of output o's taps:

- nearest: one tap, src(o) = min(floor(o * s), L - 1) with s = 1 / scale (or L / O without one) in
  float32; O = L copies and O = 2 L takes o >> 1 (aten's nearest_idx, which skips the float math; its
  1-D forward kernel does not, which differs only where a scale other than O / L is given);
- nearest_exact: src(o) = min(floor((o + 0.5) * s), L - 1) ((o + 0.5) in double, times the float32 s,
  rounded to float32 before the floor: aten's nearest_neighbor_exact_compute_source_index);
- linear: the source coordinate r = s o (align_corners, s = (L - 1) / (O - 1), 0 for O = 1) or
  max(s (o + 0.5) - 0.5, 0) (else, s as for nearest), i0 = min(floor r, L - 1), l = clamp(r - i0, 0, 1),
  taps i0 (weight 1 - l) and i0 + 1 (weight l; i0 when i0 = L - 1); O = L copies (aten's
  compute_source_index_and_lambda);
- cubic: r as for linear but not clamped at 0, i0 = min(floor r, L - 1), t = clamp(r - i0, 0, 1), taps
  i0 - 1 .. i0 + 2 clamped to [0, L - 1] with Keys' cubic convolution weights (A = -0.75) at t + 1, t,
  1 - t, 2 - t (aten's get_cubic_upsample_coefficients);
- antialias (linear and cubic; aten's `_upsample_bilinear2d_aa`, `_upsample_bicubic2d_aa`, PIL's
  resampling): with s as above (align_corners: (L - 1) / (O - 1)), the filter (linear's triangle
  max(1 - |u|, 0), or Keys' cubic with A = -0.5) is widened by s where s >= 1 (downsampling) so that it
  averages every input it covers: support h = n / 2 max(s, 1) (n = 2 taps for linear, 4 for cubic),
  centre c = s (o + 0.5), taps l from xmin = max(trunc(c - h + 0.5), 0) to
  min(trunc(c + h + 0.5), L) - 1 (at most 2 ceil(h) + 1 of them), weight f((l - c + 0.5) / max(s, 1)),
  the row normalised to sum 1 (left as it is where it sums to 0): aten's
  _compute_indices_min_size_weights_aa, in float64 for every dtype like linear's and cubic's (below).
  O = L is the identity unless a scale other than 1 is given,
  which widens or narrows the filter: aten's forward kernel then copies the axis (the importer gives
  such an axis no scale), its backward kernel applies these weights.

Nearest's index is computed in float32 as aten computes it for every dtype (it is discrete: a float64
computation would pick other inputs at some outputs). The linear and cubic coordinates and weights are
computed in float64, for every dtype: aten computes them in its opmath type (float32 for f32, f16 and
bf16 data), which moves a weight by about an ulp of float32, less than the rounding of the result.
aten's antialiased float32 weights are further off: their centre s (o + 0.5), rounded to float32, is off
by up to half an ulp of it (1e-6 at o = 20) and a border row normalised by a small sum of filter values
(cubic's negative lobes) magnifies that: an f32 result of aten's kernel is tens of ulp of its largest value
from float64 (27 to 41 at 10 x 40 -> 17 x 37, tests/test_torch_resample.py), these weights' one or two.
"""

from __future__ import annotations

import math

import numpy as np

MODES = ("nearest", "nearest_exact", "linear", "cubic")
NEAREST = ("nearest", "nearest_exact")
CUBIC_A = -0.75
CUBIC_A_AA = -0.5  # Keys' own A, PIL's: aten's antialiased bicubic filter


def _scale_value(scale: float | None, length: int, out: int, t: type[np.floating]) -> np.floating:
    """aten's compute_scales_value: 1 / scale when a scale is given, else L / O, in t."""
    if scale is not None and scale > 0:
        return t(1.0 / scale)
    return t(length) / t(out)


def _area_scale(length: int, out: int, align_corners: bool, scale: float | None,
                t: type[np.floating]) -> np.floating:
    """aten's area_pixel_compute_scale."""
    if align_corners:
        return t(length - 1) / t(out - 1) if out > 1 else t(0)
    return _scale_value(scale, length, out, t)


def _source(s: np.floating, o: int, align_corners: bool, cubic: bool, t: type[np.floating]) -> np.floating:
    """aten's area_pixel_compute_source_index."""
    if align_corners:
        return s * t(o)
    r = s * (t(o) + t(0.5)) - t(0.5)
    return t(0) if not cubic and r < 0 else r


def nearest_index(mode: str, length: int, out: int, scale: float | None) -> np.ndarray:
    """The source index [O] of each output along the axis (nearest and nearest_exact)."""
    f32 = np.float32
    if mode == "nearest":
        if out == length:
            return np.arange(out, dtype=np.int64)
        if out == 2 * length:
            return np.arange(out, dtype=np.int64) >> 1
        s = _scale_value(scale, length, out, f32)
        idx = [int(np.floor(f32(o) * s)) for o in range(out)]
    else:
        s = _scale_value(scale, length, out, f32)
        idx = [int(np.floor(f32((o + 0.5) * float(s)))) for o in range(out)]
    return np.minimum(np.array(idx, dtype=np.int64), length - 1)


def _aa_filter(mode: str, u: float) -> float:
    """aten's aa_filter: linear's triangle max(1 - |u|, 0), or Keys' cubic convolution with A = -0.5."""
    x, a = abs(u), CUBIC_A_AA
    if mode == "linear":
        return max(1.0 - x, 0.0)
    if x < 1.0:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    if x < 2.0:
        return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    return 0.0


def _aa_weights(mode: str, align_corners: bool, length: int, out: int, scale: float | None) -> np.ndarray:
    """W [O, L] of antialiased linear or cubic interpolation (aten's _compute_indices_min_size_weights_aa)."""
    w = np.zeros((out, length))
    s = float(_area_scale(length, out, align_corners, scale, np.float64))
    taps = 2 if mode == "linear" else 4
    support = taps * 0.5 * s if s >= 1.0 else taps * 0.5
    widest = int(math.ceil(support)) * 2 + 1
    inv = 1.0 / s if s >= 1.0 else 1.0
    for o in range(out):
        centre = s * (o + 0.5)
        xmin = max(int(centre - support + 0.5), 0)  # int(): C's truncation toward zero, as aten's cast
        xsize = min(max(min(int(centre + support + 0.5), length) - xmin, 0), widest)
        row = np.array([_aa_filter(mode, (j + xmin - centre + 0.5) * inv) for j in range(xsize)])
        total = row.sum()
        w[o, xmin:xmin + xsize] = row / total if total != 0.0 else row
    return w


def _cubic_weights(t: np.floating, tp: type[np.floating]) -> list[np.floating]:
    a = tp(CUBIC_A)

    def near(x: np.floating) -> np.floating:  # |x| <= 1
        return ((a + tp(2)) * x - (a + tp(3))) * x * x + tp(1)

    def far(x: np.floating) -> np.floating:  # 1 < |x| < 2
        return ((a * x - tp(5) * a) * x + tp(8) * a) * x - tp(4) * a

    u = tp(1) - t
    return [far(t + tp(1)), near(t), near(u), far(u + tp(1))]


def weights(mode: str, align_corners: bool, length: int, out: int, scale: float | None,
            antialias: bool = False) -> np.ndarray:
    """W [O, L]: output o along the axis is sum_l W[o, l] x[l]."""
    if antialias:
        if mode not in ("linear", "cubic"):
            raise ValueError(f"antialias is for linear and cubic interpolation, not {mode}")
        return _aa_weights(mode, align_corners, length, out, scale)
    w = np.zeros((out, length))
    if mode in NEAREST:
        w[np.arange(out), nearest_index(mode, length, out, scale)] = 1.0
        return w
    t = np.float64
    if mode == "linear" and out == length:
        return np.eye(out)
    s = _area_scale(length, out, align_corners, scale, t)
    for o in range(out):
        r = _source(s, o, align_corners, mode == "cubic", t)
        i0 = min(int(np.floor(r)), length - 1)
        lam = min(max(r - t(i0), t(0)), t(1))
        if mode == "linear":
            w[o, i0] += float(t(1) - lam)
            w[o, i0 + (1 if i0 < length - 1 else 0)] += float(lam)
        else:
            for j, c in enumerate(_cubic_weights(lam, t)):
                w[o, min(max(i0 - 1 + j, 0), length - 1)] += float(c)
    return w


def repeat_factor(mode: str, length: int, out: int, scale: float | None) -> int:
    """r where nearest interpolation along the axis repeats each input r times (index o // r), else 0."""
    if mode not in NEAREST or out % length:
        return 0
    r = out // length
    return r if np.array_equal(nearest_index(mode, length, out, scale), np.arange(out) // r) else 0


def apply(x: np.ndarray, mats: list[np.ndarray], first: int = 2) -> np.ndarray:
    """x with mats[j] applied along axis first + j (each [O, L] for an axis of length L)."""
    for j, m in enumerate(mats):
        x = np.moveaxis(np.tensordot(m, x, axes=([1], [first + j])), 0, first + j)
    return x
