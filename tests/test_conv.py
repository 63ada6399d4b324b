"""The convolution family (opdefs/conv.py, rules/conv.py): meaning, gradients, validation, lowering.

The gradients are checked three independent ways: against float64 central finite
differences of the evaluator's Conv2d, against torch's own kernels in float64, and
(through every backend's lowering) against the ops left in place on cpu.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import GraphError
from egraph_lower.evaluate import apply
from support import assert_lowering_matches

HAS_TORCH = importlib.util.find_spec("torch") is not None
BACKENDS_DIR = Path(__file__).parent / "backends_conv"

# (x shape, w shape, stride, padding, dilation, groups): plain, strided, padded past the kernel,
# dilated, grouped, depthwise, 1-D as height 1, strides that skip input columns (then rows): the
# weight gradient as a convolution comes out longer than the kernel along no axis, both, W, H
CASES = [
    ((2, 3, 6, 5), (4, 3, 3, 3), [1, 1], [0, 0], [1, 1], 1),
    ((2, 4, 7, 6), (6, 2, 3, 2), [2, 1], [1, 2], [1, 2], 2),
    ((1, 4, 8, 8), (4, 1, 3, 3), [2, 2], [1, 1], [1, 1], 4),
    ((2, 3, 1, 9), (5, 3, 1, 3), [1, 2], [0, 1], [1, 2], 1),
    ((1, 2, 9, 7), (2, 2, 2, 2), [3, 3], [3, 0], [2, 1], 1),
    ((2, 6, 5, 5), (3, 2, 1, 1), [1, 1], [0, 0], [1, 1], 3),
    ((2, 2, 8, 5), (3, 2, 3, 2), [2, 1], [1, 0], [1, 1], 1),
]


def _attrs(case: tuple[Any, ...]) -> dict[str, Any]:
    return {"stride": case[2], "padding": case[3], "dilation": case[4], "groups": case[5]}


def _arrays(case: tuple[Any, ...], seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(case[0]), rng.standard_normal(case[1])
    y = apply("Conv2d", _attrs(case), [x, w], "f64")
    return x, w, rng.standard_normal(y.shape)


def _grads(case: tuple[Any, ...], x: np.ndarray, w: np.ndarray, dy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = _attrs(case)
    dx = apply("Conv2dBackwardInput", {**a, "input_shape": list(x.shape)}, [dy, w], "f64")
    dw = apply("Conv2dBackwardWeight", {**a, "weight_shape": list(w.shape)}, [x, dy], "f64")
    return dx, dw


@pytest.mark.parametrize("case", CASES)
def test_gradients_match_float64_finite_differences(case: tuple[Any, ...]) -> None:
    x, w, dy = _arrays(case)
    dx, dw = _grads(case, x, w, dy)
    rng = np.random.default_rng(1)

    def loss(xv: np.ndarray, wv: np.ndarray) -> float:
        return float(np.sum(apply("Conv2d", _attrs(case), [xv, wv], "f64") * dy))

    h = 1e-6
    for arr, grad, which in ((x, dx, 0), (w, dw, 1)):
        for _ in range(6):
            i = tuple(int(rng.integers(n)) for n in arr.shape)
            e = np.zeros_like(arr)
            e[i] = h
            args = [(x + e, w), (x - e, w)] if which == 0 else [(x, w + e), (x, w - e)]
            fd = (loss(*args[0]) - loss(*args[1])) / (2 * h)
            assert abs(fd - grad[i]) <= 1e-6 * max(1.0, abs(fd)), (which, i, fd, grad[i])


@pytest.mark.parametrize("case", CASES)
def test_transposed_convolution_is_the_input_gradient(case: tuple[Any, ...]) -> None:
    x, w, dy = _arrays(case)
    dx, _ = _grads(case, x, w, dy)
    got = apply("ConvTranspose2d", {**_attrs(case), "output_shape": list(x.shape)}, [dy, w], "f64")
    np.testing.assert_array_equal(got, dx)


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
@pytest.mark.parametrize("case", CASES)
def test_evaluator_agrees_with_torch_in_float64(case: tuple[Any, ...]) -> None:
    import torch

    x, w, dy = _arrays(case)
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    yt = torch.nn.functional.conv2d(xt, wt, None, case[2], case[3], case[4], case[5])
    yt.backward(torch.tensor(dy))
    y = apply("Conv2d", _attrs(case), [x, w], "f64")
    dx, dw = _grads(case, x, w, dy)
    assert xt.grad is not None and wt.grad is not None
    for got, want in ((y, yt.detach()), (dx, xt.grad), (dw, wt.grad)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)


def conv_step(case: tuple[Any, ...], dtype: str = "f32") -> el.Graph:
    b = GraphBuilder("conv_step")
    a = _attrs(case)
    x, w = b.input("x", case[0], dtype), b.param("w", case[1], dtype)
    y = b.op("Conv2d", x, w, **a)
    dy = b.input("dy", b.meta(y)[0], dtype)
    dx = b.op("Conv2dBackwardInput", dy, w, input_shape=list(case[0]), **a)
    dw = b.op("Conv2dBackwardWeight", x, dy, weight_shape=list(case[1]), **a)
    db = b.reduce("Sum", dy, [0, 2, 3])
    return b.build([y, dx, dw, db])


def _feeds(graph: el.Graph, dtype: str = "f32") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {n.attrs["name"]: apply("Cast", {"to": dtype}, [rng.standard_normal(n.shape)], dtype)
            for n in graph.nodes if n.op in ("Input", "Param")}


@pytest.mark.parametrize("backend", ["cpu", "mlx", "metal", "tpu", "wgpu", str(BACKENDS_DIR / "conv_no_transpose.json"),
                                     str(BACKENDS_DIR / "conv_neither.json")])
@pytest.mark.parametrize("case", CASES)
def test_the_gradients_lower_legally_and_correctly(backend: str, case: tuple[Any, ...]) -> None:
    graph = conv_step(case)
    target = el.load_backend(backend)
    result = el.lower(graph, target)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    counts = result.graph.op_counts()
    assert ("Conv2dBackwardInput" in counts) == target.runs("Conv2dBackwardInput")
    assert ("Conv2dBackwardWeight" in counts) == target.runs("Conv2dBackwardWeight")
    assert ("Conv2d" in counts) == target.runs("Conv2d")
    assert_lowering_matches(graph, result.graph, _feeds(graph))


def test_backends_with_and_without_a_transposed_convolution_choose_differently() -> None:
    graph = conv_step(CASES[1])
    metal = el.lower(graph, "metal").graph.op_counts()
    plain = el.lower(graph, el.load_backend(str(BACKENDS_DIR / "conv_no_transpose.json"))).graph.op_counts()
    assert "ConvTranspose2d" in metal and "Conv2dDilatePad" not in metal
    assert "ConvTranspose2d" not in plain and "Conv2dDilatePad" in plain and plain["Conv2d"] >= 2


def _no_im2col(tmp_path: Path) -> el.Backend:
    """conv_no_transpose without Im2Col: the weight gradient can only become a convolution."""
    doc = json.loads((BACKENDS_DIR / "conv_no_transpose.json").read_text())
    doc["name"], doc["ops"] = "conv_no_im2col", [op for op in doc["ops"] if op != "Im2Col"]
    path = tmp_path / "conv_no_im2col.json"
    path.write_text(json.dumps(doc))
    return el.load_backend(str(path))


@pytest.mark.parametrize("case", CASES)
def test_the_weight_gradient_as_a_convolution(case: tuple[Any, ...], tmp_path: Path) -> None:
    graph = conv_step(case, "f64")
    result = el.lower(graph, _no_im2col(tmp_path))
    convs = [n for n in result.graph.nodes if n.op == "Conv2d"]
    if list(case[1][2:]) == [1, 1] and case[2] == [1, 1] and case[3] == [0, 0]:
        # pointwise: x is its own unfolding, so the weight gradient is a MatMul of x and dy as they are,
        # cheaper than a convolution (conv-bwd-weight-pointwise)
        assert len(convs) == 2
        assert any("conv-bwd-weight-pointwise" in (n.name or "") for n in result.graph.nodes if n.op == "MatMul")
    else:
        # the forward convolution, the input gradient's and the weight gradient's: stride and dilation exchanged
        assert len(convs) == 3
        assert any(n.attrs["stride"] == case[4] and n.attrs["dilation"] == case[2] and n.shape[0] == case[1][1]
                   for n in convs)
    assert_lowering_matches(graph, result.graph, _feeds(graph, "f64"))


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
@pytest.mark.parametrize("case", CASES)
def test_lowered_weight_gradient_matches_torchs_convolution_backward(case: tuple[Any, ...], tmp_path: Path) -> None:
    import torch

    graph = conv_step(case, "f64")
    lowered = el.lower(graph, _no_im2col(tmp_path)).graph
    feeds = _feeds(graph, "f64")
    _, dx, dw, db = el.evaluate(lowered, feeds)
    x, w, dy = (torch.from_numpy(feeds[k]) for k in ("x", "w", "dy"))
    want = torch.ops.aten.convolution_backward(dy, x, w, [case[1][0]], case[2], case[3], case[4], False, [0, 0],
                                               case[5], [True, True, True])
    for got, ref in zip((dx, dw, db), want):
        np.testing.assert_allclose(got, ref.numpy(), rtol=1e-10, atol=1e-10)


def test_a_large_strided_weight_gradient_transposes_dy_not_the_unfolded_input() -> None:
    # the unfolded x is KH*KW = 9 times larger than x: on a backend without a convolution kernel the
    # transposed product (dy and the weight-sized result transposed) is the cheapest expansion
    case = ((8, 32, 32, 32), (64, 32, 3, 3), [2, 2], [1, 1], [1, 1], 1)
    graph = conv_step(case)
    lowered = el.lower(graph, el.load_backend(str(BACKENDS_DIR / "conv_neither.json"))).graph
    made = {n.name.split("/", 1)[1] for n in lowered.nodes if n.name and n.name.startswith("n5/")}
    assert made == {"conv-bwd-weight-im2col-t"}
    assert_lowering_matches(graph, lowered, _feeds(graph))


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f64"])
def test_expansions_in_other_dtypes(dtype: str) -> None:
    graph = conv_step(CASES[1], dtype)
    backend = el.load_backend(str(BACKENDS_DIR / "conv_no_transpose.json"))
    assert_lowering_matches(graph, el.lower(graph, backend).graph, _feeds(graph, dtype))


def _doc(op: str, ins: list[list[int]], shape: list[int], attrs: dict[str, Any]) -> dict[str, Any]:
    nodes = [{"id": i, "op": "Input", "attrs": {"name": f"in{i}"}, "inputs": [], "shape": s, "dtype": "f32"}
             for i, s in enumerate(ins)]
    nodes.append({"id": 9, "op": op, "attrs": attrs, "inputs": list(range(len(ins))), "shape": shape,
                  "dtype": "f32"})
    return {"format": "egraph-lower/graph", "version": 2, "outputs": [9], "nodes": nodes}


_A = {"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1}


@pytest.mark.parametrize(("op", "ins", "shape", "attrs", "words"), [
    ("Conv2d", [[1, 3, 5, 5], [4, 2, 3, 3]], [1, 4, 3, 3], _A, "needs 2 input channels"),
    ("Conv2d", [[1, 4, 5, 5], [3, 2, 3, 3]], [1, 3, 3, 3], {**_A, "groups": 2}, "multiples of groups 2"),
    ("Conv2d", [[1, 3, 2, 2], [4, 3, 3, 3]], [1, 4, 0, 0], _A, "does not fit"),
    ("Conv2d", [[1, 3, 5, 5], [4, 3, 3, 3]], [1, 4, 3, 3], {**_A, "stride": [0, 1]}, "stride"),
    ("Conv2d", [[1, 3, 5, 5], [4, 3, 3, 3]], [1, 4, 3, 3], {**_A, "padding": [1]}, "padding"),
    ("Conv2d", [[3, 5, 5], [4, 3, 3, 3]], [1, 4, 3, 3], _A, "4-D"),
    ("Conv2dBackwardInput", [[1, 4, 2, 3], [4, 3, 3, 3]], [1, 3, 5, 5], {**_A, "input_shape": [1, 3, 5, 5]},
     "dy has shape"),
    ("Conv2dBackwardWeight", [[1, 3, 5, 5], [1, 4, 3, 3]], [4, 3, 3], {**_A, "weight_shape": [4, 3, 3]},
     "4 entries"),
])
def test_bad_convolution_nodes_are_refused_in_one_line(op: str, ins: list[list[int]], shape: list[int],
                                                        attrs: dict[str, Any], words: str) -> None:
    with pytest.raises(GraphError, match=words) as e:
        el.validated(el.from_dict(_doc(op, ins, shape, attrs)))
    assert str(e.value).startswith("node 9") and "\n" not in str(e.value)


def test_a_graph_with_a_convolution_is_written_as_version_2() -> None:
    assert el.from_json(conv_step(CASES[0]).to_json()).to_dict()["version"] == 2


def _chosen(backend: str) -> dict[str, dict[str, Any]]:
    """The chosen alternative per rewritten node of explore's report, by op."""
    report = el.explore(conv_step(CASES[1]), el.load_backend(backend)).report()
    out = {}
    for choice in report["choices"]:
        chosen = [a for a in choice["alternatives"] if a["chosen"]]
        assert len(chosen) == 1 and chosen[0]["legal"]
        out[choice["op"]] = chosen[0]
    return out


