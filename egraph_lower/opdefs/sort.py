"""Sorting and top-k of format version 3: aten's sort (and argsort, msort, which PyTorch's table turns into
sort) and topk. Each of aten's two results is an op of its own, as max.dim's are (values and indices):

    Sort{axis, descending, stable}(x)    = x's values along `axis` in ascending (descending) order
    ArgSort{axis, descending, stable}(x) = i64, x's shape: the permutation that sorts them, out_r = the
                                           index along `axis` of the value at rank r
    TopK{k, axis, largest, sorted}(x)    = the first k of Sort{axis, descending: largest}(x): x's shape
                                           with k on `axis` (0 <= k <= its length)
    ArgTopK{k, axis, largest, sorted}(x) = i64: the first k of ArgSort{axis, descending: largest}(x)

The order is aten's: a NaN is larger than every number (last ascending, first descending), all NaNs
equal to each other; 0.0 and -0.0 are equal, as are equal numbers: ties. The reference orders ties by
index (the lower index first, descending too: the stable order), and the expansions do the same. With
`stable` false a kernel may order ties otherwise (aten's unstable sort does), as it may select other
positions among values equal to the k-th for TopK (aten's CPU kernel does); `sorted` false lets a
kernel return the k values in any order (the reference sorts them). The values at tied positions are
equal either way, and a gradient scattered back by the indices differs only by a permutation within
a tie group. x has rank >= 1 (the importer maps a 0-d sort to x itself) and a number dtype.

The e-graph fields beyond the attributes, for the rules (rules/sort.py): `axis` normalised and `jaxis`
(axis + 1), x's shape `xshape`, `ishape` (x with a 1 inserted after the axis: x as the i of a
comparison), `bshape` (a 1 inserted before it: x as the j), `tshape` (the axis' length inserted:
[.., n_i, n_j, ..]) and `jaxes` ([axis + 1]); TopK's `kshape` ([.., k, n, ..]: the k ranks against the
n positions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _convert, _f, _i
from ..errors import LowerError
from .base import I64, STRING, Attr, Ctor, Field, Meta, OpDef, head, ints_text
from .meta import attr_check, boolean, is_int


def _axis(axis: Any, rank: int, op: str) -> int:
    if rank == 0:
        raise ValueError(f"{op} needs rank >= 1 (a 0-d one is its input)")
    if not is_int(axis) or not -rank <= axis < rank:
        raise ValueError(f"{op} axis {axis!r} is out of range for rank {rank}")
    return int(axis) % rank


def _number(dt: str | None, op: str) -> None:
    if dt == "bool":
        raise ValueError(f"{op} on bool: Cast to a number dtype first")


def _sort(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    _number(dt, "Sort")
    _axis(attrs["axis"], len(shape), "Sort")
    return shape, dt


def _arg_sort(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    _number(dt, "ArgSort")
    _axis(attrs["axis"], len(shape), "ArgSort")
    return shape, "i64"


def _top_shape(attrs: Mapping[str, Any], shape: tuple[int, ...], op: str) -> tuple[int, ...]:
    axis, k = _axis(attrs["axis"], len(shape), op), int(attrs["k"])
    if k > shape[axis]:
        raise ValueError(f"{op} k {k} is larger than axis {axis}'s length {shape[axis]}")
    return shape[:axis] + (k,) + shape[axis + 1:]


def _top_k(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    _number(dt, "TopK")
    return _top_shape(attrs, shape, "TopK"), dt


def _arg_top_k(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    _number(dt, "ArgTopK")
    return _top_shape(attrs, shape, "ArgTopK"), "i64"


def _ascending(x: np.ndarray, axis: int) -> np.ndarray:
    if x.dtype.kind == "f":  # NaN after every number (the primary key), then the value; lexsort is stable
        nan = np.isnan(x)
        return np.lexsort((np.where(nan, 0.0, x), nan), axis=axis)
    return np.argsort(x, axis=axis, kind="stable")


def sort_order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The stable sorting permutation along `axis` (int64), aten's order: NaN the largest, ties by index.
    Descending: the ascending order of x reversed along the axis, read backwards (ties by index again)."""
    if not descending:
        return np.asarray(_ascending(x, axis), dtype=np.int64)
    s = _ascending(np.flip(x, axis), axis)
    return np.asarray(x.shape[axis] - 1 - np.flip(s, axis), dtype=np.int64)


