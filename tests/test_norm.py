"""The normalization ops (opdefs/norm.py): reference semantics, derivatives checked by finite differences
in float64, validation, the shape-derived e-graph field, and lowering on every backend.
(PyTorch agreement and training steps: tests/test_norm_torch.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.egraph import language
from egraph_lower.errors import GraphError
from egraph_lower.evaluate import apply
from egraph_lower.graph import Node
from support import assert_lowering_matches, f64, numeric_grad

BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")
NEW_OPS = ("InvStd", "InvRms", "LayerNorm", "LayerNormBackwardInput", "LayerNormBackwardWeight",
           "LayerNormBackwardBias", "RmsNorm", "RmsNormBackwardInput", "RmsNormBackwardWeight", "BatchNormTraining",
           "BatchNormTrainingBackwardInput", "BatchNormTrainingBackwardGamma", "BatchNormTrainingBackwardBeta")
EPS = 1e-5
def _ln_stats(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    axes = list(range(axis, x.ndim))
    mean = f64("Reduce", {"op": "Mean", "axes": axes, "keep_dim": True}, x)
    return mean, f64("InvStd", {"axes": axes, "eps": EPS, "keep_dim": True}, x)


# --------------------------------------------------------------------------- reference semantics

def test_statistics_follow_their_definitions() -> None:
    x = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]])
    var = np.array([14 / 9, 0.0])
    np.testing.assert_allclose(f64("InvStd", {"axes": [1], "eps": EPS}, x), 1 / np.sqrt(var + EPS), rtol=1e-15)
    rms = np.array([7.0, 9.0])
    np.testing.assert_allclose(f64("InvRms", {"axes": [-1], "eps": EPS, "keep_dim": True}, x),
                               (1 / np.sqrt(rms + EPS))[:, None], rtol=1e-15)


def test_layer_norm_is_accurate_for_rows_far_from_zero() -> None:
    # 1e4 + [-1e-3, 0, 1e-3]: the centred values are recovered to float64 accuracy (corrected two-pass)
    x = 1e4 + np.array([[-1e-3, 0.0, 1e-3]])
    y = f64("LayerNorm", {"axis": 1, "eps": 0.0}, x, np.ones(3), np.zeros(3))
    np.testing.assert_allclose(y, [[-np.sqrt(1.5), 0.0, np.sqrt(1.5)]], rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("rows", ["constant", "length-1"])
def test_zero_variance_gives_zero_and_finite_gradients(rows: str) -> None:
    x = np.full((3, 4), 2.5) if rows == "constant" else np.array([[1.0], [-2.0]])
    w, b = np.full(x.shape[1:], 3.0), np.full(x.shape[1:], 0.5)
    np.testing.assert_array_equal(f64("LayerNorm", {"axis": 1, "eps": EPS}, x, w, b), np.full(x.shape, 0.5))
    mean, rstd = _ln_stats(x, 1)
    dx = f64("LayerNormBackwardInput", {"axis": 1}, x, w, mean, rstd, np.ones(x.shape))
    np.testing.assert_array_equal(dx, np.zeros(x.shape))


# --------------------------------------------------------------------------- derivatives vs finite differences

@pytest.mark.parametrize("axis", [1, 2, -1])
def test_layer_norm_backward_ops_are_its_derivatives(axis: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4)) * 2 + 1
    a = axis % 3
    w, b = rng.standard_normal(x.shape[a:]), rng.standard_normal(x.shape[a:])
    dy = rng.standard_normal(x.shape)
    attrs = {"axis": axis, "eps": 1e-3}

    def loss(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> float:
        return float(np.sum(dy * f64("LayerNorm", attrs, x, w, b)))

    axes = list(range(a, 3))
    mean = f64("Reduce", {"op": "Mean", "axes": axes, "keep_dim": True}, x)
    rstd = f64("InvStd", {"axes": axes, "eps": 1e-3, "keep_dim": True}, x)
    got = (f64("LayerNormBackwardInput", {"axis": axis}, x, w, mean, rstd, dy),
           f64("LayerNormBackwardWeight", {"axis": axis}, x, mean, rstd, dy),
           f64("LayerNormBackwardBias", {"axis": axis}, dy))
    want = (numeric_grad(lambda v: loss(v, w, b), x), numeric_grad(lambda v: loss(x, v, b), w),
            numeric_grad(lambda v: loss(x, w, v), b))
    for g, n in zip(got, want):
        np.testing.assert_allclose(g, n, rtol=1e-6, atol=1e-7)


def test_rms_norm_backward_ops_are_its_derivatives() -> None:
    rng = np.random.default_rng(1)
    x, w, dy = rng.standard_normal((3, 5)), rng.standard_normal(5), rng.standard_normal((3, 5))
    attrs = {"axis": 1, "eps": 1e-3}
    r = f64("InvRms", {"axes": [1], "eps": 1e-3, "keep_dim": True}, x)
    got_x = f64("RmsNormBackwardInput", {"axis": 1}, x, w, r, dy)
    got_w = f64("RmsNormBackwardWeight", {"axis": 1}, x, r, dy)
    np.testing.assert_allclose(got_x, numeric_grad(lambda v: float(np.sum(dy * f64("RmsNorm", attrs, v, w))), x),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_w, numeric_grad(lambda v: float(np.sum(dy * f64("RmsNorm", attrs, x, v))), w),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 2, 2)])
def test_batch_norm_training_backward_ops_are_its_derivatives(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape) * np.arange(1, 4).reshape((3,) + (1,) * (len(shape) - 2)) + 2
    gamma, beta, dy = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(shape)
    attrs = {"axis": 1, "eps": 1e-3}
    others = [i for i in range(len(shape)) if i != 1]
    mean = f64("Reduce", {"op": "Mean", "axes": others}, x)
    invstd = f64("InvStd", {"axes": others, "eps": 1e-3}, x)

    def loss(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> float:
        return float(np.sum(dy * f64("BatchNormTraining", attrs, x, g, b)))

    got = (f64("BatchNormTrainingBackwardInput", {"axis": 1}, x, gamma, mean, invstd, dy),
           f64("BatchNormTrainingBackwardGamma", {"axis": 1}, x, mean, invstd, dy),
           f64("BatchNormTrainingBackwardBeta", {"axis": 1}, dy))
    want = (numeric_grad(lambda v: loss(v, gamma, beta), x), numeric_grad(lambda v: loss(x, v, beta), gamma),
            numeric_grad(lambda v: loss(x, gamma, v), beta))
    for g, n in zip(got, want):
        np.testing.assert_allclose(g, n, rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------- validation

def _doc(op: str, attrs: dict[str, object], shapes: list[list[int]], out: list[int]) -> dict[str, object]:
    nodes: list[dict[str, object]] = [{"id": i, "op": "Input", "attrs": {"name": f"in{i}"}, "inputs": [],
                                       "shape": s, "dtype": "f32"} for i, s in enumerate(shapes)]
    nodes.append({"id": len(shapes), "op": op, "attrs": attrs, "inputs": list(range(len(shapes))), "shape": out,
                  "dtype": "f32"})
    return {"format": "egraph-lower/graph", "version": 2, "outputs": [len(shapes)], "nodes": nodes}


@pytest.mark.parametrize(("op", "attrs", "shapes", "out", "words"), [
    ("LayerNorm", {"axis": 1, "eps": EPS}, [[2, 3, 4], [4], [3, 4]], [2, 3, 4], "weight has shape [4], expected [3, 4]"),
    ("LayerNorm", {"axis": 3, "eps": EPS}, [[2, 3], [3], [3]], [2, 3], "axis 3 is out of range for rank 2"),
    ("LayerNorm", {"axis": 1, "eps": -1}, [[2, 3], [3], [3]], [2, 3], "'eps' must be a finite number >= 0"),
    ("LayerNormBackwardInput", {"axis": 1}, [[2, 3], [3], [2], [2, 1], [2, 3]], [2, 3],
     "mean has shape [2], expected [2, 1]"),
    ("BatchNormTraining", {"axis": 1, "eps": EPS}, [[2, 3, 4], [4], [3]], [2, 3, 4],
     "gamma has shape [4], expected [3] (the channel axis 1"),
    ("BatchNormTrainingBackwardBeta", {}, [[2, 3]], [3], "missing"),
    ("InvStd", {"axes": [0, 0], "eps": EPS}, [[2, 3]], [3], "repeat an axis"),
])
def test_bad_nodes_are_refused_in_one_line(op: str, attrs: dict[str, object], shapes: list[list[int]],
                                           out: list[int], words: str) -> None:
    with pytest.raises(GraphError, match=words.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")) as e:
        el.validated(el.from_dict(_doc(op, attrs, shapes, out)))
    assert str(e.value).startswith(f"node {len(shapes)}") and "\n" not in str(e.value)


# --------------------------------------------------------------------------- e-graph encoding

def test_a_shaped_field_is_derived_from_the_first_input_shape() -> None:
    def node(c: int) -> tuple[str, tuple[object, ...]]:
        n = Node(5, "BatchNormTraining", (0, 1, 2), (4, c, 2, 2), "f32", {"axis": 1, "eps": EPS})
        return language.encode(n, 4, (4, c, 2, 2))

    three, seven = node(3), node(7)
    assert three[0] == seven[0] == "BnTrain"
    assert "[3,1,1]" in three[1] and "[7,1,1]" in seven[1]
    op, attrs = language.decode(*three)
    assert (op, attrs) == ("BatchNormTraining", {"axis": 1, "eps": EPS})  # derived fields are no attributes


# --------------------------------------------------------------------------- lowering

def norm_step(dtype: str = "f32", axis: int = 1) -> el.Graph:
    """A layer-norm, RMS-norm and batch-norm training step: forward, saved statistics, every gradient."""
    b = GraphBuilder("norm_step")
    x, dy = b.input("x", [4, 3, 5], dtype), b.input("dy", [4, 3, 5], dtype)
    a = axis % 3
    tail = [4, 3, 5][a:]
    w, bias = b.param("w", tail, dtype), b.param("b", tail, dtype)
    axes = list(range(a, 3))
    mean = b.op("Reduce", x, op="Mean", axes=axes, keep_dim=True)
    rstd = b.op("InvStd", x, axes=axes, eps=EPS, keep_dim=True)
    r = b.op("InvRms", x, axes=axes, eps=EPS, keep_dim=True)
    gamma, beta = b.param("gamma", [3], dtype), b.param("beta", [3], dtype)
    bmean = b.op("Reduce", x, op="Mean", axes=[0, 2])
    invstd = b.op("InvStd", x, axes=[0, 2], eps=EPS)
    outs = [b.op("LayerNorm", x, w, bias, axis=axis, eps=EPS), mean, rstd,
            b.op("LayerNormBackwardInput", x, w, mean, rstd, dy, axis=axis),
            b.op("LayerNormBackwardWeight", x, mean, rstd, dy, axis=axis),
            b.op("LayerNormBackwardBias", dy, axis=axis),
            b.op("RmsNorm", x, w, axis=axis, eps=EPS),
            b.op("RmsNormBackwardInput", x, w, r, dy, axis=axis),
            b.op("RmsNormBackwardWeight", x, r, dy, axis=axis),
            b.op("BatchNormTraining", x, gamma, beta, axis=1, eps=EPS), bmean, invstd,
            b.op("BatchNormTrainingBackwardInput", x, gamma, bmean, invstd, dy, axis=1),
            b.op("BatchNormTrainingBackwardGamma", x, bmean, invstd, dy, axis=1),
            b.op("BatchNormTrainingBackwardBeta", dy, axis=1)]
    return b.build(outs)


def feeds(graph: el.Graph, dtype: str = "f32", seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for n in graph.nodes:
        if n.op in ("Input", "Param"):
            v = rng.standard_normal(n.shape) * (3.0 if n.attrs["name"] == "x" else 1.0)
            if n.attrs["name"] == "x":
                v[0] = 7.0  # a constant slice: zero variance in the layer-norm rows
                # an offset (the whole graph is compared with float64: in f16/bf16 a mean near 50 rounds
                # by up to 1/8 and every gradient then inherits that, however it is computed)
                v += 50.0 if dtype in ("f32", "f64") else 2.0
            out[n.attrs["name"]] = apply("Cast", {"to": dtype}, [v], dtype)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("axis", [1, -1])
def test_norm_ops_lower_on_every_backend(backend: str, axis: int) -> None:
    graph = norm_step(axis=axis)
    result = el.lower(graph, backend)
    target = el.load_backend(backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    counts = result.graph.op_counts()
    for op in NEW_OPS:
        if op in graph.op_counts():
            assert (op in counts) == target.runs(op), op
    assert_lowering_matches(graph, result.graph, feeds(graph))


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f64"])
def test_norm_expansions_in_other_dtypes(dtype: str) -> None:
    graph = norm_step(dtype)
    assert_lowering_matches(graph, el.lower(graph, "wgpu").graph, feeds(graph, dtype))


def test_the_forward_expansion_shares_the_saved_statistics() -> None:
    b = GraphBuilder("ln")
    x = b.input("x", [4, 6])
    w, bias = b.param("w", [6]), b.param("b", [6])
    y = b.op("LayerNorm", x, w, bias, axis=1, eps=EPS)
    mean = b.op("Reduce", x, op="Mean", axes=[1], keep_dim=True)
    rstd = b.op("InvStd", x, axes=[1], eps=EPS, keep_dim=True)
    graph = b.build([y, mean, rstd])
    lowered = el.lower(graph, "wgpu").graph
    (xid,) = [n.id for n in lowered.nodes if n.op == "Input"]
    means = [n for n in lowered.nodes if n.op == "Reduce" and tuple(n.inputs) == (xid,)]
    assert len(means) == 1  # the saved mean is the forward's mean, computed once
    assert lowered.outputs[1] == means[0].id
    assert_lowering_matches(graph, lowered, feeds(graph))


def bn_inference_step(axis: int | None) -> el.Graph:
    """Batch-norm inference and its three backward ops on [2, 3, 4, 2], channels on axis 1 (or, with
    axis None, version 1's last axis: [2, 4, 2, 3])."""
    b = GraphBuilder("bn_inference")
    shape = [2, 3, 4, 2] if axis is not None else [2, 4, 2, 3]
    x, dy = b.input("x", shape), b.input("dy", shape)
    gamma, beta, mean, var = (b.param(n, [3]) for n in ("gamma", "beta", "mean", "var"))
    at: dict[str, object] = {} if axis is None else {"axis": axis}
    outs = [b.op("BatchNormInference", x, gamma, beta, mean, var, eps=EPS, **at),
            b.op("BatchNormInferenceBackwardInput", x, gamma, mean, var, dy, eps=EPS, **at),
            b.op("BatchNormInferenceBackwardGamma", x, mean, var, dy, eps=EPS, **at),
            b.op("BatchNormInferenceBackwardBeta", dy, **at)]
    return b.build(outs)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("axis", [1, -3, None])
def test_batch_norm_inference_on_any_channel_axis_lowers_everywhere(backend: str, axis: int | None) -> None:
    graph = bn_inference_step(axis)
    f = feeds(graph)
    f["var"] = np.abs(f["var"]) + 0.5
    result = el.lower(graph, backend)
    assert all(el.load_backend(backend).runs_node(n) for n in result.graph.nodes)
    assert_lowering_matches(graph, result.graph, f)
    kept = [n for n in result.graph.nodes if n.op.startswith("BatchNormInference")]
    assert all(n.attrs.get("axis") == axis for n in kept)


def test_batch_norm_inference_axis_is_the_channel_of_a_transposed_input() -> None:
    rng = np.random.default_rng(5)
    x, dy = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    gamma, beta, mean, var = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(3), rng.random(3) + 1
    last = (0, 2, 1)  # channels moved to the last axis: version 1's form
    for op, args in (("BatchNormInference", (gamma, beta, mean, var)),
                     ("BatchNormInferenceBackwardInput", (gamma, mean, var))):
        extra = (dy,) if op.endswith("Input") else ()
        got = f64(op, {"eps": EPS, "axis": 1}, x, *args, *extra)
        want = f64(op, {"eps": EPS}, x.transpose(last), *args, *(e.transpose(last) for e in extra))
        np.testing.assert_allclose(got, want.transpose(last), rtol=1e-15)
    np.testing.assert_allclose(f64("BatchNormInferenceBackwardGamma", {"eps": EPS, "axis": 1}, x, mean, var, dy),
                               f64("BatchNormInferenceBackwardGamma", {"eps": EPS}, x.transpose(last), mean, var,
                                   dy.transpose(last)), rtol=1e-14)
