"""Norms and distances of format version 3: aten's linalg_vector_norm (and through it norm, normalize,
cosine_similarity, pairwise_distance), _cdist_forward / _cdist_backward and _pdist_forward / _pdist_backward.

    VectorNorm{ord, axes, keep_dim}(x)   = the ord-norm of x over `axes` (floats only):
                                           ord 2: sqrt(sum x^2); 1: sum |x|; "inf": max |x|; "-inf": min |x|;
                                           0: the count of x != 0 (a NaN counts); any other finite p:
                                           (sum |x|^p)^(1/p) (p < 0: a zero gives |0|^p = inf, so 0);
                                           NaN where x holds one (ord 0: counted as nonzero); an empty
                                           reduction is 0 (refused for "inf" / "-inf", as aten raises)

    Dist{ord}(a, b)                      = VectorNorm{ord, every axis}(a - b), a and b broadcast together
                                           (floats only): aten's dist; a 0-d result
    Cdist{ord}(x1, x2)                   = D[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_ord: x1 [..., r1, c],
                                           x2 [..., r2, c] (batch axes broadcast), ord >= 0 or "inf"; aten's
                                           _cdist_forward where its kernel takes the direct form
    CdistBackward{ord}(dy, x1, x2, dist) = dx1[..., i, k] = sum_j dy[..., i, j] g(x1_ik - x2_jk, D_ij): the
                                           gradient of x1 (the broadcast batch's shape), aten's _cdist_backward

    Pdist{ord}(x)                        = [n (n - 1) / 2]: Cdist(x, x)'s strict upper triangle in row-major
                                           order (D_01, D_02, .., D_12, ..), x [n, c]: aten's _pdist_forward
    PdistBackward{ord}(dy, x, pdist)     = [n, c]: the gradient of x, CdistBackward(S, x, x, D) with S the
                                           [n, n] matrix holding dy at the upper triangle and its mirror
                                           (x is both of cdist's operands), D = Cdist(x, x): aten's
                                           _pdist_backward

The derivative g(d, D) of D = ||d||_p in one component d: p = 0: 0; p = 1: sign(d); p = 2: d / D;
p = inf: sign(d) where |d| == D = max_k |d| (every tie; the max taken of the difference as computed,
so a tie is one in the dtype), else 0; any other p: sign(d) (|d| / D)^(p - 1); 0 where
D = 0 (aten's convention; D = 0 means every d = 0) and, for the general p, where d = 0 (p < 1: aten
blends the 0 * inf there to 0). (|d| / D) <= 1 for every p, so the general form does not overflow.

`ord` is a finite number or the string "inf" / "-inf" (a JSON document holds finite numbers only).
The e-graph fields beyond the attributes, for the rules: `kind` (L2, L1, Inf, NegInf, L0 or P: the rule
heads `VectorNorm.L2`, ... fix it), `p` (ord as a float, 0 for the infinities) and `q` (1/p, 0 where p
is 0 or infinite); `axes` normalised (sorted, in [0, rank)).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..dtypes import FLOAT_DTYPES
from ..errors import LowerError
from .base import F64, I64, INPUTS, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, ints_text
from .meta import boolean, broadcast_shapes, float_dtype, int_list, show_shape
from .reduce import _norm_axes

NORM_KINDS: tuple[str, ...] = ("L2", "L1", "Inf", "NegInf", "L0", "P")


def is_ord(v: Any) -> bool:
    """A norm order: a finite number (not a bool), or "inf" / "-inf"."""
    if isinstance(v, str):
        return v in ("inf", "-inf")
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def ord_value(v: Any) -> float:
    """The order as a float (inf and -inf for the strings)."""
    return float(v)  # float("inf"), float("-inf") read the strings


def norm_kind(v: Any) -> str:
    p = ord_value(v)
    return {2.0: "L2", 1.0: "L1", math.inf: "Inf", -math.inf: "NegInf", 0.0: "L0"}.get(p, "P")


def _check_ord(v: Any) -> None:
    if not is_ord(v):
        raise ValueError(f"ord must be a finite number or 'inf' / '-inf', got {v!r}")


def _kept(shape: tuple[int, ...], axes: Sequence[int], keep: bool) -> tuple[int, ...]:
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _vector_norm(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    if dt is not None and dt not in FLOAT_DTYPES:
        raise ValueError(f"VectorNorm needs a float dtype, got {dt}")
    try:
        axes = _norm_axes(attrs["axes"], len(shape))
    except LowerError as e:
        raise ValueError(str(e).replace("Reduce ", "VectorNorm ")) from None
    if norm_kind(attrs["ord"]) in ("Inf", "NegInf") and any(shape[a] == 0 for a in axes):
        raise ValueError("VectorNorm of ord inf / -inf over an empty axis (aten raises)")
    return _kept(shape, axes, bool(attrs.get("keep_dim", False))), dt


def vector_norm(x: np.ndarray, ord: Any, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    """The norm in float64 (x float64)."""
    kind, a = norm_kind(ord), np.abs(x)
    with np.errstate(all="ignore"):
        if kind == "Inf":
            return np.max(a, axis=axes, keepdims=keep)
        if kind == "NegInf":
            return np.min(a, axis=axes, keepdims=keep)
        if kind == "L0":
            return np.sum((x != 0).astype(np.float64), axis=axes, keepdims=keep)
        if kind == "L1":
            return np.sum(a, axis=axes, keepdims=keep)
        if kind == "L2":
            return np.sqrt(np.sum(a * a, axis=axes, keepdims=keep))
        p = ord_value(ord)
        return np.power(np.sum(np.power(a, p), axis=axes, keepdims=keep), 1.0 / p)


def _op_vector_norm(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"VectorNorm needs a float dtype, not {dtype}")
    x = _f(args[0])
    axes = _norm_axes(attrs["axes"], x.ndim)
    return _round_float(np.asarray(vector_norm(x, attrs["ord"], axes, bool(attrs.get("keep_dim", False)))), dtype)


def _ord_text(v: Any, rank: int) -> str:
    return v if isinstance(v, str) else repr(float(v))


def _ord_decode(text: Any) -> Any:
    return text if text in ("inf", "-inf") else float(text)


def _p(v: Any, rank: int) -> float:
    p = ord_value(v)
    return p if math.isfinite(p) else 0.0


def _q(v: Any, rank: int) -> float:
    p = ord_value(v)
    return 1.0 / p if math.isfinite(p) and p != 0 else 0.0


def _encode_axes(axes: Any, rank: int) -> str:
    return ints_text(sorted({ax % rank if rank else ax for ax in axes}))


_NORM_FIELDS = (Field("ord", STRING, _ord_text, _ord_decode),
                Field("kind", STRING, lambda v, rank: norm_kind(v), None, source="ord"),
                Field("p", F64, _p, None, source="ord"),
                Field("q", F64, _q, None, source="ord"),
                Field("axes", STRING, _encode_axes, json.loads),
                Field("keep_dim", I64, lambda v, rank: int(bool(v)), bool, default=False))

def _pair_shape(sa: tuple[int, ...], sb: tuple[int, ...], op: str) -> tuple[int, ...]:
    try:
        return broadcast_shapes(sa, sb)
    except ValueError:
        raise ValueError(f"{op}: a {show_shape(sa)} and b {show_shape(sb)} do not broadcast") from None


def _dist(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    dt = float_dtype(ins)
    if dt is not None and dt not in FLOAT_DTYPES:
        raise ValueError(f"Dist needs a float dtype, got {dt}")
    shape = _pair_shape(ins[0][0], ins[1][0], "Dist")
    if norm_kind(attrs["ord"]) in ("Inf", "NegInf") and 0 in shape:
        raise ValueError("Dist of ord inf / -inf of empty tensors (aten raises)")
    return (), dt


def _op_dist(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"Dist needs a float dtype, not {dtype}")
    a, b = (_f(v) for v in args)
    d = a - b
    return _round_float(np.asarray(vector_norm(d, attrs["ord"], tuple(range(d.ndim)), False)), dtype)


def _dist_axes(v: Any, shapes: Any) -> str:
    return ints_text(range(len(broadcast_shapes(*(tuple(s) for s in shapes)))))


_DIST_FIELDS = _NORM_FIELDS[:4] + (Field("axes", STRING, _dist_axes, None, source="ord", shaped=INPUTS),)

OPS: tuple[OpDef, ...] = (
    OpDef("VectorNorm", ("x",), (Attr("ord", _check_ord), Attr("axes", int_list("axes")),
                                 Attr("keep_dim", boolean("keep_dim"), required=False)),
          _vector_norm, _op_vector_norm,
          (Ctor("VectorNorm", "VectorNorm", _NORM_FIELDS, 1,
                tuple(head(f"VectorNorm.{k}", kind=k) for k in NORM_KINDS)),),
          domain="distance", torch="vector_norm",
          sample=({"ord": 2, "axes": [-1], "keep_dim": False}, (((2, 3), "f32"),))),
)

def _check_cdist_ord(v: Any) -> None:
    _check_ord(v)
    if ord_value(v) < 0:
        raise ValueError(f"Cdist's ord must be >= 0 or 'inf' (aten's cdist), got {v!r}")


def _cdist_batch(s1: tuple[int, ...], s2: tuple[int, ...]) -> tuple[int, ...]:
    if len(s1) < 2 or len(s2) < 2 or s1[-1] != s2[-1]:
        raise ValueError(f"Cdist needs x1 [..., r1, c] and x2 [..., r2, c], got {show_shape(s1)} and {show_shape(s2)}")
    try:
        return broadcast_shapes(s1[:-2], s2[:-2])
    except ValueError:
        raise ValueError(f"Cdist: batch axes of {show_shape(s1)} and {show_shape(s2)} do not broadcast") from None


def _cdist(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    dt = float_dtype(ins)
    (s1, _), (s2, _) = ins
    batch = _cdist_batch(s1, s2)
    if norm_kind(attrs["ord"]) == "Inf" and s1[-1] == 0:
        raise ValueError("Cdist of ord inf over an empty last axis")
    return batch + (s1[-2], s2[-2]), dt


def _cdist_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    dt = float_dtype(ins)
    (sg, _), (s1, _), (s2, _), (sd, _) = ins
    out = _cdist_batch(s1, s2) + (s1[-2], s2[-2])
    if tuple(sg) != out or tuple(sd) != out:
        raise ValueError(f"CdistBackward: dy {show_shape(sg)} and dist {show_shape(sd)} must be {show_shape(out)}")
    return out[:-1] + (s1[-1],), dt


def _pairs(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    return x1[..., :, None, :] - x2[..., None, :, :]


def _op_cdist(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"Cdist needs a float dtype, not {dtype}")
    d = _pairs(_f(args[0]), _f(args[1]))
    return _round_float(np.asarray(vector_norm(d, attrs["ord"], (d.ndim - 1,), False)), dtype)


def cdist_grad_terms(d: np.ndarray, dist: np.ndarray, ord: Any) -> np.ndarray:
    """g(d, D) of the module docstring, in float64 (d [..., r1, r2, c], dist [..., r1, r2, 1])."""
    kind, shape = norm_kind(ord), np.broadcast_shapes(d.shape, dist.shape)
    with np.errstate(all="ignore"):
        if kind == "L0":
            return np.zeros(shape)
        if kind == "L1":
            return np.broadcast_to(np.sign(d), shape)
        if kind == "L2":
            return np.where(dist == 0, 0.0, d / dist)
        if kind == "Inf":  # the ties: |d| == D = max_k |d|
            return np.where(np.abs(d) == np.max(np.abs(d), axis=-1, keepdims=True, initial=0.0), np.sign(d), 0.0)
        p = ord_value(ord)
        return np.where(d == 0, 0.0, np.sign(d) * np.power(np.abs(d) / dist, p - 1))


def _op_cdist_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"CdistBackward needs a float dtype, not {dtype}")
    dy, x1, x2, dist = (_f(a) for a in args)
    d = _pairs(x1, x2)
    terms = cdist_grad_terms(d, dist[..., None], attrs["ord"])
    return _round_float(np.sum(dy[..., None] * terms, axis=-2), dtype)


def _pm1(v: Any, rank: int) -> float:
    p = ord_value(v)
    return p - 1 if math.isfinite(p) else 0.0


def _reshaped(which: int, insert: int) -> Any:
    """The shape of input `which` with a 1 inserted `insert` axes from the end."""
    def encode(v: Any, shapes: Any) -> str:
        s = list(shapes[which])
        s.insert(len(s) - insert + 1 if insert else len(s), 1)
        return ints_text(s)
    return encode


_CDIST_FIELDS = _NORM_FIELDS[:4] + (Field("s1", STRING, _reshaped(0, 2), None, source="ord", shaped=INPUTS),
                                    Field("s2", STRING, _reshaped(1, 3), None, source="ord", shaped=INPUTS))
_CDIST_BWD_FIELDS = _NORM_FIELDS[:4] + (
    Field("pm1", F64, _pm1, None, source="ord"),
    Field("s1", STRING, _reshaped(1, 2), None, source="ord", shaped=INPUTS),
    Field("s2", STRING, _reshaped(2, 3), None, source="ord", shaped=INPUTS),
    Field("sg", STRING, _reshaped(0, 0), None, source="ord", shaped=INPUTS))
CDIST_KINDS: tuple[str, ...] = ("L2", "L1", "Inf", "L0", "P")


def _pdist(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    dt = float_dtype(ins)
    (sx, _), = ins
    if len(sx) != 2:
        raise ValueError(f"Pdist needs x [n, c], got {show_shape(sx)}")
    if norm_kind(attrs["ord"]) == "Inf" and sx[1] == 0:
        raise ValueError("Pdist of ord inf over an empty last axis")
    return (sx[0] * (sx[0] - 1) // 2,), dt


def _pdist_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    dt = float_dtype(ins)
    (sg, _), (sx, _), (sd, _) = ins
    want, _ = _pdist(attrs, [ins[1]])
    if tuple(sg) != want or tuple(sd) != want:
        raise ValueError(f"PdistBackward: dy {show_shape(sg)} and pdist {show_shape(sd)} must be {show_shape(want)}")
    return tuple(sx), dt


def _op_pdist(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _f(args[0])
    full = _op_cdist(attrs, [x, x], "f64", None)
    return _round_float(full[np.triu_indices(x.shape[0], 1)], dtype)


def _op_pdist_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"PdistBackward needs a float dtype, not {dtype}")
    dy, x, pd = (_f(a) for a in args)
    n = x.shape[0]
    up = np.triu_indices(n, 1)
    sym, dist = np.zeros((n, n)), np.zeros((n, n))
    sym[up], dist[up] = dy, pd
    sym, dist = sym + sym.T, dist + dist.T
    return _op_cdist_backward(attrs, [sym, x, x, dist], dtype, None)


def _pdist_fields(backward: bool) -> tuple[Field, ...]:
    """Cdist's fields for x against itself, then MaskedScatter's (backward) or MaskedScatterBackward's
    (forward) fields for the [n, n] triangle mask, computed as those ops' nodes would be encoded."""
    from .strided import _masked_fields

    def k_of(x: Sequence[int]) -> int:
        return int(x[0]) * (int(x[0]) - 1) // 2

    def nn(x: Sequence[int]) -> tuple[int, int]:
        return (int(x[0]), int(x[0]))

    def wrap(f: Field, xi: int) -> Field:
        def encode(a: Any, shapes: Any) -> Any:
            x = shapes[xi]
            if backward:  # MaskedScatter(zeros [n, n], mask [n, n], source [K])
                return f.encode({}, (nn(x), nn(x), (k_of(x),)))
            return f.encode({"shape": [k_of(x)]}, (nn(x), nn(x)))
        return Field(f.name, f.sort, encode, None, source=WHOLE, shaped=INPUTS)

    xi = 1 if backward else 0
    masked = tuple(wrap(f, xi) for f in _masked_fields(not backward))

    def cd(name: str, square: bool, insert: int) -> Field:
        enc = _reshaped(0, insert)

        def encode(v: Any, shapes: Any) -> str:
            x = shapes[xi]
            return str(enc(v, [nn(x) if square else tuple(x)]))
        return Field(name, STRING, encode, None, source="ord", shaped=INPUTS)

    rows = (cd("s1", False, 2), cd("s2", False, 3))
    if backward:
        return _NORM_FIELDS[:4] + (Field("pm1", F64, _pm1, None, source="ord"),) + rows + (cd("sg", True, 0),) + masked
    shape = Field("shape", STRING, lambda a, shapes: ints_text([k_of(shapes[0])]), None, source=WHOLE, shaped=INPUTS)
    return _NORM_FIELDS[:4] + rows + (shape,) + masked

