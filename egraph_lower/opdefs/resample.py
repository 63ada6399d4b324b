"""Interpolation (format version 3): aten's upsample_* ops and their backward ops, over 1 to 3 spatial axes.

    Interpolate{mode, align_corners, antialias, size, scales}(x)
                                                            x [N, C, S1..Sk] -> [N, C, size...]
    InterpolateBackward{mode, align_corners, antialias, input_shape, scales}(dy)
                                                            the adjoint: dy [N, C, O1..Ok] -> input_shape
    InterpolateWeights{mode, align_corners, antialias, in_size, out_size, scale}(like)
                                                            W [out_size, in_size] of one axis, in like's dtype
    InterpolateIndex{mode, in_size, out_size, scale}(like)  nearest's source index [out_size] (i64) of one axis

`mode` is nearest, nearest_exact, linear (1 to 3 axes: aten's linear, bilinear, trilinear) or cubic
(2 axes: bicubic); `align_corners` (linear and cubic only) maps the corner samples onto each other;
`antialias` (linear and cubic over 2 axes: aten's `_upsample_bilinear2d_aa`, `_upsample_bicubic2d_aa`)
widens the filter by the scale where an axis is downsampled and normalises each output's weights;
`scales` holds, per axis, the scale factor aten was given (null: none; the source coordinate then uses
L / O). Each axis is interpolated by the matrix `resample_math.weights` gives (as aten's CPU kernels
compute it; nearest's index in float32, the linear and cubic weights in float64), so Interpolate(x) applies W_j along
spatial axis j for every j, and InterpolateBackward(dy) applies W_j^T. The two helpers read only their
attributes (and like's dtype): every backend runs them, as it runs pooling's weights.

The e-graph constructors carry fields for the rules (`rules/resample.py`) computed at load time from
the attributes and the first input's shape: `k` (the number of spatial axes), per axis j < 3 the input
length `ij`, the output length `oj` and the scale `sj` (0: none; absent axes 0); `near` (1 for the
nearest modes); `rep` (1 where nearest interpolation repeats each input a whole number of times on
every axis, index o // r); the shapes of that repetition (`up` [N, C, L1, 1, ..], `exp` [N, C, L1, r1,
..], `out` the result's shape, `sumax` the repeat axes [3, 5, ..]); and for three axes the shapes that
fold the last two axes into one (`fold`, `unfold`) so that the first axis is a matrix product too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _finish, _round_float
from ..dtypes import FLOAT_DTYPES
from . import resample_math as RM
from .base import F64, I64, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, ints, ints_text
from .meta import attr_check, boolean, check_shape, is_int, one_of, show, show_shape

_Axis = tuple[int, int, float | None]  # (input length, output length, scale)


def _is_scale(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0)


def _scales_check(v: Any) -> None:
    if not isinstance(v, list) or not all(_is_scale(s) for s in v):
        raise ValueError(f"attribute 'scales' must be a list of numbers > 0 or nulls, got {show(v)}")


def _size_check(v: Any) -> None:
    if not (isinstance(v, list) and 1 <= len(v) <= 3 and all(is_int(d) and d >= 1 for d in v)):
        raise ValueError(f"attribute 'size' must be a list of 1 to 3 integers >= 1, got {show(v)}")


def _input_shape_check(v: Any) -> None:
    shape = check_shape(v, "attribute 'input_shape'")
    if not 3 <= len(shape) <= 5 or min(shape[2:]) < 1:
        raise ValueError(f"attribute 'input_shape' {show_shape(shape)} must be [N, C] and 1 to 3 spatial sizes >= 1")


def _upper(name: str) -> Field:
    # upper-cased in the e-graph: the rule notation reads a lower-case field value as a variable
    return Field(name, STRING, lambda v, rank: str(v).upper(), lambda v: str(v).lower())


_MODE = Attr("mode", one_of(RM.MODES, "interpolation mode"))
_ALIGN = Attr("align_corners", boolean("align_corners"), required=False)
_SCALES = Attr("scales", _scales_check, required=False)
_AA = Attr("antialias", boolean("antialias"), required=False)
_ALIGN_FIELD = Field("align_corners", I64, lambda v, rank: int(bool(v)), lambda v: bool(v), default=False)
_AA_FIELD = Field("antialias", I64, lambda v, rank: int(bool(v)), lambda v: bool(v), default=False)
_SCALES_FIELD = Field("scales", STRING, lambda v, rank: json.dumps([float(s or 0.0) for s in (v or [])]),
                      lambda v: [float(s) or None for s in json.loads(v)] or None, default=None)


def _scales(attrs: Mapping[str, Any], k: int) -> list[float | None]:
    given = attrs.get("scales")
    return [None] * k if given is None else [None if s is None else float(s) for s in given]


def _axes(op: str, attrs: Mapping[str, Any], first: Sequence[int]) -> list[_Axis]:
    """(L, O, scale) per spatial axis: of x and `size` (Interpolate), of `input_shape` and dy (backward)."""
    if op == "Interpolate":
        lengths, outs = list(first[2:]), list(attrs["size"])
    else:
        lengths, outs = list(attrs["input_shape"][2:]), list(first[2:])
    return [(int(a), int(b), s) for a, b, s in zip(lengths, outs, _scales(attrs, len(lengths)))]


def _check(op: str, attrs: Mapping[str, Any]) -> None:
    k = len(attrs["size"]) if op == "Interpolate" else len(attrs["input_shape"]) - 2
    mode = attrs["mode"]
    if attrs.get("scales") is not None and len(attrs["scales"]) != k:
        raise ValueError(f"attribute 'scales' has {len(attrs['scales'])} entries for {k} spatial axes")
    if mode == "cubic" and k != 2:
        raise ValueError(f"cubic interpolation is over 2 spatial axes, not {k}")
    if mode in RM.NEAREST and attrs.get("align_corners"):
        raise ValueError(f"align_corners is for linear and cubic interpolation, not {mode}")
    _check_antialias(attrs)
    if attrs.get("antialias") and k != 2:
        raise ValueError(f"antialias is over 2 spatial axes (aten's _upsample_*2d_aa), not {k}")


def _check_antialias(attrs: Mapping[str, Any]) -> None:
    if attrs.get("antialias") and attrs["mode"] in RM.NEAREST:
        raise ValueError(f"antialias is for linear and cubic interpolation, not {attrs['mode']}")


def _spatial(meta: Meta, k: int, what: str) -> tuple[int, ...]:
    shape, dt = meta
    if len(shape) != k + 2 or min(shape[2:], default=1) < 1:
        raise ValueError(f"{what} {show_shape(shape)} must be [N, C] and {k} spatial sizes >= 1")
    if dt is not None and dt not in FLOAT_DTYPES:
        raise ValueError(f"{what} needs a float dtype, got {dt}")
    return shape


def _infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    size = list(attrs["size"])
    shape = _spatial(ins[0], len(size), "x")
    return tuple(shape[:2]) + tuple(size), ins[0][1]


def _infer_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    ishape = tuple(attrs["input_shape"])
    dy = _spatial(ins[0], len(ishape) - 2, "dy")
    if tuple(dy[:2]) != ishape[:2]:
        raise ValueError(f"dy {show_shape(dy)} does not match input_shape {show_shape(ishape)} in N and C")
    return ishape, ins[0][1]


def _like_float(meta: Meta) -> str | None:
    if meta[1] is not None and meta[1] not in FLOAT_DTYPES:
        raise ValueError(f"like needs a float dtype, got {meta[1]}")
    return meta[1]


def _infer_weights(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return (int(attrs["out_size"]), int(attrs["in_size"])), _like_float(ins[0])


def _infer_index(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return (int(attrs["out_size"]),), "i64"


def _mats(op: str, attrs: Attrs, shape: Sequence[int]) -> list[np.ndarray]:
    return [RM.weights(attrs["mode"], bool(attrs.get("align_corners")), length, out, s, bool(attrs.get("antialias")))
            for length, out, s in _axes(op, attrs, shape)]


def _op_interpolate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _f(args[0])
    return _round_float(RM.apply(x, _mats("Interpolate", attrs, x.shape)), dtype)


def _op_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy = _f(args[0])
    return _round_float(RM.apply(dy, [m.T for m in _mats("InterpolateBackward", attrs, dy.shape)]), dtype)


def _op_weights(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    w = RM.weights(attrs["mode"], bool(attrs.get("align_corners")), int(attrs["in_size"]), int(attrs["out_size"]),
                   attrs.get("scale"), bool(attrs.get("antialias")))
    return _round_float(w, dtype)


def _op_index(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    if attrs["mode"] not in RM.NEAREST:
        raise ValueError(f"InterpolateIndex is for the nearest modes, not {attrs['mode']}")
    idx = RM.nearest_index(attrs["mode"], int(attrs["in_size"]), int(attrs["out_size"]), attrs.get("scale"))
    return _finish(idx, dtype)


# ---- the fields the rules read -----------------------------------------------------------------

def _axis_field(op: str, j: int, part: int) -> Field:
    """Spatial axis j's input length (part 0), output length (1) or scale (2, 0.0: none); 0 if absent."""
    def encode(attrs: Mapping[str, Any], shape: Sequence[int]) -> Any:
        axes = _axes(op, attrs, shape)
        if j >= len(axes):
            return 0.0 if part == 2 else 0
        value = axes[j][part]
        return float(value or 0.0) if part == 2 else int(value)  # type: ignore[arg-type]
    return Field("ios"[part] + str(j), F64 if part == 2 else I64, encode, None, source=WHOLE, shaped=True)


