"""Slicing, zero padding and concatenation along one axis (format version 2): Slice, Pad, Concat, SliceBackward.

- `Slice{axis, start, end, step}(x)`: `x[..., start:end:step, ...]` on `axis`, the bounds
  clamped as Python's slices clamp them (negative ones count from the end), step >= 1.
- `Pad{axis, before, after}(x)`: `before` zeros, then x, then `after` zeros along `axis`.
- `Concat{axis}(a, b)`: a then b along `axis` (every other dimension equal).
- `SliceBackward{axis, start, end, step, size}(dy)`: the gradient of a Slice of an input
  whose `axis` is `size` long: zeros of that shape, with dy where the slice took its values.
  Its e-node also carries fields computed from the attributes and dy's shape, from which the
  rules (`rules/slicing.py`) build its expansions: a Pad for step 1; for a larger step, dy
  with zeros interleaved, or a scatter-add.

Select (one index, the axis dropped) and its backward are not ops: the torch importer
writes them as Slice + Reshape and Reshape + SliceBackward (see docs/format.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _convert
from ..dtypes import to_numpy
from .base import I64, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, integer, ints_text
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


def _run(attrs: Mapping[str, Any]) -> tuple[int, int, int]:
    """(first, keep, cut) of a SliceBackward: dy's n values spread `step` apart (each followed by
    step - 1 zeros) make a run of n * step that starts at the slice's first position; `keep` of it fit
    in the axis (min(n * step, size - first)), `cut` trailing zeros of the last value's do not."""
    size, step = int(attrs["size"]), int(attrs["step"])
    span = _span(attrs, size)
    first = span.start if span else 0
    keep = min(len(span) * step, size - first)
    return first, keep, len(span) * step - keep


def _before(attrs: Mapping[str, Any]) -> int:
    return _run(attrs)[0]


def _after(attrs: Mapping[str, Any]) -> int:
    first, keep, _ = _run(attrs)
    return int(attrs["size"]) - first - keep


def _with_axis(attrs: Mapping[str, Any], shape: Sequence[int], along: Sequence[int]) -> str:
    """dy's shape with its `axis` entry n replaced by `along` (computed from n and the step)."""
    a = int(attrs["axis"]) % len(shape)
    return ints_text([*shape[:a], *along, *shape[a + 1:]])


def _derived(name: str, fn: Any, shaped: bool = False) -> Field:
    """A field of SliceBackward's e-node computed from all its attributes (and dy's shape if `shaped`)."""
    return Field(name, STRING if shaped else I64, fn, None, source=WHOLE, shaped=shaped)


# SliceBackward's e-node fields beyond its attributes: the zeros before and after the run of dy's values
# (step 1: dy itself), how much of the run is kept and cut (`_run`), 1 if step > 1 (else 0), the axis
# after `axis` and step - 1 (where the interleave pads), dy's shape with [n, 1] on the axis and with n * step
_SLICE_BWD_FIELDS = _SLICE_FIELDS + (
    integer("size"),
    _derived("before", lambda a, rank: _before(a)),
    _derived("after", lambda a, rank: _after(a)),
    _derived("keep", lambda a, rank: _run(a)[1]),
    _derived("cut", lambda a, rank: _run(a)[2]),
    _derived("strided", lambda a, rank: int(int(a["step"]) > 1)),
    _derived("inner", lambda a, rank: int(a["axis"]) % rank + 1 if rank else 1),
    _derived("gap", lambda a, rank: int(a["step"]) - 1),
    _derived("col", lambda a, shape: _with_axis(a, shape, [shape[int(a["axis"]) % len(shape)], 1]), shaped=True),
    _derived("spread", lambda a, shape: _with_axis(a, shape, [shape[int(a["axis"]) % len(shape)] * int(a["step"])]),
             shaped=True),
)


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
          (Ctor("SliceBwd", "SliceBackward", _SLICE_BWD_FIELDS, 1, (head("SliceBackward"),)),),
          domain="slice", torch="slice_backward", backward=True,
          sample=({"axis": 0, "start": -3, "end": 100, "step": 1, "size": 5}, (((3, 2), "f32"),))),
)
