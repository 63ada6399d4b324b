"""Issue 20's detection-style head (ops-loss): a shared trunk with LeakyReLU, ELU and Softplus(beta),
then a class head trained with label-smoothed cross entropy and a KL divergence to a soft target
(xlogy), a box head with smooth L1 (beta 0.5)
and Huber, and an objectness head with BCE on logits (weights and pos_weight) and on probabilities,
trained for metal and wgpu with nothing left in PyTorch and eager's gradients (rtol 1e-4, atol 1e-5,
float32: `torch_steps.train_like_eager`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from torch_steps import train_like_eager  # noqa: E402

CLASSES, BOXES = 5, 4


class DetectionHead(nn.Module):
    def __init__(self, features: int = 12, hidden: int = 16) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(features, hidden), nn.LeakyReLU(0.1), nn.Linear(hidden, hidden),
                                   nn.ELU(alpha=0.7), nn.Linear(hidden, hidden), nn.Softplus(beta=2.0))
        self.cls = nn.Linear(hidden, CLASSES)
        self.box = nn.Linear(hidden, BOXES)
        self.obj = nn.Linear(hidden, 1)

    def forward(self, x: Any) -> tuple[Any, Any, Any]:
        h = self.trunk(x)
        return self.cls(h), self.box(h), self.obj(h).squeeze(-1)


def _batch() -> tuple[Any, tuple[Any, Any, Any]]:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(6, 12, generator=g)
    labels = torch.randint(0, CLASSES, (6,), generator=g)
    boxes = torch.randn(6, BOXES, generator=g)
    objectness = torch.rand(6, generator=g)
    return x, (labels, boxes, objectness)


def _step(model: nn.Module) -> Callable[..., Any]:
    pos_weight = torch.tensor([1.5])
    weight = torch.linspace(0.5, 1.5, 6)

    def step(x: Any, y: Any) -> Any:
        labels, boxes, objectness = y
        soft = torch.softmax(torch.arange(CLASSES, dtype=torch.float32) * 0.3, 0).expand(len(labels), CLASSES)
        logits, box, obj = model(x)
        loss = (F.cross_entropy(logits, labels, label_smoothing=0.1)
                + F.smooth_l1_loss(box, boxes, beta=0.5)
                + 0.5 * F.huber_loss(box, boxes, delta=0.8, reduction="sum")
                + F.binary_cross_entropy_with_logits(obj, objectness, weight=weight, pos_weight=pos_weight)
                + F.binary_cross_entropy(torch.sigmoid(obj), objectness)
                + F.kl_div(F.log_softmax(logits, -1), soft, reduction="batchmean"))
        loss.backward()
        return loss
    return step


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_detection_head_trains_as_eager(target: str) -> None:
    torch.manual_seed(0)
    x, y = _batch()
    be, _, _ = train_like_eager(DetectionHead(), _step, x, y, target)  # strict: nothing left in PyTorch
    assert {g.kind for g in be.graphs} >= {"forward", "backward"}, be.summary()
    assert all(g.status == "lowered" for g in be.graphs), be.summary()
