"""The elementwise losses of torch.nn.functional and their backward ops (format version 3).

With d = x - target and N = numel(x), each loss is r(l), r the `reduction`: "none" (l itself, of
x's shape), "sum" or "mean" (sum(l) / N, nan for N = 0) over every axis (result []). Each backward
op is dx = dy * g (dy of x's shape for "none", [] otherwise), divided by N for "mean":

    SmoothL1Loss{reduction, beta}       l = 0.5 d^2 / beta  if |d| < beta, else |d| - 0.5 beta
    SmoothL1LossBackward(x, target, dy) g = -1 if d <= -beta, 1 if d >= beta, else d / beta
    HuberLoss{reduction, delta}         l = 0.5 d^2  if |d| < delta, else delta (|d| - 0.5 delta)
    HuberLossBackward(x, target, dy)    g = -delta if d <= -delta, delta if d >= delta, else d
    BinaryCrossEntropy{reduction}(x, target, weight)
                                        l = w ((t - 1) max(log(1 - x), -100) - t max(log x, -100))
    BinaryCrossEntropyBackward(x, target, weight, dy)
                                        g = w (x - t) / max(x (1 - x), eps), eps = float32(1e-12)
    SoftMarginLoss{reduction}           l = log(1 + exp(-t x))
    SoftMarginLossBackward(x, target, dy)
                                        g = -t exp(-t x) / (1 + exp(-t x)) = -t sigmoid(-t x)

Derivatives (torch's conventions at the kinks, as its CPU kernels compute them):
- smooth L1: d/dd (0.5 d^2 / beta) = d / beta inside, sign(d) outside; at |d| == beta both are
  sign(d) (the loss is C^1 there; torch takes the outer branch, d >= beta). beta = 0 is L1, whose
  gradient at d = 0 torch's kernel gives as -1 (it tests d <= -beta first), and so does this op.
  beta must be >= 0 (torch refuses a negative beta).
- Huber: delta times smooth L1's with beta = delta: d inside, delta sign(d) outside; delta > 0.
- BCE: d/dx -(t log x + (1 - t) log(1 - x)) = -t / x + (1 - t) / (1 - x) = (x - t) / (x (1 - x)).
  torch clamps each log at -100 in the loss (so x = 0 or 1 gives a finite loss) and the backward's
  denominator at 1e-12 (float32's 1e-12, 9.99999996e-13, in every dtype, as torch's kernel). That is
  not the derivative of the clamped loss, which is 0 where a log is clamped: it is torch's backward,
  which a step must match. x outside [0, 1] is nan here (the log of a negative number), where
  torch's kernel raises. The weight broadcasts to x's shape (torch's functional expands it; a graph
  without one has a Constant 1).
- soft margin: d/dx log(1 + exp(-t x)) = -t exp(-t x) / (1 + exp(-t x)). The reference computes the
  loss as softplus(-t x) = max(z, 0) + log1p(exp(-|z|)) and the gradient with sigmoid: finite where
  torch's log1p(exp(z)) overflows to inf (z > 88 in f32) and its exp(z) / (1 + exp(z)) is inf / inf =
  nan.

x comes first in every backward op (torch's have dy first): the e-graph's derived fields see the rank
of the first input only (`axes`, every axis of x, for the rules' reductions; see opdefs/mse.py). The
e-graph constructors of smooth L1 and Huber also carry -beta and beta / 2 (-delta, delta / 2) as
derived fields `nbeta`, `hbeta` (`ndelta`, `hdelta`): no attributes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from .base import F64, Attr, Ctor, Field, Meta, OpDef, head, number
from .meta import attr_check, float_dtype, show_shape
from .mse import _AXES, _REDUCTION, _REDUCTION_FIELD, REDUCTIONS, _float, _loss_shape, _same

LOG_CLAMP = -100.0  # torch's clamp of BCE's logs
BCE_EPS = 9.999999960041972e-13  # torch's clamp of BCE's backward denominator: 1e-12 as a float32, in every dtype

Elementwise = Callable[[Mapping[str, Any], list[np.ndarray]], np.ndarray]


def _smooth_l1(attrs: Mapping[str, Any], v: list[np.ndarray]) -> np.ndarray:
    d, beta = v[0] - v[1], float(attrs["beta"])
    ad = np.abs(d)
    return np.where(ad < beta, 0.5 * d * d / beta if beta else 0.0 * d, ad - 0.5 * beta)


def _smooth_l1_grad(attrs: Mapping[str, Any], v: list[np.ndarray]) -> np.ndarray:
    d, beta = v[0] - v[1], float(attrs["beta"])
    inner = d / beta if beta else 0.0 * d
    return np.where(d <= -beta, -1.0, np.where(d >= beta, 1.0, inner))


def _huber(attrs: Mapping[str, Any], v: list[np.ndarray]) -> np.ndarray:
    d, delta = v[0] - v[1], float(attrs["delta"])
    ad = np.abs(d)
    return np.where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))


def _huber_grad(attrs: Mapping[str, Any], v: list[np.ndarray]) -> np.ndarray:
    d, delta = v[0] - v[1], float(attrs["delta"])
    return np.where(d <= -delta, -delta, np.where(d >= delta, delta, d))


def _bce(attrs: Mapping[str, Any], v: list[np.ndarray]) -> np.ndarray:
    x, t, w = v[:3]
    return w * ((t - 1.0) * np.maximum(np.log1p(-x), LOG_CLAMP) - t * np.maximum(np.log(x), LOG_CLAMP))


def _bce_grad(attrs: Mapping[str, Any], v: list[np.ndarray]) -> np.ndarray:
    x, t, w = v[:3]
    return w * (x - t) / np.maximum((1.0 - x) * x, BCE_EPS)


def _softplus(z: np.ndarray) -> np.ndarray:
    return np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))


def _soft_margin(attrs: Mapping[str, Any], v: list[np.ndarray]) -> np.ndarray:
    return _softplus(-(v[0] * v[1]))


def _soft_margin_grad(attrs: Mapping[str, Any], v: list[np.ndarray]) -> np.ndarray:
    x, t = v[:2]
    z = -(t * x)
    return -t * np.exp(-_softplus(-z))  # sigmoid(z) = exp(-softplus(-z)), no overflow


def _float_attr(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


_BETA = Attr("beta", attr_check("beta", lambda v: _float_attr(v) and v >= 0, "a finite number >= 0"))
_DELTA = Attr("delta", attr_check("delta", lambda v: _float_attr(v) and v > 0, "a finite number > 0"))


def _weight(x: tuple[int, ...], w: tuple[int, ...]) -> None:
    try:
        ok = np.broadcast_shapes(x, w) == x
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"weight has shape {show_shape(w)}, which does not broadcast to x's {show_shape(x)}")


def _infer(n_extra: int, backward: bool) -> Callable[[Mapping[str, Any], Sequence[Meta]], Meta]:
    """x, target, `n_extra` weights broadcasting to x, then dy for a backward op."""
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        (x, _), (t, _) = ins[0], ins[1]
        _same(x, t)
        for w, _ in ins[2:2 + n_extra]:
            _weight(x, w)
        if not backward:
            return _loss_shape(attrs, x), float_dtype(ins)
        dy, want = ins[-1][0], _loss_shape(attrs, x)
        if dy != want:
            raise ValueError(f"dy has shape {show_shape(dy)} but reduction {attrs['reduction']!r} needs "
                             f"{show_shape(want)}")
        return x, float_dtype(ins)
    return infer


def _forward(name: str, fn: Elementwise) -> Callable[..., np.ndarray]:
    def evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        _float(name, dtype)
        vals = [_f(a) for a in args]
        with np.errstate(all="ignore"):
            loss = np.broadcast_to(fn(attrs, vals), vals[0].shape)
            r = attrs["reduction"]
            if r == "none":
                return _round_float(loss, dtype)
            total = np.sum(loss)
            return _round_float(np.asarray(total / loss.size if r == "mean" else total), dtype)
    return evaluate


def _backward(name: str, fn: Elementwise) -> Callable[..., np.ndarray]:
    def evaluate(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
        _float(name, dtype)
        vals = [_f(a) for a in args]
        with np.errstate(all="ignore"):
            g = np.broadcast_to(fn(attrs, vals[:-1]) * vals[-1], vals[0].shape)
            if attrs["reduction"] == "mean" and g.size:
                g = g / g.size
            return _round_float(g, dtype)
    return evaluate


def _param_fields(name: str) -> tuple[Field, ...]:
    """beta (delta), and derived from it -beta and beta / 2 (n<name>, h<name>): a rule's scalars are its
    fields (`(lit beta)`), and a Binary of two scalars has no dtype to compute in."""
    return (number(name), Field(f"n{name}", F64, lambda v, rank: -float(v), None, source=name),
            Field(f"h{name}", F64, lambda v, rank: 0.5 * float(v), None, source=name))


def _heads(name: str) -> tuple[Any, ...]:
    return tuple(head(f"{name}.{r}", reduction=r.capitalize()) for r in REDUCTIONS)


def _pair(name: str, ctor: str, inputs: tuple[str, ...], params: tuple[Attr, ...], fn: Elementwise,
          grad: Elementwise, torch: str, sample_attrs: dict[str, Any]) -> tuple[OpDef, OpDef]:
    """The loss `name` and `name`Backward: inputs x, target and weights; the backward's dy last."""
    attrs = (_REDUCTION,) + params
    fields: tuple[Field, ...] = (_REDUCTION_FIELD,) + tuple(f for p in params for f in _param_fields(p.name)) + (_AXES,)
    n_extra = len(inputs) - 2
    metas = tuple(((2, 3), "f32") for _ in inputs)
    fwd = OpDef(name, inputs, attrs, _infer(n_extra, False), _forward(name, fn),
                (Ctor(ctor, name, fields, len(inputs), _heads(name)),), domain="loss", torch=torch,
                sample=({"reduction": "mean", **sample_attrs}, metas))
    bname = f"{name}Backward"
    bwd = OpDef(bname, inputs + ("dy",), attrs, _infer(n_extra, True), _backward(bname, grad),
                (Ctor(f"{ctor}Bwd", bname, fields, len(inputs) + 1, _heads(bname)),), domain="loss",
                torch=f"{torch}_backward", backward=True,
                sample=({"reduction": "none", **sample_attrs}, metas + (((2, 3), "f32"),)))
    return fwd, bwd


OPS: tuple[OpDef, ...] = (
    *_pair("SmoothL1Loss", "SmoothL1", ("x", "target"), (_BETA,), _smooth_l1, _smooth_l1_grad, "smooth_l1_loss",
           {"beta": 1.0}),
    *_pair("HuberLoss", "Huber", ("x", "target"), (_DELTA,), _huber, _huber_grad, "huber_loss", {"delta": 1.0}),
    *_pair("BinaryCrossEntropy", "Bce", ("x", "target", "weight"), (), _bce, _bce_grad, "binary_cross_entropy",
           {}),
    *_pair("SoftMarginLoss", "SoftMargin", ("x", "target"), (), _soft_margin, _soft_margin_grad,
           "soft_margin_loss", {}),
)
