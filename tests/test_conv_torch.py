"""The convolution family through torch: aten's convolution / convolution_backward imported one to one,
training steps of small CNNs compiled for backends without convolution gradient kernels."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.ops import BACKWARD_OPS  # noqa: E402
from torch_steps import mse_step, train_like_eager  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles anew

LR = 0.05  # these models train with a smaller step


def _cnn(seed: int = 0) -> nn.Module:
    """Conv2d + ReLU twice (the second grouped and strided), a depthwise one, then Linear."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2), nn.ReLU(),
        nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=8, bias=False), nn.ReLU(),
        nn.Flatten(), nn.Linear(8 * 4 * 4, 5))


def _cnn1d(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv1d(3, 6, 3, stride=2, padding=1), nn.ReLU(),
                         nn.Conv1d(6, 6, 2, dilation=2, groups=3), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 9, 2))


def _separable(seed: int = 0) -> nn.Module:
    """A depthwise separable block (a depthwise 3x3, strided, then a pointwise 1x1), then Linear."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), nn.ReLU(),
        nn.Conv2d(8, 12, 1), nn.ReLU(),
        nn.Flatten(), nn.Linear(12 * 4 * 4, 3))


BACKENDS_CONV = Path(__file__).parent / "backends_conv"
MODELS = [(_cnn, (4, 3, 8, 8), (4, 5)), (_cnn1d, (4, 3, 21), (4, 2)), (_separable, (2, 4, 8, 8), (2, 3))]


@pytest.mark.parametrize("target", ["metal", "wgpu", "tpu", "mlx", str(BACKENDS_CONV / "conv_no_transpose.json"),
                                    str(BACKENDS_CONV / "conv_neither.json")])
@pytest.mark.parametrize(("make", "x_shape", "y_shape"), MODELS)
def test_cnn_training_step_matches_eager(target: str, make: Callable[[], nn.Module], x_shape: tuple[int, ...],
                                         y_shape: tuple[int, ...]) -> None:
    eager = make()
    torch.manual_seed(1)
    x, y = torch.randn(*x_shape), torch.randn(*y_shape)
    be, record, _ = train_like_eager(eager, mse_step, x, y, target, lr=LR)
    backend = el.load_backend(target)
    for graph in record:
        assert all(backend.runs_node(n) for n in graph.nodes), graph.name
        assert not [n for n in graph.nodes if n.op in BACKWARD_OPS and not backend.runs(n.op)]
        assert not [n for n in graph.nodes if n.op.startswith("Conv2dBackward")]


def test_convolution_backward_is_imported_one_to_one() -> None:
    record: list[el.Graph] = []
    imported: list[el.Graph] = []
    be = elt.backend("cpu", record=record, strict=True)
    model = _cnn()
    step = torch.compile(mse_step(model), backend=be, dynamic=False)
    step(torch.randn(2, 3, 8, 8), torch.randn(2, 5))
    imported = [g for g in record if any(n.op.startswith("Conv2dBackward") for n in g.nodes)]
    assert imported, be.summary()
    ops = [n.op for g in imported for n in g.nodes]
    # the first convolution's input gradient is not needed (output_mask): three weight gradients, two input
    assert ops.count("Conv2dBackwardWeight") == 3 and ops.count("Conv2dBackwardInput") == 2


def test_a_1d_convolution_is_the_2d_ops_on_height_1() -> None:
    record: list[el.Graph] = []
    be = elt.backend("cpu", record=record, strict=True)
    step = torch.compile(mse_step(_cnn1d()), backend=be, dynamic=False)
    step(torch.randn(4, 3, 21), torch.randn(4, 2))
    by_id = {(id(g), n.id): n for g in record for n in g.nodes}
    convs = [(g, n) for g in record for n in g.nodes if n.op.startswith("Conv2d")]
    assert {n.op for _, n in convs} == {"Conv2d", "Conv2dBackwardInput", "Conv2dBackwardWeight"}
    for g, n in convs:
        assert n.attrs["stride"][0] == 1 and n.attrs["padding"][0] == 0 and n.attrs["dilation"][0] == 1
        for i in n.inputs:  # x, w and dy: the 1-D tensors reshaped to height 1
            src = by_id[(id(g), i)]
            assert len(src.shape) == 4 and src.shape[2] == 1 and src.op == "Reshape"


def test_3d_convolutions_import_one_to_one() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    x, w = torch.randn(1, 2, 4, 4, 4), torch.randn(2, 2, 3, 3, 3)
    g = elt.import_graph(make_fx(lambda x, w: torch.nn.functional.conv3d(x, w, stride=2, padding=1))(x, w),
                         (x, w)).graph
    conv = [n for n in g.nodes if n.op == "Conv3d"]
    assert len(conv) == 1 and conv[0].shape == (1, 2, 2, 2, 2) and conv[0].attrs["stride"] == [2, 2, 2]
    assert not any(n.op == "Conv2d" for n in g.nodes)


def _one_node(op: str, ins: list[tuple[int, ...]], attrs: dict[str, Any]) -> el.Graph:
    from egraph_lower.build import GraphBuilder

    b = GraphBuilder(op)
    ids = [b.input(f"in{i}", s, "f64") for i, s in enumerate(ins)]
    return b.build([b.op(op, *ids, **attrs)])


_A = {"stride": [2, 1], "padding": [1, 2], "dilation": [1, 2], "groups": 2}
_P = {k: _A[k] for k in ("stride", "padding", "dilation")}
_X, _W, _DY = (2, 4, 7, 6), (6, 2, 3, 2), (2, 6, 4, 8)


@pytest.mark.parametrize(("op", "ins", "attrs"), [
    ("Conv2d", [_X, _W], _A),
    ("Conv2dBackwardInput", [_DY, _W], {**_A, "input_shape": list(_X)}),
    ("Conv2dBackwardWeight", [_X, _DY], {**_A, "weight_shape": list(_W)}),
    ("ConvTranspose2d", [_DY, _W], {**_A, "output_shape": list(_X)}),
    ("Im2Col", [_X], {**_A, "kernel": [3, 2]}),
    ("Conv2dFlipWeight", [_W], {"groups": 2}),
    ("Conv2dDilatePad", [_DY, _W], {**_P, "input_shape": list(_X)}),
    ("Conv2dColumns", [_X, _W], _A),
    ("Conv2dWeightMatrix", [_W], {"groups": 2}),
    ("Conv2dMergeGroups", [(2, 2, 3, 4, 5)], {}),
])
def test_exported_convolution_ops_match_the_evaluator_in_float64(op: str, ins: list[tuple[int, ...]],
                                                                  attrs: dict[str, Any]) -> None:
    import numpy as np

    graph = _one_node(op, ins, attrs)
    rng = np.random.default_rng(0)
    feeds = {f"in{i}": rng.standard_normal(s) for i, s in enumerate(ins)}
    want = el.evaluate(graph, feeds)[0]
    got = elt.export_graph(graph)(*(torch.from_numpy(feeds[f"in{i}"]) for i in range(len(ins))))[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
