"""egraph_lower.torch: the importer, the exporter and the torch.compile backend (skipped without torch)."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.build import GraphBuilder  # noqa: E402
from egraph_lower.ops import ACTIVATION_KINDS, BACKWARD_OPS, OUTPUT_FORM_KINDS  # noqa: E402
from torch_steps import mse_step, train  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles anew

A = torch.ops.aten
TARGETS = ("metal", "wgpu", "cpu")
ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU,
    "sigmoid": nn.Sigmoid,
    "tanh": nn.Tanh,
    "gelu": nn.GELU,
    "gelu_tanh": lambda: nn.GELU(approximate="tanh"),
    "silu": nn.SiLU,
    "elu": nn.ELU,
    "softplus": nn.Softplus,
    "hardswish": nn.Hardswish,
    "hardsigmoid": nn.Hardsigmoid,
    "mish": nn.Mish,
}


def _model(act: nn.Module, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    bn = nn.BatchNorm1d(16)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    model = nn.Sequential(nn.Linear(6, 16), bn, act, nn.Linear(16, 4))
    model.eval()  # batch norm in inference mode; the rest trains as usual
    return model


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("act", list(ACTIVATIONS))
def test_training_step_matches_eager(act: str, target: str) -> None:
    eager = _model(ACTIVATIONS[act]())
    compiled = copy.deepcopy(eager)
    torch.manual_seed(1)
    x, y = torch.randn(8, 6) * 2.0, torch.randn(8, 4)
    record: list[el.Graph] = []
    be = elt.backend(target, record=record, strict=True)
    step = torch.compile(mse_step(compiled), backend=be, dynamic=False)
    got = train(compiled, step, x, y)
    want = train(eager, mse_step(eager), x, y)
    for g_step, w_step in zip(got, want):
        for g, w in zip(g_step, w_step):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    assert be.unlowered_ops == {}, be.summary()
    kinds = {g.kind for g in be.graphs if g.status == "lowered"}
    assert {"forward", "backward"} <= kinds, be.summary()
    assert all(g.status in ("lowered", "nothing to lower") for g in be.graphs), be.summary()
    assert len(record) == sum(g.lowered for g in be.graphs)
    backend = el.load_backend(target)
    for graph in record:
        illegal = [n for n in graph.nodes if not backend.runs_node(n)]
        assert not illegal, f"{graph.name}: {target} does not run {illegal[:3]}"
        if target == "metal":
            assert not [n for n in graph.nodes if n.op in BACKWARD_OPS]
        assert el.from_json(graph.to_json()).to_dict() == graph.to_dict()


def test_backward_ops_reach_the_importer() -> None:
    """No decomposition expands the backward ops first: the cpu target keeps them fused."""
    record: list[el.Graph] = []
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Sigmoid(), nn.Linear(8, 8), nn.GELU())
    step = torch.compile(mse_step(model), backend=elt.backend("cpu", record=record, strict=True), dynamic=False)
    step(torch.randn(5, 4), torch.randn(5, 8))
    ops = {(n.op, n.attrs.get("kind"), n.attrs.get("wrt")) for g in record for n in g.nodes}
    assert ("ReluBackward", None, None) in ops
    assert ("ActivationBackward", "Sigmoid", "output") in ops
    assert ("ActivationBackward", "Gelu", None) in ops


def test_unmapped_ops_run_in_pytorch_and_are_reported() -> None:
    eager = _model(nn.Tanh())
    compiled = copy.deepcopy(eager)

    def make_step(model: nn.Module) -> Callable[..., Any]:
        def step(x: Any, y: Any) -> Any:
            loss = nn.functional.cross_entropy(torch.lgamma(model(x)), y)  # not in the format
            loss.backward()
            return loss

        return step

    x, y = torch.randn(8, 6), torch.randint(0, 4, (8,))
    record: list[el.Graph] = []
    be = elt.backend("metal", record=record)
    with pytest.warns(RuntimeWarning, match="lgamma|digamma"):  # its backward: digamma
        got = train(compiled, torch.compile(make_step(compiled), backend=be, dynamic=False), x, y)
    want = train(eager, make_step(eager), x, y)
    for g, w in zip(got[-1], want[-1]):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    assert "aten.lgamma.default" in be.unlowered_ops
    assert "aten.nll_loss_forward.default" not in be.unlowered_ops
    assert "aten.lgamma.default" in be.summary()
    assert any(g.status == "partly lowered" for g in be.graphs) and record
    backend = el.load_backend("metal")
    assert all(backend.runs_node(n) for g in record for n in g.nodes)


def test_unmapped_graph_runs_whole_without_partial() -> None:
    be = elt.backend("metal", partial=False)
    f = torch.compile(lambda x: torch.lgamma(x) * 2, backend=be, dynamic=False)
    x = torch.randn(5)
    with pytest.warns(RuntimeWarning, match="lgamma"):
        torch.testing.assert_close(f(x), torch.lgamma(x) * 2)
    assert be.graphs[0].status == "not lowered" and "aten.lgamma.default" in be.unlowered_ops


# --------------------------------------------------------------------------- importer and exporter


def _aten(fn: Callable[..., Any], *args: Any) -> Any:
    return make_fx(fn, tracing_mode="fake")(*args)


_TOL = {torch.float16: 4e-3, torch.bfloat16: 3e-2}  # a few ulps: torch computes these in f32 inside a kernel


def _round_trip(fn: Callable[..., Any], *args: Any) -> elt.Imported:
    """Import fn's aten graph, export it back; the export computes what the graph computed."""
    gm = _aten(fn, *args)
    imported = elt.import_graph(gm)
    el.validated(imported.graph)
    exported = elt.export_graph(imported.graph, imported.signature)
    want, got = gm(*args), exported(*args)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        tol = _TOL.get(w.dtype, 1e-5)
        torch.testing.assert_close(g, w, rtol=tol, atol=tol, equal_nan=True)
    return imported


