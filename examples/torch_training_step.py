"""A training step compiled with egraph-lower's torch.compile backend, checked against eager PyTorch.

    pip install 'egraph-lower[torch]'
    python examples/torch_training_step.py [metal|wgpu|cpu|mlx|tpu]

Every forward and backward graph is lowered for the target: the printed graphs hold
only ops the target runs (for metal, no backward op is left: ReluBackward, the GELU
derivative and the batch-norm gradients are all expanded into forward ops).
"""

from __future__ import annotations

import copy
import sys

import torch
import torch.nn as nn

import egraph_lower as el
import egraph_lower.torch as elt


def make_model() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.GELU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 4))
    model.eval()  # batch norm in inference mode (running statistics); gradients still flow
    return model


def train(model: nn.Module, step: object, x: torch.Tensor, y: torch.Tensor, steps: int = 3) -> list[float]:
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        losses.append(float(step(x, y)))  # type: ignore[operator]
        opt.step()
    return losses


def loss_step(model: nn.Module):  # type: ignore[no-untyped-def]
    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss.detach()

    return step


def main(target: str = "metal") -> None:
    eager = make_model()
    compiled = copy.deepcopy(eager)
    record: list[el.Graph] = []
    backend = elt.backend(target, record=record)
    step = torch.compile(loss_step(compiled), backend=backend, dynamic=False)

    x, y = torch.randn(32, 6), torch.randn(32, 4)
    got = train(compiled, step, x, y)
    want = train(eager, loss_step(eager), x, y)
    print("losses, lowered:", [f"{v:.6f}" for v in got])
    print("losses, eager:  ", [f"{v:.6f}" for v in want])
    for p, q in zip(compiled.parameters(), eager.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
    print("parameters after training equal eager PyTorch's")

    print(backend.summary())
    target_backend = el.load_backend(target)
    for graph in record:
        assert all(target_backend.runs_node(n) for n in graph.nodes)
        print(f"{graph.name}: {len(graph.nodes)} nodes, {graph.op_counts()}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
