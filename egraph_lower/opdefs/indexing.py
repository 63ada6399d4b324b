"""Advanced indexing, index-put and flip (format version 3): aten's `index.Tensor`, `index_put` and `flip`.

    Flip{axis}(x)                      = x reversed along `axis` (torch.flip over one dim)
    Index{axis}(x, i)                  = x[:, .., :, i] with i at `axis`: x.shape[:axis] + i.shape + x.shape[axis+1:]
    Index2{axis}(x, i0, i1)            = x[.., i0, i1, ..] on axes axis, axis+1; i0, i1 broadcast to B:
                                         x.shape[:axis] + B + x.shape[axis+2:]
    Index3{axis}(x, i0, i1, i2)        = the same on three consecutive axes
    IndexPut{axis, accumulate}(x, i, v)     = x with the positions Index{axis}(x, i) reads set to v
    IndexPut2, IndexPut3 {axis, accumulate} (x, i0, i1[, i2], v): the same for Index2, Index3
                                         (v broadcasts to the shape Index reads; accumulate: the values of
                                         repeated positions add up, onto x's; else the last in row-major
                                         order of the indices wins, as CPU kernels run them)

The indices follow aten: an integer in [-n, n) for an axis of n (a negative one counts from the end);
one outside is an error of the evaluator. Index tensors at non-consecutive axes (aten moves the result's
broadcast axes first) reach these ops with x transposed so that its indexed axes lead (the importer),
which is what aten's own kernel does. Every op is written once, against NumPy here; the torch kernels
(`torch/kernels_indexing.py`) are aten's.

The e-nodes carry fields the rules need (`rules/indexing.py`), computed when the graph is loaded from
the attributes and every input's shape (`Field.shaped == INPUTS`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _convert, _f, _finish
from ..dtypes import FLOAT_DTYPES, INT_DTYPES
from ..errors import LowerError
from .base import F64, I64, INPUTS, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, ints_text
from .meta import attr_check, boolean, broadcast_shapes, is_int, show, show_shape

_AXIS = Attr("axis", attr_check("axis", is_int, "an integer"))
_ACCUMULATE = Attr("accumulate", boolean("accumulate"))


def _norm_axis(axis: Any, rank: int, count: int = 1) -> int:
    if not -rank <= axis < rank or int(axis) % rank + count > rank:
        raise ValueError(f"axis {show(axis)} with {count} indexed axes is out of range for rank {rank}")
    return int(axis) % rank


def wrapped(v: Any, n: int, op: str) -> np.ndarray:
    """Index values as int64 in [0, n): aten's negative indices count from the end; outside [-n, n) is an error."""
    a = np.asarray(v)
    if a.dtype.kind == "b":
        raise LowerError(f"{op}: indices must be integers, not bool")
    if a.dtype.kind not in "iu":
        f = _f(a)
        if not np.all(np.isfinite(f)) or np.any(f != np.round(f)):
            raise LowerError(f"{op}: indices must be integers")
        a = f
    a = a.astype(np.int64)
    bad = a[(a < -n) | (a >= n)]
    if bad.size:
        raise LowerError(f"{op}: index {int(bad.flat[0])} is out of range [-{n}, {n})")
    return np.where(a < 0, a + n, a)


# ---- infer -----------------------------------------------------------------------------------------