def _ops(imported: elt.Imported) -> list[tuple[str, Any]]:
    return [(n.op, n.attrs.get("kind") or n.attrs.get("op")) for n in imported.graph.nodes]


def test_round_trip_activation_gradients() -> None:
    x = torch.linspace(-5.0, 5.0, 41).reshape(1, 41).expand(3, 41).contiguous()
    x[0, :6] = torch.tensor([-3.0, 3.0, 0.0, -0.0, 20.5, -20.5])
    g = torch.randn(3, 41)

    def f(x: Any, g: Any) -> Any:
        return (
            A.threshold_backward(g, x, 0),
            A.threshold_backward(g, x, 0.5),
            A.sigmoid_backward(g, torch.sigmoid(x)),
            A.tanh_backward(g, torch.tanh(x)),
            A.gelu_backward(g, x),
            A.gelu_backward(g, x, approximate="tanh"),
            A.silu_backward(g, x),
            A.elu_backward(g, 1.0, 1, 1, False, x),
            A.elu_backward(g, 1.0, 1, 1, True, torch.nn.functional.elu(x)),
            A.softplus_backward(g, x, 1.0, 20.0),
            A.hardswish_backward(g, x),
            A.hardsigmoid_backward(g, x),
            A.mish_backward(g, x),
        )

    imported = _round_trip(f, x, g)
    ops = _ops(imported)
    assert ("ReluBackward", None) in ops
    for kind in ("Sigmoid", "Tanh", "Gelu", "GeluApprox", "Silu", "Elu", "Softplus", "HardSwish", "HardSigmoid",
                 "Mish"):
        assert ("ActivationBackward", kind) in ops
    wrt = {(n.attrs["kind"], n.attrs.get("wrt", "input")) for n in imported.graph.nodes
           if n.op == "ActivationBackward"}
    assert {("Sigmoid", "output"), ("Tanh", "output"), ("Elu", "output"), ("Elu", "input")} <= wrt
    assert ("Where", None) in ops  # threshold_backward with threshold 0.5: torch's kernel as a Where


@pytest.mark.parametrize("kind, aten_grad", [
    ("HardSigmoid", lambda g, x: A.hardsigmoid_backward(g, x)),
    ("HardSwish", lambda g, x: A.hardswish_backward(g, x)),
    ("Elu", lambda g, x: A.elu_backward(g, 1.0, 1, 1, False, x)),
    ("Softplus", lambda g, x: A.softplus_backward(g, x, 1.0, 20.0)),
])
def test_torch_gradients_follow_the_format_conventions_at_the_edges(kind: str, aten_grad: Any) -> None:
    """The mappings rely on these: torch's value at the boundaries is the format's (the evaluator's), in f32."""
    x = torch.tensor([-3.0, -2.9999998, 0.0, -0.0, 2.9999998, 3.0, 20.0, 20.000002, 25.0, 90.0])
    g = torch.full_like(x, 1.5)
    b = GraphBuilder(kind)
    graph = b.build([b.act_backward(kind, b.input("x", [x.numel()]), b.input("dy", [x.numel()]))])
    (want,) = el.evaluate(graph, {"x": x.numpy(), "dy": g.numpy()})
    np.testing.assert_allclose(aten_grad(g, x).numpy(), want, rtol=2e-7, atol=0)