def _repeats(op: str, attrs: Mapping[str, Any], shape: Sequence[int]) -> list[int]:
    return [RM.repeat_factor(attrs["mode"], length, out, s) for length, out, s in _axes(op, attrs, shape)]


def _lengths(op: str, attrs: Mapping[str, Any], shape: Sequence[int]) -> list[int]:
    return [a[0] for a in _axes(op, attrs, shape)]


def _shape_fields(op: str) -> tuple[Field, ...]:
    def whole(name: str, sort: str, fn: Any) -> Field:
        return Field(name, sort, fn, None, source=WHOLE, shaped=True)

    def nc(attrs: Mapping[str, Any], shape: Sequence[int]) -> list[int]:
        return [int(shape[0]), int(shape[1])]

    def pairs(attrs: Mapping[str, Any], shape: Sequence[int], second: list[int]) -> str:
        return ints_text(nc(attrs, shape) + [v for p in zip(_lengths(op, attrs, shape), second) for v in p])

    def out(attrs: Mapping[str, Any], shape: Sequence[int]) -> str:
        return ints_text(nc(attrs, shape) + [a[1] for a in _axes(op, attrs, shape)])

    def fold(attrs: Mapping[str, Any], shape: Sequence[int]) -> str:
        # three axes: [N, C, D, H * W] of x (forward), [N, C, OD, H * W] of the gradient so far (backward)
        axes = _axes(op, attrs, shape)
        if len(axes) != 3:
            return "[]"
        first = axes[0][0] if op == "Interpolate" else axes[0][1]
        return ints_text(nc(attrs, shape) + [first, axes[1][0] * axes[2][0]])

    def unfold(attrs: Mapping[str, Any], shape: Sequence[int]) -> str:
        # three axes: [N, C, OD, H, W] after the first axis's product (forward), [N, C, D, H, W] (backward)
        axes = _axes(op, attrs, shape)
        if len(axes) != 3:
            return "[]"
        first = axes[0][1] if op == "Interpolate" else axes[0][0]
        return ints_text(nc(attrs, shape) + [first, axes[1][0], axes[2][0]])

    def steps(attrs: Mapping[str, Any], shape: Sequence[int], j: int, part: int) -> str:
        # the backward's scatter along spatial axis j, the axes after j done first: dy's shape then
        # (axes < j output lengths, the others input lengths) for part 1, the index's [1, .., O_j, .., 1] for 0
        axes = _axes(op, attrs, shape)
        if j >= len(axes):
            return "[]"
        if part == 0:
            return ints_text([1, 1] + [axes[i][1] if i == j else 1 for i in range(len(axes))])
        return ints_text(nc(attrs, shape) + [axes[i][1] if i <= j else axes[i][0] for i in range(len(axes))])

    return (
        whole("k", I64, lambda a, s: len(_axes(op, a, s))),
        *(_axis_field(op, j, part) for j in range(3) for part in range(3)),
        whole("near", I64, lambda a, s: int(a["mode"] in RM.NEAREST)),
        whole("rep", I64, lambda a, s: int(all(_repeats(op, a, s)))),
        whole("up", STRING, lambda a, s: pairs(a, s, [1] * len(_axes(op, a, s)))),
        whole("exp", STRING, lambda a, s: pairs(a, s, [max(r, 1) for r in _repeats(op, a, s)])),
        whole("out", STRING, out),
        whole("sumax", STRING, lambda a, s: ints_text(range(3, 3 + 2 * len(_axes(op, a, s)), 2))),
        whole("fold", STRING, fold),
        whole("unfold", STRING, unfold),
        *(whole(f"{'rx'[part]}{j}", STRING, lambda a, s, j=j, part=part: steps(a, s, j, part))
          for j in range(3) for part in range(2)),
    )


