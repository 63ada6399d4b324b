"""The mean-squared-error loss and its backward op (the gradient with respect to x).

    MseLoss{reduction}(x, target)              = r((x - target)^2)
    MseLossBackward{reduction}(x, target, dy)  = dy * 2 (x - target)   (divided by numel(x) for "mean")

`reduction` is "none" (elementwise: result of x's shape), "mean" or "sum" over every
axis (result []). Derivative: d/dx_i sum_j (x_j - t_j)^2 = 2 (x_i - t_i), so with the
incoming dy (of x's shape for "none", [] otherwise) dx = dy * 2 (x - t), and the mean
divides by N = numel(x) (N = 0: the mean is nan and dx is empty). The gradient with
respect to the target is -dx (an autograd graph negates it; no op of its own).

x comes first in the backward op (torch's `mse_loss_backward` has dy first): the
e-graph's derived fields see the rank of the first input only, and the rules need x's
axes (`axes`, every axis of x) to state N for "mean".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..dtypes import FLOAT_DTYPES
from ..errors import LowerError
from .base import STRING, Attr, Ctor, Field, Meta, OpDef, head, ints_text
from .meta import float_dtype, one_of, show_shape

REDUCTIONS: tuple[str, ...] = ("none", "mean", "sum")


def _loss_shape(attrs: Mapping[str, Any], x: tuple[int, ...]) -> tuple[int, ...]:
    return x if attrs["reduction"] == "none" else ()


def _same(x: tuple[int, ...], t: tuple[int, ...]) -> None:
    if x != t:
        raise ValueError(f"x has shape {show_shape(x)} but target has shape {show_shape(t)} (they must be equal)")


def _mse(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (x, _), (t, _) = ins
    _same(x, t)
    return _loss_shape(attrs, x), float_dtype(ins)


def _mse_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (x, _), (t, _), (dy, _) = ins
    _same(x, t)
    want = _loss_shape(attrs, x)
    if dy != want:
        raise ValueError(f"dy has shape {show_shape(dy)} but reduction {attrs['reduction']!r} needs "
                         f"{show_shape(want)}")
    return x, float_dtype(ins)


def _float(op: str, dtype: str) -> None:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"{op} needs a float dtype, not {dtype}")


def _op_mse(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _float("MseLoss", dtype)
    x, t = (_f(v) for v in args)
    sq = (x - t) ** 2
    r = attrs["reduction"]
    if r == "none":
        return _round_float(sq, dtype)
    with np.errstate(invalid="ignore"):
        total = np.sum(sq)
        return _round_float(np.asarray(total / sq.size if r == "mean" else total), dtype)


def _op_mse_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _float("MseLossBackward", dtype)
    x, t, dy = (_f(v) for v in args)
    g = 2.0 * (x - t) * dy
    if attrs["reduction"] == "mean" and x.size:
        g = g / x.size
    return _round_float(g, dtype)


_REDUCTION = Attr("reduction", one_of(REDUCTIONS, "reduction"))
# every axis of x: the rules' reductions (`(Reduce.Mean axes 0 e)`); no attribute
_AXES = Field("axes", STRING, lambda _, rank: ints_text(range(rank)), None, source="reduction")


# the reduction in the e-graph is capitalised (Mean): the rule notation reads a lower-case field as a variable
_REDUCTION_FIELD = Field("reduction", STRING, lambda v, rank: str(v).capitalize(), lambda v: str(v).lower())


def _heads(name: str) -> tuple[Any, ...]:
    return tuple(head(f"{name}.{r}", reduction=r.capitalize()) for r in REDUCTIONS)


OPS: tuple[OpDef, ...] = (
    OpDef("MseLoss", ("x", "target"), (_REDUCTION,), _mse, _op_mse,
          (Ctor("Mse", "MseLoss", (_REDUCTION_FIELD, _AXES), 2, _heads("MseLoss")),),
          domain="mse", torch="mse_loss",
          sample=({"reduction": "mean"}, (((2, 3), "f32"), ((2, 3), "f32")))),
    OpDef("MseLossBackward", ("x", "target", "dy"), (_REDUCTION,), _mse_backward, _op_mse_backward,
          (Ctor("MseBwd", "MseLossBackward", (_REDUCTION_FIELD, _AXES), 3, _heads("MseLossBackward")),),
          domain="mse", torch="mse_loss_backward", backward=True,
          sample=({"reduction": "none"}, (((2, 3), "f32"), ((2, 3), "f32"), ((2, 3), "f32")))),
)
