"""Scaled matrix products with a bias (format version 3): aten's addmv and addbmm.

    Addmv{alpha, beta}(c, mat, vec)   = beta c + alpha (mat @ vec): mat [n, m], vec [m], c broadcasts
                                        to [n]; output [n]
    Addbmm{alpha, beta}(c, b1, b2)    = beta c + alpha sum_b (b1[b] @ b2[b]): b1 [B, n, m], b2 [B, m, p],
                                        c broadcasts to [n, p]; output [n, p]

beta == 0 ignores c (a NaN or inf in it included), as aten does; for an integer dtype alpha and beta are
integers (aten refuses a float one there) and the arithmetic wraps as int64; bool is refused. Neither op
is Core ATen, and PyTorch's Core ATen table leaves both whole on this path (AOTAutograd's tracing too),
so they reach the importer; their gradients are aten primitives (mm, mv / outer products, mul, sum).
(aten's addmm is mapped as MatMul and Binary ops, torch/aten.py.)

The e-graph fields: `alpha`, `beta` (f64) and `bias` ("Scaled" where beta != 0, "Ignored" where it is
0; the heads `Addmv.Scaled`, `Addmv.Ignored`, ... fix it), so a rule drops c only where aten does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _i, _round_float, _wrap
from ..dtypes import FLOAT_DTYPES, INT_DTYPES
from ..errors import LowerError
from .base import STRING, Attr, Ctor, Field, Meta, OpDef, head, number
from .meta import broadcast_shapes, join, show, show_shape

BIAS_FORMS: tuple[str, ...] = ("Scaled", "Ignored")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and bool(np.isfinite(v))


def _check_number(key: str) -> Any:
    def check(v: Any) -> None:
        if not _is_number(v):
            raise ValueError(f"{key} must be a finite number, got {show(v)}")
    return check


def bias_form(beta: Any) -> str:
    return "Ignored" if float(beta) == 0 else "Scaled"


def _dtype(attrs: Mapping[str, Any], ins: Sequence[Meta], op: str) -> str | None:
    dt = join([d for _, d in ins])
    if dt == "bool":
        raise ValueError(f"{op} on bool: Cast to a number dtype first")
    if dt is not None and dt not in FLOAT_DTYPES:
        for k in ("alpha", "beta"):
            if float(attrs[k]) != int(attrs[k]):
                raise ValueError(f"{op} on {dt}: {k} {show(attrs[k])} must be an integer")
    return dt


def _bias_to(c: tuple[int, ...], out: tuple[int, ...], op: str) -> None:
    try:
        ok = len(c) <= len(out) and broadcast_shapes(c, out) == out
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{op}: c of shape {show_shape(c)} does not broadcast to the output's {show_shape(out)}")


def _addmv(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (c, _), (mat, _), (vec, _) = ins
    if len(mat) != 2 or len(vec) != 1 or mat[1] != vec[0]:
        raise ValueError(f"Addmv needs mat [n, m] and vec [m], got {show_shape(mat)} and {show_shape(vec)}")
    dt = _dtype(attrs, ins, "Addmv")
    _bias_to(c, (mat[0],), "Addmv")
    return (mat[0],), dt


def _addbmm(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (c, _), (b1, _), (b2, _) = ins
    if len(b1) != 3 or len(b2) != 3 or b1[0] != b2[0] or b1[2] != b2[1]:
        raise ValueError(f"Addbmm needs b1 [B, n, m] and b2 [B, m, p], got {show_shape(b1)} and {show_shape(b2)}")
    dt = _dtype(attrs, ins, "Addbmm")
    out = (b1[1], b2[2])
    _bias_to(c, out, "Addbmm")
    return out, dt


def _scaled(attrs: Attrs, c: np.ndarray, prod: Any, dtype: str, op: str) -> np.ndarray:
    alpha, beta = attrs["alpha"], attrs["beta"]
    if dtype in FLOAT_DTYPES:
        out = float(alpha) * np.asarray(prod)
        if float(beta) != 0:
            out = out + float(beta) * _f(c)
        return _round_float(out, dtype)
    if dtype in INT_DTYPES:
        if float(alpha) != int(alpha) or float(beta) != int(beta):
            raise LowerError(f"{op} on {dtype}: alpha and beta must be integers")
        with np.errstate(all="ignore"):
            iout: np.ndarray = np.int64(int(alpha)) * np.asarray(prod, dtype=np.int64)
            if int(beta) != 0:
                iout = iout + np.int64(int(beta)) * _i(c)
        return _wrap(iout, dtype)
    raise LowerError(f"{op} on {dtype}: no arithmetic on bool")


def _op_addmv(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    c, mat, vec = (np.asarray(a) for a in args)
    if mat.ndim != 2 or vec.ndim != 1:
        raise LowerError("Addmv needs mat [n, m] and vec [m]")
    prod = np.matmul(_f(mat), _f(vec)) if dtype in FLOAT_DTYPES else _int_matmul(mat, vec)
    return _scaled(attrs, np.broadcast_to(c, (mat.shape[0],)), prod, dtype, "Addmv")


def _op_addbmm(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    c, b1, b2 = (np.asarray(a) for a in args)
    if b1.ndim != 3 or b2.ndim != 3:
        raise LowerError("Addbmm needs b1 [B, n, m] and b2 [B, m, p]")
    if dtype in FLOAT_DTYPES:
        prod = np.sum(np.matmul(_f(b1), _f(b2)), axis=0)
    else:
        prod = np.sum(_int_matmul(b1, b2), axis=0, dtype=np.int64)
    return _scaled(attrs, np.broadcast_to(c, (b1.shape[1], b2.shape[2])), prod, dtype, "Addbmm")


def _int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.matmul(_i(a), _i(b))


_ATTRS = (Attr("alpha", _check_number("alpha")), Attr("beta", _check_number("beta")))
_FIELDS = (number("alpha"), number("beta"),
           Field("bias", STRING, lambda v, rank: bias_form(v), None, source="beta"))


def _ctor(name: str) -> Ctor:
    return Ctor(name, name, _FIELDS, 3, tuple(head(f"{name}.{f}", bias=f) for f in BIAS_FORMS))


OPS: tuple[OpDef, ...] = (
    OpDef("Addmv", ("c", "mat", "vec"), _ATTRS, _addmv, _op_addmv, (_ctor("Addmv"),),
          domain="blas", torch="addmv",
          sample=({"alpha": 2.0, "beta": 0.5}, (((3,), "f32"), ((3, 4), "f32"), ((4,), "f32")))),
    OpDef("Addbmm", ("c", "b1", "b2"), _ATTRS, _addbmm, _op_addbmm, (_ctor("Addbmm"),),
          domain="blas", torch="addbmm",
          sample=({"alpha": 1.0, "beta": 0.0}, (((1, 4), "f32"), ((2, 3, 5), "f32"), ((2, 5, 4), "f32")))),
)