_COMMON_FIELDS = (_upper("mode"), _ALIGN_FIELD, _AA_FIELD)
_SAMPLE_X = (((2, 3, 4, 5), "f32"),)

OPS: tuple[OpDef, ...] = (
    OpDef("Interpolate", ("x",), (_MODE, _ALIGN, _AA, Attr("size", _size_check), _SCALES), _infer, _op_interpolate,
          (Ctor("Interpolate", "Interpolate", _COMMON_FIELDS + (ints("size"), _SCALES_FIELD)
                + _shape_fields("Interpolate"), 1, (head("Interpolate"),)),),
          domain="resample", torch="interpolate", check=lambda a: _check("Interpolate", a),
          sample=({"mode": "linear", "align_corners": True, "size": [7, 3], "scales": [None, None]}, _SAMPLE_X)),
    OpDef("InterpolateBackward", ("dy",), (_MODE, _ALIGN, _AA, Attr("input_shape", _input_shape_check), _SCALES),
          _infer_backward, _op_backward,
          (Ctor("InterpolateBwd", "InterpolateBackward", _COMMON_FIELDS + (ints("input_shape"), _SCALES_FIELD)
                + _shape_fields("InterpolateBackward"), 1, (head("InterpolateBackward"),)),),
          domain="resample", torch="interpolate_backward", backward=True,
          check=lambda a: _check("InterpolateBackward", a),
          sample=({"mode": "cubic", "align_corners": False, "input_shape": [2, 3, 4, 5], "scales": [2.0, None]},
                  (((2, 3, 8, 3), "f32"),))),
    OpDef("InterpolateWeights", ("like",),
          (_MODE, _ALIGN, _AA,
           Attr("in_size", attr_check("in_size", lambda v: is_int(v) and v >= 1, "an integer >= 1")),
           Attr("out_size", attr_check("out_size", lambda v: is_int(v) and v >= 1, "an integer >= 1")),
           Attr("scale", attr_check("scale", _is_scale, "a number > 0 or null"), required=False)),
          _infer_weights, _op_weights,
          (Ctor("InterpolateWeights", "InterpolateWeights",
                _COMMON_FIELDS + (Field("in_size", I64, lambda v, r: int(v), int),
                                  Field("out_size", I64, lambda v, r: int(v), int),
                                  Field("scale", F64, lambda v, r: float(v or 0.0), lambda v: float(v) or None,
                                        default=None)), 1, (head("InterpolateWeights"),)),),
          domain=None, torch="interpolate_weights", check=_check_antialias,
          sample=({"mode": "linear", "align_corners": False, "in_size": 5, "out_size": 8, "scale": 1.7},
                  (((2, 3), "f32"),))),
    OpDef("InterpolateIndex", ("like",),
          (Attr("mode", one_of(RM.NEAREST, "nearest interpolation mode")),
           Attr("in_size", attr_check("in_size", lambda v: is_int(v) and v >= 1, "an integer >= 1")),
           Attr("out_size", attr_check("out_size", lambda v: is_int(v) and v >= 1, "an integer >= 1")),
           Attr("scale", attr_check("scale", _is_scale, "a number > 0 or null"), required=False)),
          _infer_index, _op_index,
          (Ctor("InterpolateIndex", "InterpolateIndex",
                (_upper("mode"), Field("in_size", I64, lambda v, r: int(v), int),
                 Field("out_size", I64, lambda v, r: int(v), int),
                 Field("scale", F64, lambda v, r: float(v or 0.0), lambda v: float(v) or None, default=None)), 1,
                (head("InterpolateIndex"),)),),
          domain=None, torch="interpolate_index",
          sample=({"mode": "nearest_exact", "in_size": 5, "out_size": 3}, (((2, 3), "f32"),))),
)
