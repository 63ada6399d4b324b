"""The activations with a tensor operand (opdefs/gating.py) as PyTorch functions, written as the NumPy
reference is (s sigmoid(-b) for s(1 - s), exact where s is near 1, where aten's glu_backward cancels);
f16/bf16 computed in float32 and rounded once (`in_float32`)."""

from __future__ import annotations

import torch
from torch import Tensor

from .kernels_half import in_float32


@in_float32
def glu_backward(x: Tensor, dy: Tensor, axis: int) -> Tensor:
    a, b = torch.chunk(x, 2, dim=axis)
    s = torch.sigmoid(b)
    return torch.cat([dy * s, dy * a * (s * torch.sigmoid(-b))], dim=axis)


@in_float32
def prelu_backward(x: Tensor, w: Tensor, dy: Tensor, wrt: str) -> Tensor:
    """aten's _prelu_kernel_backward, one output: dx = where(x > 0, dy, w dy) (wrt input) or the
    per-element dw = where(x > 0, 0, x dy) (wrt weight), both x's shape."""
    pos = x > 0
    if wrt == "input":
        return torch.where(pos, dy, w * dy)
    return torch.where(pos, torch.zeros((), dtype=dy.dtype), x * dy)
