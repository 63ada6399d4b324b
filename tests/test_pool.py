"""The pooling family: reference semantics against finite differences, lowering on backends
without pooling backward kernels, the rules' numerical check, validation and versions.
(Against torch: tests/test_torch_pool.py.)"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import GraphError
from egraph_lower.evaluate import apply, evaluate
from egraph_lower.rules import BY_NAME
from egraph_lower.rules.check import check_rule
from egraph_lower.versions import required_version
from support import numeric_vjp

MAX = {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "dilation": [1, 2], "ceil_mode": True}
AVG = {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "ceil_mode": True, "count_include_pad": False,
       "divisor_override": None}
SHAPE = (2, 3, 7, 8)
POOL_RULES = [name for name in BY_NAME if "pool" in name]

@pytest.mark.parametrize("attrs", [AVG, {**AVG, "count_include_pad": True, "ceil_mode": False},
                                   {**AVG, "divisor_override": 5, "stride": [1, 2]},
                                   {**AVG, "divisor_override": -3}])
def test_avg_pool_backward_is_the_derivative(attrs: dict[str, Any]) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE)
    y = apply("AvgPool2d", attrs, [x], "f64")
    dy = rng.standard_normal(y.shape)
    dx = apply("AvgPool2dBackward", {**attrs, "input_shape": list(SHAPE)}, [dy], "f64")
    want = numeric_vjp(lambda v: apply("AvgPool2d", attrs, [v], "f64"), x, dy)
    np.testing.assert_allclose(dx, want, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("out", [[3, 5], [7, 8], [1, 1], [4, 3]])
def test_adaptive_avg_pool_backward_is_the_derivative(out: list[int]) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(SHAPE)
    dy = rng.standard_normal(SHAPE[:2] + tuple(out))
    dx = apply("AdaptiveAvgPool2dBackward", {"input_shape": list(SHAPE)}, [dy], "f64")
    want = numeric_vjp(lambda v: apply("AdaptiveAvgPool2d", {"output_size": out}, [v], "f64"), x, dy)
    np.testing.assert_allclose(dx, want, rtol=1e-7, atol=1e-8)


def test_max_pool_backward_is_the_derivative_away_from_ties() -> None:
    rng = np.random.default_rng(2)
    x = rng.permutation(np.prod(SHAPE)).reshape(SHAPE) * 1e-3  # distinct values: no ties
    idx = apply("MaxPool2dIndices", MAX, [x], "i64")
    dy = rng.standard_normal(idx.shape)
    dx = apply("MaxPool2dBackward", {**MAX, "input_shape": list(SHAPE)}, [dy, idx], "f64")
    want = numeric_vjp(lambda v: apply("MaxPool2d", MAX, [v], "f64"), x, dy, h=1e-7)
    np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-7)


def test_max_pool_indices_name_the_first_maximum_and_the_values() -> None:
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = 5.0  # a tie inside one 2x2 window
    attrs = {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1]}
    idx = apply("MaxPool2dIndices", attrs, [x], "i64")
    assert idx[0, 0].tolist() == [[5, 6], [8, 10]]  # first maximum in window order; all-zero windows: the first
    assert apply("MaxPool2d", attrs, [x], "f32")[0, 0].tolist() == [[5.0, 5.0], [0.0, 0.0]]


def _pool_training_graph() -> el.Graph:
    b = GraphBuilder("pool step")
    x = b.input("x", list(SHAPE))
    dmax = b.input("dmax", [2, 3, 4, 8])
    davg = b.input("davg", [2, 3, 4, 9])
    dada = b.input("dada", [2, 3, 3, 5])
    idx = b.op("MaxPool2dIndices", x, **MAX)
    outs = [b.op("MaxPool2d", x, **MAX), b.op("AvgPool2d", x, **AVG), b.op("AdaptiveAvgPool2d", x, output_size=[3, 5]),
            b.op("MaxPool2dBackward", dmax, idx, **MAX, input_shape=list(SHAPE)),
            b.op("AvgPool2dBackward", davg, **AVG, input_shape=list(SHAPE)),
            b.op("AdaptiveAvgPool2dBackward", dada, input_shape=list(SHAPE))]
    return b.build(outs)


def _feeds(graph: el.Graph) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    out = {}
    for n in graph.nodes:
        if n.op == "Input":
            out[n.attrs["name"]] = rng.integers(-3, 4, size=n.shape).astype(np.float32)  # ties in x
    return out


@pytest.mark.parametrize("target", ["metal", "wgpu", "tpu", "mlx"])
def test_lowered_pool_step_runs_on_the_backend_and_agrees(target: str) -> None:
    graph = _pool_training_graph()
    result = el.lower(graph, target)
    backend = el.load_backend(target)
    ops = {n.op for n in result.graph.nodes}
    assert not ops & {"MaxPool2dBackward", "AvgPool2dBackward", "AdaptiveAvgPool2dBackward"}
    assert all(backend.runs_node(n) for n in result.graph.nodes)
    feeds = _feeds(graph)
    for got, want in zip(evaluate(result.graph, feeds), evaluate(graph, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_cpu_keeps_the_pooling_backward_kernels() -> None:
    graph = _pool_training_graph()
    ops = [n.op for n in el.lower(graph, "cpu").graph.nodes]
    assert {"MaxPool2dBackward", "AvgPool2dBackward", "AdaptiveAvgPool2dBackward"} <= set(ops)


def test_explore_lists_the_pooling_expansions() -> None:
    ex = el.explore(_pool_training_graph(), "metal", compare=["wgpu"])
    report = ex.report()
    by_op = {c["op"]: c for c in report["choices"]}
    for op, names in (("MaxPool2dBackward", {"maxpool-bwd-onehot", "maxpool-bwd-separable"}),
                      ("AvgPool2dBackward", {"avgpool-bwd-cols-first", "avgpool-bwd-rows-first"})):
        alts = by_op[op]["alternatives"]
        used = {r for a in alts for r in a["rules"]}
        assert names <= used
        chosen = [a for a in alts if a["chosen"]]
        assert len(chosen) == 1 and chosen[0]["legal"] and op not in chosen[0]["ops"]


@pytest.mark.parametrize("name", POOL_RULES)
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
def test_pool_rules_pass_the_numerical_check(name: str, dtype: str) -> None:
    result = check_rule(BY_NAME[name], dtype)
    assert result.ok, result


def test_pool_rules_are_stated() -> None:
    assert {"maxpool-bwd-onehot", "maxpool-bwd-separable", "maxpool-bwd-scatter", "avgpool-bwd-cols-first",
            "avgpool-bwd-rows-first", "adaptive-avgpool-bwd-cols-first", "adaptive-avgpool-bwd-rows-first"} <= set(POOL_RULES)


def _document(nodes: list[dict[str, Any]], version: int = 2) -> str:
    return json.dumps({"format": "egraph-lower/graph", "version": version, "nodes": nodes,
                       "outputs": [nodes[-1]["id"]]})


def _inp(nid: int, shape: list[int], dtype: str = "f32") -> dict[str, Any]:
    return {"id": nid, "op": "Input", "attrs": {"name": f"x{nid}"}, "inputs": [], "shape": shape, "dtype": dtype}


def test_a_pooling_document_needs_version_2() -> None:
    pool = {"id": 1, "op": "AvgPool2d", "attrs": {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0]},
            "inputs": [0], "shape": [1, 1, 2, 2], "dtype": "f32"}
    graph = el.from_json(_document([_inp(0, [1, 1, 4, 4]), pool]))
    assert required_version(graph.nodes) == 2
    with pytest.raises(GraphError, match="node 1"):
        el.from_json(_document([_inp(0, [1, 1, 4, 4]), pool], version=1))


@pytest.mark.parametrize("attrs, shape, words", [
    ({"kernel": [2, 2], "stride": [2, 2], "padding": [2, 0], "dilation": [1, 1]}, [1, 1, 4, 2], "padding"),
    ({"kernel": [2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1]}, [1, 1, 2, 2], "kernel"),
    ({"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1]}, [1, 1, 3, 2], "shape"),
])
def test_bad_pooling_nodes_are_refused_in_one_line(attrs: dict[str, Any], shape: list[int], words: str) -> None:
    node = {"id": 1, "op": "MaxPool2d", "attrs": attrs, "inputs": [0], "shape": shape, "dtype": "f32"}
    with pytest.raises(GraphError) as e:
        el.from_json(_document([_inp(0, [1, 1, 4, 4]), node]))
    message = str(e.value)
    assert "\n" not in message and "node 1" in message and words in message


def test_max_pool_backward_needs_i64_indices() -> None:
    node = {"id": 2, "op": "MaxPool2dBackward", "inputs": [0, 1], "shape": [1, 1, 4, 4], "dtype": "f32",
            "attrs": {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1],
                      "input_shape": [1, 1, 4, 4]}}
    with pytest.raises(GraphError, match="node 2.*i64"):
        el.from_json(_document([_inp(0, [1, 1, 2, 2]), _inp(1, [1, 1, 2, 2], "f32"), node]))


def _max_backward_graph(shape: tuple[int, ...], attrs: dict[str, Any]) -> el.Graph:
    b = GraphBuilder("max pool backward")
    x = b.input("x", list(shape))
    idx = b.op("MaxPool2dIndices", x, **attrs)
    dy = b.input("dy", list(b.meta(idx)[0]))
    return b.build([b.op("MaxPool2dBackward", dy, idx, **attrs, input_shape=list(shape))])


OVERLAPPING = {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1]}
TILED = {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1]}


@pytest.mark.parametrize(("target", "windows", "small", "large"), [
    ("wgpu", "overlapping", "maxpool-bwd-onehot", "maxpool-bwd-separable"),
    ("wgpu", "tiled", "maxpool-bwd-onehot", "maxpool-bwd-tiled"),
    ("metal", "overlapping", "maxpool-bwd-scatter", "maxpool-bwd-scatter"),
    ("metal", "tiled", "maxpool-bwd-scatter", "maxpool-bwd-scatter"),
])
def test_extraction_weighs_the_max_pool_expansions_by_size(target: str, windows: str, small: str, large: str) -> None:
    """Without ScatterAdd (wgpu): the plane one-hot is one op fewer; the separable form needs H + W,
    not H * W, per window: on a small plane the first is cheaper, on a 32 x 32 plane the second, and
    where the windows tile the plane, the elementwise form beats both. With it (metal), the
    scatter-add reads each dy and index once: cheapest at both sizes. The tiled form is offered only
    where the windows tile the plane."""
    attrs = TILED if windows == "tiled" else OVERLAPPING
    won = {}
    for shape in ((2, 3, 4, 4), (8, 16, 32, 32)):
        choice = next(c for c in el.explore(_max_backward_graph(shape, attrs), target).report()["choices"]
                      if c["op"] == "MaxPool2dBackward")
        (chosen,) = [a for a in choice["alternatives"] if a["chosen"]]
        others = [a["cost"] for a in choice["alternatives"] if a["legal"]]
        assert chosen["cost"] == min(others)
        assert any(a["rules"] == ["maxpool-bwd-tiled"] for a in choice["alternatives"]) == (windows == "tiled")
        won[shape[-1]] = chosen["rules"]
    assert won == {4: [small], 32: [large]}


@pytest.mark.parametrize("backend", ["metal", "tpu", "wgpu"])
def test_max_pool_backward_with_overlapping_windows_and_ties_sends_each_gradient_to_its_index(backend: str) -> None:
    """Kernel 3, stride 1: the centre element of a plane of equal values is inside nine windows;
    the element each window's index names (the first maximum) gets that window's gradient, and
    the gradients of windows naming the same element add up; compared with torch's own kernel."""
    attrs = {"kernel": [3, 3], "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "ceil_mode": False}
    shape = (2, 2, 5, 5)
    graph = _max_backward_graph(shape, attrs)
    x = np.random.default_rng(9).integers(0, 3, size=shape).astype(np.float32)
    x[0, 0] = 1.0  # all equal: every window ties
    x[1, 1, 2, 2] = 9.0  # the maximum of the nine windows around it
    dy = np.random.default_rng(10).standard_normal((2, 2, 5, 5)).astype(np.float32)
    result = el.lower(graph, backend)
    assert ("ScatterAdd" in result.graph.op_counts()) == (backend != "wgpu")
    got = evaluate(result.graph, {"x": x, "dy": dy})[0]
    torch = pytest.importorskip("torch")
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    y = torch.nn.functional.max_pool2d(xt, 3, 1, 1)
    y.backward(torch.tensor(dy, dtype=torch.float64))
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-6, atol=1e-6)
    assert got[1, 1, 2, 2] == pytest.approx(float(dy[1, 1, 1:4, 1:4].sum()), rel=1e-6)


