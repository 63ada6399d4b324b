"""Reduce and MatMul.

Reduce's e-graph fields are `op`, `axes` (normalised when a node is loaded: sorted,
each in [0, rank), so a rule's lhs matches whatever spelling the node used) and
`keep_dim` (0 or 1). In the rule notation, `(sum axes e)` is Sum without keep_dim;
`(Reduce.Sum axes keep e)`, `(Reduce.Mean ...)`, `(Reduce.Max ...)`, `(Reduce.Min ...)`,
`(Reduce.Prod ...)` (version 3: the product; integers wrap as int64, not on bool)
state any reduction (see rules/dsl.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import _BOOL, _I64, Args, Attrs, _convert, _f, _i, _idiv, _round_float, _wrap
from ..dtypes import FLOAT_DTYPES, INT_DTYPES, to_numpy
from ..errors import LowerError
from .base import I64, Attr, Ctor, Field, Meta, OpDef, head, ints_text, string
from .meta import boolean, broadcast_shapes, int_list, one_of, same_dtype, show, show_shape

REDUCE_OPS: tuple[str, ...] = ("Sum", "Mean", "Max", "Min", "Prod")  # Prod: format version 3


def _norm_axes(axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    out = []
    for ax in axes:
        if isinstance(ax, bool) or not isinstance(ax, (int, np.integer)) or not -ndim <= ax < ndim:
            raise LowerError(f"Reduce axis {ax!r} is out of range for rank {ndim}")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise LowerError(f"Reduce axes {list(axes)} repeat an axis")
    return tuple(sorted(out))


def _op_reduce(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    op = attrs["op"]
    keep = bool(attrs.get("keep_dim", False))
    x = np.asarray(args[0])
    axes = _norm_axes(attrs["axes"], x.ndim)
    if op not in REDUCE_OPS:
        raise LowerError(f"unknown Reduce op {op!r}")
    if not axes:
        return _convert(x, dtype)
    count = 1
    for ax in axes:
        count *= x.shape[ax]
    if dtype in FLOAT_DTYPES:
        v = _f(x)
        if op == "Sum":
            r = np.sum(v, axis=axes, keepdims=keep)
        elif op == "Mean":
            r = np.sum(v, axis=axes, keepdims=keep) / float(count)
        elif op == "Max":
            r = np.max(v, axis=axes, keepdims=keep, initial=-np.inf)
        elif op == "Min":
            r = np.min(v, axis=axes, keepdims=keep, initial=np.inf)
        else:
            with np.errstate(all="ignore"):
                r = np.prod(v, axis=axes, keepdims=keep)
        return _round_float(r, dtype)
    if dtype in INT_DTYPES:
        v = _i(x)
        info = np.iinfo(to_numpy(dtype))
        if op in ("Sum", "Mean"):
            r = np.sum(v, axis=axes, keepdims=keep, dtype=_I64)
            if op == "Mean":
                r = _idiv(np.asarray(r), np.asarray(count, dtype=_I64))
        elif op == "Max":
            r = np.max(v, axis=axes, keepdims=keep, initial=info.min)
        elif op == "Min":
            r = np.min(v, axis=axes, keepdims=keep, initial=info.max)
        else:  # the int64 product, wrapping
            r = np.prod(v, axis=axes, keepdims=keep, dtype=_I64)
        return _wrap(r, dtype)
    v = np.asarray(x) != 0
    if op == "Max":
        return np.asarray(np.any(v, axis=axes, keepdims=keep))
    if op == "Min":
        return np.asarray(np.all(v, axis=axes, keepdims=keep))
    raise LowerError(f"Reduce {op} is not defined on bool")


def _op_matmul(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    a, b = (np.asarray(v) for v in args)
    if a.ndim == 0 or b.ndim == 0:
        raise LowerError("MatMul operands must have rank >= 1")
    if dtype in FLOAT_DTYPES:
        return _round_float(np.matmul(_f(a), _f(b)), dtype)
    if dtype in INT_DTYPES:
        return _wrap(np.matmul(_i(a), _i(b)), dtype)
    return np.asarray(np.matmul(a != 0, b != 0), dtype=_BOOL)


def _reduce(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (shape, dt), op, rank = ins[0], attrs["op"], len(ins[0][0])
    for a in attrs["axes"]:
        if not -rank <= a < rank:
            raise ValueError(f"axis {a} is out of range for rank {rank}")
    axes = {a % rank for a in attrs["axes"]}  # NumPy: a negative axis counts from the end
    if len(axes) != len(attrs["axes"]):
        raise ValueError(f"axes {show(attrs['axes'])} repeat an axis")
    if dt is not None and dt not in FLOAT_DTYPES and (op == "Mean" or (op in ("Sum", "Prod") and dt == "bool")):
        raise ValueError(f"{op} on {dt}: Cast to a float dtype first")
    if attrs.get("keep_dim", False):
        return tuple(1 if i in axes else d for i, d in enumerate(shape)), dt
    return tuple(d for i, d in enumerate(shape) if i not in axes), dt


def _matmul(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (sa, da), (sb, db) = ins
    dt = same_dtype(da, db)
    if dt == "bool":
        raise ValueError("operands are bool: no arithmetic on bool (Cast first)")
    if not sa or not sb:
        raise ValueError(f"operands must have rank >= 1, got {show_shape(sa)} and {show_shape(sb)}")
    a = (1,) + sa if len(sa) == 1 else sa  # NumPy: a 1-D operand is a row (a) or a column (b), dropped after
    b = sb + (1,) if len(sb) == 1 else sb
    if a[-1] != b[-2]:
        raise ValueError(f"operands {show_shape(sa)} and {show_shape(sb)}: inner dimensions {a[-1]} and {b[-2]} differ")
    try:
        shape = broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        raise ValueError(f"operands {show_shape(sa)} and {show_shape(sb)}: batch dimensions do not broadcast") from None
    if len(sa) > 1:
        shape += (sa[-2],)
    if len(sb) > 1:
        shape += (sb[-1],)
    return shape, dt


def _encode_axes(axes: Any, rank: int) -> str:
    return ints_text(sorted({ax % rank if rank else ax for ax in axes}))


def _decode_axes(text: Any) -> Any:
    import json

    return json.loads(text)


_REDUCE_FIELDS = (string("op"), Field("axes", "String", _encode_axes, _decode_axes),
                  Field("keep_dim", I64, lambda v, rank: int(bool(v)), bool, default=False))

OPS: tuple[OpDef, ...] = (
    OpDef("Reduce", ("x",), (Attr("op", one_of(REDUCE_OPS, "reduce op")), Attr("axes", int_list("axes")),
                             Attr("keep_dim", boolean("keep_dim"), required=False)), _reduce, _op_reduce,
          (Ctor("Reduce", "Reduce", _REDUCE_FIELDS, 1,
                (head("sum", op="Sum", keep_dim=0),) + tuple(head(f"Reduce.{o}", op=o) for o in REDUCE_OPS)),),
          domain=None, torch="reduce",
          sample=({"op": "Max", "axes": [-1], "keep_dim": True}, (((2, 3), "f32"),))),
    OpDef("MatMul", ("a", "b"), (), _matmul, _op_matmul, (Ctor("MatMul", "MatMul", (), 2, (head("MatMul"),)),),
          domain=None, torch="matmul",
          sample=({}, (((2, 3), "f32"), ((3, 4), "f32")))),
)
