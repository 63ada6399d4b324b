"""The pooling ops of version 3 (3-D max, average and adaptive average pooling, adaptive max pooling
in 2-D and 3-D): reference semantics against finite differences, lowering on backends without
pooling backward kernels, the 3-D helpers, validation and versions. (Against torch:
tests/test_torch_pool3d.py; the rules' numerical check: tests/test_pool.py runs every pooling rule.)"""

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
from egraph_lower.versions import required_version
from support import numeric_vjp

MAX3 = {"kernel": [2, 3, 2], "stride": [2, 1, 2], "padding": [1, 1, 0], "dilation": [1, 1, 2], "ceil_mode": True}
AVG3 = {"kernel": [2, 3, 2], "stride": [2, 2, 1], "padding": [1, 1, 1], "ceil_mode": True, "count_include_pad": False,
        "divisor_override": None}
SHAPE3 = (2, 2, 5, 6, 7)
SHAPE2 = (2, 3, 7, 8)
BACKWARD3 = {"MaxPool3dBackward", "AvgPool3dBackward", "AdaptiveAvgPool3dBackward", "AdaptiveMaxPool3dBackward",
             "AdaptiveMaxPool2dBackward"}


@pytest.mark.parametrize("attrs", [AVG3, {**AVG3, "count_include_pad": True, "ceil_mode": False},
                                   {**AVG3, "divisor_override": 5, "stride": [1, 2, 3]}])
