"""Lowering, end to end: kinds x backends, batch norm, sharing, limits, random graphs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import egraph_lower as el
from egraph_lower.backends import BUILTIN
from egraph_lower.build import GraphBuilder
from egraph_lower.ops import ACTIVATION_KINDS, BACKWARD_OPS, OUTPUT_FORM_KINDS
from support import assert_lowering_matches, feeds_for

BACKENDS = list(BUILTIN)
POSITIVE_ONLY = {"Log", "Sqrt", "Rsqrt"}  # also checked at 0 and below in the rule checker


def kind_graph(kind: str, dtype: str = "f32", wrt: str = "input", shape=(4, 16)) -> el.Graph:
    """Forward activation and its backward, both outputs: wgpu must lower the forward too."""
    b = GraphBuilder(f"{kind}_{wrt}_{dtype}")
    x = b.input("x", shape, dtype)
    dy = b.input("dy", shape, dtype)
    y = b.act(kind, x)
    g = b.act_backward(kind, y if wrt == "output" else x, dy, wrt=wrt)
    return b.build([y, g])


def feeds(graph: el.Graph, kind: str, seed: int = 0) -> dict[str, np.ndarray]:
    return feeds_for(graph, np.random.default_rng(seed), positive=frozenset({"x"}) if kind in POSITIVE_ONLY else frozenset())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ACTIVATION_KINDS)
def test_every_kind_on_every_backend(kind: str, backend: str) -> None:
    graph = kind_graph(kind)
    result = el.lower(graph, backend)
    target = el.load_backend(backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    assert_lowering_matches(graph, result.graph, feeds(graph, kind))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", OUTPUT_FORM_KINDS)
def test_backward_from_output(kind: str, backend: str) -> None:
    graph = kind_graph(kind, wrt="output")
    result = el.lower(graph, backend)
    assert_lowering_matches(graph, result.graph, feeds(graph, kind))


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f64"])
@pytest.mark.parametrize("kind", ["Gelu", "GeluApprox", "Silu", "Sigmoid", "Tanh", "Mish", "Softplus", "Elu", "HardSwish"])
def test_low_precision_dtypes(kind: str, dtype: str) -> None:
    graph = kind_graph(kind, dtype=dtype)
    for backend in ("metal", "wgpu"):
        result = el.lower(graph, backend)
        constants = [n for n in result.graph.nodes if n.op == "Constant"]
        # f16/bf16 expansions compute in f32 (egraph/load.py): their constants are f32
        allowed = (dtype, "bool") + (("f32",) if dtype in ("f16", "bf16") else ())
        assert all(n.dtype in allowed for n in constants), "a constant of another dtype"
        # wgpu's Erf (and Atan) are approximations accurate to f32, as the backend spec allows
        approximate = dtype == "f64" and backend == "wgpu"
        assert_lowering_matches(graph, result.graph, feeds(graph, kind), "f32" if approximate else None)


def test_cpu_expands_nothing() -> None:
    graph = el.load_graph(el.__path__[0] + "/examples/mlp_step.json")
    result = el.lower(graph, "cpu")
    assert result.graph.op_counts() == graph.op_counts()
    assert result.report.after["cost"] == pytest.approx(result.report.before["cost"])


@pytest.mark.parametrize("backend", ["metal", "tpu", "wgpu"])
def test_no_backward_op_survives(backend: str) -> None:
    graph = el.load_graph(el.__path__[0] + "/examples/mlp_step.json")
    result = el.lower(graph, backend)
    assert not set(result.graph.op_counts()) & set(BACKWARD_OPS)
    assert result.report.before["cost"] is None and result.report.after["cost"] > 0
    assert_lowering_matches(graph, result.graph, feeds(graph, "Gelu"))


def test_relu_backward_exact_zeros() -> None:
    b = GraphBuilder("relu")
    x = b.input("x", [6])
    dy = b.input("dy", [6])
    graph = b.build([b.relu_backward(x, dy)])
    xs = np.array([0.0, -0.0, 1e-30, -1e-30, 5.0, -5.0], np.float32)
    dys = np.array([1.0, -2.0, 3.0, 4.0, 5.0, 6.0], np.float32)
    for backend in BACKENDS:
        (got,) = el.evaluate(el.lower(graph, backend).graph, {"x": xs, "dy": dys})
        np.testing.assert_array_equal(got, np.array([0, 0, 3, 0, 5, 0], np.float32))


def bn_graph(shape=(2, 3, 5), dtype: str = "f32") -> el.Graph:
    """Forward batch norm and all three backward ops, channels last."""
    c = shape[-1]
    b = GraphBuilder("bn")
    x = b.input("x", shape, dtype)
    gamma, beta = b.param("gamma", [c], dtype), b.param("beta", [c], dtype)
    mean, var = b.input("mean", [c], dtype), b.input("var", [c], dtype)
    dy = b.input("dy", shape, dtype)
    y = b.batch_norm(x, gamma, beta, mean, var, 1e-5)
    outs = [y, b.bn_backward_input(x, gamma, mean, var, dy), b.bn_backward_gamma(x, mean, var, dy), b.bn_backward_beta(dy)]
    return b.build(outs)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(7,), (4, 3), (2, 3, 5)])
def test_batch_norm(backend: str, shape: tuple[int, ...]) -> None:
    graph = bn_graph(shape)
    result = el.lower(graph, backend)
    f = feeds_for(graph, np.random.default_rng(1), positive=frozenset({"var"}))
    assert_lowering_matches(graph, result.graph, f)
    if backend == "mlx":
        assert "BatchNormInferenceBackwardInput" not in result.graph.op_counts()
    if backend == "wgpu":
        assert "BatchNormInference" not in result.graph.op_counts()


def test_forward_value_is_reused() -> None:
    """sigmoid(x) computed by the forward pass is the one the expansion uses."""
    graph = kind_graph("Sigmoid")
    out = el.lower(graph, "metal").graph
    assert out.op_counts().get("Activation") == 1


def test_provenance_names() -> None:
    graph = kind_graph("Gelu")
    out = el.lower(graph, "wgpu").graph
    names = [n.name for n in out.nodes if n.op not in ("Input", "Constant")]
    assert all(names), "every new node is named"
    assert any("n3/" in n for n in names), names  # node 3 is the backward op


def test_iteration_limit_is_reported() -> None:
    graph = kind_graph("Gelu")
    result = el.lower(graph, "wgpu", limits=el.Limits(iterations=50))
    assert result.report.stop_reason == "saturated"
    with pytest.raises(el.LowerError, match="^iteration_limit: node 2 \\(Activation\\{Gelu\\}\\) was not yet"
                                            " lowered after 1 iteration; raise --max-iterations$"):
        el.lower(graph, "wgpu", limits=el.Limits(iterations=1))


def test_unknown_backend() -> None:
    with pytest.raises(el.BackendError, match="unknown backend 'vulkan'"):
        el.lower(kind_graph("Relu"), "vulkan")


# --- property: random valid graphs keep their values through lowering ------------------------

_UNARY = ["Relu", "Sigmoid", "Tanh", "Gelu", "Silu", "Softplus", "Elu", "Mish", "Softsign", "Atan", "Erf"]


@st.composite
def random_graph(draw: st.DrawFn) -> el.Graph:
    b = GraphBuilder("random")
    shape = draw(st.sampled_from([(3,), (2, 4), (2, 3, 4)]))
    values = [b.input("x", shape), b.input("dy", shape)]
    for _ in range(draw(st.integers(1, 8))):
        step = draw(st.sampled_from(["act", "bwd", "relu_bwd", "binary"]))
        a = draw(st.sampled_from(values))
        c = draw(st.sampled_from(values))
        if step == "act":
            values.append(b.act(draw(st.sampled_from(_UNARY)), a))
        elif step == "bwd":
            values.append(b.act_backward(draw(st.sampled_from(_UNARY)), a, c))
        elif step == "relu_bwd":
            values.append(b.relu_backward(a, c))
        else:
            values.append(b.binary(draw(st.sampled_from(["Add", "Sub", "Mul", "Max"])), a, c))
    outs = draw(st.lists(st.sampled_from(values[2:]), min_size=1, max_size=3))
    return b.build(outs)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=random_graph(), backend=st.sampled_from(BACKENDS), seed=st.integers(0, 2**16))
def test_random_graphs_keep_their_values(graph: el.Graph, backend: str, seed: int) -> None:
    result = el.lower(graph, backend)
    rng = np.random.default_rng(seed)
    f = {k: np.clip(v, -4, 4) for k, v in feeds_for(graph, rng).items()}  # chains of products grow fast
    assert_lowering_matches(graph, result.graph, f)


@pytest.mark.parametrize(
    "limits, reason",
    [(el.Limits(iterations=1), "iteration_limit"), (el.Limits(enodes=10), "node_limit"),
     (el.Limits(seconds=1e-9), "time_limit"), (el.Limits(), "saturated")],
)
def test_every_run_ends_with_a_reason(limits: el.Limits, reason: str) -> None:
    from egraph_lower.lower import saturate_graph

    s = saturate_graph(kind_graph("Mish"), [el.load_backend("wgpu")], limits)
    assert s.saturation.stop_reason == reason


def mlp_training_step(dtype: str = "f32") -> el.Graph:
    """A small MLP step: MatMul, Transpose, broadcast Add, BatchNormInference, Silu and its
    backward, the batch-norm backward ops, Reduce."""
    b = GraphBuilder("mlp_training_step")
    x, w = b.input("x", [8, 6], dtype), b.param("w", [6, 4], dtype)
    bias = b.param("bias", [4], dtype)
    gamma, beta = b.param("gamma", [4], dtype), b.param("beta", [4], dtype)
    mean, var = b.input("mean", [4], dtype), b.input("var", [4], dtype)
    dy = b.input("dy", [8, 4], dtype)
    z = b.binary("Add", b.matmul(x, w), bias)
    h = b.batch_norm(z, gamma, beta, mean, var, 1e-5)
    y = b.act("Silu", h)
    dh = b.act_backward("Silu", h, dy)
    dz = b.bn_backward_input(z, gamma, mean, var, dh)
    dgamma, dbeta = b.bn_backward_gamma(z, mean, var, dh), b.bn_backward_beta(dh)
    dw = b.matmul(b.transpose(x, [1, 0]), dz)
    dbias = b.reduce("Sum", dz, [0])
    return b.build([y, dw, dbias, dgamma, dbeta])


@pytest.mark.parametrize("backend", BACKENDS)
def test_mlp_training_step(backend: str) -> None:
    graph = mlp_training_step()
    result = el.lower(graph, backend)
    ops = set(result.graph.op_counts())
    if backend == "cpu":
        assert result.graph.op_counts() == graph.op_counts()
    elif backend != "mlx":
        assert not ops & set(BACKWARD_OPS)
    f = feeds_for(graph, np.random.default_rng(3), positive=frozenset({"var"}))
    assert_lowering_matches(graph, result.graph, f)
