"""torch and the parametrised activations, slicing, selecting and cat: the evaluator against torch's own kernels in
float64 (at the kinks), the aten mappings, and training steps compiled for metal and wgpu against eager."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.evaluate import activation, activation_grad, activation_grad_from_output  # noqa: E402
from egraph_lower.ops import BACKWARD_OPS  # noqa: E402
from torch_steps import mse_step, train_like_eager  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles anew

A = torch.ops.aten
SELU = {"alpha": 1.6732632423543772, "scale": 1.0507009873554805}

# (kind, format parameters, torch forward, torch backward(grad, x)), all float64
CASES: list[tuple[str, dict[str, float], Callable[[Any], Any], Callable[[Any, Any], Any]]] = [
    ("LeakyRelu", {"alpha": 0.2}, lambda x: F.leaky_relu(x, 0.2), lambda g, x: A.leaky_relu_backward(g, x, 0.2, False)),
    ("LeakyRelu", {"alpha": -0.3}, lambda x: F.leaky_relu(x, -0.3),
     lambda g, x: A.leaky_relu_backward(g, x, -0.3, False)),
    ("Hardtanh", {"min": 0.0, "max": 6.0}, F.relu6, lambda g, x: A.hardtanh_backward(g, x, 0.0, 6.0)),
    ("Hardtanh", {"min": -1.0, "max": 1.0}, F.hardtanh, lambda g, x: A.hardtanh_backward(g, x, -1.0, 1.0)),
    ("Elu", {"alpha": 0.5}, lambda x: F.elu(x, 0.5), lambda g, x: A.elu_backward(g, 0.5, 1, 1, False, x)),
    ("Elu", SELU, F.selu, lambda g, x: A.elu_backward(g, SELU["alpha"], SELU["scale"], 1, False, x)),
    ("Elu", {"alpha": 0.7, "input_scale": 1 / 0.7}, lambda x: F.celu(x, 0.7),
     lambda g, x: A.elu_backward(g, 0.7, 1, 1 / 0.7, False, x)),
    ("Softplus", {"beta": 2.0, "threshold": 5.0}, lambda x: F.softplus(x, 2.0, 5.0),
     lambda g, x: A.softplus_backward(g, x, 2.0, 5.0)),
    ("Softplus", {"beta": -0.5, "threshold": 3.0}, lambda x: F.softplus(x, -0.5, 3.0),
     lambda g, x: A.softplus_backward(g, x, -0.5, 3.0)),
    ("LogSigmoid", {}, F.logsigmoid, lambda g, x: A.log_sigmoid_backward(g, x, A.log_sigmoid_forward(x)[1])),
    ("Sign", {}, torch.sgn, lambda g, x: torch.zeros_like(x)),  # the derivative of sgn itself: 0
]
KINKS = [0.0, -0.0, 1e-300, -1e-300, 1.0, -1.0, 6.0, -6.0, 2.5, 5.0, -6.0, 3.0, -20.0, 20.0, 700.0, -700.0]


def _ids(case: tuple) -> str:
    return f"{case[0]}{case[1]}"


def _x() -> Any:
    x = torch.tensor(KINKS + np.linspace(-9, 9, 37).tolist(), dtype=torch.float64)
    return torch.cat([x, torch.nextafter(x, x + 1), torch.nextafter(x, x - 1)])


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_evaluator_agrees_with_torch_in_float64(case: tuple) -> None:
    kind, p, fwd, bwd = case
    x = _x()
    g = torch.full_like(x, 1.5)
    np.testing.assert_allclose(activation(kind, x.numpy(), p), fwd(x).numpy(), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(1.5 * activation_grad(kind, x.numpy(), p), bwd(g, x).numpy(), rtol=1e-14, atol=1e-300)


def test_elu_output_form_agrees_with_torch_is_result() -> None:
    x = _x()
    y = F.selu(x)
    want = A.elu_backward(torch.ones_like(x), SELU["alpha"], SELU["scale"], 1, True, y)
    np.testing.assert_allclose(activation_grad_from_output("Elu", y.numpy(), SELU), want.numpy(), rtol=1e-14)


def test_abs_gradient_is_sgn() -> None:
    x = _x().requires_grad_()
    x.abs().sum().backward()
    np.testing.assert_array_equal(activation_grad("Abs", x.detach().numpy()), x.grad.numpy())


# --------------------------------------------------------------------------- the aten mappings

def _import(fn: Callable[..., Any], *args: Any) -> tuple[elt.Imported, Any]:
    """fn's aten graph imported; its export (the torch kernels) and, in float64, the reference evaluator
    compute what torch's own kernels do."""
    gm = make_fx(fn, tracing_mode="fake")(*args)
    imported = elt.import_graph(gm)
    got = elt.export_graph(imported.graph, imported.signature)(*args)
    want = gm(*args)
    for w, v in zip(want, got):
        assert v.shape == w.shape and v.dtype == w.dtype
        torch.testing.assert_close(v, w, rtol=1e-14, atol=1e-300)
    if all(a.dtype == torch.float64 for a in args):
        feeds = {name: a.numpy() for name, a in zip(imported.signature.inputs, args)}
        values = el.evaluate(imported.graph, feeds)
        for slot, w in zip(imported.signature.outputs, want):
            if slot.kind == "output":
                np.testing.assert_allclose(values[slot.index], w.numpy(), rtol=1e-14, atol=1e-300)
    return imported, got


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_activation_mappings_are_exact_in_float64(case: tuple) -> None:
    kind, p, fwd, bwd = case
    imported, _ = _import(lambda x, g: (fwd(x), bwd(g, x)), _x(), torch.randn(len(_x()), dtype=torch.float64))
    nodes = [n for n in imported.graph.nodes if n.op in ("Activation", "ActivationBackward")]
    assert {n.attrs["kind"] for n in nodes} == {kind}
    want = {k: v for k, v in p.items() if not (kind == "Elu" and v == 1.0)}  # Elu: only what is not 1
    for n in nodes:
        assert {k: v for k, v in n.attrs.items() if k not in ("kind", "wrt")} == want


