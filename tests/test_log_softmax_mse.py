"""LogSoftmax, LogSoftmaxBackward, MseLoss and MseLossBackward (opdefs/log_softmax.py, opdefs/mse.py).

The evaluator's derivatives are checked against central finite differences of its
own forward in float64, the ops are lowered on every backend (kept where the
backend runs them, expanded elsewhere) and compared with the evaluator.
"""

from __future__ import annotations

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import GraphError
from egraph_lower.evaluate import apply
from egraph_lower.rules import ALL_RULES, BY_NAME
from egraph_lower.rules.check import check, check_rule
from egraph_lower.rules.domains import DTYPES
from egraph_lower.rules.dsl import Rule, rule
from support import assert_lowering_matches, numeric_vjp

BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")
RNG = np.random.default_rng(7)

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_log_softmax_backward_is_the_derivative_of_log_softmax(axis: int) -> None:
    x, dy = RNG.standard_normal((3, 4)) * 2.0, RNG.standard_normal((3, 4))
    y = apply("LogSoftmax", {"axis": axis}, [x], "f64")
    got = apply("LogSoftmaxBackward", {"axis": axis}, [y, dy], "f64")
    want = numeric_vjp(lambda v: apply("LogSoftmax", {"axis": axis}, [v], "f64"), x, dy)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_softmax_backward_is_the_derivative_of_softmax() -> None:
    x, dy = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    y = apply("Softmax", {"axis": 1}, [x], "f64")
    got = apply("SoftmaxBackward", {"axis": 1}, [y, dy], "f64")
    want = numeric_vjp(lambda v: apply("Softmax", {"axis": 1}, [v], "f64"), x, dy)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_log_softmax_awkward_rows() -> None:
    x = np.array([[1e4, 1e4, 1e4], [-np.inf, 0.0, -np.inf], [-np.inf] * 3, [5.0, 5.0, -1e30]])
    y = apply("LogSoftmax", {"axis": 1}, [x], "f64")
    np.testing.assert_allclose(y[0], [-np.log(3.0)] * 3, rtol=1e-15)
    np.testing.assert_array_equal(y[1], [-np.inf, 0.0, -np.inf])
    assert np.isnan(y[2]).all()  # all -inf: nan, as torch
    np.testing.assert_allclose(y[3], [-np.log(2.0), -np.log(2.0), -1e30], rtol=1e-15)
    np.testing.assert_array_equal(apply("LogSoftmax", {"axis": 1}, [np.array([[3.5]])], "f64"), [[0.0]])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_mse_backward_is_the_derivative_of_mse(reduction: str) -> None:
    x, t = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    dy = RNG.standard_normal((3, 4)) if reduction == "none" else np.array(-1.7)
    got = apply("MseLossBackward", {"reduction": reduction}, [x, t, dy], "f64")
    want = numeric_vjp(lambda v: apply("MseLoss", {"reduction": reduction}, [v, t], "f64"), x, dy)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(("op", "inputs", "attrs", "words"), [
    ("MseLoss", [[2, 3], [3, 2]], {"reduction": "mean"}, "target has shape"),
    ("MseLoss", [[2, 3], [2, 3]], {"reduction": "avg"}, "unknown reduction 'avg'"),
    ("MseLossBackward", [[2, 3], [2, 3], [2, 3]], {"reduction": "sum"}, "dy has shape"),
    ("LogSoftmax", [[2, 3]], {"axis": 2}, "axis 2 is out of range"),
])
def test_bad_nodes_are_refused_in_one_line(op: str, inputs: list[list[int]], attrs: dict[str, object],
                                           words: str) -> None:
    nodes: list[dict[str, object]] = [
        {"id": i, "op": "Input", "attrs": {"name": f"in{i}"}, "inputs": [], "shape": s, "dtype": "f32"}
        for i, s in enumerate(inputs)]
    n = len(inputs)
    nodes.append({"id": n, "op": op, "attrs": attrs, "inputs": list(range(n)), "shape": [2, 3], "dtype": "f32"})
    # version 1 until the version machinery lands (then these ops need version 2)
    doc = {"format": "egraph-lower/graph", "version": 2, "outputs": [n], "nodes": nodes}
    with pytest.raises(GraphError, match=words) as e:
        el.validated(el.from_dict(doc))
    assert str(e.value).startswith(f"node {n}") and "\n" not in str(e.value)


def step(reduction: str, dtype: str = "f32") -> el.Graph:
    b = GraphBuilder("step")
    x, t, dy = b.input("x", [4, 6], dtype), b.input("t", [4, 6], dtype), b.input("dy", [4, 6], dtype)
    ly = b.op("LogSoftmax", x, axis=0)
    dx = b.op("LogSoftmaxBackward", ly, dy, axis=0)
    loss = b.op("MseLoss", ly, t, reduction=reduction)
    g = dy if reduction == "none" else b.op("Reduce", dy, op="Mean", axes=[0, 1])
    dl = b.op("MseLossBackward", ly, t, g, reduction=reduction)
    return b.build([ly, dx, loss, dl])


