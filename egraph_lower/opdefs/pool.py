"""The pooling family (format version 2): max and average pooling over the last two axes of NCHW.

Forward: `MaxPool2d` (values), `MaxPool2dIndices` (i64: torch's flat index h * W + w of
each window's maximum within its H x W plane), `AvgPool2d`, `AdaptiveAvgPool2d`.
Backward: `MaxPool2dBackward(dy, indices)`, `AvgPool2dBackward(dy)`,
`AdaptiveAvgPool2dBackward(dy)`; each carries `input_shape`, the shape of the
forward's input (its gradient's shape).

Three helpers, which the pooling rules expand the backward ops into and which every
backend runs (they read only indices or a shape):
- `MaxPool2dOneHot{part, input_shape}(indices, like)`: [L, *indices.shape] in like's dtype,
  1 where a window's index names plane position l (`part` Plane: L = H * W), row l (`Row`:
  L = H, index // W) or column l (`Col`: L = W, index % W), else 0: Iota, Compare and a Cast
  in one kernel (like, the pooling's dy, gives only the dtype);
- `PoolWeights{axis, ...AvgPool2d's attributes, input_shape}(dy)` and
  `AdaptivePoolWeights{axis, input_shape}(dy)`: the [O, L] matrix (O outputs, L inputs
  along spatial axis `axis`, 0 for H, 1 for W) with which average pooling is
  y = Wh x Ww^T (per plane); dy gives only the dtype and O.

Conventions (checked against torch in tests/test_torch_pool.py): windows start at o * stride -
padding; padded positions never win a max and are skipped by the average (their count
enters the divisor with `count_include_pad`); a max ties to the first maximum in window
order (row-major over the kernel), and a NaN wins over numbers (the last NaN); ceil_mode
keeps a last window only if it starts inside the input or its left padding. The arithmetic
is in `pool_math.py`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..dtypes import FLOAT_DTYPES
from .base import I64, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, integer, ints, ints_text, string
from .meta import attr_check, check_shape, is_int, is_int_list, one_of, show_shape
from . import pool_math as PM


def _pair(key: str, low: int) -> Attr:
    def ok(v: Any) -> bool:
        return is_int_list(v) and len(v) == 2 and all(d >= low for d in v)
    return Attr(key, attr_check(key, ok, f"a list of two integers >= {low}"))


def _flag(key: str) -> Attr:
    return Attr(key, attr_check(key, lambda v: isinstance(v, bool), "true or false"), required=False)


def _flag_field(name: str, default: bool = False) -> Field:
    return Field(name, I64, lambda v, rank: int(bool(v)), lambda v: bool(v), default=default)


def _divisor_check(v: Any) -> None:
    if v is not None and not (is_int(v) and v > 0):
        raise ValueError(f"attribute 'divisor_override' must be a positive integer or null, got {v!r}")


def _input_shape_check(v: Any) -> None:
    shape = check_shape(v, "attribute 'input_shape'")
    if len(shape) != 4:
        raise ValueError(f"attribute 'input_shape' {show_shape(shape)} is not of rank 4 (N, C, H, W)")


_KERNEL, _STRIDE = _pair("kernel", 1), _pair("stride", 1)
_PADDING, _DILATION = _pair("padding", 0), _pair("dilation", 1)
_CEIL, _INCLUDE = _flag("ceil_mode"), _flag("count_include_pad")
_DIVISOR = Attr("divisor_override", _divisor_check, required=False)
_INPUT_SHAPE = Attr("input_shape", _input_shape_check)
_OUTPUT_SIZE = _pair("output_size", 1)
_AXIS = Attr("axis", attr_check("axis", lambda v: is_int(v) and v in (0, 1), "0 (H) or 1 (W)"))
_PART = Attr("part", one_of(PM.PARTS, "part"))

_MAX_ATTRS = (_KERNEL, _STRIDE, _PADDING, _DILATION, _CEIL)
_AVG_ATTRS = (_KERNEL, _STRIDE, _PADDING, _CEIL, _INCLUDE, _DIVISOR)
_MAX_FIELDS = (ints("kernel"), ints("stride"), ints("padding"), ints("dilation"), _flag_field("ceil_mode"))
_AVG_FIELDS = (ints("kernel"), ints("stride"), ints("padding"), _flag_field("ceil_mode"),
               _flag_field("count_include_pad", True),
               Field("divisor_override", I64, lambda v, rank: int(v or 0), lambda v: int(v) or None, default=None))


def _float_nchw(meta: Meta, what: str = "x") -> tuple[int, ...]:
    shape, dt = meta
    if len(shape) != 4:
        raise ValueError(f"{what} {show_shape(shape)} is not of rank 4 (N, C, H, W)")
    if dt is not None and dt not in FLOAT_DTYPES:
        raise ValueError(f"{what} needs a float dtype, got {dt}")
    return shape


def _expect(shape: tuple[int, ...], want: tuple[int, ...], what: str) -> None:
    if tuple(shape) != tuple(want):
        raise ValueError(f"{what} has shape {show_shape(shape)}, expected {show_shape(want)}")


def _max_out(attrs: Mapping[str, Any], shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(shape[:2]) + PM.max_out(attrs, shape[2:])


def _avg_out(attrs: Mapping[str, Any], shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(shape[:2]) + PM.avg_out(attrs, shape[2:])


def _infer_max(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _max_out(attrs, _float_nchw(ins[0])), ins[0][1]


def _infer_max_indices(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _max_out(attrs, _float_nchw(ins[0])), "i64"


def _infer_max_bwd(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape = tuple(attrs["input_shape"])
    _expect(_float_nchw(ins[0], "dy"), _max_out(attrs, shape), "dy")
    if ins[1][1] is not None and ins[1][1] != "i64":
        raise ValueError(f"indices must be i64, got {ins[1][1]}")
    _expect(ins[1][0], _max_out(attrs, shape), "indices")
    return shape, ins[0][1]


def _infer_avg(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _avg_out(attrs, _float_nchw(ins[0])), ins[0][1]


def _infer_avg_bwd(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape = tuple(attrs["input_shape"])
    _expect(_float_nchw(ins[0], "dy"), _avg_out(attrs, shape), "dy")
    return shape, ins[0][1]


def _infer_adaptive(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape = _float_nchw(ins[0])
    if min(shape[2:]) < 1:
        raise ValueError(f"x {show_shape(shape)} has an empty spatial axis")
    return tuple(shape[:2]) + tuple(attrs["output_size"]), ins[0][1]


def _infer_adaptive_bwd(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape = tuple(attrs["input_shape"])
    dy = _float_nchw(ins[0], "dy")
    if tuple(dy[:2]) != shape[:2] or min(shape[2:]) < 1:
        raise ValueError(f"dy {show_shape(dy)} does not match input_shape {show_shape(shape)}")
    return shape, ins[0][1]


def _infer_onehot(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    if dt is not None and dt != "i64":
        raise ValueError(f"indices must be i64, got {dt}")
    if ins[1][1] is not None and ins[1][1] not in FLOAT_DTYPES:
        raise ValueError(f"like needs a float dtype, got {ins[1][1]}")
    return (PM.part_length(attrs["part"], attrs["input_shape"]),) + tuple(shape), ins[1][1]


def _infer_weights(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    dy = _float_nchw(ins[0], "dy")
    _expect(dy, _avg_out(attrs, tuple(attrs["input_shape"])), "dy")
    axis = attrs["axis"]
    return (dy[2 + axis], attrs["input_shape"][2 + axis]), ins[0][1]


def _infer_adaptive_weights(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    dy = _float_nchw(ins[0], "dy")
    axis = attrs["axis"]
    return (dy[2 + axis], attrs["input_shape"][2 + axis]), ins[0][1]


# ---- evaluation: float64, rounded once

def _op_max(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    values, _ = PM.max_pool(attrs, _f(args[0]))
    return _round_float(values, dtype)


def _op_max_indices(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return PM.max_pool(attrs, _f(args[0]))[1]


def _op_max_bwd(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    indices = np.asarray(args[1]).astype(np.int64)
    return _round_float(PM.max_pool_backward(attrs["input_shape"], _f(args[0]), indices), dtype)


def _op_avg(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _f(args[0])
    wh, ww = (PM.avg_weights(attrs, x.shape, axis) for axis in (0, 1))
    return _round_float(PM.apply_weights(wh, x, ww.T), dtype)


def _op_avg_bwd(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    wh, ww = (PM.avg_weights(attrs, attrs["input_shape"], axis) for axis in (0, 1))
    return _round_float(PM.apply_weights(wh.T, _f(args[0]), ww), dtype)


def _op_adaptive(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _f(args[0])
    wh, ww = (PM.adaptive_weights(x.shape[2 + a], attrs["output_size"][a]) for a in (0, 1))
    return _round_float(PM.apply_weights(wh, x, ww.T), dtype)


def _op_adaptive_bwd(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy, ishape = _f(args[0]), attrs["input_shape"]
    wh, ww = (PM.adaptive_weights(ishape[2 + a], dy.shape[2 + a]) for a in (0, 1))
    return _round_float(PM.apply_weights(wh.T, dy, ww), dtype)


def _op_onehot(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    hot = PM.one_hot(attrs["part"], attrs["input_shape"], np.asarray(args[0]).astype(np.int64))
    return _round_float(hot.astype(np.float64), dtype)


def _op_weights(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _round_float(PM.avg_weights(attrs, attrs["input_shape"], attrs["axis"]), dtype)


def _op_adaptive_weights(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    axis = attrs["axis"]
    w = PM.adaptive_weights(attrs["input_shape"][2 + axis], np.shape(args[0])[2 + axis])
    return _round_float(w, dtype)


def _check_padding(attrs: Mapping[str, Any]) -> None:
    PM.check_padding(attrs["kernel"], attrs["padding"])


_X = (((2, 3, 5, 6), "f32"),)
_MAX_SAMPLE = {"kernel": [3, 2], "stride": [2, 2], "padding": [1, 0], "dilation": [1, 2], "ceil_mode": True}
_AVG_SAMPLE = {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "ceil_mode": True, "count_include_pad": False,
               "divisor_override": None}
_IN = [2, 3, 5, 6]


def _ctor(name: str, op: str, fields: tuple[Field, ...], arity: int) -> tuple[Ctor, ...]:
    return (Ctor(name, op, fields, arity, (head(name),)),)


OPS: tuple[OpDef, ...] = (
    OpDef("MaxPool2d", ("x",), _MAX_ATTRS, _infer_max, _op_max, _ctor("MaxPool2d", "MaxPool2d", _MAX_FIELDS, 1),
          domain=None, torch="max_pool2d", check=_check_padding, sample=(_MAX_SAMPLE, _X)),
    OpDef("MaxPool2dIndices", ("x",), _MAX_ATTRS, _infer_max_indices, _op_max_indices,
          _ctor("MaxPool2dIndices", "MaxPool2dIndices", _MAX_FIELDS, 1),
          domain=None, torch="max_pool2d_indices", check=_check_padding, sample=(_MAX_SAMPLE, _X)),
    OpDef("AvgPool2d", ("x",), _AVG_ATTRS, _infer_avg, _op_avg, _ctor("AvgPool2d", "AvgPool2d", _AVG_FIELDS, 1),
          domain=None, torch="avg_pool2d", check=_check_padding, sample=(_AVG_SAMPLE, _X)),
    OpDef("AdaptiveAvgPool2d", ("x",), (_OUTPUT_SIZE,), _infer_adaptive, _op_adaptive,
          _ctor("AdaptiveAvgPool2d", "AdaptiveAvgPool2d", (ints("output_size"),), 1),
          domain=None, torch="adaptive_avg_pool2d", sample=({"output_size": [3, 4]}, _X)),
    OpDef("MaxPool2dOneHot", ("indices", "like"), (_PART, _INPUT_SHAPE), _infer_onehot, _op_onehot,
          (Ctor("MaxPool2dOneHot", "MaxPool2dOneHot", (string("part"), ints("input_shape")), 2,
                tuple(head(f"OneHot.{part}", part=part) for part in PM.PARTS)),),
          domain=None, torch="max_pool2d_one_hot",
          sample=({"part": "Row", "input_shape": _IN}, (((2, 3, 3, 3), "i64"), ((2, 3, 3, 3), "f32")))),
    OpDef("PoolWeights", ("dy",), (_AXIS,) + _AVG_ATTRS + (_INPUT_SHAPE,), _infer_weights, _op_weights,
          _ctor("PoolWeights", "PoolWeights", (integer("axis"),) + _AVG_FIELDS + (ints("input_shape"),), 1),
          domain=None, torch="pool_weights", check=_check_padding,
          sample=({"axis": 1, **_AVG_SAMPLE, "input_shape": _IN}, (((2, 3, 3, 7), "f32"),))),
    OpDef("AdaptivePoolWeights", ("dy",), (_AXIS, _INPUT_SHAPE), _infer_adaptive_weights, _op_adaptive_weights,
          _ctor("AdaptivePoolWeights", "AdaptivePoolWeights", (integer("axis"), ints("input_shape")), 1),
          domain=None, torch="adaptive_pool_weights",
          sample=({"axis": 0, "input_shape": _IN}, (((2, 3, 3, 4), "f32"),))),
)

def _tiles(attrs: Mapping[str, Any], dy_shape: Sequence[int]) -> bool:
    """Whether max pooling's windows tile the plane: kernel = stride, no padding, no dilation, and
    every window whole (OH * sh <= H, OW * sw <= W), so each input position is in one window at most."""
    k, s, hw = attrs["kernel"], attrs["stride"], attrs["input_shape"][2:]
    return (list(k) == list(s) and not any(attrs["padding"]) and all(int(d) == 1 for d in attrs["dilation"])
            and all(int(dy_shape[2 + a]) * int(s[a]) <= int(hw[a]) for a in (0, 1)))


def _whole(name: str, sort: str, fn: Any) -> Field:
    """A field of MaxPool2dBackward's e-node computed from all its attributes and dy's shape."""
    return Field(name, sort, fn, None, source=WHOLE, shaped=True)


# MaxPool2dBackward's e-graph fields beyond its attributes. For the scatter rule: dy's shape with its
# planes flattened ([N, C, OH * OW]) and the input's plane size H * W. For the tiled rule: 1 when the
# windows tile the plane (`_tiles`), dy's shape as [N, C, OH, 1, OW, 1], as [N, C, OH, sh, OW, sw] and
# as [N, C, OH * sh, OW * sw] (each window's value repeated over the window), the rows and columns
# past the last window (H - OH * sh, W - OW * sw), and the input's shape with its planes flattened.
_MAX_BWD_FIELDS = _MAX_FIELDS + (
    ints("input_shape"),
    Field("dflat", STRING, lambda v, shape: ints_text([*shape[:2], math.prod(shape[2:])]), None,
          source="input_shape", shaped=True),
    Field("plane", I64, lambda v, rank: int(v[2]) * int(v[3]), None, source="input_shape"),
    _whole("tiled", I64, lambda a, shape: int(_tiles(a, shape))),
    _whole("up6", STRING, lambda a, shape: ints_text([*shape[:3], 1, shape[3], 1])),
    _whole("exp6", STRING, lambda a, shape: ints_text([*shape[:3], a["stride"][0], shape[3], a["stride"][1]])),
    _whole("up4", STRING, lambda a, shape: ints_text([*shape[:2], shape[2] * a["stride"][0],
                                                      shape[3] * a["stride"][1]])),
    _whole("padh", I64, lambda a, shape: max(int(a["input_shape"][2]) - shape[2] * int(a["stride"][0]), 0)),
    _whole("padw", I64, lambda a, shape: max(int(a["input_shape"][3]) - shape[3] * int(a["stride"][1]), 0)),
    Field("xflat", STRING, lambda v, rank: ints_text([v[0], v[1], int(v[2]) * int(v[3])]), None,
          source="input_shape"),
)

BACKWARD: tuple[OpDef, ...] = (
    OpDef("MaxPool2dBackward", ("dy", "indices"), _MAX_ATTRS + (_INPUT_SHAPE,), _infer_max_bwd, _op_max_bwd,
          _ctor("MaxPool2dBackward", "MaxPool2dBackward", _MAX_BWD_FIELDS, 2),
          domain="maxpool", torch="max_pool2d_backward", backward=True, check=_check_padding,
          sample=({**_MAX_SAMPLE, "input_shape": _IN}, (((2, 3, 3, 3), "f32"), ((2, 3, 3, 3), "i64")))),
    OpDef("AvgPool2dBackward", ("dy",), _AVG_ATTRS + (_INPUT_SHAPE,), _infer_avg_bwd, _op_avg_bwd,
          _ctor("AvgPool2dBackward", "AvgPool2dBackward", _AVG_FIELDS + (ints("input_shape"),), 1),
          domain="avgpool", torch="avg_pool2d_backward", backward=True, check=_check_padding,
          sample=({**_AVG_SAMPLE, "input_shape": _IN}, (((2, 3, 3, 7), "f32"),))),
    OpDef("AdaptiveAvgPool2dBackward", ("dy",), (_INPUT_SHAPE,), _infer_adaptive_bwd, _op_adaptive_bwd,
          _ctor("AdaptiveAvgPool2dBackward", "AdaptiveAvgPool2dBackward", (ints("input_shape"),), 1),
          domain="avgpool", torch="adaptive_avg_pool2d_backward", backward=True,
          sample=({"input_shape": _IN}, (((2, 3, 3, 4), "f32"),))),
)