def _values(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.bool_:
        raise LowerError("sorting bool: Cast to a number dtype first")
    return _i(x) if x.dtype.kind in "iu" else _f(x)  # bf16 arrays (ml_dtypes) are of kind "V"


def _order(attrs: Attrs, args: Args, op: str, descending_key: str) -> tuple[np.ndarray, np.ndarray, int]:
    x = np.asarray(args[0])
    if x.ndim == 0:
        raise LowerError(f"{op} needs rank >= 1")
    v = _values(x)
    axis = int(attrs["axis"]) % x.ndim
    return x, sort_order(v, axis, bool(attrs[descending_key])), axis


def _first(a: np.ndarray, axis: int, k: int) -> np.ndarray:
    return np.ascontiguousarray(a[(slice(None),) * axis + (slice(0, k),)])


def _k(attrs: Attrs, x: np.ndarray, axis: int, op: str) -> int:
    k = int(attrs["k"])
    if k > x.shape[axis]:
        raise LowerError(f"{op}: k {k} is larger than the axis' length {x.shape[axis]}")
    return k


def _op_sort(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, order, axis = _order(attrs, args, "Sort", "descending")
    return _convert(np.take_along_axis(x, order, axis), dtype)


def _op_arg_sort(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _order(attrs, args, "ArgSort", "descending")[1]


def _op_top_k(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, order, axis = _order(attrs, args, "TopK", "largest")
    return _convert(_first(np.take_along_axis(x, order, axis), axis, _k(attrs, x, axis, "TopK")), dtype)


def _op_arg_top_k(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, order, axis = _order(attrs, args, "ArgTopK", "largest")
    return _first(order, axis, _k(attrs, x, axis, "ArgTopK"))


def _norm(axis: Any, shape: tuple[int, ...]) -> int:
    return int(axis) % len(shape) if shape else 0


def _shape_field(name: str, fn: Any, source: str = "axis") -> Field:
    return Field(name, STRING, lambda axis, shape: ints_text(fn(_norm(axis, shape), tuple(shape))), None,
                 source=source, shaped=True)


def _flag(name: str) -> Field:
    return Field(name, I64, lambda v, rank: int(bool(v)), bool)


# the comparison fields shared by the four ops (encoded from `axis` and x's shape)
_SHAPES = (Field("axis", I64, lambda v, shape: _norm(v, shape), int, shaped=True),
           Field("jaxis", I64, lambda v, shape: _norm(v, shape) + 1, None, source="axis", shaped=True),
           _shape_field("xshape", lambda a, s: s),
           _shape_field("ishape", lambda a, s: s[:a + 1] + (1,) + s[a + 1:]),
           _shape_field("bshape", lambda a, s: s[:a] + (1,) + s[a:]),
           _shape_field("tshape", lambda a, s: s[:a] + (s[a],) + s[a:]),
           _shape_field("jaxes", lambda a, s: [a + 1]))
_SORT_FIELDS = (_SHAPES[0], _flag("descending"), _flag("stable")) + _SHAPES[1:]


def _kshape(attrs: Mapping[str, Any], shape: tuple[int, ...]) -> str:
    a = _norm(attrs["axis"], shape)
    return ints_text(shape[:a] + (int(attrs["k"]),) + shape[a:])


_TOP_FIELDS = (Field("k", I64, lambda v, rank: int(v), int), _SHAPES[0], _flag("largest"), _flag("sorted")) \
    + _SHAPES[1:] + (Field("kshape", STRING, _kshape, None, source="*", shaped=True),)

_AXIS = Attr("axis", attr_check("axis", is_int, "an integer"))
_K = Attr("k", attr_check("k", lambda v: is_int(v) and v >= 0, "an integer >= 0"))
_SORT_ATTRS = (_AXIS, Attr("descending", boolean("descending")), Attr("stable", boolean("stable")))
_TOP_ATTRS = (_K, _AXIS, Attr("largest", boolean("largest")), Attr("sorted", boolean("sorted")))
_SAMPLE = (((3, 4), "f32"),)
_TOP_SAMPLE = ({"k": 2, "axis": 1, "largest": True, "sorted": True}, _SAMPLE)


def _heads(ctor: str, flag: str) -> tuple[Any, ...]:
    """`Sort`, and `Sort.asc` / `Sort.desc` with the order fixed (TopK: `.smallest` / `.largest`)."""
    names = ("asc", "desc") if flag == "descending" else ("smallest", "largest")
    return (head(ctor),) + tuple(head(f"{ctor}.{n}", **{flag: v}) for n, v in zip(names, (0, 1)))


OPS: tuple[OpDef, ...] = (
    OpDef("Sort", ("x",), _SORT_ATTRS, _sort, _op_sort,
          (Ctor("Sort", "Sort", _SORT_FIELDS, 1, _heads("Sort", "descending")),), domain="sort", torch="sort",
          sample=({"axis": -1, "descending": True, "stable": False}, _SAMPLE)),
    OpDef("ArgSort", ("x",), _SORT_ATTRS, _arg_sort, _op_arg_sort,
          (Ctor("ArgSort", "ArgSort", _SORT_FIELDS, 1, _heads("ArgSort", "descending")),), domain="sort",
          torch="arg_sort", sample=({"axis": 0, "descending": False, "stable": True}, _SAMPLE)),
    OpDef("TopK", ("x",), _TOP_ATTRS, _top_k, _op_top_k,
          (Ctor("TopK", "TopK", _TOP_FIELDS, 1, _heads("TopK", "largest")),), domain="sort", torch="top_k",
          sample=_TOP_SAMPLE),
    OpDef("ArgTopK", ("x",), _TOP_ATTRS, _arg_top_k, _op_arg_top_k,
          (Ctor("ArgTopK", "ArgTopK", _TOP_FIELDS, 1, _heads("ArgTopK", "largest")),), domain="sort",
          torch="arg_top_k", sample=({"k": 3, "axis": 0, "largest": False, "sorted": True}, _SAMPLE)),
)
