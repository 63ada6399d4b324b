"""The pooling family: max, average, adaptive average and adaptive max pooling over the last two
(2-D, format version 2; adaptive max pooling version 3) or three (3-D, version 3) axes of
N, C, [D,] H, W. The ops of both ranks are declared once, by `_forward(nd)` and `_backward(nd)`;
aten's 1-D poolings reach the format as 2-D ones over a unit H axis (torch/aten_pool.py).

Forward: `MaxPool{2,3}d` (values), `MaxPool{2,3}dIndices` (i64: torch's flat index of each
window's maximum within its spatial volume, h * W + w, d * H * W + h * W + w), `AvgPool{2,3}d`,
`AdaptiveAvgPool{2,3}d`, `AdaptiveMaxPool{2,3}d` and `AdaptiveMaxPool{2,3}dIndices`.
Backward: `MaxPool{2,3}dBackward(dy, indices)`, `AvgPool{2,3}dBackward(dy)`,
`AdaptiveAvgPool{2,3}dBackward(dy)`, `AdaptiveMaxPool{2,3}dBackward(dy, indices)`; each carries
`input_shape`, the shape of the forward's input (its gradient's shape).

Three helpers, which the pooling rules expand the backward ops into and which every backend runs
(they read only indices or a shape), of either rank (`input_shape` of rank 4 or 5; version 2's
are of rank 4):
- `MaxPool2dOneHot{part, input_shape}(indices, like)`: [L, *indices.shape] in like's dtype, 1
  where a window's index names position l of the spatial volume (`part` Plane: L = H * W, or
  D * H * W), row l (`Row`: L = H, or D * H: index // W) or column l (`Col`: L = W, index % W),
  else 0: Iota, Compare and a Cast in one kernel (like, the pooling's dy, gives only the dtype);
- `PoolWeights{axis, ...AvgPool's attributes, input_shape}(dy)` and
  `AdaptivePoolWeights{axis, input_shape}(dy)`: the [O, L] matrix (O outputs, L inputs along
  spatial axis `axis`, 0 for the first) with which average pooling contracts each spatial axis
  (y = Wh x Ww^T per plane in 2-D); dy gives only the dtype and O.

Conventions (checked against torch in tests/test_torch_pool.py): windows start at o * stride -
padding; padded positions never win a max and are skipped by the average (their count enters the
divisor with `count_include_pad`); a max ties to the first maximum in window order (row-major over
the kernel), and a NaN wins over numbers (the last NaN); ceil_mode keeps a last window only if it
starts inside the input or its left padding. Adaptive windows along an axis of L inputs and O
outputs are [floor(o L / O), ceil((o + 1) L / O)). The arithmetic is in `pool_math.py`.
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

_COUNT = {1: "one", 2: "two", 3: "three"}
_LAYOUT = {2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}


def _list(key: str, low: int, nd: int) -> Attr:
    def ok(v: Any) -> bool:
        return is_int_list(v) and len(v) == nd and all(d >= low for d in v)
    return Attr(key, attr_check(key, ok, f"a list of {_COUNT[nd]} integers >= {low}"))


def _flag(key: str) -> Attr:
    return Attr(key, attr_check(key, lambda v: isinstance(v, bool), "true or false"), required=False)


def _flag_field(name: str, default: bool = False) -> Field:
    return Field(name, I64, lambda v, rank: int(bool(v)), lambda v: bool(v), default=default)


def _divisor_check(v: Any) -> None:
    if v is not None and not (is_int(v) and v != 0):  # aten's check: a negative divisor divides too
        raise ValueError(f"attribute 'divisor_override' must be a nonzero integer or null, got {v!r}")


def _input_shape_attr(ranks: tuple[int, ...]) -> Attr:
    def check(v: Any) -> None:
        shape = check_shape(v, "attribute 'input_shape'")
        if len(shape) not in ranks:
            layouts = " or ".join(f"{r} {_LAYOUT[r - 2]}" for r in ranks)
            raise ValueError(f"attribute 'input_shape' {show_shape(shape)} is not of rank {layouts}")
    return Attr("input_shape", check)


_CEIL, _INCLUDE = _flag("ceil_mode"), _flag("count_include_pad")
_DIVISOR = Attr("divisor_override", _divisor_check, required=False)
_AVG_FIELDS = (ints("kernel"), ints("stride"), ints("padding"), _flag_field("ceil_mode"),
               _flag_field("count_include_pad", True),
               Field("divisor_override", I64, lambda v, rank: int(v or 0), lambda v: int(v) or None, default=None))
_MAX_FIELDS = (ints("kernel"), ints("stride"), ints("padding"), ints("dilation"), _flag_field("ceil_mode"))


def _max_attrs(nd: int) -> tuple[Attr, ...]:
    return (_list("kernel", 1, nd), _list("stride", 1, nd), _list("padding", 0, nd), _list("dilation", 1, nd), _CEIL)


def _avg_attrs(nd: int) -> tuple[Attr, ...]:
    return (_list("kernel", 1, nd), _list("stride", 1, nd), _list("padding", 0, nd), _CEIL, _INCLUDE, _DIVISOR)


def float_input(meta: Meta, nd: int, what: str = "x") -> tuple[int, ...]:
    """The shape of a pooling op's float input of rank nd + 2 (N, C, spatial...); a ValueError naming it else."""
    shape, dt = meta
    if len(shape) != nd + 2:
        raise ValueError(f"{what} {show_shape(shape)} is not of rank {nd + 2} {_LAYOUT[nd]}")
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


