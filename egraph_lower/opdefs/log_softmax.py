"""Log-softmax over one axis, and its backward from the forward value.

    LogSoftmax{axis}(x)             = s - log(sum(exp(s))),  s = x - max(x)   over `axis`
    LogSoftmaxBackward{axis}(y, dy) = dy - exp(y) * sum(dy)                   over `axis`

Derivative: with p = softmax(x), d log p_i / d x_k = delta_ik - p_k, so
dx_k = sum_i dy_i (delta_ik - p_k) = dy_k - p_k sum_i dy_i, and p = exp(y) for
y = LogSoftmax(x) (the backward needs no x). A row that is all -inf gives nan
(max is -inf, s = nan), as torch. The attribute, its checks and the e-graph
fields (`axis`, `axes`) are Softmax's (opdefs/softmax.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..dtypes import FLOAT_DTYPES
from .base import Ctor, Meta, OpDef, head, integer
from .softmax import _AXES, _AXIS, _axis, _check_axis, _softmax_backward


def _log_softmax(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    _check_axis(attrs, shape)
    if dt is not None and dt not in FLOAT_DTYPES:
        raise ValueError(f"LogSoftmax needs a float dtype, got {dt}")
    return shape, dt


def _op_log_softmax(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x = _f(args[0])
    axis = _axis(attrs, x.ndim, "LogSoftmax", dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = x - np.max(x, axis=axis, keepdims=True, initial=-np.inf)
        return _round_float(s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True)), dtype)


def _op_log_softmax_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    y, dy = (_f(v) for v in args)
    axis = _axis(attrs, y.ndim, "LogSoftmaxBackward", dtype)
    return _round_float(dy - np.exp(y) * np.sum(dy, axis=axis, keepdims=True), dtype)


OPS: tuple[OpDef, ...] = (
    OpDef("LogSoftmax", ("x",), (_AXIS,), _log_softmax, _op_log_softmax,
          (Ctor("LogSoftmax", "LogSoftmax", (integer("axis"), _AXES), 1, (head("LogSoftmax"),)),),
          domain="softmax", torch="log_softmax",
          sample=({"axis": 1}, (((2, 3), "f32"),))),
    OpDef("LogSoftmaxBackward", ("y", "dy"), (_AXIS,), _softmax_backward, _op_log_softmax_backward,
          (Ctor("LogSoftmaxBwd", "LogSoftmaxBackward", (integer("axis"), _AXES), 2, (head("LogSoftmaxBackward"),)),),
          domain="softmax", torch="log_softmax_backward", backward=True,
          sample=({"axis": -1}, (((2, 3), "f32"), ((2, 3), "f32")))),
)