def _flip(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    _norm_axis(attrs["axis"], len(shape))
    return shape, dt


def _read_shape(axis: int, x: tuple[int, ...], idx: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The shape an Index reads: x's with the `len(idx)` axes from `axis` replaced by the indices' broadcast."""
    try:
        b = broadcast_shapes(*idx)
    except ValueError:
        raise ValueError(f"index shapes {', '.join(show_shape(s) for s in idx)} do not broadcast") from None
    return x[:axis] + b + x[axis + len(idx):]


def _index_metas(attrs: Mapping[str, Any], ins: Sequence[Meta], k: int) -> tuple[int, tuple[int, ...]]:
    sx = ins[0][0]
    for s, d in ins[1:1 + k]:
        if d is not None and d not in INT_DTYPES:
            raise ValueError(f"indices must have an integer dtype, got {d}")
    if not sx:
        raise ValueError("x must have rank >= 1")
    axis = _norm_axis(attrs["axis"], len(sx), k)
    return axis, _read_shape(axis, sx, [s for s, _ in ins[1:1 + k]])


def _index(k: int) -> Any:
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        return _index_metas(attrs, ins, k)[1], ins[0][1]
    return infer


def _index_put(k: int) -> Any:
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        (sx, dx), (sv, dv) = ins[0], ins[1 + k]
        _, read = _index_metas(attrs, ins, k)
        if len(sv) > len(read) or any(v not in (1, r) for v, r in zip(sv[::-1], read[::-1])):
            raise ValueError(f"values of shape {show_shape(sv)} do not broadcast to {show_shape(read)}, the "
                             "shape the indices select")
        if dx is not None and dv is not None and dx != dv:
            raise ValueError(f"x is {dx} but values are {dv} (they must be equal)")
        return sx, dx or dv
    return infer


# ---- evaluate --------------------------------------------------------------------------------------

def _op_flip(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _convert(np.asarray(args[0]), dtype)
    return np.ascontiguousarray(np.flip(x, int(attrs["axis"]) % x.ndim))


def _where(x: np.ndarray, axis: int, idx: Sequence[Any], op: str) -> tuple[Any, ...]:
    """The NumPy index of the positions read: consecutive advanced indices stay at `axis`, as aten's."""
    arrays = [wrapped(i, x.shape[axis + j], op) for j, i in enumerate(idx)]
    return (slice(None),) * axis + tuple(arrays)


def _op_index(name: str) -> Any:
    def evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        x = _convert(np.asarray(args[0]), dtype)
        axis = int(attrs["axis"]) % x.ndim
        return np.ascontiguousarray(x[_where(x, axis, args[1:], name)])
    return evaluate


def _op_index_put(name: str, k: int) -> Any:
    def evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        x, v = np.asarray(args[0]), np.asarray(args[1 + k])
        axis = int(attrs["axis"]) % x.ndim
        where = _where(x, axis, args[1:1 + k], name)
        out = _f(x).copy() if dtype in FLOAT_DTYPES else x.astype(np.int64)
        read = out[where].shape
        vals = np.broadcast_to(v.astype(out.dtype), read)
        if attrs["accumulate"]:
            np.add.at(out, where, vals)
        else:  # NumPy's assignment: of repeated positions, the last in row-major order wins
            out[where] = vals
        return _finish(out, dtype)
    return evaluate


# ---- fields ----------------------------------------------------------------------------------------

def _whole(name: str, sort: str, fn: Any) -> Field:
    """A field computed from all the attributes and every input's shape (not an attribute)."""
    return Field(name, sort, fn, None, source=WHOLE, shaped=INPUTS)


def _ax(a: Mapping[str, Any], shapes: Sequence[tuple[int, ...]]) -> int:
    return int(a["axis"]) % len(shapes[0])


_DECODED_AXIS = Field("axis", I64, lambda v, shapes: int(v) % len(shapes[0]), int, shaped=INPUTS)


def _sizes(a: Mapping[str, Any], shapes: Sequence[tuple[int, ...]], k: int) -> tuple[int, ...]:
    ax = _ax(a, shapes)
    return tuple(shapes[0][ax:ax + k])


def _merged(a: Mapping[str, Any], shapes: Sequence[tuple[int, ...]], k: int) -> tuple[int, ...]:
    """x's shape with its k indexed axes merged into one (a flat index over them reads the same values)."""
    ax, x = _ax(a, shapes), shapes[0]
    return x[:ax] + (math.prod(x[ax:ax + k]),) + x[ax + k:]


def _n_fields(k: int) -> tuple[Field, ...]:
    """n0..n{k-1}: the sizes of the indexed axes, as f64 literals of the rules; with k > 1 the merged
    shape and its merged size."""
    out = tuple(_whole(f"n{j}" if k > 1 else "n", F64, lambda a, s, j=j: float(_sizes(a, s, k)[j])) for j in range(k))
    if k > 1:
        out += (_whole("merged", STRING, lambda a, s: ints_text(_merged(a, s, k))),
                _whole("nm", F64, lambda a, s: float(math.prod(_sizes(a, s, k)))))
    return out


def _put_geometry(x: tuple[int, ...], ax: int, n: int, b: tuple[int, ...]) -> dict[str, list[int]]:
    """The shapes IndexPut's rules reshape to, for x with one indexed axis `ax` of n and index shape b
    (M = prod(b) positions): rm, x with M on the axis; icol, the index as [1.., M, ..1]; rshape, what the
    indices read; irow [1, M]; nmshape [n, M]; hot, the one-hot [1.., n, M, ..1]; vm, the values [.., 1, M, ..];
    maxis, the axis of M in the one-hot product; ncol, a value per position of the axis [1.., n, ..1]; then
    the fields of the ScatterAdd (`SCATTER_ADD_FIELDS`) of x, the index [rm] and the values [rm]."""
    m, rest = math.prod(b), x[ax + 1:]
    return {"rm": [*x[:ax], m, *rest], "icol": [1] * ax + [m] + [1] * len(rest), "rshape": [*x[:ax], *b, *rest],
            "irow": [1, m], "nmshape": [n, m], "hot": [1] * ax + [n, m] + [1] * len(rest),
            "vm": [*x[:ax], 1, m, *rest], "maxis": [ax + 1], "ncol": [1] * ax + [n] + [1] * len(rest),
            "sflat": [math.prod(x)], "sx": list(x), "snshape": [math.prod(x)] + [1] * len(x),
            "sall": list(range(len(x))), "spaxes": list(range(1, len(x) + 1))}


_GEOMETRY = ("rm", "icol", "rshape", "irow", "nmshape", "hot", "vm", "maxis", "ncol", "sflat", "sx", "snshape",
             "sall", "spaxes")


def _put_fields(k: int) -> tuple[Field, ...]:
    """IndexPut's fields: for k > 1 those of the IndexPut over the merged axes its rule builds."""
    def geom(a: Mapping[str, Any], s: Sequence[tuple[int, ...]]) -> dict[str, list[int]]:
        ax = _ax(a, s)
        x = _merged(a, s, k)
        return _put_geometry(x, ax, x[ax], broadcast_shapes(*s[1:1 + k]))
    out = _n_fields(k) + tuple(_whole(g, STRING, lambda a, s, g=g: ints_text(geom(a, s)[g])) for g in _GEOMETRY)
    if k > 1:
        out += (_whole("xshape", STRING, lambda a, s: ints_text(s[0])),)
    return out


_ACC_FIELD = Field("accumulate", I64, lambda v, shapes: int(bool(v)), bool, shaped=INPUTS)

_NAMES = {1: ("Index", "IndexPut"), 2: ("Index2", "IndexPut2"), 3: ("Index3", "IndexPut3")}
_IDX = {1: ("index",), 2: ("i0", "i1"), 3: ("i0", "i1", "i2")}
_SAMPLES = {1: ((3, 4, 2), ((2, 5),), (3, 2, 5, 2)), 2: ((3, 4, 2), ((2, 1), (3,)), (1, 2, 3)),
            3: ((3, 4, 2, 2), ((5,), (1,), (5,)), (5, 2))}


def _index_ops(k: int) -> tuple[OpDef, OpDef]:
    name, put = _NAMES[k]
    x, idx, vals = _SAMPLES[k]
    idx_metas = tuple((s, "i64") for s in idx)
    return (
        OpDef(name, ("x", *_IDX[k]), (_AXIS,), _index(k), _op_index(name),
              (Ctor(name, name, (_DECODED_AXIS,) + _n_fields(k), 1 + k, (head(name),)),),
              domain="indexing", torch=name.lower(), sample=({"axis": -3 if k < 3 else 0}, ((x, "f32"), *idx_metas))),
        OpDef(put, ("x", *_IDX[k], "values"), (_AXIS, _ACCUMULATE), _index_put(k), _op_index_put(put, k),
              (Ctor(put, put, (_DECODED_AXIS, _ACC_FIELD) + _put_fields(k), 2 + k, (head(put),)),),
              domain="indexing", torch=f"index_put{k if k > 1 else ''}",
              sample=({"axis": 1 if k < 3 else 0, "accumulate": True}, ((x, "f32"), *idx_metas, (vals, "f32")))),
    )


def _scatter_fields() -> tuple[Field, ...]:
    """ScatterAdd's fields for its one-hot expansion (x [..] of N elements, rank r): x flattened [N], x's
    shape, [N, 1, .., 1] (r + 1 axes), x's axes, the axes 1..r, and 1 if src is larger than the index."""
    return (Field("axis", I64, lambda v, shapes: int(v) % len(shapes[0]), int, shaped=INPUTS),
            _whole("flat", STRING, lambda a, s: ints_text([math.prod(s[0])])),
            _whole("xshape", STRING, lambda a, s: ints_text(s[0])),
            _whole("nshape", STRING, lambda a, s: ints_text([math.prod(s[0])] + [1] * len(s[0]))),
            _whole("all", STRING, lambda a, s: ints_text(range(len(s[0])))),
            _whole("paxes", STRING, lambda a, s: ints_text(range(1, len(s[0]) + 1))),
            _whole("cut", I64, lambda a, s: int(tuple(s[2]) != tuple(s[1]))))


SCATTER_ADD_FIELDS = _scatter_fields()

OPS: tuple[OpDef, ...] = (
    OpDef("Flip", ("x",), (_AXIS,), _flip, _op_flip,
          (Ctor("Flip", "Flip", (Field("axis", I64, lambda v, rank: int(v) % rank, int),
                                 Field("last", F64, lambda v, shape: float(shape[int(v) % len(shape)] - 1), None,
                                       source="axis", shaped=True)), 1, (head("Flip"),)),),
          domain="indexing", torch="flip", sample=({"axis": -1}, (((2, 3), "f32"),))),
) + _index_ops(1) + _index_ops(2) + _index_ops(3)