def _indices_meta(meta: Meta, want: tuple[int, ...]) -> None:
    if meta[1] is not None and meta[1] != "i64":
        raise ValueError(f"indices must be i64, got {meta[1]}")
    _expect(meta[0], want, "indices")


# ---- shape and dtype inference, by the number of spatial axes

class _Infer:
    def __init__(self, nd: int) -> None:
        self.nd = nd

    def max(self, attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        return _max_out(attrs, float_input(ins[0], self.nd)), ins[0][1]

    def max_indices(self, attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        return _max_out(attrs, float_input(ins[0], self.nd)), "i64"

    def max_bwd(self, attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        shape = tuple(attrs["input_shape"])
        want = _max_out(attrs, shape)
        _expect(float_input(ins[0], self.nd, "dy"), want, "dy")
        _indices_meta(ins[1], want)
        return shape, ins[0][1]

    def avg(self, attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        return _avg_out(attrs, float_input(ins[0], self.nd)), ins[0][1]

    def avg_bwd(self, attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        shape = tuple(attrs["input_shape"])
        _expect(float_input(ins[0], self.nd, "dy"), _avg_out(attrs, shape), "dy")
        return shape, ins[0][1]

    def adaptive(self, attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        shape = float_input(ins[0], self.nd)
        if min(shape[2:]) < 1:
            raise ValueError(f"x {show_shape(shape)} has an empty spatial axis")
        return tuple(shape[:2]) + tuple(attrs["output_size"]), ins[0][1]

    def adaptive_indices(self, attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        return self.adaptive(attrs, ins)[0], "i64"

    def adaptive_bwd(self, attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        shape = tuple(attrs["input_shape"])
        dy = float_input(ins[0], self.nd, "dy")
        if tuple(dy[:2]) != shape[:2] or min(shape[2:]) < 1:
            raise ValueError(f"dy {show_shape(dy)} does not match input_shape {show_shape(shape)}")
        return shape, ins[0][1]

    def adaptive_max_bwd(self, attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        shape, dt = self.adaptive_bwd(attrs, ins)
        _indices_meta(ins[1], tuple(ins[0][0]))
        return shape, dt


def _helper_rank(attrs: Mapping[str, Any]) -> int:
    return len(attrs["input_shape"]) - 2


def _infer_onehot(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    if dt is not None and dt != "i64":
        raise ValueError(f"indices must be i64, got {dt}")
    if ins[1][1] is not None and ins[1][1] not in FLOAT_DTYPES:
        raise ValueError(f"like needs a float dtype, got {ins[1][1]}")
    return (PM.part_length(attrs["part"], attrs["input_shape"]),) + tuple(shape), ins[1][1]


def _infer_weights(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    dy = float_input(ins[0], _helper_rank(attrs), "dy")
    _expect(dy, _avg_out(attrs, tuple(attrs["input_shape"])), "dy")
    axis = attrs["axis"]
    return (dy[2 + axis], attrs["input_shape"][2 + axis]), ins[0][1]


def _infer_adaptive_weights(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    dy = float_input(ins[0], _helper_rank(attrs), "dy")
    axis = attrs["axis"]
    return (dy[2 + axis], attrs["input_shape"][2 + axis]), ins[0][1]


# ---- evaluation: float64, rounded once

def _op_max(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    values, _ = PM.max_pool(attrs, _f(args[0]))
    return _round_float(values, dtype)


def _op_max_indices(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return PM.max_pool(attrs, _f(args[0]))[1]


def _op_scatter_bwd(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    indices = np.asarray(args[1]).astype(np.int64)
    return _round_float(PM.max_pool_backward(attrs["input_shape"], _f(args[0]), indices), dtype)


def _avg_mats(attrs: Attrs, input_shape: Sequence[int]) -> list[np.ndarray]:
    return [PM.avg_weights(attrs, input_shape, a) for a in range(len(input_shape) - 2)]


def _adaptive_mats(input_shape: Sequence[int], out: Sequence[int]) -> list[np.ndarray]:
    return [PM.adaptive_weights(int(input_shape[2 + a]), int(out[a])) for a in range(len(input_shape) - 2)]


def _op_avg(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _f(args[0])
    return _round_float(PM.apply_weights(_avg_mats(attrs, x.shape), x), dtype)


def _op_avg_bwd(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    mats = [m.T for m in _avg_mats(attrs, attrs["input_shape"])]
    return _round_float(PM.apply_weights(mats, _f(args[0])), dtype)


def _op_adaptive(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _f(args[0])
    return _round_float(PM.apply_weights(_adaptive_mats(x.shape, attrs["output_size"]), x), dtype)


def _op_adaptive_bwd(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy = _f(args[0])
    mats = [m.T for m in _adaptive_mats(attrs["input_shape"], dy.shape[2:])]
    return _round_float(PM.apply_weights(mats, dy), dtype)


def _op_adaptive_max(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _round_float(PM.adaptive_max_pool(attrs["output_size"], _f(args[0]))[0], dtype)


def _op_adaptive_max_indices(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return PM.adaptive_max_pool(attrs["output_size"], _f(args[0]))[1]


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


def _check_helper(keys: tuple[str, ...]) -> Any:
    """The helpers' attributes together: the axis a spatial axis of input_shape, the window lists
    one entry per spatial axis, padding at most half the kernel."""
    def check(attrs: Mapping[str, Any]) -> None:
        nd = _helper_rank(attrs)
        if "axis" in attrs and attrs["axis"] >= nd:
            raise ValueError(f"axis {attrs['axis']} is not a spatial axis of input_shape "
                             f"{show_shape(attrs['input_shape'])}")
        for key in keys:
            if len(attrs[key]) != nd:
                raise ValueError(f"attribute {key!r} {list(attrs[key])} has not one entry per spatial axis of "
                                 f"input_shape {show_shape(attrs['input_shape'])}")
        if "kernel" in keys:
            _check_padding(attrs)
    return check


def _ctor(name: str, fields: tuple[Field, ...], arity: int) -> tuple[Ctor, ...]:
    return (Ctor(name, name, fields, arity, (head(name),)),)


_SAMPLE_X = {2: (2, 3, 5, 6), 3: (2, 3, 4, 5, 6)}
_MAX_SAMPLE = {2: {"kernel": [3, 2], "stride": [2, 2], "padding": [1, 0], "dilation": [1, 2], "ceil_mode": True},
               3: {"kernel": [2, 3, 2], "stride": [2, 2, 2], "padding": [1, 1, 0], "dilation": [1, 1, 2],
                   "ceil_mode": True}}
_AVG_SAMPLE = {2: {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "ceil_mode": True,
                   "count_include_pad": False, "divisor_override": None},
               3: {"kernel": [2, 3, 2], "stride": [2, 2, 1], "padding": [1, 1, 1], "ceil_mode": True,
                   "count_include_pad": False, "divisor_override": None}}
_ADAPTIVE_SAMPLE = {2: [3, 4], 3: [3, 2, 4]}


def _meta(shape: Sequence[int], dt: str = "f32") -> Meta:
    return tuple(shape), dt


def _forward(nd: int) -> tuple[OpDef, ...]:
    """Max (values and indices), average and adaptive average pooling over nd spatial axes."""
    inf = _Infer(nd)
    x = (_meta(_SAMPLE_X[nd]),)
    max_attrs, avg_attrs = _max_attrs(nd), _avg_attrs(nd)
    m, a, ad = _MAX_SAMPLE[nd], _AVG_SAMPLE[nd], {"output_size": _ADAPTIVE_SAMPLE[nd]}
    return (
        OpDef(f"MaxPool{nd}d", ("x",), max_attrs, inf.max, _op_max, _ctor(f"MaxPool{nd}d", _MAX_FIELDS, 1),
              domain=None, torch=f"max_pool{nd}d", check=_check_padding, sample=(m, x)),
        OpDef(f"MaxPool{nd}dIndices", ("x",), max_attrs, inf.max_indices, _op_max_indices,
              _ctor(f"MaxPool{nd}dIndices", _MAX_FIELDS, 1),
              domain=None, torch=f"max_pool{nd}d_indices", check=_check_padding, sample=(m, x)),
        OpDef(f"AvgPool{nd}d", ("x",), avg_attrs, inf.avg, _op_avg, _ctor(f"AvgPool{nd}d", _AVG_FIELDS, 1),
              domain=None, torch=f"avg_pool{nd}d", check=_check_padding, sample=(a, x)),
        OpDef(f"AdaptiveAvgPool{nd}d", ("x",), (_list("output_size", 1, nd),), inf.adaptive, _op_adaptive,
              _ctor(f"AdaptiveAvgPool{nd}d", (ints("output_size"),), 1),
              domain=None, torch=f"adaptive_avg_pool{nd}d", sample=(ad, x)),
    )


def _adaptive_max(nd: int) -> tuple[OpDef, ...]:
    """Adaptive max pooling (values and indices) over nd spatial axes (version 3)."""
    inf = _Infer(nd)
    x = (_meta(_SAMPLE_X[nd]),)
    size = (_list("output_size", 1, nd),)
    ad = {"output_size": _ADAPTIVE_SAMPLE[nd]}
    return (
        OpDef(f"AdaptiveMaxPool{nd}d", ("x",), size, inf.adaptive, _op_adaptive_max,
              _ctor(f"AdaptiveMaxPool{nd}d", (ints("output_size"),), 1),
              domain=None, torch=f"adaptive_max_pool{nd}d", sample=(ad, x)),
        OpDef(f"AdaptiveMaxPool{nd}dIndices", ("x",), size, inf.adaptive_indices, _op_adaptive_max_indices,
              _ctor(f"AdaptiveMaxPool{nd}dIndices", (ints("output_size"),), 1),
              domain=None, torch=f"adaptive_max_pool{nd}d_indices", sample=(ad, x)),
    )


_IN = [2, 3, 5, 6]
_HELPER_SHAPE = _input_shape_attr((4, 5))
_AXIS = Attr("axis", attr_check("axis", lambda v: is_int(v) and v in (0, 1, 2), "a spatial axis: 0, 1 or 2"))
_PART = Attr("part", one_of(PM.PARTS, "part"))

def _spatial_list(key: str, low: int) -> Attr:
    """A helper's window list: one entry per spatial axis (2 or 3; `_check_helper` matches it to input_shape)."""
    def ok(v: Any) -> bool:
        return is_int_list(v) and len(v) in (2, 3) and all(d >= low for d in v)
    return Attr(key, attr_check(key, ok, f"a list of two or three integers >= {low}"))


_HELPER_AVG = (_spatial_list("kernel", 1), _spatial_list("stride", 1), _spatial_list("padding", 0), _CEIL, _INCLUDE,
               _DIVISOR)

HELPERS: tuple[OpDef, ...] = (
    OpDef("MaxPool2dOneHot", ("indices", "like"), (_PART, _HELPER_SHAPE), _infer_onehot, _op_onehot,
          (Ctor("MaxPool2dOneHot", "MaxPool2dOneHot", (string("part"), ints("input_shape")), 2,
                tuple(head(f"OneHot.{part}", part=part) for part in PM.PARTS)),),
          domain=None, torch="max_pool2d_one_hot", check=_check_helper(()),
          sample=({"part": "Row", "input_shape": _IN}, (((2, 3, 3, 3), "i64"), ((2, 3, 3, 3), "f32")))),
    OpDef("PoolWeights", ("dy",), (_AXIS,) + _HELPER_AVG + (_HELPER_SHAPE,), _infer_weights, _op_weights,
          _ctor("PoolWeights", (integer("axis"),) + _AVG_FIELDS + (ints("input_shape"),), 1),
          domain=None, torch="pool_weights", check=_check_helper(("kernel", "stride", "padding")),
          sample=({"axis": 1, **_AVG_SAMPLE[2], "input_shape": _IN}, (((2, 3, 3, 7), "f32"),))),
    OpDef("AdaptivePoolWeights", ("dy",), (_AXIS, _HELPER_SHAPE), _infer_adaptive_weights, _op_adaptive_weights,
          _ctor("AdaptivePoolWeights", (integer("axis"), ints("input_shape")), 1),
          domain=None, torch="adaptive_pool_weights", check=_check_helper(()),
          sample=({"axis": 0, "input_shape": _IN}, (((2, 3, 3, 4), "f32"),))),
)


def tiles(attrs: Mapping[str, Any], dy_shape: Sequence[int]) -> bool:
    """Whether max pooling's windows tile the volume: kernel = stride, no padding, no dilation, and
    every window whole (O_a * s_a <= L_a), so each input position is in one window at most."""
    k, s, sizes = attrs["kernel"], attrs["stride"], attrs["input_shape"][2:]
    return (list(k) == list(s) and not any(attrs["padding"]) and all(int(d) == 1 for d in attrs["dilation"])
            and all(int(dy_shape[2 + a]) * int(s[a]) <= int(sizes[a]) for a in range(len(sizes))))


def _whole(name: str, sort: str, fn: Any) -> Field:
    """A field of MaxPool{2,3}dBackward's e-node computed from all its attributes and dy's shape."""
    return Field(name, sort, fn, None, source=WHOLE, shaped=True)


def _flat_fields() -> tuple[Field, ...]:
    """For the scatter and one-hot rules: dy's shape with its volumes flattened ([N, C, prod O]) and
    the input's volume (prod S)."""
    return (Field("dflat", STRING, lambda v, shape: ints_text([*shape[:2], math.prod(shape[2:])]), None,
                  source="input_shape", shaped=True),
            Field("plane", I64, lambda v, rank: math.prod(int(d) for d in v[2:]), None, source="input_shape"))


def _up(a: Mapping[str, Any], shape: Sequence[int], repeat: bool) -> str:
    """dy's shape [N, C, O0, r0, O1, r1, ...] with r_a = 1 (repeat False) or the stride (True)."""
    out = [*shape[:2]]
    for i, o in enumerate(shape[2:]):
        out += [o, int(a["stride"][i]) if repeat else 1]
    return ints_text(out)


def _max_bwd_fields(nd: int) -> tuple[Field, ...]:
    """MaxPool{nd}dBackward's e-graph fields beyond its attributes: `_flat_fields`; for the tiled rule
    1 when the windows tile the volume (`tiles`), dy's shape as [N, C, O0, 1, O1, 1, ...], as
    [N, C, O0, s0, O1, s1, ...] and as [N, C, O0 * s0, O1 * s1, ...] (each window's value repeated
    over the window), the positions past the last window along each axis (L_a - O_a s_a), and the
    input's shape with its volume flattened. (The 2-D names are version 2's.)"""
    names = {2: ("up6", "exp6", "up4", ("padh", "padw")), 3: ("up8", "exp8", "up5", ("padd", "padh", "padw"))}[nd]
    pads = tuple(_whole(name, I64, lambda a, shape, i=i: max(int(a["input_shape"][2 + i]) - shape[2 + i]
                                                             * int(a["stride"][i]), 0))
                 for i, name in enumerate(names[3]))
    return _MAX_FIELDS + (ints("input_shape"),) + _flat_fields() + (
        _whole("tiled", I64, lambda a, shape: int(tiles(a, shape))),
        _whole(names[0], STRING, lambda a, shape: _up(a, shape, False)),
        _whole(names[1], STRING, lambda a, shape: _up(a, shape, True)),
        _whole(names[2], STRING, lambda a, shape: ints_text([*shape[:2], *(o * int(a["stride"][i])
                                                                          for i, o in enumerate(shape[2:]))])),
        *pads,
        Field("xflat", STRING, lambda v, rank: ints_text([v[0], v[1], math.prod(int(d) for d in v[2:])]), None,
              source="input_shape"),
    )


def _bwd_samples(nd: int) -> dict[str, Any]:
    shape = list(_SAMPLE_X[nd])
    m, a = _MAX_SAMPLE[nd], _AVG_SAMPLE[nd]
    mo, ao = _max_out(m, tuple(shape)), _avg_out(a, tuple(shape))
    ad = (*shape[:2], *_ADAPTIVE_SAMPLE[nd])
    return {"max": ({**m, "input_shape": shape}, (_meta(mo), _meta(mo, "i64"))),
            "avg": ({**a, "input_shape": shape}, (_meta(ao),)),
            "adaptive": ({"input_shape": shape}, (_meta(ad),)),
            "adaptive_max": ({"input_shape": shape}, (_meta(ad), _meta(ad, "i64")))}


def _backward(nd: int) -> tuple[OpDef, ...]:
    """The backward ops of max, average and adaptive average pooling over nd spatial axes."""
    inf, shape = _Infer(nd), _input_shape_attr((nd + 2,))
    samples = _bwd_samples(nd)
    return (
        OpDef(f"MaxPool{nd}dBackward", ("dy", "indices"), _max_attrs(nd) + (shape,), inf.max_bwd, _op_scatter_bwd,
              _ctor(f"MaxPool{nd}dBackward", _max_bwd_fields(nd), 2),
              domain="maxpool", torch=f"max_pool{nd}d_backward", backward=True, check=_check_padding,
              sample=samples["max"]),
        OpDef(f"AvgPool{nd}dBackward", ("dy",), _avg_attrs(nd) + (shape,), inf.avg_bwd, _op_avg_bwd,
              _ctor(f"AvgPool{nd}dBackward", _AVG_FIELDS + (ints("input_shape"),), 1),
              domain="avgpool", torch=f"avg_pool{nd}d_backward", backward=True, check=_check_padding,
              sample=samples["avg"]),
        OpDef(f"AdaptiveAvgPool{nd}dBackward", ("dy",), (shape,), inf.adaptive_bwd, _op_adaptive_bwd,
              _ctor(f"AdaptiveAvgPool{nd}dBackward", (ints("input_shape"),), 1),
              domain="avgpool", torch=f"adaptive_avg_pool{nd}d_backward", backward=True,
              sample=samples["adaptive"]),
    )


def _adaptive_max_backward(nd: int) -> tuple[OpDef, ...]:
    inf, shape = _Infer(nd), _input_shape_attr((nd + 2,))
    return (
        OpDef(f"AdaptiveMaxPool{nd}dBackward", ("dy", "indices"), (shape,), inf.adaptive_max_bwd, _op_scatter_bwd,
              _ctor(f"AdaptiveMaxPool{nd}dBackward", (ints("input_shape"),) + _flat_fields(), 2),
              domain="maxpool", torch=f"adaptive_max_pool{nd}d_backward", backward=True,
              sample=_bwd_samples(nd)["adaptive_max"]),
    )


# Version 2's ops, in their order of version 2 (FAMILIES keeps the egglog program of existing ops as it was)
OPS: tuple[OpDef, ...] = _forward(2) + HELPERS
BACKWARD: tuple[OpDef, ...] = _backward(2)
# Version 3's: adaptive max pooling (2-D and 3-D), and 3-D max, average and adaptive average pooling
V3: tuple[OpDef, ...] = (_adaptive_max(2) + _adaptive_max_backward(2) + _forward(3) + _backward(3) + _adaptive_max(3)
                         + _adaptive_max_backward(3))
