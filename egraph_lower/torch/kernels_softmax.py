"""Softmax, log-softmax and the MSE loss (opdefs/softmax.py, log_softmax.py, mse.py) as PyTorch
functions: torch's own kernels, in the node's dtype (as torch computes them).
"""

from __future__ import annotations

import torch
from torch import Tensor


def softmax(x: Tensor, axis: int) -> Tensor:
    return torch._softmax(x, axis, False)


def softmax_backward(y: Tensor, dy: Tensor, axis: int) -> Tensor:
    return torch._softmax_backward_data(dy, y, axis, dy.dtype)


def log_softmax(x: Tensor, axis: int) -> Tensor:
    return torch._log_softmax(x, axis, False)


def log_softmax_backward(y: Tensor, dy: Tensor, axis: int) -> Tensor:
    return torch._log_softmax_backward_data(dy, y, axis, dy.dtype)


_REDUCTION = {"none": 0, "mean": 1, "sum": 2}  # torch's Reduction enum


def mse_loss(x: Tensor, target: Tensor, reduction: str) -> Tensor:
    return torch.ops.aten.mse_loss(x, target, _REDUCTION[reduction])


def mse_loss_backward(x: Tensor, target: Tensor, dy: Tensor, reduction: str) -> Tensor:
    return torch.ops.aten.mse_loss_backward(dy, x, target, _REDUCTION[reduction])
