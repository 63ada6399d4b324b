"""Dropout, the index primitives (Iota, Gather, ScatterAdd, Take) and embeddings.

    Dropout{scale}(x, mask)          = where(mask, x*scale, 0)      mask: bool, x's shape
    DropoutBackward{scale}(dy, mask) = where(mask, dy*scale, 0)
    Iota{axis, dtype}(like)          = the index along `axis`, of like's shape (like is read for its shape)
    Gather{axis}(x, index)           = torch.gather: out[i][j][k] = x[i][index[i][j][k]][k] (axis 1)
    ScatterAdd{axis}(x, index, src)  = torch.scatter_add: x, then out[i][index[i][j][k]][k] += src[i][j][k]
    Take{axis}(x, indices)           = numpy.take: x.shape[:axis] + indices.shape + x.shape[axis+1:]
    Embedding(weight, indices)       = Take{0}(weight, indices): indices.shape + [D]
    EmbeddingBackward{num_weights, padding_idx}(dy, indices)
                                     = [num_weights, D], row w = sum of dy at the positions where
                                       indices == w; row padding_idx zero (-1: no padding row)

Indices are integers in [0, n) of the axis they index; an index out of range is an
error of the evaluator (no wrapping, no negative indices). `axis` may be negative.
`docs/format.md` ("Dropout", "Index ops, losses and embeddings") is the specification.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _convert, _f, _finish, _round_float
from ..dtypes import DTYPES, FLOAT_DTYPES, INT_DTYPES
from ..errors import LowerError
from .base import F64, I64, STRING, Attr, Ctor, Field, Meta, OpDef, derived, head, integer, ints_text, number
from .indexing import SCATTER_ADD_FIELDS
from .meta import attr_check, float_dtype, is_int, one_of, show, show_shape


def _is_scale(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


_SCALE = Attr("scale", attr_check("scale", _is_scale, "a finite number >= 0"))
_AXIS = Attr("axis", attr_check("axis", is_int, "an integer"))


def indices(v: Any, bound: int, op: str) -> np.ndarray:
    """Index values as int64, each in [0, bound) (a float array must hold integers: the checker's)."""
    a = np.asarray(v)
    if a.dtype.kind == "b":
        raise LowerError(f"{op}: indices must be integers, not bool")
    if a.dtype.kind != "i":
        f = _f(a)
        if not np.all(np.isfinite(f)) or np.any(f != np.round(f)):
            raise LowerError(f"{op}: indices must be integers")
        a = f
    a = a.astype(np.int64)
    bad = a[(a < 0) | (a >= bound)]
    if bad.size:
        raise LowerError(f"{op}: index {int(bad.flat[0])} is out of range [0, {bound})")
    return a


def _norm_axis(axis: Any, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"axis {show(axis)} is out of range for rank {rank}")
    return int(axis) % rank


def _int_dtype(dt: str | None, what: str) -> None:
    if dt is not None and dt not in INT_DTYPES:
        raise ValueError(f"{what} must have an integer dtype, got {dt}")


# ---- infer -----------------------------------------------------------------------------------------

def _dropout(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sx, dx), (sm, dm) = ins
    if sm != sx:
        raise ValueError(f"mask has shape {show_shape(sm)} but the value has shape {show_shape(sx)} (they must be equal)")
    if dm is not None and dm != "bool":
        raise ValueError(f"mask must be bool, got {dm}")
    return sx, float_dtype(ins[:1])


def _iota(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape = ins[0][0]
    _norm_axis(attrs["axis"], len(shape))
    if attrs["dtype"] == "bool":
        raise ValueError("Iota needs a number dtype, not bool")
    return shape, attrs["dtype"]


def _gather(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sx, dx), (si, di) = ins
    _int_dtype(di, "index")
    if len(si) != len(sx):
        raise ValueError(f"index has rank {len(si)} but x has rank {len(sx)} (they must be equal)")
    axis = _norm_axis(attrs["axis"], len(sx))
    if any(i > x for d, (i, x) in enumerate(zip(si, sx)) if d != axis):
        raise ValueError(f"index shape {show_shape(si)} exceeds x's shape {show_shape(sx)} off axis {axis}")
    return si, dx


def _scatter_add(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sx, dx), (si, di), (ss, ds) = ins
    _gather(attrs, ins[:2])
    if len(ss) != len(si) or any(i > s for i, s in zip(si, ss)):
        raise ValueError(f"index shape {show_shape(si)} exceeds src's shape {show_shape(ss)}")
    if dx is not None and ds is not None and dx != ds:
        raise ValueError(f"x is {dx} but src is {ds} (they must be equal)")
    return sx, dx or ds


def _take(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sx, dx), (si, di) = ins
    _int_dtype(di, "indices")
    axis = _norm_axis(attrs["axis"], len(sx))
    return sx[:axis] + si + sx[axis + 1:], dx


def _embedding(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sw, dw), (si, di) = ins
    _int_dtype(di, "indices")
    if len(sw) != 2:
        raise ValueError(f"weight must have rank 2 [num_weights, D], got {show_shape(sw)}")
    return si + sw[1:], dw


def _embedding_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sd, dd), (si, di) = ins
    _int_dtype(di, "indices")
    if len(sd) != len(si) + 1 or sd[:-1] != si:
        raise ValueError(f"dy has shape {show_shape(sd)} but indices have {show_shape(si)} (dy must be indices' "
                         "shape + [D])")
    if not -1 <= attrs["padding_idx"] < attrs["num_weights"]:
        raise ValueError(f"padding_idx {show(attrs['padding_idx'])} is not -1 or in [0, num_weights)")
    return (attrs["num_weights"], sd[-1]), float_dtype(ins[:1])


# ---- evaluate --------------------------------------------------------------------------------------

def _op_dropout(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, mask = _f(args[0]), np.asarray(args[1]) != 0
    return _round_float(np.where(mask, x * float(attrs["scale"]), 0.0), dtype)


def _op_iota(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    like = np.asarray(args[0])
    axis = int(attrs["axis"]) % max(like.ndim, 1)
    view = [1] * like.ndim
    view[axis] = like.shape[axis]
    return _finish(np.broadcast_to(np.arange(like.shape[axis]).reshape(view), like.shape), dtype)


def _sliced(x: np.ndarray, shape: Sequence[int], axis: int | None) -> np.ndarray:
    return x[tuple(slice(None) if d == axis else slice(0, s) for d, s in enumerate(shape))]


def _op_gather(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = np.asarray(args[0])
    axis = int(attrs["axis"]) % max(x.ndim, 1)
    idx = indices(args[1], x.shape[axis] if x.ndim else 1, "Gather")
    return _convert(np.take_along_axis(_sliced(x, idx.shape, axis), idx, axis), dtype)


def _op_scatter_add(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, src = np.asarray(args[0]), np.asarray(args[2])
    axis = int(attrs["axis"]) % max(x.ndim, 1)
    idx = indices(args[1], x.shape[axis] if x.ndim else 1, "ScatterAdd")
    out = _f(x).copy() if dtype in FLOAT_DTYPES else x.astype(np.int64)
    where: list[np.ndarray] = list(np.indices(idx.shape))
    where[axis] = idx
    np.add.at(out, tuple(where), _sliced(src, idx.shape, None).astype(out.dtype))
    return _finish(out, dtype)


def _op_take(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = np.asarray(args[0])
    axis = int(attrs["axis"]) % max(x.ndim, 1)
    return _convert(np.take(x, indices(args[1], x.shape[axis], "Take"), axis=axis), dtype)


def _op_embedding(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    w = np.asarray(args[0])
    return _convert(np.take(w, indices(args[1], w.shape[0], "Embedding"), axis=0), dtype)


def _op_embedding_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy, n, pad = _f(args[0]), int(attrs["num_weights"]), int(attrs["padding_idx"])
    idx = indices(args[1], n, "EmbeddingBackward")
    out = np.zeros((n, dy.shape[-1]))
    np.add.at(out, idx.reshape(-1), dy.reshape(-1, dy.shape[-1]))
    if pad >= 0:
        out[pad] = 0.0
    return _round_float(out, dtype)


_NUM_WEIGHTS = Attr("num_weights", attr_check("num_weights", lambda v: is_int(v) and v > 0, "an integer > 0"))
_PADDING = Attr("padding_idx", attr_check("padding_idx", lambda v: is_int(v) and v >= -1, "an integer >= -1"))
# the dtype upper-cased in the e-graph: the rule notation reads a lower-case field value as a variable
_IOTA_DTYPE_FIELD = Field("dtype", STRING, lambda v, rank: str(v).upper(), lambda v: str(v).lower())
_IOTA_DTYPE = Attr("dtype", one_of(tuple(d for d in DTYPES if d != "bool"), "Iota dtype"))


def _positions(dy_shape: Sequence[int]) -> int:
    """M: the number of index positions of an embedding gradient dy [i1..ik, D]."""
    return math.prod(dy_shape[:-1])


# EmbeddingBackward's e-graph fields beyond its attributes, for the rules (rank: dy's, k + 1 for k index
# axes): padding_idx as an f64 (a literal of the rules), [num_weights, 1, ..., 1] (rank + 1 axes),
# dy's perm moving D first, the index axes of [W, D, i1..ik] and the axes of the indices; then, from
# dy's shape [i1..ik, D] with M = i1 * .. * ik positions: 1 if there is a padding row (else 0), dy
# flattened [M, D], the indices as a column [M, 1] and as a row [1, M], and the one-hot's shape [W, M]
_EMBEDDING_BWD_FIELDS = (
    integer("num_weights"),
    Field("padding_idx", F64, lambda v, rank: float(v), lambda v: int(v)),
    Field("wshape", STRING, lambda v, rank: ints_text([v] + [1] * rank), None, source="num_weights"),
    derived("dperm", STRING, lambda rank: ints_text([rank - 1, *range(rank - 1)] if rank else [])),
    derived("paxes", STRING, lambda rank: ints_text(range(2, rank + 1))),
    derived("iaxes", STRING, lambda rank: ints_text(range(max(rank - 1, 0)))),
    Field("padded", I64, lambda v, rank: int(v >= 0), None, source="padding_idx"),
    Field("flat", STRING, lambda v, shape: ints_text([_positions(shape), shape[-1]]), None,
          source="num_weights", shaped=True),
    Field("icol", STRING, lambda v, shape: ints_text([_positions(shape), 1]), None, source="num_weights",
          shaped=True),
    Field("irow", STRING, lambda v, shape: ints_text([1, _positions(shape)]), None, source="num_weights",
          shaped=True),
    Field("wm", STRING, lambda v, shape: ints_text([v, _positions(shape)]), None, source="num_weights",
          shaped=True),
)

OPS: tuple[OpDef, ...] = (
    OpDef("Dropout", ("x", "mask"), (_SCALE,), _dropout, _op_dropout,
          (Ctor("Dropout", "Dropout", (number("scale"),), 2, (head("Dropout"),)),),
          domain="dropout", torch="dropout",
          sample=({"scale": 2.0}, (((2, 3), "f32"), ((2, 3), "bool")))),
    OpDef("DropoutBackward", ("dy", "mask"), (_SCALE,), _dropout, _op_dropout,
          (Ctor("DropoutBwd", "DropoutBackward", (number("scale"),), 2, (head("DropoutBackward"),)),),
          domain="dropout", torch="dropout", backward=True,
          sample=({"scale": 1.25}, (((2, 3), "f32"), ((2, 3), "bool")))),
    OpDef("Iota", ("like",), (_AXIS, _IOTA_DTYPE), _iota, _op_iota,
          (Ctor("Iota", "Iota", (integer("axis"), _IOTA_DTYPE_FIELD), 1,
                (head("Iota"), head("Iota.i64", dtype="I64"))),),
          domain=None, torch="iota",
          sample=({"axis": 1, "dtype": "i64"}, (((2, 3), "f32"),))),
    OpDef("Gather", ("x", "index"), (_AXIS,), _gather, _op_gather,
          (Ctor("Gather", "Gather", (integer("axis"),), 2, (head("Gather"),)),), domain=None, torch="gather",
          sample=({"axis": 1}, (((2, 3), "f32"), ((2, 2), "i64")))),
    # a loaded ScatterAdd is a ScatterAddAt, whose fields (every input's shape, `indexing.py`) its one-hot
    # expansion reads; the rules that build a ScatterAdd (embedding's, slicing's) build the plain one
    OpDef("ScatterAdd", ("x", "index", "src"), (_AXIS,), _scatter_add, _op_scatter_add,
          (Ctor("ScatterAdd", "ScatterAdd", (integer("axis"),), 3, (head("ScatterAdd"),), accepts=lambda a: False),
           Ctor("ScatterAddAt", "ScatterAdd", SCATTER_ADD_FIELDS, 3, (head("ScatterAddAt"),))),
          domain="indexing", torch="scatter_add",
          sample=({"axis": 0}, (((2, 3), "f32"), ((2, 3), "i64"), ((2, 3), "f32")))),
    OpDef("Take", ("x", "indices"), (_AXIS,), _take, _op_take,
          (Ctor("Take", "Take", (integer("axis"),), 2, (head("Take"),)),), domain=None, torch="take",
          sample=({"axis": 0}, (((4, 3), "f32"), ((2, 5), "i64")))),
    OpDef("Embedding", ("weight", "indices"), (), _embedding, _op_embedding,
          (Ctor("Embedding", "Embedding", (), 2, (head("Embedding"),)),), domain="embedding", torch="embedding",
          sample=({}, (((4, 3), "f32"), ((2, 5), "i64")))),
    OpDef("EmbeddingBackward", ("dy", "indices"), (_NUM_WEIGHTS, _PADDING), _embedding_backward,
          _op_embedding_backward,
          (Ctor("EmbeddingBwd", "EmbeddingBackward", _EMBEDDING_BWD_FIELDS, 2,
                (head("EmbeddingBackward"),)),),
          domain="embedding", torch="embedding_backward", backward=True,
          sample=({"num_weights": 4, "padding_idx": 1}, (((2, 5, 3), "f32"), ((2, 5), "i64")))),
)
