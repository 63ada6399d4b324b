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
from ..errors import LowerError
from .base import I64, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, integer, ints, ints_text
from .meta import attr_check, check_shape, is_int, join, show, show_shape


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


def _written_back(ins: Sequence[Meta], want: Sequence[int], what: str) -> Meta:
    """A *Scatter's result: x's shape, src's and x's dtypes joined, src having the shape `want` of the
    part of x it is written into (`what`: "slice", "diagonal", "selection")."""
    (shape, dx), (sshape, ds) = ins
    if tuple(sshape) != tuple(want):
        raise ValueError(f"src has shape {show_shape(sshape)}, not the {what}'s {show_shape(want)}")
    return tuple(shape), join([dx, ds])


def _slice_scatter(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape = ins[0][0]
    a = _norm_axis(attrs["axis"], len(shape))
    m = len(range(*slice(int(attrs["start"]), int(attrs["end"]), int(attrs["step"])).indices(shape[a])))
    return _written_back(ins, _with(shape, a, [m]), "slice")


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


# ---- Diagonal, DiagonalScatter, DiagonalBackward -----------------------------------------------

def diagonal_dims(attrs: Mapping[str, Any], rank: int) -> tuple[int, int]:
    """dim1, dim2 normalised to [0, rank); ValueError where out of range or equal (aten's checks)."""
    if rank < 2:
        raise ValueError(f"a diagonal needs rank >= 2, not {rank}")
    d1, d2 = _norm_axis(attrs["dim1"], rank), _norm_axis(attrs["dim2"], rank)
    if d1 == d2:
        raise ValueError(f"dim1 {show(attrs['dim1'])} and dim2 {show(attrs['dim2'])} are the same axis")
    return d1, d2


def diagonal_length(offset: int, n1: int, n2: int) -> int:
    """The number of elements (i, i + offset) of an [n1, n2] matrix: aten's diagonal's length."""
    return max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))


def diagonal_geometry(attrs: Mapping[str, Any], shape: Sequence[int]) -> dict[str, Any]:
    """The rules' fields of a diagonal of an x of `shape`: x transposed by `perm` (the other axes in
    order, then dim1, dim2) is [.., n1, n2] (`tshape`), `iperm` undoes it; reshaped to [.., n1 n2]
    (`fshape`), the diagonal is the Slice `start:end:step` of its last axis (`last`) with step n2 + 1:
    element (i, i + offset) is at offset + i (n2 + 1), (i - offset, i) at -offset n2 + i (n2 + 1);
    `lo` .. `after`: SliceScatter's geometry of that slice of the flattened x (`slice_scatter_geometry`)."""
    rank = len(shape)
    d1, d2 = diagonal_dims(attrs, rank)
    offset = int(attrs["offset"])
    others = [d for d in range(rank) if d not in (d1, d2)]
    perm = others + [d1, d2]
    n1, n2 = int(shape[d1]), int(shape[d2])
    length = diagonal_length(offset, n1, n2)
    step = n2 + 1
    start = (offset if offset >= 0 else -offset * n2) if length else 0
    end = start + (length - 1) * step + 1 if length else 0
    lead = [int(shape[d]) for d in others]
    fshape = lead + [n1 * n2]
    flat = {"axis": len(lead), "start": start, "end": end, "step": step}
    geo = slice_scatter_geometry(flat, fshape)
    return {"perm": ints_text(perm), "iperm": ints_text(np.argsort(perm)), "tshape": ints_text(lead + [n1, n2]),
            "fshape": ints_text(fshape), "last": len(lead), "start": start, "end": end, "step": step, **geo}


def _diagonal_shape(attrs: Mapping[str, Any], shape: Sequence[int]) -> tuple[int, ...]:
    d1, d2 = diagonal_dims(attrs, len(shape))
    lead = [int(n) for d, n in enumerate(shape) if d not in (d1, d2)]
    return tuple(lead + [diagonal_length(int(attrs["offset"]), int(shape[d1]), int(shape[d2]))])


