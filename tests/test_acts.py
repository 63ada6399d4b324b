"""The parametrised activation kinds (LeakyRelu, Hardtanh, Elu and Softplus with parameters) and the slicing ops
(Slice, Pad, Concat, SliceBackward): reference semantics, validation, lowering on every backend."""

from __future__ import annotations

import math

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import GraphError
from egraph_lower.evaluate import activation, activation_grad, activation_grad_from_output, apply
from egraph_lower.explore import explore
from egraph_lower.graph import VERSION  # the newest the reader knows: these ops need version 2
from egraph_lower.rules.check import check_rule
from egraph_lower.rules.dsl import rule
from support import assert_lowering_matches

BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")
SELU = {"alpha": 1.6732632423543772, "scale": 1.0507009873554805}

# (kind, parameters): the parameter sets real models use, and a few awkward ones
PARAMETRISED = [
    ("LeakyRelu", {}), ("LeakyRelu", {"alpha": 0.2}), ("LeakyRelu", {"alpha": -0.5}),
    ("Hardtanh", {}), ("Hardtanh", {"min": 0.0, "max": 6.0}), ("Hardtanh", {"min": -2.5, "max": -2.5}),
    ("Elu", {"alpha": 0.5}), ("Elu", SELU), ("Elu", {"alpha": 0.7, "input_scale": 1 / 0.7}),  # CELU(0.7)
    ("Elu", {"alpha": 2.0, "scale": 3.0, "input_scale": -0.5}),
    ("Softplus", {"beta": 2.0, "threshold": 5.0}), ("Softplus", {"beta": 0.5}), ("Softplus", {"threshold": 1.0}),
    ("Softplus", {"beta": -1.5}),
]
X = np.array([0.0, -0.0, 1e-3, -1e-3, 0.5, -0.5, 2.0, -2.0, 2.5, 2.5000001, 6.0, -6.0, 20.0, -20.0, 80.0, -80.0])


def _ids(case: tuple) -> str:
    return f"{case[0]}{case[1]}"


# --------------------------------------------------------------------------- reference semantics

def _scalar(kind: str, x: float, p: dict) -> float:
    """f(x) from the definitions, one value at a time."""
    if kind == "LeakyRelu":
        return x if x > 0 else x * p.get("alpha", 0.01)
    if kind == "Hardtanh":
        return min(max(x, p.get("min", -1.0)), p.get("max", 1.0))
    if kind == "Elu":
        a, s, i = p.get("alpha", 1.0), p.get("scale", 1.0), p.get("input_scale", 1.0)
        return s * x if x > 0 else s * a * math.expm1(x * i)
    b, t = p.get("beta", 1.0), p.get("threshold", math.inf)
    return x if b * x > t else math.log1p(math.exp(-abs(b * x))) / b + max(b * x, 0.0) / b


