"""3-D convolutions (issue 20) through torch.compile on backends without a 3-D convolution gradient kernel:
nn.Conv3d and nn.ConvTranspose3d training steps equal eager's gradients with nothing left in PyTorch; bad 3-D
attributes are refused in one line naming the node."""

from __future__ import annotations

import copy
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.errors import GraphError  # noqa: E402
from torch_steps import mse_step, train_like_eager  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles anew


def _conv3d(seed: int = 0) -> nn.Module:
    """Conv3d strided and padded with bias, then dilated and grouped without bias, then Linear."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv3d(2, 4, 2, stride=(2, 1, 2), padding=(1, 0, 1)), nn.ReLU(),
        nn.Conv3d(4, 4, (2, 2, 1), dilation=(1, 2, 1), groups=2, bias=False), nn.ReLU(),
        nn.Flatten(), nn.Linear(4 * 1 * 1 * 3, 3))


def _tconv3d(seed: int = 0) -> nn.Module:
    """ConvTranspose3d stride 2 with output_padding and groups (bias), then one without bias."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.ConvTranspose3d(4, 4, 2, stride=2, output_padding=(1, 0, 1), groups=2), nn.ReLU(),
        nn.ConvTranspose3d(4, 2, (1, 2, 2), padding=(0, 1, 0), bias=False),
        nn.Flatten(), nn.Linear(2 * 5 * 3 * 6, 3))


MODELS = [(_conv3d, (2, 2, 3, 4, 5), (2, 3)), (_tconv3d, (1, 4, 2, 2, 2), (1, 3))]


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize(("make", "x_shape", "y_shape"), MODELS)
def test_3d_training_step_matches_eager_in_float32(target: str, make: Any, x_shape: tuple[int, ...],
                                                    y_shape: tuple[int, ...]) -> None:
    eager = make()
    torch.manual_seed(1)
    x, y = torch.randn(*x_shape), torch.randn(*y_shape)
    be, record, _ = train_like_eager(eager, mse_step, x, y, target, lr=0.05)  # asserts unlowered_ops == {}
    assert be.unlowered_ops == {}
    ops = {n.op for g in record for n in g.nodes}
    assert not ops & {"Conv3dBackwardInput", "Conv3dBackwardWeight"}, ops  # no such kernel on either
    if target == "wgpu":
        assert not ops & {"Conv3d", "ConvTranspose3d"}, ops  # every 3-D convolution a MatMul
    assert "MatMul" in ops or target == "metal"


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize(("make", "x_shape", "y_shape"), MODELS)
def test_3d_gradients_match_eager_in_float64(target: str, make: Any, x_shape: tuple[int, ...],
                                             y_shape: tuple[int, ...]) -> None:
    eager = make().double()
    compiled = copy.deepcopy(eager)
    torch.manual_seed(1)
    x, y = torch.randn(*x_shape, dtype=torch.float64), torch.randn(*y_shape, dtype=torch.float64)
    be = elt.backend(target, strict=True)
    step = torch.compile(mse_step(compiled), backend=be, dynamic=False)
    step(x, y)
    mse_step(eager)(x, y)
    for (name, p), q in zip(compiled.named_parameters(), eager.parameters()):
        assert p.grad is not None and q.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-10, atol=1e-12, msg=lambda m: f"{name}: {m}")
    assert be.unlowered_ops == {}, be.summary()


def _doc(op: str, ins: list[list[int]], shape: list[int], attrs: dict[str, Any]) -> dict[str, Any]:
    nodes = [{"id": i, "op": "Input", "attrs": {"name": f"in{i}"}, "inputs": [], "shape": s, "dtype": "f32"}
             for i, s in enumerate(ins)]
    nodes.append({"id": 9, "op": op, "attrs": attrs, "inputs": list(range(len(ins))), "shape": shape,
                  "dtype": "f32"})
    return {"format": "egraph-lower/graph", "version": 3, "outputs": [9], "nodes": nodes}


_A = {"stride": [1, 1, 1], "padding": [0, 0, 0], "dilation": [1, 1, 1], "groups": 1}


@pytest.mark.parametrize(("op", "ins", "shape", "attrs", "words"), [
    ("Conv3d", [[1, 3, 4, 4, 4], [4, 2, 2, 2, 2]], [1, 4, 3, 3, 3], _A, "needs 2 input channels"),
    ("Conv3d", [[1, 4, 4, 4, 4], [3, 2, 2, 2, 2]], [1, 3, 3, 3, 3], {**_A, "groups": 2}, "multiples of groups 2"),
    ("Conv3d", [[1, 3, 1, 4, 4], [4, 3, 2, 2, 2]], [1, 4, 0, 3, 3], _A, "does not fit"),
    ("Conv3d", [[1, 3, 4, 4, 4], [4, 3, 2, 2, 2]], [1, 4, 3, 3, 3], {**_A, "stride": [1, 0, 1]}, "stride"),
    ("Conv3d", [[1, 3, 4, 4, 4], [4, 3, 2, 2, 2]], [1, 4, 3, 3, 3], {**_A, "padding": [1, 1]}, "padding"),
    ("Conv3d", [[1, 3, 4, 4], [4, 3, 2, 2, 2]], [1, 4, 3, 3, 3], _A, "5-D"),
    ("ConvTranspose3d", [[1, 4, 3, 3, 3], [4, 3, 2, 2, 2]], [1, 3, 4, 4, 4], {**_A, "output_shape": [1, 3, 4, 4]},
     "5 entries"),
    ("Conv3dBackwardWeight", [[1, 3, 4, 4, 4], [1, 4, 3, 3, 3]], [4, 3, 2, 2], {**_A, "weight_shape": [4, 3, 2, 2]},
     "5 entries"),
])
def test_bad_3d_convolution_nodes_are_refused_in_one_line(op: str, ins: list[list[int]], shape: list[int],
                                                           attrs: dict[str, Any], words: str) -> None:
    with pytest.raises(GraphError, match=words) as e:
        el.validated(el.from_dict(_doc(op, ins, shape, attrs)))
    assert str(e.value).startswith("node 9") and "\n" not in str(e.value)
