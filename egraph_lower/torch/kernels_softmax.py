"""Softmax, log-softmax and the MSE loss (opdefs/softmax.py, log_softmax.py, mse.py) as PyTorch
functions: torch's own kernels; softmax, log-softmax and the MSE loss and its backward compute f16/bf16 in
float32 and round once (`in_float32`: torch's half softmax over an inner axis and log-softmax round an
intermediate, its half MSE loss rounds the squares before reducing them). The softmax backward ops'
half kernels already round once.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .kernels_half import in_float32


@in_float32
def softmax(x: Tensor, axis: int) -> Tensor:
    return torch._softmax(x, axis, False)


def softmax_backward(y: Tensor, dy: Tensor, axis: int) -> Tensor:
    return torch._softmax_backward_data(dy, y, axis, dy.dtype)


@in_float32
def log_softmax(x: Tensor, axis: int) -> Tensor:
    return torch._log_softmax(x, axis, False)


def log_softmax_backward(y: Tensor, dy: Tensor, axis: int) -> Tensor:
    return torch._log_softmax_backward_data(dy, y, axis, dy.dtype)


_REDUCTION = {"none": 0, "mean": 1, "sum": 2}  # torch's Reduction enum


@in_float32
def mse_loss(x: Tensor, target: Tensor, reduction: str) -> Tensor:
    return torch.ops.aten.mse_loss(x, target, _REDUCTION[reduction])


@in_float32
def mse_loss_backward(x: Tensor, target: Tensor, dy: Tensor, reduction: str) -> Tensor:
    return torch.ops.aten.mse_loss_backward(dy, x, target, _REDUCTION[reduction])
