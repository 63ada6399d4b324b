"""The elementwise losses and their backward ops (opdefs/loss.py) as PyTorch functions.

Smooth L1 and Huber are aten's own kernels (the format's semantics are theirs, kinks included), f16/bf16
computed in float32 and rounded once (`in_float32`: aten's half kernels round the elementwise loss
before reducing it, and Huber's backward rounds twice; smooth L1's backward already rounds once).
Binary cross entropy and the soft margin loss are written out, computed in float32 for f16/bf16
and rounded once (as torch's CPU kernels compute half tensors): aten's BCE raises for x outside
[0, 1], which the format gives as nan, and aten's soft margin loss overflows to inf (its backward
to nan) where log(1 + exp(z)) does not.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..opdefs.loss import BCE_EPS, LOG_CLAMP
from ..opdefs.mse import REDUCTIONS
from .kernels_half import HALF, in_float32

_ENUM = {r: k for k, r in enumerate(REDUCTIONS)}  # torch's Reduction enum: none 0, mean 1, sum 2


@in_float32
def smooth_l1_loss(x: Tensor, target: Tensor, reduction: str, beta: float) -> Tensor:
    return torch.ops.aten.smooth_l1_loss(x, target, _ENUM[reduction], beta)


def smooth_l1_loss_backward(x: Tensor, target: Tensor, dy: Tensor, reduction: str, beta: float) -> Tensor:
    return torch.ops.aten.smooth_l1_loss_backward(dy, x, target, _ENUM[reduction], beta)


@in_float32
def huber_loss(x: Tensor, target: Tensor, reduction: str, delta: float) -> Tensor:
    return torch.ops.aten.huber_loss(x, target, _ENUM[reduction], delta)


@in_float32
def huber_loss_backward(x: Tensor, target: Tensor, dy: Tensor, reduction: str, delta: float) -> Tensor:
    return torch.ops.aten.huber_loss_backward(dy, x, target, _ENUM[reduction], delta)


def _wide(*ts: Tensor) -> list[Tensor]:
    return [t.float() if t.dtype in HALF else t for t in ts]


def _reduced(loss: Tensor, reduction: str, dtype: torch.dtype) -> Tensor:
    if reduction == "sum":
        loss = loss.sum()
    elif reduction == "mean":
        loss = loss.mean()
    return loss.to(dtype)


def _mean_scaled(g: Tensor, reduction: str, dtype: torch.dtype) -> Tensor:
    return (g / g.numel() if reduction == "mean" and g.numel() else g).to(dtype)


def binary_cross_entropy(x: Tensor, target: Tensor, weight: Tensor, reduction: str) -> Tensor:
    xw, t, w = _wide(x, target, weight)
    loss = (t - 1) * torch.clamp_min(torch.log1p(-xw), LOG_CLAMP) - t * torch.clamp_min(torch.log(xw), LOG_CLAMP)
    return _reduced((loss * w).expand(x.shape), reduction, x.dtype)


def binary_cross_entropy_backward(x: Tensor, target: Tensor, weight: Tensor, dy: Tensor, reduction: str) -> Tensor:
    xw, t, w, g = _wide(x, target, weight, dy)
    out = g * (xw - t) / torch.clamp_min((1 - xw) * xw, BCE_EPS) * w
    return _mean_scaled(out.expand(x.shape), reduction, x.dtype)


def soft_margin_loss(x: Tensor, target: Tensor, reduction: str) -> Tensor:
    xw, t = _wide(x, target)
    z = -(xw * t)
    return _reduced(torch.clamp_min(z, 0) + torch.log1p(torch.exp(-z.abs())), reduction, x.dtype)


def soft_margin_loss_backward(x: Tensor, target: Tensor, dy: Tensor, reduction: str) -> Tensor:
    xw, t, g = _wide(x, target, dy)
    return _mean_scaled(g * -t * torch.sigmoid(-(xw * t)), reduction, x.dtype)