def test_softplus_threshold_is_exact_in_f64() -> None:
    """torch is linear above the threshold; in f64 that differs from exact softplus, so the threshold stays."""
    x = torch.tensor([-30.0, 0.0, 19.9, 20.0, 20.001, 30.0], dtype=torch.float64)
    g = torch.ones_like(x)
    f64 = _round_trip(lambda x, g: (A.softplus(x, 1.0, 20.0), A.softplus_backward(g, x, 1.0, 20.0)), x, g)
    assert all(n.attrs.get("threshold") == 20.0 for n in f64.graph.nodes if n.op.startswith("Activation"))
    f32 = _round_trip(lambda x, g: (A.softplus(x, 1.0, 20.0), A.softplus_backward(g, x, 1.0, 20.0)),
                      x.float(), g.float())
    assert all("threshold" not in n.attrs for n in f32.graph.nodes)
    above = x > 20  # torch's linear branch, kept exactly
    got = elt.export_graph(f64.graph, f64.signature)(x, g)
    assert torch.equal(got[0][above], x[above]) and torch.equal(got[1][above], g[above])


def test_round_trip_forward_ops() -> None:
    x, w = torch.randn(4, 6), torch.randn(6, 5)
    b = torch.randn(5)
    i = torch.arange(-6, 6, dtype=torch.int32).reshape(4, 3)

    def f(x: Any, w: Any, b: Any, i: Any) -> Any:
        h = torch.addmm(b, x, w)
        return (
            h, x @ w, x.t(), x.permute(1, 0), x.transpose(0, 1), x.view(2, 12), x.reshape(24), x.unsqueeze(0),
            b.expand(4, 5), h.sum(), h.sum(0, keepdim=True), h.mean(1), h.amax(0), h.amin(),
            x * 2 + 1, 3 - x, x / 2, x - b.sum(), torch.maximum(x, x * 0.5),
            x ** 2, torch.neg(x), torch.exp(x), torch.log(x.abs() + 1), torch.sqrt(x.abs()), torch.rsqrt(x.abs() + 1),
            torch.relu(x), torch.sigmoid(x), torch.tanh(x), torch.nn.functional.gelu(x), torch.nn.functional.silu(x),
            torch.nn.functional.elu(x), torch.nn.functional.softplus(x), torch.nn.functional.hardswish(x),
            torch.nn.functional.hardsigmoid(x), torch.nn.functional.mish(x), torch.erf(x), torch.round(x * 3),
            torch.where(x > 0, x, torch.zeros_like(x)), x > 0.5, x <= 0.25, x == x, x != 1,
            torch.ones_like(x), torch.zeros_like(i), torch.full((2, 2), 7.0),
            x.clone(), x.detach(), i.sum(), i * 2 - 1, i.to(torch.float32) / 4, (i > 0).sum(), i.float().mean(),
            x.to(torch.float64), x.to(torch.float16),
        )

    imported = _round_trip(f, x, w, b, i)
    assert imported.aten_ops["aten.addmm.default"] == 1


def test_transposes_of_a_0d_tensor_are_the_tensor() -> None:
    """aten takes dims 0 and -1 for a 0-d tensor (OpInfo's transpose sample); the importer raised IndexError."""
    s = torch.tensor(2.5)
    imported = _round_trip(lambda s: (s.transpose(0, 0) * 2, s.transpose(-1, 0) + 1, s.permute(()) - 1), s)
    assert "Transpose" not in {n.op for n in imported.graph.nodes}


