"""The pooling family against PyTorch: the reference evaluator against torch's kernels in float64
(ties, ceil_mode, padding, overlapping windows, dilation), the aten mapping both ways, and training
steps of small pooling CNNs compiled for metal and wgpu."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.build import GraphBuilder  # noqa: E402
from egraph_lower.evaluate import apply  # noqa: E402
from egraph_lower.torch import kernels  # noqa: E402
from torch_steps import mse_step, train_like_eager  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles anew

LR = 0.05  # these models train with a smaller step

A = torch.ops.aten
POOL_BACKWARD = {"MaxPool2dBackward", "AvgPool2dBackward", "AdaptiveAvgPool2dBackward"}

# (kernel, stride, padding, dilation, ceil_mode), on a 9 x 8 input
MAX_CASES = [
    ([2, 2], [2, 2], [0, 0], [1, 1], False),
    ([3, 3], [2, 2], [1, 1], [1, 1], True),   # overlapping, padded, a clipped last window
    ([3, 2], [1, 2], [1, 1], [2, 1], False),  # dilated, overlapping
    ([2, 3], [3, 2], [1, 0], [1, 2], True),
    ([1, 1], [2, 3], [0, 0], [1, 1], True),
]
# (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVG_CASES = [
    ([2, 2], [2, 2], [0, 0], False, True, None),
    ([3, 3], [2, 2], [1, 1], True, True, None),
    ([3, 3], [2, 2], [1, 1], True, False, None),
    ([3, 2], [1, 2], [1, 1], False, False, 4),
    ([2, 2], [2, 2], [0, 0], False, True, -2),  # aten divides by a negative override too
    ([2, 3], [3, 2], [1, 1], True, True, None),
]


def _input(ties: bool) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    if ties:
        return torch.randint(-2, 3, (2, 3, 9, 8), generator=g).double()
    return torch.randn(2, 3, 9, 8, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool_evaluator_matches_torch_in_f64(case: tuple[Any, ...], ties: bool) -> None:
    kernel, stride, padding, dilation, ceil_mode = case
    x = _input(ties)
    values, indices = A.max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode)
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation, "ceil_mode": ceil_mode}
    xn = x.numpy()
    np.testing.assert_array_equal(apply("MaxPool2d", attrs, [xn], "f64"), values.numpy())
    np.testing.assert_array_equal(apply("MaxPool2dIndices", attrs, [xn], "i64"), indices.numpy())
    dy = torch.randn(values.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    want = A.max_pool2d_with_indices_backward(dy, x, kernel, stride, padding, dilation, ceil_mode, indices)
    got = apply("MaxPool2dBackward", {**attrs, "input_shape": list(x.shape)}, [dy.numpy(), indices.numpy()], "f64")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("case", MAX_CASES[1:3])
def test_max_pool_nan_and_minus_inf_follow_torch(case: tuple[Any, ...]) -> None:
    x = _input(True)
    x[0, 0, 2:5, 1:4] = -torch.inf
    x[1, 1].fill_(-torch.inf)
    x[0, 2, 3, 3] = x[0, 2, 4, 5] = x[1, 0, 0, 0] = torch.nan
    values, indices = A.max_pool2d_with_indices(x, *case)
    attrs = dict(zip(("kernel", "stride", "padding", "dilation", "ceil_mode"), case))
    np.testing.assert_array_equal(apply("MaxPool2dIndices", attrs, [x.numpy()], "i64"), indices.numpy())
    np.testing.assert_array_equal(apply("MaxPool2d", attrs, [x.numpy()], "f64"), values.numpy())


@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool_evaluator_matches_torch_in_f64(case: tuple[Any, ...]) -> None:
    kernel, stride, padding, ceil_mode, include, divisor = case
    x = _input(False)
    y = A.avg_pool2d(x, kernel, stride, padding, ceil_mode, include, divisor)
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "ceil_mode": ceil_mode,
             "count_include_pad": include, "divisor_override": divisor}
    np.testing.assert_allclose(apply("AvgPool2d", attrs, [x.numpy()], "f64"), y.numpy(), rtol=1e-14, atol=1e-15)
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    want = A.avg_pool2d_backward(dy, x, kernel, stride, padding, ceil_mode, include, divisor)
    got = apply("AvgPool2dBackward", {**attrs, "input_shape": list(x.shape)}, [dy.numpy()], "f64")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("size", [[1, 1], [3, 5], [4, 3], [9, 8], [2, 7]])
def test_adaptive_avg_pool_evaluator_matches_torch_in_f64(size: list[int]) -> None:
    x = _input(False)
    y = A._adaptive_avg_pool2d(x, size)
    np.testing.assert_allclose(apply("AdaptiveAvgPool2d", {"output_size": size}, [x.numpy()], "f64"), y.numpy(),
                               rtol=1e-14, atol=1e-15)
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    want = A._adaptive_avg_pool2d_backward(dy, x)
    got = apply("AdaptiveAvgPool2dBackward", {"input_shape": list(x.shape)}, [dy.numpy()], "f64")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-14, atol=1e-15)


def test_helper_kernels_match_the_evaluator() -> None:
    x = _input(True)
    _, idx = A.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1], [1, 1], True)
    shape = list(x.shape)
    for part in ("Plane", "Row", "Col"):
        got = kernels.max_pool2d_one_hot(idx, idx.double(), part=part, input_shape=shape)
        want = apply("MaxPool2dOneHot", {"part": part, "input_shape": shape}, [idx.numpy(), idx.double().numpy()],
                     "f64")
        np.testing.assert_array_equal(got.numpy(), want)
    case = {"kernel": [3, 2], "stride": [2, 2], "padding": [1, 1], "ceil_mode": True, "count_include_pad": False,
            "divisor_override": None}
    dy = torch.zeros(2, 3, 5, 5, dtype=torch.float64)
    for axis in (0, 1):
        got = kernels.pool_weights(dy, axis=axis, input_shape=shape, **case)
        want = apply("PoolWeights", {**case, "axis": axis, "input_shape": shape}, [dy.numpy()], "f64")
        np.testing.assert_array_equal(got.numpy(), want)
        got = kernels.adaptive_pool_weights(dy, axis=axis, input_shape=shape)
        want = apply("AdaptivePoolWeights", {"axis": axis, "input_shape": shape}, [dy.numpy()], "f64")
        np.testing.assert_array_equal(got.numpy(), want)


def test_pooling_aten_ops_import_one_to_one() -> None:
    def step(x: torch.Tensor) -> Any:
        v, i = A.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1], [1, 1], True)
        a = A.avg_pool2d(x, [2, 2], [2, 2], [1, 1], True, False, None)
        c = A._adaptive_avg_pool2d(x, [2, 3])
        return (A.max_pool2d_with_indices_backward(v, x, [3, 3], [2, 2], [1, 1], [1, 1], True, i),
                A.avg_pool2d_backward(a, x, [2, 2], [2, 2], [1, 1], True, False, None),
                A._adaptive_avg_pool2d_backward(c, x))

    from torch.fx.experimental.proxy_tensor import make_fx

    x = torch.randn(2, 3, 7, 6)
    imported = elt.import_graph(make_fx(step)(x), [x])
    ops = [n.op for n in imported.graph.nodes]
    for op in ("MaxPool2d", "MaxPool2dIndices", "AvgPool2d", "AdaptiveAvgPool2d") + tuple(sorted(POOL_BACKWARD)):
        assert ops.count(op) == 1, ops
    module = elt.export_graph(imported.graph, imported.signature)
    for got, want in zip(module(x), step(x)):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_max_pool_values_and_indices_of_one_input_export_as_one_call() -> None:
    """A training step's forward takes both (the indices are saved for the gradient): eager computes
    them in one max_pool2d_with_indices, and so does the exported module, not the pooling twice."""
    from egraph_lower.torch.kernels_pool import max_pool2d_with_indices

    b = GraphBuilder("pool")
    x = b.input("x", [2, 3, 9, 8])
    attrs = {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1], "ceil_mode": True}
    other = dict(attrs, kernel=[2, 2])
    graph = b.build([b.op("MaxPool2d", x, **attrs), b.op("MaxPool2dIndices", x, **attrs),
                     b.op("MaxPool2dIndices", x, **other)])
    module = elt.export_graph(graph)
    calls = [n.target for n in module.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    assert calls == [max_pool2d_with_indices, kernels.max_pool2d_indices]  # the pair once; the third alone
    xt = torch.randn(2, 3, 9, 8, dtype=torch.float64)
    values, indices, alone = module(xt)
    want = A.max_pool2d_with_indices(xt, [3, 3], [2, 2], [1, 1], [1, 1], True)
    assert torch.equal(values, want[0]) and torch.equal(indices, want[1])
    assert torch.equal(alone, A.max_pool2d_with_indices(xt, [2, 2], [2, 2], [1, 1], [1, 1], True)[1])


class _ChannelMix(nn.Module):
    """A 1x1 convolution made of a Linear over the channel axis (no convolution op needed)."""

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.lin = nn.Linear(c_in, c_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class _PoolNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mix1 = _ChannelMix(3, 6)
        self.pool1 = nn.MaxPool2d(3, 2, padding=1, ceil_mode=True)
        self.mix2 = _ChannelMix(6, 6)
        self.pool2 = nn.AvgPool2d(2, padding=1, count_include_pad=False)
        self.mix3 = _ChannelMix(6, 6)
        self.pool3 = nn.AdaptiveAvgPool2d((2, 3))
        self.head = nn.Linear(6 * 2 * 3, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pool1(torch.relu(self.mix1(x)))
        h = self.pool2(torch.relu(self.mix2(h)))
        h = h + self.pool3(self.mix3(h)).mean()  # a residual-style join
        h = self.pool3(torch.relu(h))
        return self.head(h.flatten(1))


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_pooling_cnn_training_step_matches_eager(target: str) -> None:
    torch.manual_seed(0)
    eager = _PoolNet()
    x = torch.randint(-2, 3, (4, 3, 11, 10)).float()  # ties in the first max pool's windows
    y = torch.randn(4, 4)
    be, record, _ = train_like_eager(eager, mse_step, x, y, target, lr=LR)
    backend = el.load_backend(target)
    seen: set[str] = set()
    for graph in record:
        assert all(backend.runs_node(n) for n in graph.nodes)
        seen |= {n.op for n in graph.nodes}
    assert not seen & POOL_BACKWARD
    assert {"MaxPool2dOneHot", "PoolWeights", "AdaptivePoolWeights"} & seen


@pytest.mark.parametrize("pool", [nn.MaxPool2d(3, 2, padding=1, ceil_mode=True),
                                  nn.AvgPool2d(3, 2, padding=1, count_include_pad=False),
                                  nn.AdaptiveAvgPool2d((2, 3))])
def test_unbatched_pooling_is_lowered_through_a_reshape(pool: nn.Module) -> None:
    x = torch.randint(-2, 3, (3, 9, 8)).float()
    eager_x, compiled_x = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    be = elt.backend("metal", strict=True)
    out = torch.compile(pool, backend=be, dynamic=False)(compiled_x)
    (out * torch.arange(out.numel()).reshape(out.shape)).sum().backward()
    want = pool(eager_x)
    (want * torch.arange(want.numel()).reshape(want.shape)).sum().backward()
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(compiled_x.grad, eager_x.grad, rtol=1e-4, atol=1e-5)
    assert be.unlowered_ops == {}, be.summary()