def test_avg_pool3d_backward_is_the_derivative(attrs: dict[str, Any]) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE3)
    y = apply("AvgPool3d", attrs, [x], "f64")
    dy = rng.standard_normal(y.shape)
    dx = apply("AvgPool3dBackward", {**attrs, "input_shape": list(SHAPE3)}, [dy], "f64")
    want = numeric_vjp(lambda v: apply("AvgPool3d", attrs, [v], "f64"), x, dy)
    np.testing.assert_allclose(dx, want, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("out", [[2, 4, 5], [5, 6, 7], [1, 1, 1], [3, 2, 4]])
def test_adaptive_avg_pool3d_backward_is_the_derivative(out: list[int]) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(SHAPE3)
    dy = rng.standard_normal(SHAPE3[:2] + tuple(out))
    dx = apply("AdaptiveAvgPool3dBackward", {"input_shape": list(SHAPE3)}, [dy], "f64")
    want = numeric_vjp(lambda v: apply("AdaptiveAvgPool3d", {"output_size": out}, [v], "f64"), x, dy)
    np.testing.assert_allclose(dx, want, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize(("op", "shape", "attrs"), [
    ("MaxPool3d", SHAPE3, MAX3),
    ("AdaptiveMaxPool3d", SHAPE3, {"output_size": [3, 4, 5]}),
    ("AdaptiveMaxPool2d", SHAPE2, {"output_size": [3, 5]}),
])
def test_max_pool_backward_is_the_derivative_away_from_ties(op: str, shape: tuple[int, ...],
                                                           attrs: dict[str, Any]) -> None:
    rng = np.random.default_rng(2)
    x = rng.permutation(np.prod(shape)).reshape(shape) * 1e-3  # distinct values: no ties
    idx = apply(f"{op}Indices", attrs, [x], "i64")
    dy = rng.standard_normal(idx.shape)
    window = {k: v for k, v in attrs.items() if k != "output_size"}
    dx = apply(f"{op}Backward", {**window, "input_shape": list(shape)}, [dy, idx], "f64")
    want = numeric_vjp(lambda v: apply(op, attrs, [v], "f64"), x, dy, h=1e-7)
    np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-7)


def test_adaptive_max_pool_ties_go_to_the_first_maximum() -> None:
    x = np.zeros((1, 1, 5, 4))
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = 5.0  # one window of output 0 holds both
    x[0, 0, 3:, :] = -np.inf  # the last windows' rows: all -inf where no number is left
    idx = apply("AdaptiveMaxPool2dIndices", {"output_size": [2, 2]}, [x], "i64")
    # windows: rows [0, 3), [2, 5); cols [0, 2), [2, 4)
    assert idx[0, 0].tolist() == [[5, 6], [8, 10]]
    assert apply("AdaptiveMaxPool2d", {"output_size": [2, 2]}, [x], "f64")[0, 0].tolist() == [[5.0, 5.0], [0.0, 0.0]]


def _graph() -> el.Graph:
    b = GraphBuilder("pool3d step")
    x = b.input("x", list(SHAPE3))
    x2 = b.input("x2", list(SHAPE2))
    tiled = {"kernel": [2, 2, 3], "stride": [2, 2, 3], "padding": [0, 0, 0], "dilation": [1, 1, 1]}
    idx = b.op("MaxPool3dIndices", x, **MAX3)
    tidx = b.op("MaxPool3dIndices", x, **tiled)
    aidx = b.op("AdaptiveMaxPool3dIndices", x, output_size=[3, 4, 5])
    aidx2 = b.op("AdaptiveMaxPool2dIndices", x2, output_size=[3, 5])
    dys = {name: b.input(name, list(b.meta(node)[0])) for name, node in (
        ("dmax", idx), ("dtiled", tidx), ("damax", aidx), ("damax2", aidx2),
        ("davg", b.op("AvgPool3d", x, **AVG3)), ("dada", b.op("AdaptiveAvgPool3d", x, output_size=[2, 4, 5])))}
    ishape, ishape2 = list(SHAPE3), list(SHAPE2)
    outs = [b.op("MaxPool3d", x, **MAX3), b.op("AdaptiveMaxPool3d", x, output_size=[3, 4, 5]),
            b.op("AdaptiveMaxPool2d", x2, output_size=[3, 5]),
            b.op("MaxPool3dBackward", dys["dmax"], idx, **MAX3, input_shape=ishape),
            b.op("MaxPool3dBackward", dys["dtiled"], tidx, **tiled, input_shape=ishape),
            b.op("AdaptiveMaxPool3dBackward", dys["damax"], aidx, input_shape=ishape),
            b.op("AdaptiveMaxPool2dBackward", dys["damax2"], aidx2, input_shape=ishape2),
            b.op("AvgPool3dBackward", dys["davg"], **AVG3, input_shape=ishape),
            b.op("AdaptiveAvgPool3dBackward", dys["dada"], input_shape=ishape)]
    return b.build(outs)


def _feeds(graph: el.Graph) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    out = {}
    for n in graph.nodes:
        if n.op == "Input":
            ties = n.attrs["name"].startswith("x")
            v = rng.integers(-3, 4, size=n.shape) if ties else rng.standard_normal(n.shape)  # ties in x
            out[n.attrs["name"]] = np.asarray(v, dtype=np.float32)
    return out


@pytest.mark.parametrize("target", ["metal", "wgpu", "tpu", "mlx"])
def test_lowered_pool3d_step_runs_on_the_backend_and_agrees(target: str) -> None:
    graph = _graph()
    result = el.lower(graph, target)
    backend = el.load_backend(target)
    ops = {n.op for n in result.graph.nodes}
    assert not ops & BACKWARD3
    assert all(backend.runs_node(n) for n in result.graph.nodes)
    assert ("ScatterAdd" in ops) == (target != "wgpu")
    feeds = _feeds(graph)
    for got, want in zip(evaluate(result.graph, feeds), evaluate(graph, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_wgpu_takes_the_tiled_form_where_3d_windows_tile() -> None:
    fired = el.lower(_graph(), "wgpu").report.rules_fired
    assert "maxpool3d-bwd-tiled" in fired and "maxpool3d-bwd-onehot" in fired


def test_cpu_keeps_the_pooling_backward_kernels() -> None:
    ops = {n.op for n in el.lower(_graph(), "cpu").graph.nodes}
    assert BACKWARD3 <= ops


def test_every_3d_and_adaptive_max_backward_op_has_its_expansions() -> None:
    lowered = {BY_NAME[name].lhs.ctor for name in BY_NAME if "pool" in name}  # type: ignore[attr-defined]
    assert BACKWARD3 <= lowered
    assert {"maxpool3d-bwd-onehot", "maxpool3d-bwd-scatter", "maxpool3d-bwd-tiled", "avgpool3d-bwd-w-first",
            "avgpool3d-bwd-d-first", "adaptive-avgpool3d-bwd-w-first", "adaptive-avgpool3d-bwd-d-first",
            "adaptive-maxpool-bwd-onehot", "adaptive-maxpool-bwd-scatter", "adaptive-maxpool3d-bwd-onehot",
            "adaptive-maxpool3d-bwd-scatter"} <= set(BY_NAME)


def _document(nodes: list[dict[str, Any]], version: int) -> str:
    return json.dumps({"format": "egraph-lower/graph", "version": version, "nodes": nodes,
                       "outputs": [nodes[-1]["id"]]})


def _inp(nid: int, shape: list[int], dtype: str = "f32") -> dict[str, Any]:
    return {"id": nid, "op": "Input", "attrs": {"name": f"x{nid}"}, "inputs": [], "shape": shape, "dtype": dtype}


def _weights(rank: int) -> dict[str, Any]:
    nd = rank - 2
    attrs = {"axis": 0, "kernel": [2] * nd, "stride": [2] * nd, "padding": [0] * nd, "input_shape": [1, 1] + [4] * nd}
    return {"id": 1, "op": "PoolWeights", "attrs": attrs, "inputs": [0], "shape": [2, 4], "dtype": "f32"}


def test_3d_pooling_needs_version_3_and_2d_helpers_stay_version_2() -> None:
    pool = {"id": 1, "op": "AvgPool3d", "attrs": {"kernel": [2, 2, 2], "stride": [2, 2, 2], "padding": [0, 0, 0]},
            "inputs": [0], "shape": [1, 1, 2, 2, 2], "dtype": "f32"}
    assert required_version(el.from_json(_document([_inp(0, [1, 1, 4, 4, 4]), pool], 3)).nodes) == 3
    with pytest.raises(GraphError, match="node 1"):
        el.from_json(_document([_inp(0, [1, 1, 4, 4, 4]), pool], 2))
    assert required_version(el.from_json(_document([_inp(0, [1, 1, 2, 2]), _weights(4)], 2)).nodes) == 2
    assert required_version(el.from_json(_document([_inp(0, [1, 1, 2, 2, 2]), _weights(5)], 3)).nodes) == 3
    with pytest.raises(GraphError, match="node 1.*PoolWeights of 3-D pooling"):
        el.from_json(_document([_inp(0, [1, 1, 2, 2, 2]), _weights(5)], 2))


@pytest.mark.parametrize("node, words", [
    ({"op": "MaxPool3d", "attrs": {"kernel": [2, 2], "stride": [2, 2, 2], "padding": [0, 0, 0],
                                   "dilation": [1, 1, 1]}, "shape": [1, 1, 2, 2, 2]}, "three integers"),
    ({"op": "MaxPool3d", "attrs": {"kernel": [2, 2, 2], "stride": [2, 2, 2], "padding": [0, 2, 0],
                                   "dilation": [1, 1, 1]}, "shape": [1, 1, 2, 2, 2]}, "padding"),
    ({"op": "AdaptiveMaxPool2d", "attrs": {"output_size": [2, 2]}, "shape": [1, 1, 2, 2]}, "rank 4"),
    ({"op": "PoolWeights", "attrs": {"axis": 2, "kernel": [2, 2], "stride": [2, 2], "padding": [0, 0],
                                     "input_shape": [1, 1, 4, 4]}, "shape": [2, 4]}, "spatial axis"),
    ({"op": "MaxPool2dOneHot", "attrs": {"part": "Row", "input_shape": [1, 4, 4]}, "shape": [4, 1, 1, 4, 4, 4],
      "inputs": [0, 0]}, "rank 4 (N, C, H, W) or 5 (N, C, D, H, W)"),
])
def test_bad_3d_pooling_nodes_are_refused_in_one_line(node: dict[str, Any], words: str) -> None:
    full = {"id": 1, "inputs": [0], "dtype": "f32", **node}
    with pytest.raises(GraphError) as e:
        el.from_json(_document([_inp(0, [1, 1, 4, 4, 4]), full], 3))
    message = str(e.value)
    assert "\n" not in message and "node 1" in message and words in message, message


def test_max_unpool_writes_each_value_at_its_index_and_the_last_window_wins() -> None:
    x = np.arange(1.0, 9.0).reshape(1, 1, 1, 8)
    idx = np.array([3, 3, 1, 3, 1, 0, 5, 5]).reshape(1, 1, 1, 8)
    y = apply("MaxUnpool2d", {"output_size": [1, 6]}, [x, idx], "f64")
    assert y[0, 0, 0].tolist() == [6.0, 5.0, 0.0, 4.0, 0.0, 8.0]
    with pytest.raises(el.LowerError, match="MaxUnpool2d: index 6 is outside the 1 x 6 volume"):
        apply("MaxUnpool2d", {"output_size": [1, 6]}, [x, np.where(idx == 5, 6, idx)], "f64")


@pytest.mark.parametrize("target", ["metal", "wgpu", "tpu", "mlx"])
def test_lowered_max_unpool_agrees_where_windows_overlap(target: str) -> None:
    """Overlapping windows (kernel 3, stride 1) name positions several times: Scatter (metal, tpu) and
    the one-hot form (wgpu, mlx: no Scatter kernel) keep the last window's value, as the reference."""
    b = GraphBuilder("unpool")
    x2, x3 = b.input("x2", [2, 3, 6, 7]), b.input("x3", list(SHAPE3))
    outs = []
    for nd, x, shape in ((2, x2, [6, 7]), (3, x3, list(SHAPE3[2:]))):
        attrs = {"kernel": [3] * nd, "stride": [1] * nd, "padding": [1] * nd, "dilation": [1] * nd}
        idx = b.op(f"MaxPool{nd}dIndices", x, **attrs)
        v = b.input(f"v{nd}", list(b.meta(idx)[0]))
        outs.append(b.op(f"MaxUnpool{nd}d", v, idx, output_size=shape))
    graph = b.build(outs)
    result = el.lower(graph, target)
    ops = result.graph.op_counts()
    assert not {"MaxUnpool2d", "MaxUnpool3d"} & set(ops)
    assert ("Scatter" in ops) == (target in ("metal", "tpu"))
    rng = np.random.default_rng(4)
    feeds = {n.attrs["name"]: rng.integers(-2, 3, size=n.shape).astype(np.float32) if n.attrs["name"][0] == "x"
             else rng.standard_normal(n.shape).astype(np.float32) for n in graph.nodes if n.op == "Input"}
    for got, want in zip(evaluate(result.graph, feeds), evaluate(graph, feeds)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["MaxPool3d", "AdaptiveMaxPool3d"])
def test_wgpu_weighs_the_3d_max_pool_expansions_by_size(op: str) -> None:
    """Without ScatterAdd: on a small volume the one-hot over the volume is cheapest; on a 8 x 16 x 16
    one the separable form, whose one-hots are D * H + W long per window, not D * H * W."""
    attrs = ({"kernel": [3, 3, 3], "stride": [2, 2, 2], "padding": [1, 1, 1], "dilation": [1, 1, 1]}
             if op == "MaxPool3d" else {"output_size": [3, 5, 5]})
    won = {}
    for shape in ((2, 2, 4, 4, 4), (2, 4, 8, 16, 16)):
        b = GraphBuilder("max pool 3-d backward")
        idx = b.op(f"{op}Indices", b.input("x", list(shape)), **attrs)
        dy = b.input("dy", list(b.meta(idx)[0]))
        window = {k: v for k, v in attrs.items() if k != "output_size"}
        graph = b.build([b.op(f"{op}Backward", dy, idx, **window, input_shape=list(shape))])
        choice = next(c for c in el.explore(graph, "wgpu").report()["choices"] if c["op"] == f"{op}Backward")
        (chosen,) = [a for a in choice["alternatives"] if a["chosen"]]
        assert chosen["cost"] == min(a["cost"] for a in choice["alternatives"] if a["legal"])
        won[shape[-1]] = chosen["rules"]
    prefix = "maxpool3d" if op == "MaxPool3d" else "adaptive-maxpool3d"
    assert won == {4: [f"{prefix}-bwd-onehot"], 16: [f"{prefix}-bwd-separable"]}
