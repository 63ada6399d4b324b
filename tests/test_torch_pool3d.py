"""The pooling ops of version 3 against PyTorch: the reference evaluator against torch's kernels in
float64 (3-D max pooling with ties, NaN and -inf, ceil_mode, padding, dilation; 3-D average pooling
with count_include_pad and divisor_override; adaptive average and max pooling with windows of unequal
sizes), the aten mapping both ways (the Core ATen 1-D overloads too), and training steps of models
with 3-D and adaptive max pooling compiled for metal and wgpu."""

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

A = torch.ops.aten
BACKWARD = {"MaxPool3dBackward", "AvgPool3dBackward", "AdaptiveAvgPool3dBackward", "AdaptiveMaxPool2dBackward",
            "AdaptiveMaxPool3dBackward"}

# (kernel, stride, padding, dilation, ceil_mode), on a 5 x 7 x 6 input
MAX_CASES = [
    ([2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False),
    ([3, 3, 2], [2, 2, 1], [1, 1, 1], [1, 1, 1], True),   # overlapping, padded, a clipped last window
    ([2, 3, 2], [1, 2, 3], [1, 1, 0], [2, 1, 2], True),   # dilated
]
# (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVG_CASES = [
    ([2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, None),
    ([3, 3, 2], [2, 2, 1], [1, 1, 1], True, False, None),
    ([3, 2, 3], [1, 2, 2], [1, 1, 1], True, True, None),
    ([2, 3, 2], [2, 1, 2], [1, 1, 0], False, False, 5),
]
SIZES = [[1, 1, 1], [2, 3, 4], [5, 7, 6], [3, 5, 2]]


def _input(ties: bool, shape: tuple[int, ...] = (2, 3, 5, 7, 6)) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    if ties:
        return torch.randint(-2, 3, shape, generator=g).double()
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def _dy(shape: Any) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)


def _odd(x: torch.Tensor) -> torch.Tensor:
    """x with -inf planes and boxes, and NaNs."""
    x = x.clone()
    x[0, 0, 1:4, 2:5, 1:4] = -torch.inf
    x[1, 1].fill_(-torch.inf)
    x[0, 2, 2, 3, 3] = x[0, 2, 3, 4, 5] = x[1, 0, 0, 0, 0] = torch.nan
    return x


@pytest.mark.parametrize("odd", [False, True])
@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool3d_evaluator_matches_torch_in_f64(case: tuple[Any, ...], odd: bool) -> None:
    x = _odd(_input(True)) if odd else _input(True)
    values, indices = A.max_pool3d_with_indices(x, *case)
    attrs = dict(zip(("kernel", "stride", "padding", "dilation", "ceil_mode"), case))
    np.testing.assert_array_equal(apply("MaxPool3d", attrs, [x.numpy()], "f64"), values.numpy())
    np.testing.assert_array_equal(apply("MaxPool3dIndices", attrs, [x.numpy()], "i64"), indices.numpy())
    dy = _dy(values.shape)
    want = A.max_pool3d_with_indices_backward(dy, x, *case, indices)
    got = apply("MaxPool3dBackward", {**attrs, "input_shape": list(x.shape)}, [dy.numpy(), indices.numpy()], "f64")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool3d_evaluator_matches_torch_in_f64(case: tuple[Any, ...]) -> None:
    kernel, stride, padding, ceil_mode, include, divisor = case
    x = _input(False)
    y = A.avg_pool3d(x, kernel, stride, padding, ceil_mode, include, divisor)
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "ceil_mode": ceil_mode,
             "count_include_pad": include, "divisor_override": divisor}
    np.testing.assert_allclose(apply("AvgPool3d", attrs, [x.numpy()], "f64"), y.numpy(), rtol=1e-14, atol=1e-15)
    dy = _dy(y.shape)
    want = A.avg_pool3d_backward(dy, x, kernel, stride, padding, ceil_mode, include, divisor)
    got = apply("AvgPool3dBackward", {**attrs, "input_shape": list(x.shape)}, [dy.numpy()], "f64")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("size", SIZES)
