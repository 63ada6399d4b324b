"""Order statistics of format version 3: aten's kthvalue, median and nanmedian (with a dim; without one the
importer takes them over x flattened) and mode. As sort's (`opdefs/sort.py`), each of aten's two results is an op:

    KthValue{k, axis, keep_dim}(x)       = the k-th smallest value along `axis` (1 <= k <= its length): the
                                           value at position k - 1 of Sort{axis, ascending}(x); the axis
                                           dropped, or kept as 1 with keep_dim
    ArgKthValue{k, axis, keep_dim}(x)    = i64: its index, position k - 1 of ArgSort{axis, ascending}(x)
    Median{axis, keep_dim, ignore_nan}(x)
                                         = the lower median: the value at position p of the ascending sort,
                                           p = (n - 1) // 2 of the n values; where the row holds a NaN, NaN
                                           (aten's median), p its first NaN's position; with ignore_nan
                                           (aten's nanmedian) p = (c - 1) // 2 of its c values that are not
                                           NaN (0 where every one is: NaN)
    ArgMedian{axis, keep_dim, ignore_nan}(x)
                                         = i64: its index, position p of ArgSort{axis, ascending}(x)
    Mode{axis, keep_dim}(x)              = the value that occurs most often along `axis` (equal values one,
                                           0.0 and -0.0 one, NaNs one), of several the smallest (NaN the
                                           largest); the value at the index ArgMode gives
    ArgMode{axis, keep_dim}(x)           = i64: the last index holding that value (aten's CPU kernel gives the
                                           last of the value's run in its unstable sort: one of the group)

The order, NaN and ties are Sort's: NaN the largest, 0.0 and -0.0 equal, ties by index in the reference
and the expansions (aten's kernels select among tied values their own way: the values are the same, the
indices may be another of the tie group, and with them a gradient scattered back). x has rank >= 1, a
number dtype and a non-empty axis.

The e-graph fields beyond the attributes (rules/order_stats.py): Sort's comparison fields (`opdefs/sort.py`),
`axes` ([axis]), `kshape` (x's shape with 1 on the axis), `oshape` (the output's shape); KthValue's `k0`
(k - 1, an integer) and `kf` (k - 1 as a literal); Median's and Mode's `size` (n), Median's `half`
((n - 1) // 2); Mode's `pnq`, `nn` and `all` (Scan's: x as [P, n, Q], [n, n], every axis).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _convert
from ..errors import LowerError
from .base import F64, I64, STRING, Attr, Ctor, Field, Meta, OpDef, head, ints_text
from .meta import attr_check, boolean, is_int
from .sort import _SHAPES, _axis, _flag, _norm, _number, _values, sort_order


def _out_shape(shape: tuple[int, ...], axis: int, keep: bool) -> tuple[int, ...]:
    return shape[:axis] + ((1,) if keep else ()) + shape[axis + 1:]


def _selected(attrs: Mapping[str, Any], ins: Sequence[Meta], op: str) -> tuple[tuple[int, ...], int]:
    shape, dt = ins[0]
    _number(dt, op)
    axis = _axis(attrs["axis"], len(shape), op)
    if shape[axis] == 0:
        raise ValueError(f"{op} over an empty axis {axis}")
    if "k" in attrs and not 1 <= int(attrs["k"]) <= shape[axis]:
        raise ValueError(f"{op} k {attrs['k']} is out of range [1, {shape[axis]}] of axis {axis}")
    return _out_shape(shape, axis, bool(attrs["keep_dim"])), axis


def _kth_value(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _selected(attrs, ins, "KthValue")[0], ins[0][1]


def _arg_kth_value(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _selected(attrs, ins, "ArgKthValue")[0], "i64"


def _median(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _selected(attrs, ins, "Median")[0], ins[0][1]


def _arg_median(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _selected(attrs, ins, "ArgMedian")[0], "i64"


def median_position(v: np.ndarray, axis: int, ignore_nan: bool) -> np.ndarray:
    """p of each row (kept as 1 on the axis): its position in the ascending sort (see the module)."""
    n = v.shape[axis]
    nans = np.sum(np.isnan(v), axis=axis, keepdims=True) if v.dtype.kind == "f" else \
        np.zeros(_out_shape(v.shape, axis, True), dtype=np.int64)
    if ignore_nan:
        return np.maximum(n - nans - 1, 0) // 2
    return np.where(nans > 0, n - nans, (n - 1) // 2)


def _mode(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _selected(attrs, ins, "Mode")[0], ins[0][1]


def _arg_mode(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _selected(attrs, ins, "ArgMode")[0], "i64"


def mode_position(v: np.ndarray, order: np.ndarray, axis: int) -> np.ndarray:
    """The mode's last occurrence as a position of the ascending stable sort (kept as 1 on the axis): its
    first's, r*, the least rank of a most frequent value, plus its count m less 1 (ties are by index)."""
    a = np.moveaxis(v, axis, -1)
    eq = a[..., :, None] == a[..., None, :]
    if a.dtype.kind == "f":
        eq |= np.isnan(a[..., :, None]) & np.isnan(a[..., None, :])
    count = np.sum(eq, axis=-1)
    most = np.max(count, axis=-1, keepdims=True)
    rank = np.argsort(np.moveaxis(order, axis, -1), axis=-1)  # the inverse permutation
    first = np.min(np.where(count == most, rank, a.shape[-1]), axis=-1, keepdims=True)
    return np.moveaxis(first + most - 1, -1, axis)