def test_softplus_keeps_its_threshold_in_float64_and_drops_it_in_float32() -> None:
    x = torch.tensor([-30.0, 0.0, 19.9, 20.0, 20.001, 30.0], dtype=torch.float64)

    def f(x: Any, g: Any) -> Any:
        return A.softplus(x, 1.0, 20.0), A.softplus_backward(g, x, 1.0, 20.0)

    f64, got = _import(f, x, torch.ones_like(x))
    assert {n.attrs.get("threshold") for n in f64.graph.nodes if n.op.startswith("Activation")} == {20.0}
    above = x > 20  # torch's linear branch, exactly
    assert torch.equal(got[0][above], x[above]) and torch.equal(got[1][above], torch.ones_like(x)[above])
    f32, _ = _import(f, x.float(), torch.ones_like(x).float())
    assert all("threshold" not in n.attrs for n in f32.graph.nodes)


def test_slicing_mappings_are_exact() -> None:
    x = torch.randn(4, 9, 3, dtype=torch.float64)
    g = torch.randn(4, 3, 3, dtype=torch.float64)

    def f(x: Any, g: Any) -> Any:
        a, b, c = torch.split(x, [2, 3, 4], dim=1)
        return (x[:, 1:7:2], x.select(1, -2), torch.cat([a, c, b], dim=1), torch.cat([x[:0], x]),
                A.slice_backward(g, [4, 9, 3], 1, -7, 5, 1), A.select_backward(g[:, 0], [4, 9, 3], 1, 4),
                A.slice_backward(g[:, :2], [4, 9, 3], 1, 1, 9, 4), A.slice_backward(g, [4, 9, 3], 1, 2, 100, 3),
                *torch.split(x, 4, dim=1))

    imported, _ = _import(f, x, g)
    ops = {n.op for n in imported.graph.nodes}
    assert {"Slice", "Concat", "SliceBackward", "Reshape"} <= ops
    # each slice_backward and select_backward is one SliceBackward (any step): the importer expands nothing
    assert sorted(n.attrs["step"] for n in imported.graph.nodes if n.op == "SliceBackward") == [1, 1, 3, 4]
    assert "Pad" not in ops


def test_leaky_relu_backward_from_a_negative_slope_result_is_refused() -> None:
    gm = make_fx(lambda g, y: A.leaky_relu_backward(g, y, -0.1, True), tracing_mode="fake")(torch.randn(3),
                                                                                           torch.randn(3))
    with pytest.raises(elt.UnsupportedOp, match="negative slope"):
        elt.import_graph(gm)


