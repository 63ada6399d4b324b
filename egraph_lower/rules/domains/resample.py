"""The domain of the interpolation ops and the error scale of their rules.

Every mode (nearest, nearest_exact, linear, cubic: 2 axes only) over 1, 2 and 3 spatial axes, with
align_corners both ways where the mode takes it, at the awkward points of the coordinate mapping:
whole-number upsampling (2x, 3x: nearest repeats each input, the rules' cheap forms), a fractional
factor (5 -> 9), output size 1 (align_corners maps it to the first input), downsampling (scale < 1:
7 -> 3, inputs skipped), an explicit scale that is not O / L (5 at 1.7 -> 8, 4 at 1.1 -> 4), input
length 1 (every output its one input) and the identity (O = L); antialiased linear and cubic (2 axes)
on the same and on strong downsampling (10 -> 3: the filter widened to 3.3 inputs each side) and an
unchanged length with a scale (7 at 1.1: the filter narrowed, no longer the identity). Values of mixed
signs and magnitudes.
A cubic weight is negative, so an output cancels: the error is measured against the interpolation of
|x| by |W| (`cond`, `RESAMPLE_SCALES`), the condition of the weighted sum.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...egraph import language
from ...opdefs import resample_math as RM
from ..dsl import Rule
from .base import DY, Env, bound_fields, lhs_ctor, round_to

# (input spatial sizes, output spatial sizes, scales)
_CASES: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[float | None, ...]], ...] = (
    ((5,), (9,), (None,)), ((5,), (10,), (None,)), ((5,), (1,), (None,)), ((7,), (3,), (None,)),
    ((5,), (8,), (1.7,)), ((4,), (4,), (1.1,)), ((1,), (4,), (None,)), ((4,), (12,), (3.0,)),
    ((4, 5), (8, 10), (None, None)), ((3, 4), (6, 12), (2.0, 3.0)), ((4, 5), (3, 7), (None, None)),
    ((4, 5), (1, 1), (None, None)), ((6, 5), (2, 3), (None, 0.6)), ((4, 5), (4, 5), (None, None)),
    ((10, 9), (3, 4), (None, None)), ((9, 7), (4, 7), (0.45, 1.1)),
    ((2, 3, 4), (4, 6, 8), (None, None, None)), ((2, 3, 4), (3, 5, 2), (None, 1.7, None)),
    ((2, 2, 3), (1, 1, 1), (None, None, None)),
)


def _modes(k: int) -> list[tuple[str, bool, bool]]:
    """(mode, align_corners, antialias)"""
    out = [("nearest", False, False), ("nearest_exact", False, False), ("linear", False, False), ("linear", True, False)]
    if k == 2:
        out += [("cubic", ac, aa) for aa in (False, True) for ac in (False, True)]
        out += [("linear", ac, True) for ac in (False, True)]
    return out


def _cond(op: str, attrs: dict[str, Any], x: np.ndarray) -> np.ndarray:
    ins = x.shape[2:] if op == "Interpolate" else tuple(attrs["input_shape"][2:])
    outs = tuple(attrs["size"]) if op == "Interpolate" else x.shape[2:]
    mats = [np.abs(RM.weights(attrs["mode"], attrs["align_corners"], a, b, s, attrs.get("antialias", False)))
            for a, b, s in zip(ins, outs, attrs["scales"])]
    return RM.apply(np.abs(x), mats if op == "Interpolate" else [m.T for m in mats])


def resample_domain(rule: Rule, dtype: str) -> list[Env]:
    op = language.CTORS[lhs_ctor(rule)].op
    rng = np.random.default_rng(7)
    envs: list[Env] = []
    for ins, outs, scales in _CASES:
        k = len(ins)
        nc = (2, 3) if k < 3 else (1, 2)
        for mode, ac, aa in _modes(k):
            attrs: dict[str, Any] = {"mode": mode, "align_corners": ac, "antialias": aa, "scales": list(scales)}
            if op == "Interpolate":
                attrs["size"], first = list(outs), nc + ins
            else:
                attrs["input_shape"], first = list(nc + ins), nc + outs
            bound = bound_fields(rule, attrs, first)
            if bound is None:
                continue
            v = rng.choice(np.array(DY), size=first) * rng.uniform(0.5, 2.0, size=first)
            v = round_to(v, dtype)
            name = "x" if op == "Interpolate" else "dy"
            cond = _cond(op, attrs, np.asarray(v, dtype=np.float64))
            envs.append({**bound, name: v, "cond": cond})
    return envs


RESAMPLE_SCALES: dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]] = {
    name: lambda f: f["cond"] for name in ("Interpolate", "InterpolateBwd")
}


# Unfold: (x's shape, axis, size, step): overlapping windows, windows that tile the axis exactly and with a
# tail past the last one, gaps between windows (step > size), one window of the whole axis, windows of one
_UNFOLDS: tuple[tuple[tuple[int, ...], int, int, int], ...] = (
    ((2, 9, 3), 1, 3, 2), ((2, 9, 3), 1, 3, 3), ((2, 9, 3), -2, 2, 2), ((2, 9, 3), 1, 2, 3), ((2, 9, 3), 1, 9, 1),
    ((2, 9, 3), 1, 1, 1), ((3, 4, 7), -1, 4, 1), ((5,), 0, 2, 2), ((4, 3), 0, 4, 4),
)
# Col2Im: (kernel, stride, padding, dilation, output_size): overlapping, dilated and padded windows;
# windows that tile the plane (with padding cropped, and a row past the last window); a 1 x 1 kernel;
# one window of the whole plane
_COL2IMS: tuple[dict[str, list[int]], ...] = (
    {"kernel": [2, 3], "stride": [2, 1], "padding": [1, 0], "dilation": [1, 2], "output_size": [5, 7]},
    {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 1], "dilation": [1, 1], "output_size": [5, 6]},
    {"kernel": [1, 1], "stride": [1, 2], "padding": [0, 0], "dilation": [1, 1], "output_size": [3, 4]},
    {"kernel": [3, 3], "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "output_size": [3, 3]},
)


def unfold_domain(rule: Rule, dtype: str) -> list[Env]:
    """Unfold, UnfoldBackward and Col2Im on the windows above; values of mixed signs and magnitudes.
    The backward ops sum overlapping windows: their error scale is the op applied to |dy| (`cond`)."""
    from ...evaluate import apply

    op = language.CTORS[lhs_ctor(rule)].op
    rng = np.random.default_rng(11)
    envs: list[Env] = []
    cases: list[tuple[dict[str, Any], tuple[int, ...], str]] = []
    if op == "Col2Im":
        from ...opdefs import convmath

        for windows in _COL2IMS:
            kh, kw = windows["kernel"]
            oh, ow = (convmath.out_size(windows["output_size"][j], windows["kernel"][j], windows["stride"][j],
                                        windows["padding"][j], windows["dilation"][j]) for j in (0, 1))
            cases.append((dict(windows), (2, 3 * kh * kw, oh * ow), "cols"))
    else:
        for shape, axis, size, step in _UNFOLDS:
            unfold: dict[str, Any] = {"axis": axis, "size": size, "step": step}
            if op == "Unfold":
                cases.append((unfold, shape, "x"))
            else:
                out = apply("Unfold", unfold, [np.zeros(shape)], "f64").shape
                cases.append(({**unfold, "input_shape": list(shape)}, tuple(out), "dy"))
    for attrs, first, name in cases:
        bound = bound_fields(rule, attrs, first)
        if bound is None:
            continue
        v = round_to(rng.choice(np.array(DY), size=first) * rng.uniform(0.5, 2.0, size=first), dtype)
        cond = np.abs(apply(op, attrs, [np.abs(np.asarray(v, dtype=np.float64))], "f64"))
        envs.append({**bound, name: v, "cond": cond})
    return envs


RESAMPLE_SCALES.update({name: lambda f: f["cond"] for name in ("UnfoldBwd", "Col2Im")})
