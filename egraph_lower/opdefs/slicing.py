"""Slicing, zero padding and concatenation along one axis (format version 2): Slice, Pad, Concat, SliceBackward.

- `Slice{axis, start, end, step}(x)`: `x[..., start:end:step, ...]` on `axis`, the bounds
  clamped as Python's slices clamp them (negative ones count from the end), step >= 1.
- `Pad{axis, before, after}(x)`: `before` zeros, then x, then `after` zeros along `axis`.
- `Concat{axis}(a, b)`: a then b along `axis` (every other dimension equal).
- `SliceBackward{axis, start, end, step, size}(dy)`: the gradient of a Slice of an input
  whose `axis` is `size` long: zeros of that shape, with dy where the slice took its values.
  Its e-node also carries `before` and `after`, the zeros before and after the slice for
  step 1, from which the rule `slice-bwd-pad` builds a Pad.

Select (one index, the axis dropped) and its backward are not ops: the torch importer
writes them as Slice + Reshape and Reshape + SliceBackward (see docs/format.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _convert
from ..dtypes import to_numpy
from .base import I64, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, integer
from .meta import attr_check, is_int, join, show, show_shape


def _span(attrs: Mapping[str, Any], size: int) -> range:
    """The positions a slice takes on an axis of `size` (Python's clamping)."""
    return range(*slice(int(attrs["start"]), int(attrs["end"]), int(attrs["step"])).indices(size))


def _axis(attrs: Mapping[str, Any], rank: int) -> int:
    axis = attrs["axis"]
    if not -rank <= axis < rank:
        raise ValueError(f"axis {show(axis)} is out of range for rank {rank}")
    return int(axis) % rank


def _slice(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    a = _axis(attrs, len(shape))
    out = list(shape)
    out[a] = len(_span(attrs, shape[a]))
    return tuple(out), dt


def _pad(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    a = _axis(attrs, len(shape))
    out = list(shape)
    out[a] += int(attrs["before"]) + int(attrs["after"])
    return tuple(out), dt


def _concat(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sa, da), (sb, db) = ins
    if len(sa) != len(sb):
        raise ValueError(f"a has shape {show_shape(sa)} and b {show_shape(sb)}: ranks differ")
    a = _axis(attrs, len(sa))
    if any(x != y for i, (x, y) in enumerate(zip(sa, sb)) if i != a):
        raise ValueError(f"a has shape {show_shape(sa)} and b {show_shape(sb)}: they differ off axis {a}")
    out = list(sa)
    out[a] += sb[a]
    return tuple(out), join([da, db])


def _slice_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    a = _axis(attrs, len(shape))
    size = int(attrs["size"])
    n = len(_span(attrs, size))
    if shape[a] != n:
        raise ValueError(f"dy has {shape[a]} on axis {a}, but the slice takes {n} of {size}")
    out = list(shape)
    out[a] = size
    return tuple(out), dt


def _index(x: np.ndarray, axis: int, sel: Any) -> tuple[Any, ...]:
    return (slice(None),) * axis + (sel,)


def _op_slice(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _convert(np.asarray(args[0]), dtype)
    a = int(attrs["axis"]) % x.ndim
    s = slice(int(attrs["start"]), int(attrs["end"]), int(attrs["step"]))
    return np.ascontiguousarray(x[_index(x, a, s)])


def _op_pad(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _convert(np.asarray(args[0]), dtype)
    a = int(attrs["axis"]) % x.ndim
    width = [(0, 0)] * x.ndim
    width[a] = (int(attrs["before"]), int(attrs["after"]))
    return np.pad(x, width)


def _op_concat(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    a, b = (_convert(np.asarray(v), dtype) for v in args)
    return np.concatenate([a, b], axis=int(attrs["axis"]) % a.ndim)


def _op_slice_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy = _convert(np.asarray(args[0]), dtype)
    a = int(attrs["axis"]) % dy.ndim
    size = int(attrs["size"])
    out_shape = list(dy.shape)
    out_shape[a] = size
    out = np.zeros(out_shape, dtype=to_numpy(dtype))
    out[_index(out, a, slice(int(attrs["start"]), int(attrs["end"]), int(attrs["step"])))] = dy
    return out


def _nonneg(key: str) -> Any:
    return attr_check(key, lambda v: is_int(v) and v >= 0, "an integer >= 0")


_INT = {k: Attr(k, attr_check(k, is_int, "an integer")) for k in ("axis", "start", "end")}
_STEP = Attr("step", attr_check("step", lambda v: is_int(v) and v >= 1, "an integer >= 1"))
_AXIS_FIELD = Field("axis", I64, lambda v, rank: int(v) % rank if rank else int(v), int)
_SLICE_FIELDS = (_AXIS_FIELD, integer("start"), integer("end"), integer("step"))


def _before(attrs: Mapping[str, Any]) -> int:
    span = _span(attrs, int(attrs["size"]))
    return span.start if span else 0


def _after(attrs: Mapping[str, Any]) -> int:
    span = _span(attrs, int(attrs["size"]))
    return int(attrs["size"]) - (span[-1] + 1 if span else 0)


OPS: tuple[OpDef, ...] = (
    OpDef("Slice", ("x",), (_INT["axis"], _INT["start"], _INT["end"], _STEP), _slice, _op_slice,
          (Ctor("Slice", "Slice", _SLICE_FIELDS, 1, (head("Slice"),)),), domain=None, torch="slice_",
          sample=({"axis": 1, "start": 1, "end": 9, "step": 2}, (((2, 5), "f32"),))),
    OpDef("Pad", ("x",), (_INT["axis"], Attr("before", _nonneg("before")), Attr("after", _nonneg("after"))),
          _pad, _op_pad,
          (Ctor("Pad", "Pad", (_AXIS_FIELD, integer("before"), integer("after")), 1, (head("Pad"),)),),
          domain=None, torch="pad", sample=({"axis": -1, "before": 1, "after": 2}, (((2, 3), "f32"),))),
    OpDef("Concat", ("a", "b"), (_INT["axis"],), _concat, _op_concat,
          (Ctor("Concat", "Concat", (_AXIS_FIELD,), 2, (head("Concat"),)),), domain=None, torch="concat",
          sample=({"axis": 0}, (((2, 3), "f32"), ((1, 3), "f32")))),
    OpDef("SliceBackward", ("dy",), (_INT["axis"], _INT["start"], _INT["end"], _STEP, Attr("size", _nonneg("size"))),
          _slice_backward, _op_slice_backward,
          (Ctor("SliceBwd", "SliceBackward",
                _SLICE_FIELDS + (integer("size"), Field("before", I64, lambda a, rank: _before(a), None, source=WHOLE),
                                 Field("after", I64, lambda a, rank: _after(a), None, source=WHOLE)),
                1, (head("SliceBackward"),)),),
          domain="slice", torch="slice_backward", backward=True,
          sample=({"axis": 0, "start": -3, "end": 100, "step": 1, "size": 5}, (((3, 2), "f32"),))),
)