# --------------------------------------------------------------------------- training steps

class Abs(nn.Module):
    def forward(self, x: Any) -> Any:
        return x.abs()


class Slicer(nn.Module):
    """Slices, selects, splits and concatenates its input (what GPT-2's and BERT's graphs do)."""

    def forward(self, x: Any) -> Any:
        a, b = x.split([6, 10], dim=1)
        first = x.select(1, 0).unsqueeze(1)
        return torch.cat([b[:, ::2], a, first, x[:, 3:8] * 2.0, b[:, 1:]], dim=1)


TRAINED: dict[str, Callable[[], nn.Module]] = {
    "leaky_relu": lambda: nn.LeakyReLU(0.1),
    "relu6": nn.ReLU6,
    "hardtanh": lambda: nn.Hardtanh(-0.5, 2.0),
    "selu": nn.SELU,
    "celu": lambda: nn.CELU(0.7),
    "elu_alpha": lambda: nn.ELU(alpha=0.5),
    "softplus_beta": lambda: nn.Softplus(beta=2.0, threshold=5.0),
    "logsigmoid": nn.LogSigmoid,
    "abs": Abs,
    "slicing": Slicer,
}


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("act", list(TRAINED))
def test_training_step_matches_eager(act: str, target: str) -> None:
    torch.manual_seed(0)
    width = 26 if act == "slicing" else 16  # Slicer: 16 -> 5 + 6 + 1 + 5 + 9
    eager = nn.Sequential(nn.Linear(6, 16), TRAINED[act](), nn.Linear(width, 4))
    torch.manual_seed(1)
    x, y = torch.randn(8, 6) * 3.0, torch.randn(8, 4)
    be, record, _ = train_like_eager(eager, mse_step, x, y, target)
    assert all(g.status in ("lowered", "nothing to lower") for g in be.graphs), be.summary()
    backend = el.load_backend(target)
    for graph in record:
        assert all(backend.runs_node(n) for n in graph.nodes)
        assert not [n for n in graph.nodes if n.op in BACKWARD_OPS]
        assert el.from_json(graph.to_json()).to_dict() == graph.to_dict()


# ---- rrelu: eval is leaky_relu with slope (lower + upper) / 2; training draws its slopes (left in PyTorch)

@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_rrelu_in_eval_lowers_whole_and_matches_eager(target: str, dtype: Any) -> None:
    torch.manual_seed(0)
    x = torch.randn(4, 7, dtype=dtype) * 3
    x[0, :3] = torch.tensor([0.0, -0.0, -1e-3])

    def fn(x: Any) -> Any:
        return F.rrelu(x, lower=0.1, upper=0.4, training=False)

    be = elt.backend(target, strict=True)  # strict: a refused forward would raise
    xc, xe = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    g = torch.randn(4, 7, dtype=dtype)
    got = torch.compile(fn, backend=be, dynamic=False)(xc)
    got.backward(g)
    want = fn(xe)
    want.backward(g)
    assert be.unlowered_ops == {} and any(r.kind == "backward" for r in be.graphs), be.summary()
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(xc.grad, xe.grad, rtol=0, atol=0)
    torch.testing.assert_close(want, F.leaky_relu(x, 0.25), rtol=0, atol=0)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_rrelu_in_training_leaves_only_its_forward_in_pytorch(target: str) -> None:
    """The forward draws each negative element's slope from eager's generator: it stays in PyTorch; its
    backward, dy times the noise it drew, lowers, and the step matches eager's under the same seed."""
    x = torch.randn(5, 6)

    def fn(x: Any) -> Any:
        return F.rrelu(x, lower=0.1, upper=0.4, training=True) * 2

    be = elt.backend(target)
    xc, xe = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    torch.manual_seed(1)
    got = torch.compile(fn, backend=be, dynamic=False)(xc)
    got.sum().backward()
    torch.manual_seed(1)
    want = fn(xe)
    want.sum().backward()
    assert set(be.unlowered_ops) == {"aten.rrelu_with_noise_functional.default"}, be.summary()
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(xc.grad, xe.grad, rtol=0, atol=0)