def _diagonal(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _diagonal_shape(attrs, ins[0][0]), ins[0][1]


def _diagonal_scatter(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _written_back(ins, _diagonal_shape(attrs, ins[0][0]), "diagonal")


def _diagonal_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape = check_shape(attrs["shape"], "attribute 'shape'")
    want = _diagonal_shape(attrs, shape)
    if tuple(ins[0][0]) != want:
        raise ValueError(f"dy has shape {show_shape(ins[0][0])}, not the diagonal's {show_shape(want)}")
    return shape, ins[0][1]


def _diagonal_index(attrs: Mapping[str, Any], shape: Sequence[int], i: int) -> tuple[Any, ...]:
    """x's index of the diagonal's element i (every other axis whole)."""
    d1, d2 = diagonal_dims(attrs, len(shape))
    offset = int(attrs["offset"])
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    idx: list[Any] = [slice(None)] * len(shape)
    idx[d1], idx[d2] = r, c
    return tuple(idx)


def _evaluate_dims(attrs: Attrs, shape: Sequence[int], op: str) -> tuple[int, ...]:
    try:
        return _diagonal_shape(attrs, shape)
    except ValueError as e:
        raise LowerError(f"{op}: {e}") from None


def _op_diagonal(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _convert(np.asarray(args[0]), dtype)
    out = _evaluate_dims(attrs, x.shape, "Diagonal")
    res = np.empty(out, dtype=x.dtype)
    for i in range(out[-1]):
        res[..., i] = x[_diagonal_index(attrs, x.shape, i)]
    return res


def _scatter_into(attrs: Attrs, x: np.ndarray, src: np.ndarray, op: str) -> np.ndarray:
    out = _evaluate_dims(attrs, x.shape, op)
    if tuple(src.shape) != out:
        raise LowerError(f"{op}: src has shape {show_shape(src.shape)}, not the diagonal's {show_shape(out)}")
    res = np.array(x, copy=True)
    for i in range(out[-1]):
        res[_diagonal_index(attrs, x.shape, i)] = src[..., i]
    return res


def _op_diagonal_scatter(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, src = (_convert(np.asarray(a), dtype) for a in args)
    return _scatter_into(attrs, x, src, "DiagonalScatter")


def _op_diagonal_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy = _convert(np.asarray(args[0]), dtype)
    zeros = np.zeros(tuple(int(s) for s in attrs["shape"]), dtype=dy.dtype)
    return _scatter_into(attrs, zeros, dy, "DiagonalBackward")


_DIAG_SORTS = {"perm": STRING, "iperm": STRING, "tshape": STRING, "fshape": STRING, "col": STRING, "spread": STRING}


def _diag_field(name: str, backward: bool) -> Field:
    def encode(attrs: Mapping[str, Any], shape: Any) -> Any:
        return diagonal_geometry(attrs, attrs["shape"] if backward else shape)[name]
    return Field(name, _DIAG_SORTS.get(name, I64), encode, None, source=WHOLE, shaped=not backward)


DIAGONAL_READ = ("perm", "fshape", "last", "start", "end", "step")
DIAGONAL_WRITE = ("perm", "iperm", "tshape", "fshape", "last", "start", "end", "step") + GEOMETRY
DIAGONAL_BACKWARD = ("iperm", "tshape", "last", "inner", "gap", "col", "spread", "keep", "before", "after")
_DIAG_ATTRS = (Attr("offset", attr_check("offset", is_int, "an integer")),
               Attr("dim1", attr_check("dim1", is_int, "an integer")),
               Attr("dim2", attr_check("dim2", is_int, "an integer")))
_DIAG_FIELDS = (integer("offset"), integer("dim1"), integer("dim2"))


def _shape_check(v: Any) -> None:
    check_shape(v, "attribute 'shape'")


def _check_dims(attrs: Mapping[str, Any]) -> None:
    if "shape" in attrs:
        diagonal_dims(attrs, len(attrs["shape"]))


OPS += (
    OpDef("Diagonal", ("x",), _DIAG_ATTRS, _diagonal, _op_diagonal,
          (Ctor("Diagonal", "Diagonal", _DIAG_FIELDS + tuple(_diag_field(k, False) for k in DIAGONAL_READ), 1,
                (head("Diagonal"),)),),
          domain="views", torch="diagonal",
          sample=({"offset": -1, "dim1": 2, "dim2": 0}, (((3, 2, 4), "f32"),))),
    OpDef("DiagonalScatter", ("x", "src"), _DIAG_ATTRS, _diagonal_scatter, _op_diagonal_scatter,
          (Ctor("DiagonalScatter", "DiagonalScatter",
                _DIAG_FIELDS + tuple(_diag_field(k, False) for k in DIAGONAL_WRITE), 2, (head("DiagonalScatter"),)),),
          domain="views", torch="diagonal_scatter",
          sample=({"offset": 1, "dim1": 0, "dim2": -1}, (((3, 2, 4), "f32"), ((2, 3), "f32")))),
    OpDef("DiagonalBackward", ("dy",), (Attr("shape", _shape_check),) + _DIAG_ATTRS, _diagonal_backward,
          _op_diagonal_backward,
          (Ctor("DiagonalBwd", "DiagonalBackward",
                (ints("shape"),) + _DIAG_FIELDS + tuple(_diag_field(k, True) for k in DIAGONAL_BACKWARD), 1,
                (head("DiagonalBackward"),)),),
          domain="views", torch="diagonal_backward", backward=True, check=_check_dims,
          sample=({"shape": [3, 2, 4], "offset": 1, "dim1": 0, "dim2": -1}, (((2, 3), "f32"),))),
)


# ---- SelectScatter, Repeat ---------------------------------------------------------------------

def select_geometry(attrs: Mapping[str, Any], shape: Sequence[int]) -> dict[str, Any]:
    """SelectScatter's fields for an x of `shape`: the index normalised (`lo`, `hi` = lo + 1), the axis's
    length `n`, and `col`, x's shape with 1 on the axis (src with the axis put back)."""
    rank = len(shape)
    a = _norm_axis(attrs["axis"], rank)
    n = int(shape[a])
    index = int(attrs["index"])
    if not -n <= index < n:
        raise ValueError(f"index {index} is out of range for an axis of {n}")
    lo = index % n
    return {"lo": lo, "hi": lo + 1, "n": n, "col": ints_text(_with(shape, a, [1]))}


def _select_scatter(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape = ins[0][0]
    select_geometry(attrs, shape)
    a = _norm_axis(attrs["axis"], len(shape))
    return _written_back(ins, tuple(shape[:a]) + tuple(shape[a + 1:]), "selection")


def _op_select_scatter(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = np.array(_convert(np.asarray(args[0]), dtype), copy=True)
    src = _convert(np.asarray(args[1]), dtype)
    try:
        select_geometry(attrs, x.shape)
    except ValueError as e:
        raise LowerError(f"SelectScatter: {e}") from None
    a = int(attrs["axis"]) % x.ndim
    x[(slice(None),) * a + (int(attrs["index"]),)] = src
    return x


def _repeat_pairs(reps: Sequence[int], shape: Sequence[int]) -> list[tuple[int, int]]:
    """(repeat, size) per output axis: x's shape padded with leading ones to len(reps)."""
    if len(reps) < len(shape):
        raise ValueError(f"repeats {list(reps)} are fewer than x's {len(shape)} dimensions")
    padded = [1] * (len(reps) - len(shape)) + [int(s) for s in shape]
    return list(zip((int(r) for r in reps), padded))


def repeat_geometry(reps: Sequence[int], shape: Sequence[int]) -> dict[str, str]:
    """Repeat's fields: x (its shape padded with leading ones to len(reps)) reshaped to `ishape`
    [1, s0, 1, s1, ..], expanded to `eshape` [r0, s0, r1, s1, ..] and reshaped to `oshape` [r0 s0, ..]."""
    pairs = _repeat_pairs(reps, shape)
    return {"ishape": ints_text([v for _, s in pairs for v in (1, s)]),
            "eshape": ints_text([v for r, s in pairs for v in (r, s)]),
            "oshape": ints_text([r * s for r, s in pairs])}


def _repeat(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    return tuple(r * s for r, s in _repeat_pairs(attrs["reps"], shape)), dt


def _op_repeat(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _convert(np.asarray(args[0]), dtype)
    reps = [int(r) for r in attrs["reps"]]
    if len(reps) < x.ndim:
        raise LowerError(f"Repeat: repeats {reps} are fewer than x's {x.ndim} dimensions")
    return np.tile(x, reps) if reps else np.array(x, copy=True)


def _geo_field(name: str, fn: Any, sort: str) -> Field:
    return Field(name, sort, fn, None, source=WHOLE, shaped=True)


SELECT_GEOMETRY = ("lo", "hi", "n", "col")
_SELECT_FIELDS = (_AXIS_FIELD, integer("index")) + tuple(
    _geo_field(k, lambda a, s, k=k: select_geometry(a, s)[k], STRING if k == "col" else I64) for k in SELECT_GEOMETRY)
REPEAT_GEOMETRY = ("ishape", "eshape", "oshape")
_REPEAT_FIELDS = (ints("reps"),) + tuple(
    _geo_field(k, lambda a, s, k=k: repeat_geometry(a["reps"], s)[k], STRING) for k in REPEAT_GEOMETRY)
_REPS = Attr("reps", attr_check("reps", lambda v: isinstance(v, (list, tuple)) and all(is_int(r) and r >= 0 for r in v),
                                "a list of integers >= 0"))

OPS += (
    OpDef("SelectScatter", ("x", "src"), (_INT["axis"], Attr("index", attr_check("index", is_int, "an integer"))),
          _select_scatter, _op_select_scatter,
          (Ctor("SelectScatter", "SelectScatter", _SELECT_FIELDS, 2, (head("SelectScatter"),)),),
          domain="views", torch="select_scatter",
          sample=({"axis": 1, "index": -1}, (((2, 5), "f32"), ((2,), "f32")))),
    OpDef("Repeat", ("x",), (_REPS,), _repeat, _op_repeat,
          (Ctor("Repeat", "Repeat", _REPEAT_FIELDS, 1, (head("Repeat"),)),),
          domain="views", torch="repeat",
          sample=({"reps": [2, 1, 3]}, (((2, 3), "f32"),))),
)