def test_adaptive_avg_pool3d_evaluator_matches_torch_in_f64(size: list[int]) -> None:
    x = _input(False)
    y = A._adaptive_avg_pool3d(x, size)
    np.testing.assert_allclose(apply("AdaptiveAvgPool3d", {"output_size": size}, [x.numpy()], "f64"), y.numpy(),
                               rtol=1e-14, atol=1e-15)
    dy = _dy(y.shape)
    got = apply("AdaptiveAvgPool3dBackward", {"input_shape": list(x.shape)}, [dy.numpy()], "f64")
    np.testing.assert_allclose(got, A._adaptive_avg_pool3d_backward(dy, x).numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("odd", [False, True])
@pytest.mark.parametrize("size", SIZES)
def test_adaptive_max_pool_evaluator_matches_torch_in_f64(size: list[int], odd: bool) -> None:
    x3 = _odd(_input(True)) if odd else _input(True)
    for x, out, op, bwd in ((x3, size, "AdaptiveMaxPool3d", A.adaptive_max_pool3d_backward),
                            (x3[:, :, 1], size[1:], "AdaptiveMaxPool2d", A.adaptive_max_pool2d_backward)):
        fwd = A.adaptive_max_pool3d if len(out) == 3 else A.adaptive_max_pool2d
        values, indices = fwd(x, out)
        np.testing.assert_array_equal(apply(op, {"output_size": out}, [x.numpy()], "f64"), values.numpy())
        np.testing.assert_array_equal(apply(f"{op}Indices", {"output_size": out}, [x.numpy()], "i64"), indices.numpy())
        dy = _dy(values.shape)
        got = apply(f"{op}Backward", {"input_shape": list(x.shape)}, [dy.numpy(), indices.numpy()], "f64")
        np.testing.assert_allclose(got, bwd(dy, x, indices).numpy(), rtol=1e-14, atol=1e-14)


def test_3d_helper_kernels_match_the_evaluator() -> None:
    x = _input(True)
    _, idx = A.max_pool3d_with_indices(x, [3, 3, 2], [2, 2, 1], [1, 1, 1], [1, 1, 1], True)
    shape = list(x.shape)
    for part in ("Plane", "Row", "Col"):
        got = kernels.max_pool2d_one_hot(idx, idx.double(), part=part, input_shape=shape)
        want = apply("MaxPool2dOneHot", {"part": part, "input_shape": shape}, [idx.numpy(), idx.double().numpy()],
                     "f64")
        np.testing.assert_array_equal(got.numpy(), want)
    case = {"kernel": [3, 2, 3], "stride": [1, 2, 2], "padding": [1, 1, 1], "ceil_mode": True,
            "count_include_pad": False, "divisor_override": 3}
    dy = torch.zeros(2, 3, *apply("AvgPool3d", case, [x.numpy()], "f64").shape[2:], dtype=torch.float64)
    for axis in (0, 1, 2):
        got = kernels.pool_weights(dy, axis=axis, input_shape=shape, **case)
        want = apply("PoolWeights", {**case, "axis": axis, "input_shape": shape}, [dy.numpy()], "f64")
        np.testing.assert_array_equal(got.numpy(), want)
        got = kernels.adaptive_pool_weights(dy, axis=axis, input_shape=shape)
        want = apply("AdaptivePoolWeights", {"axis": axis, "input_shape": shape}, [dy.numpy()], "f64")
        np.testing.assert_array_equal(got.numpy(), want)


def test_pooling_aten_ops_of_version_3_import_one_to_one() -> None:
    def step(x: torch.Tensor, x2: torch.Tensor, x1: torch.Tensor) -> Any:
        v, i = A.max_pool3d_with_indices(x, [3, 3, 2], [2, 2, 1], [1, 1, 1], [1, 1, 1], True)
        a = A.avg_pool3d(x, [2, 2, 2], [2, 1, 2], [1, 1, 1], True, False, None)
        c = A._adaptive_avg_pool3d(x, [2, 3, 4])
        m, mi = A.adaptive_max_pool3d(x, [2, 3, 4])
        m2, mi2 = A.adaptive_max_pool2d(x2, [3, 4])
        return (A.max_pool3d_with_indices_backward(v, x, [3, 3, 2], [2, 2, 1], [1, 1, 1], [1, 1, 1], True, i),
                A.avg_pool3d_backward(a, x, [2, 2, 2], [2, 1, 2], [1, 1, 1], True, False, None),
                A._adaptive_avg_pool3d_backward(c, x), A.adaptive_max_pool3d_backward(m, x, mi),
                A.adaptive_max_pool2d_backward(m2, x2, mi2),
                A.avg_pool1d(x1, [3], [2], [1], True, False), A.adaptive_avg_pool1d(x1, [4]))

    from torch.fx.experimental.proxy_tensor import make_fx

    x, x2, x1 = torch.randn(2, 3, 5, 7, 6), torch.randn(2, 3, 7, 6), torch.randn(2, 3, 9)
    gm = make_fx(step, pre_dispatch=True)(x, x2, x1)  # keeps the composite 1-D overloads whole
    assert {"aten.avg_pool1d.default", "aten.adaptive_avg_pool1d.default"} <= {str(n.target) for n in gm.graph.nodes}
    imported = elt.import_graph(gm, [x, x2, x1])
    ops = [n.op for n in imported.graph.nodes]
    for op in ("MaxPool3d", "MaxPool3dIndices", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d",
               "AdaptiveMaxPool3dIndices", "AdaptiveMaxPool2d", "AdaptiveMaxPool2dIndices", "AvgPool2d",
               "AdaptiveAvgPool2d") + tuple(sorted(BACKWARD)):
        assert ops.count(op) == 1, (op, ops)
    module = elt.export_graph(imported.graph, imported.signature)
    for got, want in zip(module(x, x2, x1), step(x, x2, x1)):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_adaptive_and_3d_max_pool_values_and_indices_export_as_one_call() -> None:
    from egraph_lower.torch.kernels_pool import adaptive_max_pool_with_indices, max_pool2d_with_indices

    b = GraphBuilder("pool")
    x = b.input("x", [2, 3, 5, 7, 6])
    attrs = {"kernel": [3, 3, 2], "stride": [2, 2, 1], "padding": [1, 1, 1], "dilation": [1, 1, 1], "ceil_mode": True}
    size = {"output_size": [2, 3, 4]}
    graph = b.build([b.op("MaxPool3d", x, **attrs), b.op("MaxPool3dIndices", x, **attrs),
                     b.op("AdaptiveMaxPool3d", x, **size), b.op("AdaptiveMaxPool3dIndices", x, **size)])
    module = elt.export_graph(graph)
    calls = [n.target for n in module.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    assert calls == [max_pool2d_with_indices, adaptive_max_pool_with_indices]
    xt = torch.randn(2, 3, 5, 7, 6, dtype=torch.float64)
    got = module(xt)
    for g, w in zip(got, A.max_pool3d_with_indices(xt, [3, 3, 2], [2, 2, 1], [1, 1, 1], [1, 1, 1], True)
                    + A.adaptive_max_pool3d(xt, [2, 3, 4])):
        assert torch.equal(g, w)


class _Pool3dNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin1 = nn.Linear(3, 4)
        self.pool1 = nn.MaxPool3d(2, 2, padding=1, ceil_mode=True)
        self.pool2 = nn.AvgPool3d((2, 2, 3), (1, 2, 2), padding=1, count_include_pad=False)
        self.pool3 = nn.AdaptiveAvgPool3d((2, 2, 3))
        self.pool4 = nn.AdaptiveMaxPool3d((2, 3, 2))
        self.pool5 = nn.AdaptiveMaxPool2d((3, 2))
        self.pool6 = nn.AdaptiveMaxPool1d(3)
        self.head = nn.Linear(4 * (12 + 12 + 6 + 3), 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.lin1(x.permute(0, 2, 3, 4, 1)).permute(0, 4, 1, 2, 3))
        h = self.pool2(self.pool1(h))
        flat = [self.pool3(h).flatten(1), self.pool4(h).flatten(1), self.pool5(h.sum(2)).flatten(1),
                self.pool6(h.sum((2, 3))).flatten(1)]
        return self.head(torch.cat(flat, 1))


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_pool3d_training_step_matches_eager(target: str) -> None:
    torch.manual_seed(0)
    x = torch.randint(-2, 3, (2, 3, 6, 7, 8)).float()  # ties in the max pools' windows
    be, record, _ = train_like_eager(_Pool3dNet(), mse_step, x, torch.randn(2, 4), target, lr=0.05)
    backend = el.load_backend(target)
    seen: set[str] = set()
    for graph in record:
        assert all(backend.runs_node(n) for n in graph.nodes)
        seen |= {n.op for n in graph.nodes}
    assert not seen & BACKWARD
    assert {"MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AdaptiveMaxPool2d"} <= seen


@pytest.mark.parametrize("pool", [nn.MaxPool3d(3, 2, padding=1, ceil_mode=True),
                                  nn.AvgPool3d(3, 2, padding=1, count_include_pad=False),
                                  nn.AdaptiveAvgPool3d((2, 3, 2)), nn.AdaptiveMaxPool3d((2, 3, 2))])
def test_unbatched_3d_pooling_is_lowered_through_a_reshape(pool: nn.Module) -> None:
    x = torch.randint(-2, 3, (3, 5, 7, 6)).float()
    eager_x, compiled_x = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    be = elt.backend("wgpu", strict=True)
    out = torch.compile(pool, backend=be, dynamic=False)(compiled_x)
    (out * torch.arange(out.numel()).reshape(out.shape)).sum().backward()
    want = pool(eager_x)
    (want * torch.arange(want.numel()).reshape(want.shape)).sum().backward()
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(compiled_x.grad, eager_x.grad, rtol=1e-4, atol=1e-5)
    assert be.unlowered_ops == {}, be.summary()


@pytest.mark.parametrize("nd", [2, 3])
def test_max_unpool_matches_torch_on_one_thread_and_imports_one_to_one(nd: int) -> None:
    """Overlapping windows name positions several times: on one thread torch's kernel writes in order
    (the last window wins, the format's rule); on several its threads race."""
    x = _input(True) if nd == 3 else _input(True)[:, :, 0]
    pool = A.max_pool3d_with_indices if nd == 3 else A.max_pool2d_with_indices
    values, indices = pool(x, [3] * nd, [1] * nd, [1] * nd, [1] * nd, False)
    size = list(x.shape[2:])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if nd == 3:
            want = A.max_unpool3d(values, indices, size, [1] * 3, [1] * 3)
        else:
            want = A.max_unpool2d(values, indices, size)
    finally:
        torch.set_num_threads(threads)
    got = apply(f"MaxUnpool{nd}d", {"output_size": size}, [values.numpy(), indices.numpy()], "f64")
    np.testing.assert_array_equal(got, want.numpy())

    def step(v: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        if nd == 3:
            return A.max_unpool3d(v, i, size, [1] * 3, [1] * 3)  # type: ignore[no-any-return]
        return A.max_unpool2d(v, i, size)  # type: ignore[no-any-return]

    from torch.fx.experimental.proxy_tensor import make_fx

    imported = elt.import_graph(make_fx(step)(values, indices), [values, indices])
    assert [n.op for n in imported.graph.nodes].count(f"MaxUnpool{nd}d") == 1
    module = elt.export_graph(imported.graph, imported.signature)
    assert torch.equal(module(values, indices), want)


class _Audio1d(nn.Module):
    """A 1-D audio CNN (issue 20's): Conv1d, GroupNorm, exact GELU, max_pool1d, avg_pool1d and the
    1-D adaptive poolings, which aten hands over as 2-D poolings of an unsqueezed input."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(2, 6, 5, padding=2)
        self.norm = nn.GroupNorm(3, 6)
        self.conv2 = nn.Conv1d(6, 6, 3, padding=1)
        self.head = nn.Linear(6 * 8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = nn.functional.max_pool1d(nn.functional.gelu(self.norm(self.conv1(x))), 3, 2, padding=1, ceil_mode=True)
        h = nn.functional.avg_pool1d(torch.relu(self.conv2(h)), 2, count_include_pad=False, padding=1)
        return self.head(torch.cat([nn.functional.adaptive_max_pool1d(h, 4), nn.functional.adaptive_avg_pool1d(h, 4)],
                                   2).flatten(1))


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_audio_1d_cnn_training_step_matches_eager(target: str) -> None:
    torch.manual_seed(0)
    x = torch.randint(-2, 3, (3, 2, 37)).float()  # ties in the max pools' windows
    _, record, _ = train_like_eager(_Audio1d(), mse_step, x, torch.randn(3, 3), target, lr=0.05)
    seen = {n.op for graph in record for n in graph.nodes}
    assert {"MaxPool2d", "AvgPool2d", "AdaptiveMaxPool2d", "AdaptiveAvgPool2d"} <= seen
    assert not seen & {"MaxPool2dBackward", "AvgPool2dBackward", "AdaptiveMaxPool2dBackward",
                       "AdaptiveAvgPool2dBackward"}