def _index(attrs: Attrs, args: Args, op: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(x, the selected index along the axis kept as 1, the axis)."""
    x = np.asarray(args[0])
    if x.ndim == 0:
        raise LowerError(f"{op} needs rank >= 1")
    v = _values(x)
    axis = int(attrs["axis"]) % x.ndim
    n = x.shape[axis]
    if n == 0:
        raise LowerError(f"{op} over an empty axis")
    order = sort_order(v, axis, False)
    if op in ("Mode", "ArgMode"):
        pos = mode_position(v, order, axis)
    elif "k" in attrs:
        k = int(attrs["k"])
        if not 1 <= k <= n:
            raise LowerError(f"{op}: k {k} is out of range [1, {n}]")
        pos = np.full(_out_shape(x.shape, axis, True), k - 1, dtype=np.int64)
    else:
        pos = median_position(v, axis, bool(attrs["ignore_nan"]))
    return x, np.take_along_axis(order, pos.astype(np.int64), axis), axis


def _finish(a: np.ndarray, axis: int, keep: bool) -> np.ndarray:
    return np.array(a if keep else np.squeeze(a, axis))  # (ascontiguousarray would make a 0-d result 1-d)


def _op_value(op: str) -> Any:
    def evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        x, idx, axis = _index(attrs, args, op)
        return _convert(_finish(np.take_along_axis(x, idx, axis), axis, bool(attrs["keep_dim"])), dtype)

    return evaluate


def _op_index(op: str) -> Any:
    def evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        _, idx, axis = _index(attrs, args, op)
        return _finish(idx, axis, bool(attrs["keep_dim"]))

    return evaluate


def _shaped(name: str, sort: str, fn: Any) -> Field:
    """A field from all the attributes and x's shape: fn(attrs, shape, normalised axis)."""
    return Field(name, sort, lambda attrs, shape: fn(attrs, tuple(shape), _norm(attrs["axis"], shape)), None,
                 source="*", shaped=True)


_COMMON = (_shaped("axes", STRING, lambda a, s, ax: ints_text([ax])),
           _shaped("kshape", STRING, lambda a, s, ax: ints_text(_out_shape(s, ax, True))),
           _shaped("oshape", STRING, lambda a, s, ax: ints_text(_out_shape(s, ax, bool(a["keep_dim"])))))
_KTH_FIELDS = (Field("k", I64, lambda v, rank: int(v), int), _SHAPES[0], _flag("keep_dim")) + _SHAPES[1:] + _COMMON \
    + (Field("k0", I64, lambda v, rank: int(v) - 1, None, source="k"),
       Field("kf", F64, lambda v, rank: float(int(v) - 1), None, source="k"))
_MEDIAN_FIELDS = (_SHAPES[0], _flag("keep_dim"), _flag("ignore_nan")) + _SHAPES[1:] + _COMMON \
    + (_shaped("size", F64, lambda a, s, ax: float(s[ax]) if s else 1.0),
       _shaped("half", F64, lambda a, s, ax: float((s[ax] - 1) // 2) if s else 0.0))

# no ignore_nan, no half; Scan's fields of x (`opdefs/reductions.py`) for the sorted expansion's run scan
_MODE_FIELDS = _MEDIAN_FIELDS[:2] + _MEDIAN_FIELDS[3:-1] + (
    _shaped("pnq", STRING, lambda a, s, ax: ints_text([math.prod(s[:ax]), s[ax], math.prod(s[ax + 1:])])),
    _shaped("nn", STRING, lambda a, s, ax: ints_text([s[ax], s[ax]])),
    _shaped("all", STRING, lambda a, s, ax: ints_text(range(len(s)))))

_AXIS = Attr("axis", attr_check("axis", is_int, "an integer"))
_KEEP = Attr("keep_dim", boolean("keep_dim"))
_K = Attr("k", attr_check("k", lambda v: is_int(v) and v >= 1, "an integer >= 1"))
_KTH_ATTRS = (_K, _AXIS, _KEEP)
_MEDIAN_ATTRS = (_AXIS, _KEEP, Attr("ignore_nan", boolean("ignore_nan")))
_SAMPLE = (((3, 4), "f32"),)


def _median_heads(ctor: str) -> tuple[Any, ...]:
    """`Median`, `Median.nan` (ignore_nan) and `Median.propagate` (a NaN makes the result NaN)."""
    return (head(ctor), head(f"{ctor}.nan", ignore_nan=1), head(f"{ctor}.propagate", ignore_nan=0))


OPS: tuple[OpDef, ...] = (
    OpDef("KthValue", ("x",), _KTH_ATTRS, _kth_value, _op_value("KthValue"),
          (Ctor("KthValue", "KthValue", _KTH_FIELDS, 1, (head("KthValue"),)),), domain="sort", torch="kth_value",
          sample=({"k": 2, "axis": 1, "keep_dim": False}, _SAMPLE)),
    OpDef("ArgKthValue", ("x",), _KTH_ATTRS, _arg_kth_value, _op_index("ArgKthValue"),
          (Ctor("ArgKthValue", "ArgKthValue", _KTH_FIELDS, 1, (head("ArgKthValue"),)),), domain="sort",
          torch="arg_kth_value", sample=({"k": 3, "axis": 0, "keep_dim": True}, _SAMPLE)),
    OpDef("Median", ("x",), _MEDIAN_ATTRS, _median, _op_value("Median"),
          (Ctor("Median", "Median", _MEDIAN_FIELDS, 1, _median_heads("Median")),), domain="sort", torch="median",
          sample=({"axis": -1, "keep_dim": False, "ignore_nan": False}, _SAMPLE)),
    OpDef("ArgMedian", ("x",), _MEDIAN_ATTRS, _arg_median, _op_index("ArgMedian"),
          (Ctor("ArgMedian", "ArgMedian", _MEDIAN_FIELDS, 1, _median_heads("ArgMedian")),), domain="sort",
          torch="arg_median", sample=({"axis": 0, "keep_dim": True, "ignore_nan": True}, _SAMPLE)),
    OpDef("Mode", ("x",), (_AXIS, _KEEP), _mode, _op_value("Mode"),
          (Ctor("Mode", "Mode", _MODE_FIELDS, 1, (head("Mode"),)),), domain="sort", torch="mode",
          sample=({"axis": 1, "keep_dim": True}, _SAMPLE)),
    OpDef("ArgMode", ("x",), (_AXIS, _KEEP), _arg_mode, _op_index("ArgMode"),
          (Ctor("ArgMode", "ArgMode", _MODE_FIELDS, 1, (head("ArgMode"),)),), domain="sort", torch="arg_mode",
          sample=({"axis": 0, "keep_dim": False}, _SAMPLE)),
)