def test_the_explore_report_shows_each_backends_choice_per_convolution() -> None:
    metal = _chosen("metal")
    plain = _chosen(str(BACKENDS_DIR / "conv_no_transpose.json"))
    neither = _chosen(str(BACKENDS_DIR / "conv_neither.json"))
    assert metal["Conv2dBackwardInput"]["rules"] == ["conv-bwd-input-transpose"]
    # the same Conv2d of the spread-out dy and the flipped weight, reached directly or through the
    # transposed convolution (conv-bwd-input-transpose, then conv-transpose-conv): one e-node, either name
    assert plain["Conv2dBackwardInput"]["rules"] in (["conv-bwd-input-conv"], ["conv-transpose-conv"])
    assert {"Conv2d", "Conv2dDilatePad", "Conv2dFlipWeight"} <= set(plain["Conv2dBackwardInput"]["ops"])
    assert {"Conv2dDilatePad", "MatMul"} <= set(neither["Conv2dBackwardInput"]["ops"])
    assert neither["Conv2d"]["rules"] == ["conv-im2col"] and "Conv2d" not in metal and "Conv2d" not in plain
    for chosen in (metal, plain, neither):
        assert chosen["Conv2dBackwardWeight"]["rules"][0].startswith("conv-bwd-weight-")


# issue 22: a depthwise-separable network's convolutions on a backend without a convolution kernel
_SEPARABLE = [
    (((2, 4, 6, 6), (4, 1, 3, 3), [1, 1], [1, 1], [1, 1], 4), None, None),  # depthwise
    (((2, 4, 6, 6), (6, 4, 1, 1), [1, 1], [0, 0], [1, 1], 1), "conv-bwd-input-pointwise", "conv-bwd-weight-pointwise"),
    (((2, 4, 5, 6), (6, 2, 1, 1), [1, 1], [0, 0], [2, 1], 2), "conv-bwd-input-pointwise", "conv-bwd-weight-pointwise"),
]


@pytest.mark.parametrize("case,input_rule,weight_rule", _SEPARABLE)
def test_stride_1_and_pointwise_gradients_take_fewer_kernels_on_wgpu(case: tuple[Any, ...], input_rule: str | None,
                                                                     weight_rule: str | None) -> None:
    graph = conv_step(case)
    result = el.lower(graph, "wgpu")
    names = [n.name or "" for n in result.graph.nodes]
    counts = result.graph.op_counts()
    # no spread-out copy of dy (stride 1: conv-bwd-input-conv-s1, the only runnable form without one, whose
    # convolution conv-im2col then names), and for a 1 x 1 kernel no unfolding of dy or of x either
    assert "Conv2dDilatePad" not in counts
    if input_rule is None:
        assert counts["Conv2dColumns"] == 2  # the forward convolution's and the input gradient's
    else:
        assert any(input_rule in name for name in names)
    if weight_rule is not None:
        assert any(weight_rule in name for name in names)
        assert "Im2Col" not in counts
        # the forward convolution's unfolding is the only one left
        assert counts.get("Conv2dColumns", 0) == 1
    assert_lowering_matches(graph, result.graph, _feeds(graph))
