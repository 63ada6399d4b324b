"""Scatter and ScatterReduce (format version 3): aten's `scatter.src` / `scatter.value` and `scatter_reduce.two`.

    Scatter{axis}(x, index, src)     = x, then out[p with p[axis] := index[p]] = src[p] for every position p
                                       of index; of positions written more than once the last p in
                                       row-major order wins (aten leaves it unspecified; its CPU kernel
                                       writes in that order)
    ScatterReduce{axis, reduce, include_self}(x, index, src)
                                     = per position of x written by the index: the `reduce` (sum, prod,
                                       mean, amax, amin) of the src values written there, and of x's value
                                       too when include_self; positions not written keep x's value.
                                       mean divides by the count of values reduced (integers: floor
                                       division, as aten); amax / amin propagate NaN, as aten's

Index and src as ScatterAdd's (`opdefs/index.py`): index of x's rank, `index.shape[d] <= x.shape[d]` off
the axis and `<= src.shape[d]` everywhere; indices in [0, n) (aten refuses others here).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _finish
from ..dtypes import FLOAT_DTYPES
from .base import I64, INPUTS, STRING, Attr, Ctor, Field, Meta, OpDef, head, ints_text
from .index import _scatter_add, _sliced, indices
from .indexing import SCATTER_ADD_FIELDS, _whole
from .meta import attr_check, boolean, is_int, one_of

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _positions(x: np.ndarray, axis: int, index: Any, op: str) -> tuple[np.ndarray, np.ndarray]:
    """(the flat positions of x that index's positions write, in index's row-major order; index's shape)."""
    idx = indices(index, x.shape[axis], op)
    where: list[np.ndarray] = list(np.indices(idx.shape))
    where[axis] = idx
    flat = np.ravel_multi_index(tuple(where), x.shape) if idx.size else np.zeros(0, dtype=np.int64)
    return np.asarray(flat).reshape(-1), idx


def _op_scatter(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, src = np.asarray(args[0]), np.asarray(args[2])
    axis = int(attrs["axis"]) % x.ndim
    flat, idx = _positions(x, axis, args[1], "Scatter")
    out = (_f(x) if dtype in FLOAT_DTYPES else x.astype(np.int64)).reshape(-1).copy()
    vals = _sliced(src, idx.shape, None).reshape(-1).astype(out.dtype)
    out[flat] = vals  # NumPy assigns in order: of repeated positions the last wins (checked in the tests)
    last = len(flat) - 1 - np.unique(flat[::-1], return_index=True)[1]
    out[flat[last]] = vals[last]  # and stated explicitly, not left to NumPy
    return _finish(out.reshape(x.shape), dtype)


def _op_scatter_reduce(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, src = np.asarray(args[0]), np.asarray(args[2])
    axis = int(attrs["axis"]) % x.ndim
    flat, idx = _positions(x, axis, args[1], "ScatterReduce")
    is_float = dtype in FLOAT_DTYPES
    base = (_f(x) if is_float else x.astype(np.int64)).reshape(-1)
    vals = _sliced(src, idx.shape, None).reshape(-1).astype(base.dtype)
    red, keep = attrs["reduce"], bool(attrs["include_self"])
    written = np.bincount(flat, minlength=base.size) > 0
    count = np.bincount(flat, minlength=base.size) + (1 if keep else 0)
    start: Any = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[red]
    if not is_float and red in ("amax", "amin"):
        start = np.iinfo(np.int64).min if red == "amax" else np.iinfo(np.int64).max
    acc = base.copy()
    if not keep:
        acc[written] = start
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.fmax, "amin": np.fmin}[red]
    ufunc.at(acc, flat, vals)
    if red in ("amax", "amin") and is_float:  # aten propagates NaN: fmax/fmin skip it, so it is put back
        nan = np.zeros(base.size, dtype=bool)
        np.logical_or.at(nan, flat, np.isnan(vals))
        acc = np.where(nan | (np.isnan(base) & keep), np.nan, acc)
    if red == "mean":
        n = np.maximum(count, 1)
        acc = acc / n if is_float else np.floor_divide(acc, n)
    return _finish(np.where(written, acc, base).reshape(x.shape), dtype)


def _scatter_reduce(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    return _scatter_add(attrs, ins)


def _scatter_fields() -> tuple[Field, ...]:
    """ScatterAdd's fields, and the index's element count [M] and shape (to number its positions)."""
    return SCATTER_ADD_FIELDS + (_whole("iflat", STRING, lambda a, s: ints_text([math.prod(s[1])])),
                                 _whole("ishape", STRING, lambda a, s: ints_text(s[1])))


_AXIS = Attr("axis", attr_check("axis", is_int, "an integer"))
_REDUCE = Attr("reduce", one_of(REDUCTIONS, "ScatterReduce reduce"))
_INCLUDE = Attr("include_self", boolean("include_self"))
_SAMPLE = (((2, 3), "f32"), ((2, 3), "i64"), ((2, 3), "f32"))

OPS: tuple[OpDef, ...] = (
    OpDef("Scatter", ("x", "index", "src"), (_AXIS,), _scatter_add, _op_scatter,
          (Ctor("Scatter", "Scatter", _scatter_fields(), 3, (head("Scatter"),)),), domain="indexing",
          torch="scatter", sample=({"axis": 0}, _SAMPLE)),
    OpDef("ScatterReduce", ("x", "index", "src"), (_AXIS, _REDUCE, _INCLUDE), _scatter_reduce, _op_scatter_reduce,
          (Ctor("ScatterReduce", "ScatterReduce",
                (Field("reduce", STRING, lambda v, s: str(v).upper(), lambda v: str(v).lower(), shaped=INPUTS),
                 Field("include_self", I64, lambda v, s: int(bool(v)), bool, shaped=INPUTS)) + _scatter_fields(),
                3, (head("ScatterReduce"),) + tuple(head(f"ScatterReduce.{r}", reduce=r.upper()) for r in REDUCTIONS)),),
          domain="indexing", torch="scatter_reduce",
          sample=({"axis": 1, "reduce": "amax", "include_self": False}, _SAMPLE)),
)
