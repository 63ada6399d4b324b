"""The activations with a tensor operand (opdefs/gating.py): GluBackward against aten's glu_backward and
torch's autograd in float64 and against the finite difference of glu; validation in one line; the
lowering for metal and wgpu is what the evaluator says; F.glu through the torch backend leaves nothing
in PyTorch and has eager's gradients."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import LowerError
from egraph_lower.evaluate import apply
from egraph_lower.validate import infer
from support import assert_lowering_matches, numeric_vjp

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _glu(x: np.ndarray, axis: int) -> np.ndarray:
    a, b = np.split(x, 2, axis=axis)
    return a / (1.0 + np.exp(-b))


@pytest.mark.parametrize("axis", [0, 1, -1, -3])
def test_glu_backward_is_atens_and_autograds_in_float64(axis: int) -> None:
    g = torch.Generator().manual_seed(axis + 5)
    x = torch.randn(4, 2, 6, dtype=torch.float64, generator=g) * 6  # b up to ~20: saturated sigmoids too
    x = x.requires_grad_(True)
    y = F.glu(x, axis)
    dy = torch.randn(y.shape, dtype=torch.float64, generator=g)
    (want,) = torch.autograd.grad(y, x, dy)
    aten = torch.ops.aten.glu_backward.default(dy, x.detach(), axis)
    got = apply("GluBackward", {"axis": axis}, [x.detach().numpy(), dy.numpy()], "f64")
    # aten writes s(1 - s), which loses digits where s is near 1 (the reference: s sigmoid(-b)): an
    # absolute error of a few eps |dy a| there
    a = np.split(x.detach().numpy(), 2, axis=axis)[0]
    d = np.abs(dy.numpy())
    scale = np.concatenate([d, d * np.maximum(1.0, np.abs(a))], axis=axis)
    for other in (aten.numpy(), want.numpy()):
        assert np.all(np.abs(got - other) <= 8 * 2.0**-52 * scale)
    np.testing.assert_allclose(got, aten.numpy(), rtol=1e-9)


def test_glu_backward_is_the_finite_difference_of_glu() -> None:
    """Independently of torch: the vjp of glu by central differences."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4)) * 2
    dy = rng.standard_normal((3, 2))
    want = numeric_vjp(lambda v: _glu(v, 1), x, dy)
    np.testing.assert_allclose(apply("GluBackward", {"axis": 1}, [x, dy], "f64"), want, rtol=1e-7, atol=1e-9)


def test_glu_backward_where_the_sigmoid_saturates() -> None:
    """b = +-40: s(1 - s) ~ 4e-18 is kept (not 1 - s = 0 in float64's s), and f32's result is f64's rounded."""
    x = np.array([[2.0, -3.0, 40.0, -40.0]])
    dy = np.array([[1.5, 2.0]])
    got = apply("GluBackward", {"axis": 1}, [x, dy], "f64")
    s = 1 / (1 + np.exp(-40.0))
    np.testing.assert_allclose(got[0, 2:], [1.5 * 2.0 * np.exp(-40.0) * s, 2.0 * -3.0 * np.exp(-40.0) * s], rtol=1e-14)
    assert got[0, 2] > 0 and got[0, 3] < 0
    f32 = apply("GluBackward", {"axis": 1}, [x.astype(np.float32), dy.astype(np.float32)], "f32")
    np.testing.assert_array_equal(f32, got.astype(np.float32))


