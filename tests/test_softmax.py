"""Softmax and SoftmaxBackward, the ops added through the declarations alone (opdefs/softmax.py).

Validated, evaluated, lowered on every backend (kept where the backend runs them,
expanded into Exp / Reduce / Binary elsewhere) and exported to torch.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import GraphError
from egraph_lower.evaluate import apply
from support import assert_lowering_matches

BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")
HAS_TORCH = importlib.util.find_spec("torch") is not None


def softmax_step(dtype: str = "f32", axis: int = -1) -> el.Graph:
    b = GraphBuilder("softmax_step")
    x, dy = b.input("x", [4, 6], dtype), b.input("dy", [4, 6], dtype)
    y = b.op("Softmax", x, axis=axis)
    dx = b.op("SoftmaxBackward", y, dy, axis=axis)
    return b.build([y, dx])


def feeds(dtype: str = "f32", seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4, 6)) * np.array([[0.1], [1.0], [10.0], [40.0]])
    dy = rng.uniform(-2.0, 2.0, (4, 6))
    return {"x": apply("Cast", {"to": dtype}, [x], dtype), "dy": apply("Cast", {"to": dtype}, [dy], dtype)}


def test_softmax_rows_sum_to_one_and_follow_the_exponentials() -> None:
    x = np.array([[0.0, 1.0, 2.0], [1000.0, 1000.0, -1000.0]])
    y = apply("Softmax", {"axis": 1}, [x], "f64")
    np.testing.assert_allclose(y.sum(axis=1), [1.0, 1.0], rtol=1e-15)
    np.testing.assert_allclose(y[0], np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum(), rtol=1e-15)
    np.testing.assert_array_equal(y[1], [0.5, 0.5, 0.0])  # no overflow for large logits


def test_softmax_backward_is_the_jacobian_transposed_times_dy() -> None:
    rng = np.random.default_rng(1)
    y = apply("Softmax", {"axis": 0}, [rng.standard_normal((5, 2))], "f64")
    dy = rng.standard_normal((5, 2))
    got = apply("SoftmaxBackward", {"axis": 0}, [y, dy], "f64")
    for j in range(2):
        jac = np.diag(y[:, j]) - np.outer(y[:, j], y[:, j])
        np.testing.assert_allclose(got[:, j], jac.T @ dy[:, j], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(("axis", "dtype", "words"), [(2, "f32", "axis 2 is out of range for rank 2"),
                                                      (-3, "f32", "axis -3 is out of range"),
                                                      (-1, "i32", "Softmax needs a float dtype")])
def test_bad_softmax_nodes_are_refused_in_one_line(axis: int, dtype: str, words: str) -> None:
    doc = {"format": "egraph-lower/graph", "version": 2, "outputs": [1], "nodes": [
        {"id": 0, "op": "Input", "attrs": {"name": "x"}, "inputs": [], "shape": [4, 6], "dtype": dtype},
        {"id": 1, "op": "Softmax", "attrs": {"axis": axis}, "inputs": [0], "shape": [4, 6], "dtype": dtype}]}
    with pytest.raises(GraphError, match=words) as e:
        el.validated(el.from_dict(doc))
    assert str(e.value).startswith("node 1") and "\n" not in str(e.value)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_lowers_on_every_backend(backend: str, axis: int) -> None:
    graph = softmax_step(axis=axis)
    result = el.lower(graph, backend)
    target = el.load_backend(backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    counts = result.graph.op_counts()
    assert ("Softmax" in counts) == target.runs("Softmax")
    assert ("SoftmaxBackward" in counts) == target.runs("SoftmaxBackward")
    assert_lowering_matches(graph, result.graph, feeds())


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f64"])
def test_softmax_expansions_in_other_dtypes(dtype: str) -> None:
    graph = softmax_step(dtype)
    assert_lowering_matches(graph, el.lower(graph, "wgpu").graph, feeds(dtype))


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_the_torch_kernels_match_the_evaluator() -> None:
    import torch

    import egraph_lower.torch as elt

    graph = softmax_step("f64", axis=0)
    f = feeds("f64")
    want = el.evaluate(graph, f)
    got = elt.export_graph(graph)(*(torch.from_numpy(f[n]) for n in ("x", "dy")))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-15)
