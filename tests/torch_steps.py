"""The training loop the torch tests compare compiled and eager runs with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn


def train(model: nn.Module, step: Callable[..., Any], x: Any, y: Any, steps: int = 2,
          lr: float = 0.1) -> list[list[Any]]:
    """Each step's parameter gradients (copied), the parameters moved by SGD between steps."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    grads = []
    for _ in range(steps):
        opt.zero_grad()
        step(x, y)
        grads.append([p.grad.detach().clone() for p in model.parameters()])
        opt.step()
    return grads


def mse_step(model: nn.Module) -> Callable[..., Any]:
    """One step's loss and backward: the mean squared error of `model(x)` against `y`."""
    def step(x: Any, y: Any) -> Any:
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        return loss
    return step