DIST_OPS: tuple[OpDef, ...] = (
    OpDef("Dist", ("a", "b"), (Attr("ord", _check_ord),), _dist, _op_dist,
          (Ctor("Dist", "Dist", _DIST_FIELDS, 2, tuple(head(f"Dist.{k}", kind=k) for k in NORM_KINDS)),),
          domain="distance", torch="dist",
          sample=({"ord": 3.0}, (((2, 3), "f32"), ((1, 3), "f32")))),
    OpDef("Cdist", ("x1", "x2"), (Attr("ord", _check_cdist_ord),), _cdist, _op_cdist,
          (Ctor("Cdist", "Cdist", _CDIST_FIELDS, 2, tuple(head(f"Cdist.{k}", kind=k) for k in CDIST_KINDS)),),
          domain="distance", torch="cdist",
          sample=({"ord": 2}, (((2, 3, 4), "f32"), ((1, 5, 4), "f32")))),
    OpDef("CdistBackward", ("dy", "x1", "x2", "dist"), (Attr("ord", _check_cdist_ord),), _cdist_backward,
          _op_cdist_backward,
          (Ctor("CdistBwd", "CdistBackward", _CDIST_BWD_FIELDS, 4,
                tuple(head(f"CdistBackward.{k}", kind=k) for k in CDIST_KINDS)),),
          domain="distance", torch="cdist_backward", backward=True,
          sample=({"ord": 1.5}, (((2, 3, 5), "f32"), ((2, 3, 4), "f32"), ((1, 5, 4), "f32"), ((2, 3, 5), "f32")))),
    OpDef("Pdist", ("x",), (Attr("ord", _check_cdist_ord),), _pdist, _op_pdist,
          (Ctor("Pdist", "Pdist", _pdist_fields(False), 1, tuple(head(f"Pdist.{k}", kind=k) for k in CDIST_KINDS)),),
          domain="distance", torch="pdist",
          sample=({"ord": 2}, (((4, 3), "f32"),))),
    OpDef("PdistBackward", ("dy", "x", "pdist"), (Attr("ord", _check_cdist_ord),), _pdist_backward,
          _op_pdist_backward,
          (Ctor("PdistBwd", "PdistBackward", _pdist_fields(True), 3,
                tuple(head(f"PdistBackward.{k}", kind=k) for k in CDIST_KINDS)),),
          domain="distance", torch="pdist_backward", backward=True,
          sample=({"ord": "inf"}, (((6,), "f32"), ((4, 3), "f32"), ((6,), "f32")))),
)