@pytest.mark.parametrize("case", PARAMETRISED, ids=_ids)
def test_parametrised_values_follow_the_definitions(case: tuple) -> None:
    kind, p = case
    want = [_scalar(kind, float(x), p) for x in X]
    np.testing.assert_allclose(activation(kind, X, p), want, rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize("case", PARAMETRISED, ids=_ids)
def test_parametrised_derivatives_match_finite_differences(case: tuple) -> None:
    kind, p = case
    h = 1e-6
    # away from the kinks (0, min, max, threshold / beta), where the derivative is defined
    kinks = [0.0, p.get("min", -1.0), p.get("max", 1.0), p.get("threshold", math.inf) / p.get("beta", 1.0)]
    x = np.array([v for v in np.linspace(-7.3, 7.3, 59) if all(abs(v - k) > 1e-3 for k in kinks)])
    fd = np.array([(_scalar(kind, v + h, p) - _scalar(kind, v - h, p)) / (2 * h) for v in x])
    np.testing.assert_allclose(activation_grad(kind, x, p), fd, rtol=1e-6, atol=1e-7)


def test_conventions_at_the_kinks_are_torchs() -> None:
    # LeakyRelu: alpha at 0; Hardtanh: 0 at min and max; Elu: the x <= 0 branch at 0; Softplus: linear above
    np.testing.assert_array_equal(activation_grad("LeakyRelu", np.array([0.0, 1e-9]), {"alpha": 0.2}), [0.2, 1.0])
    relu6 = {"min": 0.0, "max": 6.0}
    np.testing.assert_array_equal(activation_grad("Hardtanh", np.array([0.0, 3.0, 6.0]), relu6), [0.0, 1.0, 0.0])
    np.testing.assert_allclose(activation_grad("Elu", np.array([0.0]), SELU), [SELU["alpha"] * SELU["scale"]])
    sp = {"beta": 2.0, "threshold": 5.0}
    np.testing.assert_array_equal(activation("Softplus", np.array([2.5000001]), sp), [2.5000001])
    assert activation_grad("Softplus", np.array([2.5]), sp)[0] < 1.0  # beta x = threshold: not linear yet
    np.testing.assert_array_equal(activation_grad("Softplus", np.array([2.5000001]), sp), [1.0])


def test_elu_output_form_equals_input_form() -> None:
    x = np.linspace(-20, 20, 81)
    y = activation("Elu", x, SELU)
    np.testing.assert_allclose(activation_grad_from_output("Elu", y, SELU), activation_grad("Elu", x, SELU),
                               rtol=1e-12, atol=1e-15)


def test_defaults_are_version_ones_kinds() -> None:
    x = np.linspace(-30, 30, 121)
    for kind, p in (("Elu", {"alpha": 1, "scale": 1, "input_scale": 1}), ("Softplus", {"beta": 1})):
        np.testing.assert_array_equal(activation(kind, x, p), activation(kind, x))
        np.testing.assert_array_equal(activation_grad(kind, x, p), activation_grad(kind, x))


def test_slicing_ops_follow_numpy() -> None:
    x = np.arange(24.0).reshape(4, 6)
    for start, end, step in ((1, 5, 1), (-4, 100, 2), (5, 2, 1), (-100, -1, 3)):
        got = apply("Slice", {"axis": -1, "start": start, "end": end, "step": step}, [x], "f64")
        np.testing.assert_array_equal(got, x[:, start:end:step])
        dx = apply("SliceBackward", {"axis": 1, "start": start, "end": end, "step": step, "size": 6}, [got], "f64")
        want = np.zeros_like(x)
        want[:, start:end:step] = got
        np.testing.assert_array_equal(dx, want)
    np.testing.assert_array_equal(apply("Pad", {"axis": 0, "before": 1, "after": 2}, [x], "f64"),
                                  np.pad(x, ((1, 2), (0, 0))))
    np.testing.assert_array_equal(apply("Concat", {"axis": 0}, [x, x[:1]], "f64"), np.concatenate([x, x[:1]]))


# --------------------------------------------------------------------------- validation

def _doc(op: str, attrs: dict, shape: list, out: list, dtype: str = "f32") -> dict:
    return {"format": "egraph-lower/graph", "version": VERSION, "outputs": [1], "nodes": [
        {"id": 0, "op": "Input", "attrs": {"name": "x"}, "inputs": [], "shape": shape, "dtype": dtype},
        {"id": 1, "op": op, "attrs": attrs, "inputs": [0], "shape": out, "dtype": dtype}]}


@pytest.mark.parametrize(("op", "attrs", "out", "words"), [
    ("Activation", {"kind": "Relu", "alpha": 0.1}, [2, 3], "'alpha' is not a parameter of kind 'Relu'"),
    ("Activation", {"kind": "LeakyRelu", "min": 0.1}, [2, 3], "'min' is not a parameter of kind 'LeakyRelu'"),
    ("Activation", {"kind": "Hardtanh", "min": 2, "max": 1}, [2, 3], "min <= max"),
    ("Activation", {"kind": "Softplus", "beta": 0}, [2, 3], "beta != 0"),
    ("Activation", {"kind": "Elu", "alpha": "big"}, [2, 3], "'alpha' must be a finite number"),
    ("Slice", {"axis": 2, "start": 0, "end": 1, "step": 1}, [2, 1], "axis 2 is out of range for rank 2"),
    ("Slice", {"axis": 1, "start": 0, "end": 1, "step": 0}, [2, 1], "'step' must be an integer >= 1"),
    ("Pad", {"axis": 0, "before": -1, "after": 0}, [1, 3], "'before' must be an integer >= 0"),
    ("SliceBackward", {"axis": 1, "start": 0, "end": 2, "step": 1, "size": 5}, [2, 5], "the slice takes 2 of 5"),
])
def test_bad_nodes_are_refused_in_one_line(op: str, attrs: dict, out: list, words: str) -> None:
    with pytest.raises(GraphError, match=words) as e:
        el.validated(el.from_dict(_doc(op, attrs, [2, 3], out)))
    assert str(e.value).startswith("node 1") and "\n" not in str(e.value)


# --------------------------------------------------------------------------- lowering

def act_step(kind: str, p: dict, dtype: str = "f32") -> el.Graph:
    b = GraphBuilder("act_step")
    x, dy = b.input("x", [4, 16], dtype), b.input("dy", [4, 16], dtype)
    y = b.op("Activation", x, kind=kind, **p)
    outs = [y, b.op("ActivationBackward", x, dy, kind=kind, **p)]
    if kind == "Elu" and p.get("scale", 1) > 0 and p.get("alpha", 1) >= 0:
        outs.append(b.op("ActivationBackward", y, dy, kind=kind, wrt="output", **p))
    return b.build(outs)


def act_feeds(dtype: str = "f32") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    x = np.concatenate([X, rng.uniform(-8, 8, 48)]).reshape(4, 16)
    dy = rng.uniform(-2, 2, (4, 16))
    return {"x": apply("Cast", {"to": dtype}, [x], dtype), "dy": apply("Cast", {"to": dtype}, [dy], dtype)}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", PARAMETRISED[1::2], ids=_ids)
def test_parametrised_kinds_lower_on_every_backend(backend: str, case: tuple) -> None:
    graph = act_step(*case)
    result = el.lower(graph, backend)
    target = el.load_backend(backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    assert_lowering_matches(graph, result.graph, act_feeds())


def test_the_parameters_survive_a_round_trip_through_the_egraph() -> None:
    graph = act_step("Softplus", {"beta": 2.0})  # threshold none: no attribute, before and after
    lowered = el.lower(graph, "cpu").graph
    attrs = [n.attrs for n in lowered.nodes if n.op in ("Activation", "ActivationBackward")]
    assert attrs == [{"kind": "Softplus", "beta": 2.0}] * 2


def slice_step(strided: bool = False, dtype: str = "f32") -> el.Graph:
    b = GraphBuilder("slice_step")
    x, y = b.input("x", [3, 8], dtype), b.input("y", [3, 2], dtype)
    s = b.op("Slice", x, axis=1, start=-6, end=7, step=1)  # [3, 5]
    c = b.op("Concat", s, y, axis=-1)  # [3, 7]
    g = b.op("SliceBackward", c, axis=1, start=1, end=100, step=1, size=8)
    p = b.op("Pad", c, axis=0, before=2, after=0)
    outs = [g, p]
    if strided:
        outs.append(b.op("SliceBackward", s, axis=1, start=0, end=10, step=2, size=10))
    return b.build(outs)


def slice_feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {"x": rng.standard_normal((3, 8)).astype(np.float32), "y": rng.standard_normal((3, 2)).astype(np.float32)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_slicing_lowers_on_every_backend(backend: str) -> None:
    graph = slice_step()
    result = el.lower(graph, backend)
    assert ("SliceBackward" in result.graph.op_counts()) == (backend == "cpu")
    assert all(el.load_backend(backend).runs_node(n) for n in result.graph.nodes)
    assert_lowering_matches(graph, result.graph, slice_feeds())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_strided_slice_backward_lowers_on_every_backend(backend: str) -> None:
    graph = slice_step(strided=True)
    result = el.lower(graph, backend)
    assert ("SliceBackward" in result.graph.op_counts()) == (backend == "cpu")
    assert_lowering_matches(graph, result.graph, slice_feeds())


# --------------------------------------------------------------------------- the checker on the parametrised rules

@pytest.mark.parametrize(("lhs", "rhs"), [
    ("(Backward.LeakyRelu alpha x dy)", "(where (> x 0) dy (* dy 0.01))"),  # the default slope, not alpha
    ("(Backward.Hardtanh lo hi x dy)", "(where (>= x (lit lo)) (where (< x (lit hi)) dy 0) 0)"),  # 1 at min
    ("(Backward.EluP alpha scale iscale x dy)", "(where (> x 0) (* dy (lit scale)) (* dy (Exp x)))"),
    ("(SoftplusP beta threshold x)", "(/ (Softplus (* x (lit beta))) (lit beta))"),  # no linear branch
    ("(SliceBackward axis start end 1 size before after keep cut 0 inner gap col spread g)",
     "(Pad axis after before g)"),
])
def test_checker_catches_a_wrong_parametrised_rule(lhs: str, rhs: str) -> None:
    broken = rule("broken", "wrong on purpose", lhs, rhs, group="backward")
    assert not all(check_rule(broken, d).ok for d in ("f64", "f32")), lhs


# --------------------------------------------------------------------------- explore

def test_explore_reports_the_new_ops_with_their_parameters() -> None:
    e = explore(act_step("Elu", SELU), "metal", compare=("wgpu", "cpu"))
    assert "ActivationBackward{Elu alpha=1.67326 scale=1.0507}" in e.summary()
    assert {r["name"] for r in e.rules()} >= {"elup-bwd", "elup-bwd-out"}
    s = explore(slice_step(), "wgpu")
    assert "slice-bwd-pad" in {r["name"] for r in s.rules()} and "Pad" in s.after.op_counts()
