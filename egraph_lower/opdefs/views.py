"""Views and shape ops written back into a tensor (format version 3): SliceScatter.

    SliceScatter{axis, start, end, step}(x, src)   x with the positions the slice x[start:end:step] takes on
                                                  `axis` replaced by src (aten's `slice_scatter`); the bounds
                                                  clamped as Python's slices clamp them (negative ones count
                                                  from the end), step >= 1; src has x's shape with the
                                                  slice's length m on `axis` (m may be 0: the result is x)

The e-node carries, besides the attributes, the fields its expansions (`rules/views.py`) read, computed
from the attributes and x's shape [.., n, ..] (`slice_scatter_geometry`): the step-1 bounds `lo`, `hi`
(Python's clamping; hi >= lo), n, and the interleave of src that SliceBackward's rules use (src reshaped
to `col` = [.., m, 1, ..], padded with step - 1 zeros on axis `inner` (`gap`), reshaped to `spread` =
[.., m step, ..], its first `keep` positions placed after `before` and ahead of `after` positions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _convert
from .base import I64, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, integer, ints_text
from .meta import attr_check, is_int, join, show, show_shape


def _norm_axis(axis: Any, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"axis {show(axis)} is out of range for rank {rank}")
    return int(axis) % rank


def _with(shape: Sequence[int], axis: int, along: Sequence[int]) -> list[int]:
    return [*shape[:axis], *along, *shape[axis + 1:]]


def slice_scatter_geometry(attrs: Mapping[str, Any], shape: Sequence[int]) -> dict[str, Any]:
    """The rules' fields of a SliceScatter with `attrs` of an x of `shape`."""
    rank = len(shape)
    a = int(attrs["axis"]) % rank if rank else 0
    n = shape[a] if rank else 0
    step = int(attrs["step"])
    bounds = slice(int(attrs["start"]), int(attrs["end"]), step).indices(n)
    span = range(*bounds)
    m = len(span)
    first = span.start if span else 0
    keep = min(m * step, n - first)
    return {"lo": bounds[0], "hi": max(bounds[0], bounds[1]), "n": n, "inner": a + 1, "gap": step - 1,
            "col": ints_text(_with(shape, a, [m, 1])), "spread": ints_text(_with(shape, a, [m * step])),
            "keep": keep, "before": first, "after": n - first - keep}


def _slice_scatter(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (shape, dx), (sshape, ds) = ins
    a = _norm_axis(attrs["axis"], len(shape))
    m = len(range(*slice(int(attrs["start"]), int(attrs["end"]), int(attrs["step"])).indices(shape[a])))
    want = tuple(_with(shape, a, [m]))
    if tuple(sshape) != want:
        raise ValueError(f"src has shape {show_shape(sshape)}, not the slice's {show_shape(want)}")
    return tuple(shape), join([dx, ds])


def _op_slice_scatter(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = np.array(_convert(np.asarray(args[0]), dtype), copy=True)
    src = _convert(np.asarray(args[1]), dtype)
    a = int(attrs["axis"]) % x.ndim
    x[(slice(None),) * a + (slice(int(attrs["start"]), int(attrs["end"]), int(attrs["step"])),)] = src
    return x


_SORTS = {"col": STRING, "spread": STRING}


def _geometry_field(name: str) -> Field:
    def encode(attrs: Mapping[str, Any], shape: Sequence[int]) -> Any:
        return slice_scatter_geometry(attrs, shape)[name]
    return Field(name, _SORTS.get(name, I64), encode, None, source=WHOLE, shaped=True)


GEOMETRY = ("lo", "hi", "n", "inner", "gap", "col", "spread", "keep", "before", "after")
_AXIS_FIELD = Field("axis", I64, lambda v, rank: int(v) % rank if rank else int(v), int)
SLICE_SCATTER_FIELDS = (_AXIS_FIELD, integer("start"), integer("end"), integer("step")) + tuple(
    _geometry_field(k) for k in GEOMETRY)

_INT = {k: Attr(k, attr_check(k, is_int, "an integer")) for k in ("axis", "start", "end")}
_STEP = Attr("step", attr_check("step", lambda v: is_int(v) and v >= 1, "an integer >= 1"))

OPS: tuple[OpDef, ...] = (
    OpDef("SliceScatter", ("x", "src"), (_INT["axis"], _INT["start"], _INT["end"], _STEP), _slice_scatter,
          _op_slice_scatter, (Ctor("SliceScatter", "SliceScatter", SLICE_SCATTER_FIELDS, 2, (head("SliceScatter"),)),),
          domain="views", torch="slice_scatter",
          sample=({"axis": 1, "start": 1, "end": 9, "step": 2}, (((2, 5), "f32"), ((2, 2), "f32")))),
)
