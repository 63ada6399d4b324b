"""Transposed convolutions (aten `convolution` / `convolution_backward` with transposed=True, 1-D and
2-D) through the torch backend: the forward is ConvTranspose2d, its input gradient Conv2d and its
weight gradient Conv2dBackwardWeight with the roles of x and dy exchanged (egraph_lower/torch/aten_conv.py
derives them). Checked in float64 against eager and against finite differences, at the awkward points:
output padding (below the stride, and reaching it where the dilation allows), a stride larger than the
kernel (output positions no tap writes), groups and depthwise, dilation, padding past the kernel."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

# (x shape, w shape, conv_transpose keyword arguments)
CASES_2D: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((1, 3, 4, 4), (3, 3, 3, 3), dict(stride=(2, 2), padding=2, output_padding=(1, 1))),
    # output padding 3 >= stride 2 along W (dilation 4 allows it): x extended by one column of zeros
    ((2, 2, 4, 4), (2, 2, 4, 5), dict(stride=(3, 2), padding=(1, 2), output_padding=(2, 3), groups=2, dilation=(4, 4))),
    ((1, 1, 4, 5), (1, 1, 4, 3), dict(stride=2, padding=1, output_padding=1, dilation=(2, 3))),
    ((2, 4, 4, 4), (4, 1, 3, 3), dict(groups=4)),  # depthwise
    ((2, 4, 3, 5), (4, 2, 2, 2), dict(stride=3)),  # stride > kernel: output positions no tap writes
    ((1, 2, 6, 3), (2, 3, 2, 3), dict(stride=(1, 2), padding=(2, 0))),  # padding past the kernel's reach crops
]
CASES_1D: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((2, 2, 4), (2, 2, 4), dict(stride=3, padding=1, output_padding=2, groups=2, dilation=4)),
    ((1, 3, 6), (3, 2, 3), dict(stride=2, padding=1, output_padding=1)),
]


def _run(target: str, conv: Any, xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any],
         dtype: Any = torch.float64) -> tuple[Any, list[Any], list[Any], Any]:
    torch.manual_seed(0)
    g = kw.get("groups", 1)
    x, w = torch.randn(xs, dtype=dtype, requires_grad=True), torch.randn(ws, dtype=dtype, requires_grad=True)
    b = torch.randn(ws[1] * g, dtype=dtype, requires_grad=True)

    def f(x: Any, w: Any, b: Any) -> Any:
        return conv(x, w, b, **kw)

    be = elt.backend(target, strict=True)
    y = torch.compile(f, backend=be, dynamic=False)(x, w, b)
    dy = torch.randn_like(y)
    got = torch.autograd.grad(y, (x, w, b), dy)
    want_y = f(x, w, b)
    want = torch.autograd.grad(want_y, (x, w, b), dy)
    assert be.unlowered_ops == {} and all(r.status == "lowered" for r in be.graphs), be.summary()
    torch.testing.assert_close(y, want_y, rtol=1e-12, atol=1e-12)
    return y, list(got), list(want), be


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize(("conv", "case"), [(F.conv_transpose2d, c) for c in CASES_2D]
                         + [(F.conv_transpose1d, c) for c in CASES_1D])
def test_transposed_convolution_and_its_gradients_match_eager_in_float64(target: str, conv: Any,
                                                                         case: tuple[Any, ...]) -> None:
    _, got, want, _ = _run(target, conv, *case)
    for k, (a, e) in enumerate(zip(got, want)):
        torch.testing.assert_close(a, e, rtol=1e-12, atol=1e-12, msg=lambda m: f"gradient {k}: {m}")


@pytest.mark.parametrize("case", [CASES_2D[1], CASES_2D[4]])
def test_transposed_convolution_gradients_match_finite_differences(case: tuple[Any, ...]) -> None:
    """The derived gradients against central differences of the lowered wgpu graph (float64)."""
    xs, ws, kw = case
    torch.manual_seed(2)
    x, w = torch.randn(xs, dtype=torch.float64, requires_grad=True), torch.randn(ws, dtype=torch.float64,
                                                                                requires_grad=True)
    f = torch.compile(lambda x, w: F.conv_transpose2d(x, w, None, **kw), backend=elt.backend("wgpu", strict=True),
                      dynamic=False)
    assert torch.autograd.gradcheck(f, (x, w), eps=1e-6, atol=1e-7)


def test_wgpu_lowers_every_transposed_convolution_to_matmul() -> None:
    """wgpu has no convolution kernel: the forward, both gradients end in MatMul, no convolution op left."""
    record: list[el.Graph] = []
    be = elt.backend("wgpu", record=record, strict=True)
    x, w = torch.randn(2, 4, 3, 5, requires_grad=True), torch.randn(4, 2, 3, 3, requires_grad=True)
    y = torch.compile(lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1), backend=be, dynamic=False)(x, w)
    y.sum().backward()
    ops = {n.op for g in record for n in g.nodes}
    assert "MatMul" in ops
    assert not ops & {"Conv2d", "ConvTranspose2d", "Conv2dBackwardInput", "Conv2dBackwardWeight"}, ops


def test_transposed_convolution_imports_one_to_one() -> None:
    """On cpu (every op a kernel): ConvTranspose2d forward; Conv2d and Conv2dBackwardWeight (x and dy
    exchanged) backward; a Pad of x and a Slice of dx only where the output padding reaches the stride."""
    record: list[el.Graph] = []
    be = elt.backend("cpu", record=record, strict=True)
    x, w = torch.randn(1, 2, 4, 4, requires_grad=True), torch.randn(2, 3, 3, 3, requires_grad=True)
    y = torch.compile(lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1), backend=be, dynamic=False)(x, w)
    y.sum().backward()
    ops = [n.op for g in record for n in g.nodes if n.op not in ("Input", "Param")]
    assert "ConvTranspose2d" in ops and "Conv2d" in ops and "Conv2dBackwardWeight" in ops
    assert "Pad" not in ops and "Slice" not in ops and "Conv2dBackwardInput" not in ops
