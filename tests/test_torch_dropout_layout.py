"""Dropout of a tensor that is not contiguous draws eager's mask (found by the fuzzer of training steps).

Eager's kernel draws the mask into `empty_like(x)`, in x's layout, and `bernoulli_` fills memory in
order; the exported module draws it in that order and transposes it back, so a transposed, sliced or
channels_last x gets eager's mask under the same seed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import egraph_lower.torch as elt  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

LAYOUTS: dict[str, Callable[[], Any]] = {
    "contiguous": lambda: torch.randn(3, 5),
    "transposed": lambda: torch.randn(5, 3).t(),
    "permuted 3-d": lambda: torch.randn(4, 2, 3).permute(2, 0, 1),
    "sliced": lambda: torch.randn(4, 6, 5)[:, ::2].permute(2, 0, 1),
    "channels_last": lambda: torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last),
    "size-one dims": lambda: torch.randn(3, 1, 4).transpose(0, 2),
}


def _step(w: Any, x: Any) -> Any:
    loss = (torch.nn.functional.dropout(x * w, 0.5, training=True) ** 2).sum()
    loss.backward()
    return loss


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_dropout_of_any_layout_draws_eagers_mask(target: str, layout: str) -> None:
    x = LAYOUTS[layout]()
    w = torch.tensor(1.5, requires_grad=True)
    torch.manual_seed(0)
    want = _step(w, x)
    want_grad, w.grad = w.grad, None
    be = elt.backend(target, strict=True)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = torch.compile(_step, backend=be, dynamic=False)(w, x)
    assert all(g.replaced for g in be.graphs), be.summary()  # the lowered graphs ran, not PyTorch's
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(w.grad, want_grad)