def test_tiled_max_pool_backward_matches_torch_past_the_last_window_and_on_ties() -> None:
    """Kernel = stride 2 x 3 on a 31 x 32 plane: row 30 and columns 30, 31 are in no window (their
    gradient is 0), ties (a plane of equal values) and -inf (the first index wins) as torch's own
    kernel has them; wgpu takes the tiled form at this size, checked in float64 against torch."""
    attrs = {"kernel": [2, 3], "stride": [2, 3], "padding": [0, 0], "dilation": [1, 1], "ceil_mode": False}
    shape = (4, 8, 31, 32)
    x = np.random.default_rng(9).integers(0, 3, size=shape).astype(np.float64)
    x[0, 0] = 1.0
    x[1, 1] = -np.inf
    graph = _max_backward_graph(shape, attrs)
    dy = np.random.default_rng(10).standard_normal((4, 8, 15, 10))
    result = el.lower(graph, "wgpu")
    assert "maxpool-bwd-tiled" in result.report.rules_fired
    ops = result.graph.op_counts()
    assert "Iota" in ops and not {"MaxPool2dBackward", "MatMul", "MaxPool2dOneHot"} & set(ops)  # the tiled form
    got = evaluate(result.graph, {"x": x.astype(np.float32), "dy": dy.astype(np.float32)})[0]
    torch = pytest.importorskip("torch")
    xt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.max_pool2d(xt, (2, 3), (2, 3)).backward(torch.tensor(dy.astype(np.float32), dtype=torch.float64))
    np.testing.assert_array_equal(got, xt.grad.numpy().astype(np.float32))
    assert not got[:, :, 30].any() and not got[:, :, :, 30:].any() and got.any()


def test_max_pool_backward_refuses_an_index_outside_the_plane() -> None:
    attrs = {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "input_shape": [1, 1, 4, 4]}
    dy, idx = np.ones((1, 1, 2, 2)), np.array([[[[0, 2], [8, 16]]]])
    with pytest.raises(el.LowerError, match="MaxPool2dBackward: index 16 is outside the 4 x 4 plane"):
        apply("MaxPool2dBackward", attrs, [dy, idx], "f32")