@pytest.mark.parametrize("shapes, attrs, message", [
    ([((2, 3), "f32"), ((2, 1), "f32")], {"axis": 1}, "odd size 3"),
    ([((2, 4), "f32"), ((2, 4), "f32")], {"axis": 1}, r"not glu's output shape \[2, 2\]"),
    ([((2, 4), "f32"), ((1, 4), "f32")], {"axis": 2}, "out of range for rank 2"),
    ([((), "f32"), ((), "f32")], {"axis": 0}, "0-d"),
    ([((2, 4), "i32"), ((2, 2), "i32")], {"axis": 1}, "float dtype"),
])
def test_glu_backward_validation_in_one_line(shapes: Any, attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        infer("GluBackward", attrs, shapes)
    assert "\n" not in str(err.value)
    if shapes[0][1] == "f32" and shapes[0][0]:
        with pytest.raises(LowerError):
            apply("GluBackward", attrs, [np.zeros(s) for s, _ in shapes], "f32")


@pytest.mark.parametrize("backend", ["metal", "wgpu", "tpu", "mlx"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_glu_backward_lowers_to_what_the_evaluator_says(axis: int, backend: str) -> None:
    shape = [4, 6, 2]
    b = GraphBuilder("glu")
    x = b.input("x", shape, "f32")
    half = list(shape)
    half[axis] //= 2
    dy = b.input("dy", half, "f32")
    graph = b.build([b.op("GluBackward", x, dy, axis=axis)])
    rng = np.random.default_rng(axis + 3)
    feeds = {"x": (rng.standard_normal(shape) * 8).astype(np.float32),
             "dy": rng.standard_normal(half).astype(np.float32)}
    lowered = el.lower(graph, backend).graph
    target = el.load_backend(backend)
    assert all(target.runs_node(node) for node in lowered.nodes)
    assert "GluBackward" not in lowered.op_counts()
    assert_lowering_matches(graph, lowered, feeds)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("backend", ["metal", "wgpu", "cpu"])
def test_f_glu_through_the_backend_leaves_nothing_in_pytorch(backend: str, dtype: Any) -> None:
    from egraph_lower.torch import backend as make_backend

    torch._dynamo.reset()
    be = make_backend(backend)
    fn = torch.compile(lambda t: F.glu(t, 1).sin(), backend=be, dynamic=False)
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(3, 8, 2, generator=g) * 4).to(dtype).requires_grad_(True)
    y = fn(x)
    dy = torch.randn(y.shape, generator=g).to(dtype)
    (got,) = torch.autograd.grad(y, x, dy)
    (want,) = torch.autograd.grad(F.glu(x, 1).sin(), x, dy)
    assert be.unlowered_ops == {} and all(not r.errors for r in be.graphs), be.summary()
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2e-2, torch.bfloat16: 1e-1}[dtype]
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)


def test_the_glu_kernel_is_the_reference() -> None:
    from egraph_lower.torch import kernels

    g = torch.Generator().manual_seed(4)
    x = torch.randn(3, 4, dtype=torch.float64, generator=g) * 5
    dy = torch.randn(3, 2, dtype=torch.float64, generator=g)
    np.testing.assert_allclose(kernels.glu_backward(x, dy, axis=-1).numpy(),
                               apply("GluBackward", {"axis": -1}, [x.numpy(), dy.numpy()], "f64"), rtol=1e-14)
    got = kernels.glu_backward(x.to(torch.bfloat16), dy.to(torch.bfloat16), axis=1)
    want = apply("GluBackward", {"axis": 1}, [x.to(torch.bfloat16).double().numpy(),
                                              dy.to(torch.bfloat16).double().numpy()], "bf16")
    np.testing.assert_allclose(got.float().numpy(), want.astype(np.float32), rtol=2**-7)


# ---- PreluBackward

def _prelu_case(xs: tuple[int, ...], ws: tuple[int, ...], seed: int) -> tuple[Any, Any, Any]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(xs, dtype=torch.float64, generator=g) * 3
    x.view(-1)[:2] = torch.tensor([0.0, -0.0], dtype=torch.float64)[: x.numel()]  # at the kink
    w = torch.randn(ws, dtype=torch.float64, generator=g)
    dy = torch.randn(xs, dtype=torch.float64, generator=g)
    return x, w, dy


@pytest.mark.parametrize("xs, ws", [((2, 3, 4), (1, 3, 1)), ((5,), ()), ((), ()), ((4, 2), (1, 2))])
def test_prelu_backward_is_atens_prelu_kernel_backward_in_float64(xs: Any, ws: Any) -> None:
    x, w, dy = _prelu_case(xs, ws, len(xs) + 7)
    want_dx, want_dw = torch.ops.aten._prelu_kernel_backward.default(dy, x, w)
    for wrt, want in (("input", want_dx), ("weight", want_dw)):
        got = apply("PreluBackward", {"wrt": wrt}, [x.numpy(), w.numpy(), dy.numpy()], "f64")
        assert got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got, want.numpy())


