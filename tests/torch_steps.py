"""The training loop the torch tests compare compiled and eager runs with."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import egraph_lower as el
import egraph_lower.torch as elt


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


def train_like_eager(eager: nn.Module, make_step: Callable[[nn.Module], Callable[..., Any]], x: Any, y: Any,
                     target: str, lr: float = 0.1) -> tuple[Any, list[el.Graph], nn.Module]:
    """A copy of `eager` trained compiled with the backend for `target` (strict: an aten op left unmapped
    fails the import), then `eager` itself, `train`'s two steps each (at `lr`); asserts every step's gradients
    agree (rtol 1e-4, atol 1e-5) and nothing ran in PyTorch. The backend, the graphs it lowered and the
    compiled copy."""
    compiled = copy.deepcopy(eager)
    record: list[el.Graph] = []
    be = elt.backend(target, record=record, strict=True)
    got = train(compiled, torch.compile(make_step(compiled), backend=be, dynamic=False), x, y, lr=lr)
    want = train(eager, make_step(eager), x, y, lr=lr)
    names = [n for n, _ in eager.named_parameters()]
    for g_step, w_step in zip(got, want):
        for name, g, w in zip(names, g_step, w_step):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")
    assert be.unlowered_ops == {}, be.summary()
    return be, record, compiled


def compiled_matches(f: Callable[..., Any], *args: Any, target: str, grad: bool = True, equal_nan: bool = False,
                     allow_unused: bool = False) -> None:
    """f compiled for `target` gives eager's value and (with `grad`) eager's gradients for a fixed dy,
    with nothing left in PyTorch; `allow_unused` skips the arguments eager's gradient does not reach."""
    torch._dynamo.reset()
    be = elt.backend(target, strict=True)
    leaves = [a.detach().clone().requires_grad_(grad) for a in args]
    got = torch.compile(f, backend=be, dynamic=False)(*leaves)
    want_leaves = [a.detach().clone().requires_grad_(grad) for a in args]
    want = f(*want_leaves)
    torch.testing.assert_close(got, want, equal_nan=equal_nan)
    if grad:
        dy = torch.linspace(-1.5, 2.0, want.numel(), dtype=want.dtype).reshape(want.shape)
        g_got = torch.autograd.grad(got, leaves, dy, allow_unused=allow_unused)
        g_want = torch.autograd.grad(want, want_leaves, dy, allow_unused=allow_unused)
        for a, b in zip(g_got, g_want):
            if b is not None:
                torch.testing.assert_close(a, b, equal_nan=equal_nan)
    assert be.unlowered_ops == {}, be.summary()