def test_round_trip_batch_norm_eval() -> None:
    x, g = torch.randn(5, 3), torch.randn(5, 3)
    w, b, m, v = torch.rand(3) + 0.5, torch.randn(3), torch.randn(3), torch.rand(3) + 0.5

    def f(x: Any, g: Any, w: Any, b: Any, m: Any, v: Any) -> Any:
        y, _, _ = A._native_batch_norm_legit_no_training(x, w, b, m, v, 0.1, 1e-5)
        gi, gw, gb = A.native_batch_norm_backward(g, x, w, m, v, None, None, False, 1e-5, [True, True, True])
        return y, gi, gw, gb

    imported = _round_trip(f, x, g, w, b, m, v)
    ops = {op for op, _ in _ops(imported)}
    assert {"BatchNormInference", "BatchNormInferenceBackwardInput", "BatchNormInferenceBackwardGamma",
            "BatchNormInferenceBackwardBeta"} <= ops


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_round_trip_other_float_dtypes(dtype: Any) -> None:
    x, g = torch.randn(4, 5, dtype=dtype), torch.randn(4, 5, dtype=dtype)

    def f(x: Any, g: Any) -> Any:
        y = torch.sigmoid(x * 0.1 + 1)
        return y, A.sigmoid_backward(g, y), A.gelu_backward(g, x), (x > 0).all(), torch.softmax(x, 1)

    imported = _round_trip(f, x, g)
    fmt = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64"}[dtype]
    constants = [n for n in imported.graph.nodes if n.op == "Constant"]
    assert constants and all(n.dtype in (fmt, "bool") for n in constants)
    tenth = next(n.attrs["value"] for n in constants if abs(n.attrs["value"] - 0.1) < 1e-2)
    assert tenth == torch.tensor(0.1, dtype=dtype).item()  # the scalar rounded to the tensor's dtype


def test_round_trip_softmax_and_mse_loss() -> None:
    x, g = torch.randn(4, 5), torch.randn(4, 5)

    def f(x: Any, g: Any) -> Any:
        y, ly = A._softmax(x, 1, False), A._log_softmax(x, 0, False)
        return (y, ly, A._softmax_backward_data(g, y, 1, torch.float32),
                A._log_softmax_backward_data(g, ly, 0, torch.float32), A.mse_loss(x, g, 1),
                A.mse_loss_backward(g.sum(), x, g, 1), A.mse_loss(x, g, 0), A.mse_loss(x, g, 2))

    _round_trip(f, x, g)


def test_inference_graph_is_lowered() -> None:
    model = _model(nn.Mish())
    record: list[el.Graph] = []
    be = elt.backend("metal", record=record, strict=True)
    x = torch.randn(8, 6)
    with torch.no_grad():
        got = torch.compile(model, backend=be, dynamic=False)(x)
        torch.testing.assert_close(got, model(x), rtol=1e-5, atol=1e-6)
    assert [g.kind for g in be.graphs] == ["inference"] and len(record) == 1


def test_signature_keeps_none_passthrough_and_empty_outputs() -> None:
    x, w, b, m, v = torch.randn(4, 3), torch.rand(3), torch.randn(3), torch.randn(3), torch.rand(3) + 0.5

    def f(x: Any, w: Any, b: Any, m: Any, v: Any) -> Any:
        y, s1, s2 = A._native_batch_norm_legit_no_training(x, w, b, m, v, 0.1, 1e-5)
        return y, s1, s2, x, None

    gm = _aten(f, x, w, b, m, v)
    imported = elt.import_graph(gm)
    kinds = [s.kind for s in imported.signature.outputs]
    assert kinds == ["output", "empty", "empty", "input", "none"]
    out = elt.export_graph(imported.graph, imported.signature)(x, w, b, m, v)
    assert out[3] is x and out[4] is None and out[1].shape == (0,)


def test_export_a_built_graph_uses_input_names() -> None:
    b = GraphBuilder("relu_step")
    x = b.input("x", [2, 3])
    dy = b.input("dy", [2, 3])
    graph = b.build([b.relu_backward(x, dy)])
    gm = elt.export_graph(graph)
    xs, dys = torch.tensor([[1.0, -1.0, 0.0], [2.0, -0.0, 3.0]]), torch.ones(2, 3)
    (out,) = gm(xs, dys)
    assert out.tolist() == [[1.0, 0.0, 0.0], [1.0, 0.0, 1.0]]


# --------------------------------------------------------------------------- exporter against the reference evaluator

_VALUES = [-30.0, -20.5, -5.0, -3.0, -2.5, -1.0, -1e-3, -0.0, 0.0, 1e-3, 0.5, 1.0, 2.5, 3.0, 5.0, 20.5, 30.0,
           float("nan")]


def _check_against_evaluator(graph: el.Graph, feeds: dict[str, np.ndarray], rtol: float = 1e-12) -> None:
    want = el.evaluate(graph, feeds)
    gm = elt.export_graph(graph)
    args = [torch.from_numpy(np.asarray(feeds[name])) for name in elt.Signature.of(graph).inputs]
    got = gm(*args)
    for node_id, w, g in zip(graph.outputs, want, got):
        assert str(g.dtype).removeprefix("torch.") == str(w.dtype) or graph.node(node_id).dtype == "bf16"
        np.testing.assert_allclose(g.numpy(), w, rtol=rtol, atol=1e-15, equal_nan=True,
                                   err_msg=f"{graph.name} node {graph.node(node_id)}")