def test_prelu_backward_is_the_finite_difference_of_prelu() -> None:
    """Independently of torch: dx and the per-element dw summed to w's shape by central differences (no x
    at the kink: the difference straddles it)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 4)) * 2
    x[np.abs(x) < 1e-3] = 0.5
    w = rng.standard_normal((1, 3, 1))
    dy = rng.standard_normal((2, 3, 4))

    def prelu(xv: np.ndarray, wv: np.ndarray) -> np.ndarray:
        return np.where(xv > 0, xv, wv * xv)

    dx = apply("PreluBackward", {"wrt": "input"}, [x, w, dy], "f64")
    np.testing.assert_allclose(dx, numeric_vjp(lambda v: prelu(v, w), x, dy), rtol=1e-7, atol=1e-9)
    dw = apply("PreluBackward", {"wrt": "weight"}, [x, w, dy], "f64").sum(axis=(0, 2), keepdims=True)
    np.testing.assert_allclose(dw, numeric_vjp(lambda v: prelu(x, v), w, dy), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("shapes, attrs, message", [
    ([((2, 3), "f32"), ((3, 1), "f32"), ((2, 3), "f32")], {"wrt": "input"}, "does not broadcast to x's shape"),
    ([((2, 3), "f32"), ((1, 2, 3), "f32"), ((2, 3), "f32")], {"wrt": "weight"}, "does not broadcast"),
    ([((2, 3), "f32"), ((3,), "f32"), ((2, 1), "f32")], {"wrt": "input"}, "dy has shape"),
])
def test_prelu_backward_validation_in_one_line(shapes: Any, attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        infer("PreluBackward", attrs, shapes)
    assert "\n" not in str(err.value)
    with pytest.raises(LowerError):
        apply("PreluBackward", attrs, [np.zeros(s) for s, _ in shapes], "f32")


def test_prelu_backward_wrt_is_input_or_weight() -> None:
    from egraph_lower.validate import check_attrs

    with pytest.raises(ValueError, match="unknown wrt 'output'"):
        check_attrs("PreluBackward", {"wrt": "output"})


@pytest.mark.parametrize("backend", ["metal", "wgpu", "tpu", "mlx"])
@pytest.mark.parametrize("wrt", ["input", "weight"])
def test_prelu_backward_lowers_to_what_the_evaluator_says(wrt: str, backend: str) -> None:
    b = GraphBuilder("prelu")
    x, w, dy = b.input("x", [2, 3, 4], "f32"), b.input("w", [1, 3, 1], "f32"), b.input("dy", [2, 3, 4], "f32")
    graph = b.build([b.op("PreluBackward", x, w, dy, wrt=wrt)])
    rng = np.random.default_rng(8)
    xv = rng.standard_normal((2, 3, 4)).astype(np.float32)
    xv[0, 0, :2] = [0.0, -0.0]
    feeds = {"x": xv, "w": rng.standard_normal((1, 3, 1)).astype(np.float32),
             "dy": rng.standard_normal((2, 3, 4)).astype(np.float32)}
    lowered = el.lower(graph, backend).graph
    target = el.load_backend(backend)
    assert all(target.runs_node(node) for node in lowered.nodes)
    assert "PreluBackward" not in lowered.op_counts()
    assert_lowering_matches(graph, lowered, feeds)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("backend", ["metal", "wgpu", "cpu"])
def test_nn_prelu_through_the_backend_leaves_nothing_in_pytorch(backend: str, dtype: Any) -> None:
    from egraph_lower.torch import backend as make_backend

    torch._dynamo.reset()
    be = make_backend(backend)
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(3, 4, 5, generator=g) * 2).to(dtype)
    x[0, 0, 0] = 0.0
    x.requires_grad_(True)
    w = torch.randn(4, generator=g).to(dtype).requires_grad_(True)
    fn = torch.compile(lambda t, v: F.prelu(t, v).sin(), backend=be, dynamic=False)
    y = fn(x, w)
    dy = torch.randn(y.shape, generator=g).to(dtype)
    got = torch.autograd.grad(y, (x, w), dy)
    want = torch.autograd.grad(F.prelu(x, w).sin(), (x, w), dy)
    assert be.unlowered_ops == {} and all(not r.errors for r in be.graphs), be.summary()
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2e-2, torch.bfloat16: 1e-1}[dtype]
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol * 10)


def test_the_prelu_kernel_is_the_reference() -> None:
    from egraph_lower.torch import kernels

    x, w, dy = _prelu_case((3, 4), (1, 4), 9)
    for wrt in ("input", "weight"):
        want = apply("PreluBackward", {"wrt": wrt}, [x.numpy(), w.numpy(), dy.numpy()], "f64")
        np.testing.assert_array_equal(kernels.prelu_backward(x, w, dy, wrt=wrt).numpy(), want)
