"""The softmax family through torch: each op's kernel and evaluator agree with torch's own
kernels in float64 (awkward rows included), and small training steps with softmax, log-softmax
and MSE compile for metal and wgpu with every gradient equal to eager."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.evaluate import apply  # noqa: E402
from torch_steps import train_like_eager  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles anew
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

A = torch.ops.aten
SOFTMAX_OPS = {"Softmax", "LogSoftmax", "SoftmaxBackward", "LogSoftmaxBackward", "MseLoss", "MseLossBackward"}


def _rows() -> Any:
    x = torch.randn(6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 3.0
    x[1] = 7.0  # all equal
    x[2] = torch.tensor([1e4, -1e4, 1e4 - 1.0, 0.0, 1e30], dtype=torch.float64)  # large logits
    x[3, ::2] = -torch.inf  # masked
    x[4] = -torch.inf  # all masked: nan
    return x


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_evaluator_agrees_with_torch_in_f64(dim: int) -> None:
    x = _rows()
    dy = torch.randn(6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 1e3
    xn, dyn = x.numpy(), dy.numpy()
    cases = [("Softmax", A._softmax(x, dim, False), [xn]),
             ("LogSoftmax", A._log_softmax(x, dim, False), [xn])]
    y, ly = A._softmax(x, dim, False), A._log_softmax(x, dim, False)
    cases += [("SoftmaxBackward", A._softmax_backward_data(dy, y, dim, torch.float64), [y.numpy(), dyn]),
              ("LogSoftmaxBackward", A._log_softmax_backward_data(dy, ly, dim, torch.float64), [ly.numpy(), dyn])]
    for op, want, args in cases:
        got = apply(op, {"axis": dim}, args, "f64")
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-300, err_msg=op)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_mse_evaluator_agrees_with_torch_in_f64(reduction: int) -> None:
    g = torch.Generator().manual_seed(2)
    x, t = torch.randn(4, 3, dtype=torch.float64, generator=g) * 1e3, torch.randn(4, 3, dtype=torch.float64, generator=g)
    t[0] = x[0]  # zero difference
    name = ("none", "mean", "sum")[reduction]
    dy = torch.randn(4, 3, dtype=torch.float64, generator=g) if reduction == 0 else torch.tensor(0.7, dtype=torch.float64)
    got = apply("MseLoss", {"reduction": name}, [x.numpy(), t.numpy()], "f64")
    np.testing.assert_allclose(got, A.mse_loss(x, t, reduction).numpy(), rtol=1e-13)
    got = apply("MseLossBackward", {"reduction": name}, [x.numpy(), t.numpy(), dy.numpy()], "f64")
    np.testing.assert_allclose(got, A.mse_loss_backward(dy, x, t, reduction).numpy(), rtol=1e-13)


def test_importer_maps_each_aten_op_to_one_format_op() -> None:
    x, g = torch.randn(4, 5), torch.randn(4, 5)

    def f(x: Any, g: Any) -> Any:
        y, ly = A._softmax(x, 1, False), A._log_softmax(x, 0, False)
        return (A._softmax_backward_data(g, y, 1, torch.float32), A._log_softmax_backward_data(g, ly, 0, torch.float32),
                A.mse_loss(x, g, 1), A.mse_loss_backward(g, x, g, 0))

    gm = make_fx(f, tracing_mode="fake")(x, g)
    imported = elt.import_graph(gm)
    ops = [n.op for n in imported.graph.nodes if n.op not in ("Input", "Param")]
    assert sorted(ops) == sorted(SOFTMAX_OPS)
    for want, got in zip(gm(x, g), elt.export_graph(imported.graph, imported.signature)(x, g)):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_half_to_float_casts_first() -> None:
    x = torch.randn(3, 4).half()
    imported = elt.import_graph(make_fx(lambda x: A._softmax(x, 1, True), tracing_mode="fake")(x))
    ops = [(n.op, n.dtype) for n in imported.graph.nodes]
    assert ops[1:] == [("Cast", "f32"), ("Softmax", "f32")]


def test_half_to_float_backward_computes_in_f32_then_casts() -> None:
    y, g = torch.softmax(torch.randn(3, 4), 1), torch.randn(3, 4)

    def f(y: Any, g: Any) -> Any:
        return A._softmax_backward_data(g, y, 1, torch.float16), A._log_softmax_backward_data(g, y, 0, torch.float16)

    gm = make_fx(f, tracing_mode="fake")(y, g)
    imported = elt.import_graph(gm)
    ops = [(n.op, n.dtype) for n in imported.graph.nodes if n.op != "Input"]
    assert ops == [("SoftmaxBackward", "f32"), ("Cast", "f16"), ("LogSoftmaxBackward", "f32"), ("Cast", "f16")]
    # torch's CPU kernels refuse input_dtype f16 with f32 operands (a CUDA path): the f32 result, cast
    want = (A._softmax_backward_data(g, y, 1, torch.float32).half(),
            A._log_softmax_backward_data(g, y, 0, torch.float32).half())
    for w, got in zip(want, elt.export_graph(imported.graph, imported.signature)(y, g)):
        assert got.dtype == torch.float16
        torch.testing.assert_close(got, w, rtol=0, atol=0)


def _softmax_mse(model: nn.Module) -> Callable[..., Any]:
    def step(x: Any, y: Any) -> Any:
        loss = nn.functional.mse_loss(torch.softmax(model(x), dim=1), y)
        loss.backward()
        return loss
    return step


def _cross_entropy(model: nn.Module) -> Callable[..., Any]:
    def step(x: Any, y: Any) -> Any:  # y one-hot: -sum(y log_softmax) / N, no gather
        loss = -(y * torch.log_softmax(model(x), dim=1)).sum() / x.shape[0]
        loss.backward()
        return loss
    return step


def _sum_mse(model: nn.Module) -> Callable[..., Any]:
    def step(x: Any, y: Any) -> Any:
        loss = nn.functional.mse_loss(model(x), y, reduction="sum") + nn.functional.mse_loss(
            torch.log_softmax(model(x), dim=0), y, reduction="none").mean()
        loss.backward()
        return loss
    return step


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("make_step", [_softmax_mse, _cross_entropy, _sum_mse])
def test_training_step_matches_eager(target: str, make_step: Callable[[nn.Module], Callable[..., Any]]) -> None:
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4))
    x = torch.randn(8, 6) * 2.0
    y = nn.functional.one_hot(torch.arange(8) % 4, 4).float()
    be, record, _ = train_like_eager(eager, make_step, x, y, target)
    backend = el.load_backend(target)
    for graph in record:
        assert all(backend.runs_node(n) for n in graph.nodes), graph.name
        left = {n.op for n in graph.nodes} & SOFTMAX_OPS
        assert left <= {op for op in SOFTMAX_OPS if backend.runs(op)}, left


@pytest.mark.parametrize("dim", [0, -1])
def test_zero_d_softmax_is_taken_along_one_position(dim: int) -> None:
    """aten takes a 0-d tensor's softmax along dim 0 or -1 (1, or nan where x is not finite; its log 0);
    the format's axis needs rank 1, so the importer reshapes to [1] and back, forward and backward."""
    x = torch.tensor([0.3, float("nan"), float("inf"), -float("inf")], dtype=torch.float64)
    g = torch.tensor(2.5, dtype=torch.float64)

    def f(x: Any, g: Any) -> Any:
        y, ly = A._softmax(x, dim, False), A._log_softmax(x, dim, False)
        return (y, ly, A._softmax_backward_data(g, y, dim, torch.float64),
                A._log_softmax_backward_data(g, ly, dim, torch.float64))

    for v in x:
        gm = make_fx(f, tracing_mode="fake")(v, g)
        imported = elt.import_graph(gm)
        assert {n.op for n in imported.graph.nodes} >= SOFTMAX_OPS - {"MseLoss", "MseLossBackward"}
        for want, got in zip(gm(v, g), elt.export_graph(imported.graph, imported.signature)(v, g)):
            assert got.shape == ()
            torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_zero_d_softmax_compiles_with_eager_gradient(target: str) -> None:
    w = torch.tensor(0.7, requires_grad=True)
    be = elt.backend(target, strict=True)

    def f(w: Any) -> Any:
        return (torch.softmax(w * 3.0, dim=0) * 2.0 + torch.log_softmax(w, dim=-1)).sum()

    out = torch.compile(f, backend=be, dynamic=False)(w)
    out.backward()
    got, w.grad = w.grad, None
    f(w).backward()
    torch.testing.assert_close(got, w.grad)
    assert be.unlowered_ops == {}
