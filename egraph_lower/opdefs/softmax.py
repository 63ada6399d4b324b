"""Softmax over one axis, and its backward from the forward value.

    Softmax{axis}(x)             = exp(x - max(x)) / sum(exp(x - max(x)))   over `axis`
    SoftmaxBackward{axis}(y, dy) = dy*y - y*sum(dy*y)                        over `axis`

y is Softmax's output (the backward needs no x). `axis` may be negative (NumPy's
convention). The e-graph constructors also carry `axes`, the normalised one-axis
list that the rules' reductions take (`(Reduce.Sum axes 1 e)`); it is no attribute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..dtypes import FLOAT_DTYPES
from ..errors import LowerError
from .base import STRING, Attr, Ctor, Field, Meta, OpDef, head, integer, ints_text
from .meta import attr_check, float_dtype, is_int, same_shape, show


def _check_axis(attrs: Mapping[str, Any], shape: tuple[int, ...]) -> None:
    axis, rank = attrs["axis"], len(shape)
    if not -rank <= axis < rank:
        raise ValueError(f"axis {show(axis)} is out of range for rank {rank}")


def _softmax(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    _check_axis(attrs, shape)
    if dt is not None and dt not in FLOAT_DTYPES:
        raise ValueError(f"Softmax needs a float dtype, got {dt}")
    return shape, dt


def _softmax_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    same_shape(ins[0][0], ins[1][0], "y")
    _check_axis(attrs, ins[0][0])
    return ins[1][0], float_dtype(ins)


def _axis(attrs: Attrs, ndim: int, op: str, dtype: str) -> int:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"{op} needs a float dtype, not {dtype}")
    axis = attrs["axis"]
    if not is_int(axis) or not -ndim <= axis < ndim:
        raise LowerError(f"{op} axis {axis!r} is out of range for rank {ndim}")
    return int(axis)


def _op_softmax(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _f(args[0])
    axis = _axis(attrs, x.ndim, "Softmax", dtype)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True, initial=-np.inf))
    return _round_float(e / np.sum(e, axis=axis, keepdims=True), dtype)


def _op_softmax_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    y, dy = (_f(v) for v in args)
    axis = _axis(attrs, y.ndim, "SoftmaxBackward", dtype)
    p = dy * y
    return _round_float(p - y * np.sum(p, axis=axis, keepdims=True), dtype)


_AXIS = Attr("axis", attr_check("axis", is_int, "an integer"))
# the reduction axes of the rules: [axis], normalised like a loaded Reduce's axes
_AXES = Field("axes", STRING, lambda axis, rank: ints_text([axis % rank if rank else axis]), None, source="axis")

OPS: tuple[OpDef, ...] = (
    OpDef("Softmax", ("x",), (_AXIS,), _softmax, _op_softmax,
          (Ctor("Softmax", "Softmax", (integer("axis"), _AXES), 1, (head("Softmax"),)),),
          domain="softmax", torch="softmax",
          sample=({"axis": -1}, (((2, 3), "f32"),))),
    OpDef("SoftmaxBackward", ("y", "dy"), (_AXIS,), _softmax_backward, _op_softmax_backward,
          (Ctor("SoftmaxBwd", "SoftmaxBackward", (integer("axis"), _AXES), 2, (head("SoftmaxBackward"),)),),
          domain="softmax", torch="softmax_backward", backward=True,
          sample=({"axis": 0}, (((2, 3), "f32"), ((2, 3), "f32")))),
)