def feeds(dtype: str = "f32") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6)) * np.array([[0.1], [1.0], [10.0], [40.0]])
    vals = {"x": x, "t": rng.standard_normal((4, 6)), "dy": rng.uniform(-2.0, 2.0, (4, 6))}
    return {k: apply("Cast", {"to": dtype}, [v], dtype) for k, v in vals.items()}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_lowers_on_every_backend(backend: str, reduction: str) -> None:
    graph = step(reduction)
    result = el.lower(graph, backend)
    target = el.load_backend(backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    counts = result.graph.op_counts()
    for op in ("LogSoftmax", "LogSoftmaxBackward", "MseLoss", "MseLossBackward"):
        assert (op in counts) == target.runs(op), op
    assert_lowering_matches(graph, result.graph, feeds())


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f64"])
def test_expansions_in_other_dtypes(dtype: str) -> None:
    graph = step("mean", dtype)
    assert_lowering_matches(graph, el.lower(graph, "wgpu").graph, feeds(dtype))


@pytest.mark.parametrize("backend", ["wgpu", "tpu"])
def test_rows_of_length_one_lower_exactly(backend: str) -> None:
    b = GraphBuilder("length one")
    x, dy = b.input("x", [3, 1], "f32"), b.input("dy", [3, 1], "f32")
    y, ly = b.op("Softmax", x, axis=1), b.op("LogSoftmax", x, axis=1)
    graph = b.build([y, ly, b.op("SoftmaxBackward", y, dy, axis=1), b.op("LogSoftmaxBackward", ly, dy, axis=1)])
    f = {"x": np.array([[-1e4], [0.5], [3e38]], np.float32), "dy": np.array([[2.0], [-1.0], [1e-30]], np.float32)}
    want = el.evaluate(graph, f)
    got = el.evaluate(el.lower(graph, backend).graph, f)
    np.testing.assert_array_equal(want[0], np.ones((3, 1)))
    np.testing.assert_array_equal(want[1], np.zeros((3, 1)))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


BROKEN = [
    # no maximum subtracted: exp overflows for large logits
    rule("broken-softmax-no-max", "-", "(Softmax axis axes x)", "(/ (Exp x) (Reduce.Sum axes 1 (Exp x)))",
         group="forward"),
    # a sum written as 7 means: right for rows of 7, wrong for rows of length 1
    rule("broken-softmax-seven", "-", "(Softmax axis axes x)", "(/ e (* 7 (Reduce.Mean axes 1 e)))",
         group="forward", lets={"e": "(Exp (- x (Reduce.Max axes 1 x)))"}),
    # log(softmax): softmax underflows to 0 where log-softmax is finite
    rule("broken-log-of-softmax", "-", "(LogSoftmax axis axes x)", "(Log (Softmax axis axes x))", group="forward"),
    # x - logsumexp(x): cancels for large logits
    rule("broken-log-softmax-lse", "-", "(LogSoftmax axis axes x)",
         "(- x (+ m (Log (Reduce.Sum axes 1 (Exp (- x m))))))", group="forward",
         lets={"m": "(Reduce.Max axes 1 x)"}),
    # the softmax backward's formula used for log-softmax
    rule("broken-log-softmax-bwd", "-", "(LogSoftmaxBackward axis axes y dy)",
         "(* (Exp y) (- dy (Reduce.Sum axes 1 (* dy (Exp y)))))", group="backward"),
    # the mean's 1/N forgotten
    rule("broken-mse-mean-bwd", "-", "(MseLossBackward.mean axes x t dy)", "(* 2 (* dy (- x t)))", group="backward"),
    # (x - t)^2 for the sum's gradient, not 2 (x - t)
    rule("broken-mse-sum-bwd", "-", "(MseLossBackward.sum axes x t dy)", "(* dy (* (- x t) (- x t)))",
         group="backward"),
]


@pytest.mark.parametrize("broken", BROKEN, ids=lambda r: r.name)
def test_checker_catches_a_broken_rule(broken: Rule) -> None:
    results = [check_rule(broken, d) for d in DTYPES]
    assert not all(r.ok for r in results), [(r.dtype, r.worst) for r in results]


def test_every_rule_of_the_family_passes_the_checker() -> None:
    names = [r.name for r in ALL_RULES if r.name.startswith(("softmax", "log-softmax", "mse"))]
    assert len(names) >= 14
    failed = [(r.rule, r.dtype, r.worst) for r in check([BY_NAME[n] for n in names]) if not r.ok]
    assert not failed
