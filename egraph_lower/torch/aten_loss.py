"""The elementwise losses and their backward ops (opdefs/loss.py): one format op each.

- `smooth_l1_loss(x, target, reduction, beta)`: `SmoothL1Loss{reduction, beta}`;
  `huber_loss(x, target, reduction, delta)`: `HuberLoss{reduction, delta}`;
  `soft_margin_loss(x, target, reduction)`: `SoftMarginLoss{reduction}`. torch's reduction enum 0, 1, 2
  is "none", "mean", "sum"; x and target are expanded to their broadcast shape first (as for mse_loss).
- `binary_cross_entropy(x, target, weight, reduction)`: `BinaryCrossEntropy{reduction}(x, target, w)`,
  w the weight (it broadcasts to x's shape; torch's functional expands it) or a Constant 1 (none).
- each `*_backward(grad_output, x, target, [weight,] reduction, [beta | delta])`: the op's backward op
  with x first and grad_output last (opdefs/loss.py), grad_output expanded to x's shape for "none".
  torch's gradient with respect to the target is the same op with x and target exchanged (smooth L1,
  Huber) or made of ordinary ops (BCE's), so it needs nothing of its own.

Not mapped here: `binary_cross_entropy_with_logits`, which reaches the importer decomposed (PyTorch's
Core ATen table: log_sigmoid_forward, sigmoid, mul, sub, ...; its backward is mul and div), and
`l1_loss`, which torch's functional states as abs and sgn.
"""

from __future__ import annotations

from typing import Any

import torch

from .aten_softmax import _operands, _reduction
from .context import Context
from .registry import handles


def _param(ctx: Context, a: dict[str, Any], name: str, positive: bool) -> float:
    v = float(ctx.scalar(a[name]))
    if v < 0 or (positive and v == 0):
        raise ctx.refuse(f"{name}={v} (it must be {'> 0' if positive else '>= 0'})")
    return v


def _attrs(ctx: Context, a: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"reduction": _reduction(ctx, a)}
    if "beta" in a:
        out["beta"] = _param(ctx, a, "beta", False)
    if "delta" in a:
        out["delta"] = _param(ctx, a, "delta", True)
    return out


def _weight(ctx: Context, a: dict[str, Any], dt: str, shape: tuple[int, ...]) -> int:
    w = a["weight"]
    if w is None:
        return ctx.const(1.0, dt)
    nid = ctx.cast(ctx.t(w), dt)
    if tuple(torch.broadcast_shapes(ctx.shape(nid), shape)) != shape:
        raise ctx.refuse(f"weight {list(ctx.shape(nid))} does not broadcast to x {list(shape)}")
    return nid


_FORWARD = {"smooth_l1_loss": "SmoothL1Loss", "huber_loss": "HuberLoss", "soft_margin_loss": "SoftMarginLoss",
            "binary_cross_entropy": "BinaryCrossEntropy"}


def _op(ctx: Context) -> str:
    assert ctx.node is not None
    return str(ctx.node.target).split(".")[1]  # aten.smooth_l1_loss_backward.default -> smooth_l1_loss_backward


@handles(*(f"{n}.default" for n in _FORWARD))
def _loss(ctx: Context, a: dict[str, Any]) -> int:
    name, attrs = _op(ctx), _attrs(ctx, a)
    x, t = _operands(ctx, a, ctx.out_dtype())
    ins = (x, t, _weight(ctx, a, ctx.out_dtype(), ctx.shape(x))) if name == "binary_cross_entropy" else (x, t)
    return ctx.add(_FORWARD[name], ins, attrs)


@handles(*(f"{n}_backward.default" for n in _FORWARD))
def _loss_backward(ctx: Context, a: dict[str, Any]) -> int:
    name, attrs = _op(ctx).removesuffix("_backward"), _attrs(ctx, a)
    shape, dt = ctx.out()
    x, t = _operands(ctx, a, dt)
    if ctx.shape(x) != shape:
        raise ctx.refuse(f"target broadcasts x {list(shape)} to {list(ctx.shape(x))}")
    dy = ctx.cast(ctx.t(a["grad_output"]), dt)
    if attrs["reduction"] == "none":
        dy = ctx.expand(dy, shape)
    elif ctx.shape(dy) != ():
        raise ctx.refuse(f"grad_output {list(ctx.shape(dy))} for reduction {attrs['reduction']!r}")
    ins = (x, t, _weight(ctx, a, dt, shape)) if name == "binary_cross_entropy" else (x, t)
    return ctx.add(f"{_FORWARD[name]}Backward", ins + (dy,), attrs)