@pytest.mark.parametrize("kind", ACTIVATION_KINDS)
def test_exported_activation_kinds_match_the_evaluator(kind: str) -> None:
    xs = np.array(_VALUES, dtype=np.float64)
    if kind in ("Log", "Sqrt", "Rsqrt"):
        xs = np.abs(xs)
    dy = np.linspace(-2.0, 2.0, xs.size)
    b = GraphBuilder(kind)
    x, g = b.input("x", [xs.size], "f64"), b.input("dy", [xs.size], "f64")
    outs = [b.act(kind, x), b.act_backward(kind, x, g)]
    if kind in OUTPUT_FORM_KINDS:
        outs.append(b.act_backward(kind, outs[0], g, wrt="output"))
    rtol = 1e-6 if kind in ("Erf", "Gelu", "GeluApprox", "Mish") else 1e-12
    _check_against_evaluator(b.build(outs), {"x": xs, "dy": dy}, rtol=rtol)


def test_exported_integer_and_cast_semantics_match_the_evaluator() -> None:
    b = GraphBuilder("ints")
    a, c = b.input("a", [6], "i32"), b.input("c", [6], "i32")
    f = b.input("f", [6], "f32")
    outs = [b.binary(op, a, c) for op in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow")]
    outs += [b.cast(f, "i32"), b.cast(f, "bool"), b.cast(a, "f16"), b.reduce("Mean", b.cast(a, "f32"), [0]),
             b.reduce("Sum", a, []), b.reduce("Max", a, [0], keep_dim=True), b.compare("Lt", a, c),
             b.where(b.compare("Gt", a, c), a, c), b.act("Abs", a), b.act("Sign", a)]
    feeds = {"a": np.array([7, -7, 0, 5, -1, 2], dtype=np.int32), "c": np.array([2, 2, 0, -3, -3, 0], dtype=np.int32),
             "f": np.array([1.5, -1.5, np.nan, 1e20, -1e20, np.inf], dtype=np.float32)}
    _check_against_evaluator(b.build(outs), feeds)


def test_exported_batch_norm_ops_match_the_evaluator() -> None:
    rng = np.random.default_rng(0)
    b = GraphBuilder("bn")
    x, dy = b.input("x", [5, 3], "f64"), b.input("dy", [5, 3], "f64")
    gamma, beta, mean, var = (b.input(n, [3], "f64") for n in ("gamma", "beta", "mean", "var"))
    outs = [b.batch_norm(x, gamma, beta, mean, var), b.bn_backward_input(x, gamma, mean, var, dy),
            b.bn_backward_gamma(x, mean, var, dy), b.bn_backward_beta(dy),
            b.matmul(x, b.transpose(dy, [1, 0])), b.reshape(b.expand(beta, [2, 3]), [3, 2])]
    feeds = {n: rng.standard_normal(s) for n, s in (("x", (5, 3)), ("dy", (5, 3)), ("gamma", 3), ("beta", 3),
                                                      ("mean", 3))}
    feeds["var"] = rng.random(3) + 0.5
    _check_against_evaluator(b.build(outs), feeds, rtol=1e-12)


# --------------------------------------------------------------------------- refusals


def test_unsupported_op_names_the_op() -> None:
    gm = _aten(lambda x: torch.lgamma(x), torch.randn(4))
    with pytest.raises(elt.UnsupportedOp, match=r"aten\.lgamma\.default") as info:
        elt.import_graph(gm)
    assert info.value.op == "aten.lgamma.default"
    assert isinstance(info.value, el.LowerError)


@pytest.mark.parametrize("fn, args, why", [
    (lambda x: x.to(torch.uint8), (torch.randn(3),), "uint8"),
    (lambda x: torch.lgamma(x), (torch.randn(3),), "lgamma"),
])
def test_refused_mappings_say_why(fn: Callable[..., Any], args: tuple[Any, ...], why: str) -> None:
    with pytest.raises(elt.UnsupportedOp, match=why):
        elt.import_graph(_aten(fn, *args))


def test_core_package_imports_without_torch() -> None:
    code = "import sys, egraph_lower; assert 'torch' not in sys.modules, 'egraph_lower imported torch'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_clear_import_error_without_torch() -> None:
    code = ("import sys; sys.modules['torch'] = None\n"
            "try:\n    import egraph_lower.torch\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert "needs PyTorch" in out and "egraph-lower[torch]" in out
