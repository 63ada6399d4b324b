"""The elementwise losses (opdefs/loss.py): reference semantics against PyTorch's kernels in float64 at
the awkward points (d = 0, |d| = beta exactly, beta = 0, x = 0 and 1 for BCE, |t x| past exp's
overflow), every backward op against finite differences of its loss, the torch kernels against the
evaluator, the lowering on every backend in every reduction, and the aten mapping (each loss's
forward and backward lowered with nothing left in PyTorch, gradients as eager's)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.evaluate import apply
from egraph_lower.opdefs.loss import BCE_EPS
from support import assert_lowering_matches, f64, numeric_grad

torch = pytest.importorskip("torch")

BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")
REDUCTIONS = ("none", "mean", "sum")
ENUM = {"none": 0, "mean": 1, "sum": 2}
SHAPE = (3, 8)
# op -> (its attributes beside the reduction, whether it takes a weight, the aten loss)
LOSSES: dict[str, tuple[dict[str, float], bool, str]] = {
    "SmoothL1Loss": ({"beta": 0.5}, False, "smooth_l1_loss"),
    "HuberLoss": ({"delta": 1.5}, False, "huber_loss"),
    "BinaryCrossEntropy": ({}, True, "binary_cross_entropy"),
    "SoftMarginLoss": ({}, False, "soft_margin_loss"),
}


def _values(op: str, attrs: dict[str, float], seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x, target and weight of SHAPE with the op's awkward points in the first row."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.2, 2.0, SHAPE)
    if op == "BinaryCrossEntropy":
        x, t = rng.uniform(0.02, 0.98, SHAPE), rng.uniform(0, 1, SHAPE)
        x[0, :6], t[0, :6] = [0.0, 1.0, 0.0, 1.0, 1e-50, 0.5], [0.0, 1.0, 1.0, 0.0, 0.3, 0.5]
        return x, t, w
    t = rng.standard_normal(SHAPE)
    if op == "SoftMarginLoss":
        x = rng.standard_normal(SHAPE) * 3
        x[0, :4], t[0, :4] = [0.0, 800.0, -800.0, 40.0], [1.0, -1.0, -1.0, -1.0]
        return x, t, w
    p = attrs.get("beta", attrs.get("delta", 1.0))
    x = t + rng.standard_normal(SHAPE) * 2
    x[0, :5] = t[0, :5] + np.array([0.0, p, -p, p / 2, 1e4])
    return x, t, w


def _args(op: str, x: np.ndarray, t: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    return [x, t, w] if LOSSES[op][1] else [x, t]


def _torch(op: str, attrs: dict[str, Any], x: np.ndarray, t: np.ndarray, w: np.ndarray,
           dy: np.ndarray | None = None) -> np.ndarray:
    _, weighted, name = LOSSES[op]
    tx, tt, tw = (torch.tensor(v) for v in (x, t, w))
    extra = [attrs[k] for k in ("beta", "delta") if k in attrs]
    ins = [tx, tt, tw, ENUM[attrs["reduction"]]] if weighted else [tx, tt, ENUM[attrs["reduction"]], *extra]
    if dy is None:
        return getattr(torch.ops.aten, name)(*ins).numpy()
    return getattr(torch.ops.aten, f"{name}_backward")(torch.tensor(dy), *ins).numpy()


def _dy(attrs: dict[str, Any], seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(SHAPE) if attrs["reduction"] == "none" else np.array(-0.7)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("op", LOSSES)
def test_losses_agree_with_torch_in_float64(op: str, reduction: str) -> None:
    attrs = {"reduction": reduction, **LOSSES[op][0]}
    x, t, w = _values(op, attrs)
    keep = slice(1, None) if op == "SoftMarginLoss" else slice(None)  # torch's exp overflows in row 0 (below)
    args = [a[keep] for a in _args(op, x, t, w)]
    np.testing.assert_allclose(f64(op, attrs, *args), _torch(op, attrs, *[a[keep] for a in (x, t, w)]),
                               rtol=1e-12, atol=1e-300)
    dy = _dy(attrs)
    dyk = dy[keep] if reduction == "none" else dy
    got = f64(f"{op}Backward", attrs, *args, dyk)
    want = _torch(op, attrs, *[a[keep] for a in (x, t, w)], dy=dyk)
    scale = (1 / args[0].size if reduction == "mean" else 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300 * scale)


def test_the_kinks_are_torchs() -> None:
    """|d| == beta takes the outer branch (both give sign(d)); beta = 0, d = 0 gives -dy, as torch's
    CPU kernel (it tests d <= -beta first); Huber's gradient at |d| == delta is +-delta."""
    d = np.array([0.0, 0.5, -0.5, 0.25, -0.0])
    zero, one = np.zeros(5), np.ones(5)
    for beta in (0.0, 0.5):
        attrs = {"reduction": "none", "beta": beta}
        got = f64("SmoothL1LossBackward", attrs, d, zero, one)
        want = torch.ops.aten.smooth_l1_loss_backward(torch.tensor(one), torch.tensor(d), torch.tensor(zero), 0, beta)
        np.testing.assert_array_equal(got, want.numpy())
    np.testing.assert_array_equal(f64("SmoothL1LossBackward", {"reduction": "none", "beta": 0.0}, d, zero, one)[0], -1)
    np.testing.assert_array_equal(f64("HuberLossBackward", {"reduction": "none", "delta": 0.5}, d, zero, one),
                                  [0.0, 0.5, -0.5, 0.25, 0.0])


def test_bce_clamps_and_soft_margin_does_not_overflow() -> None:
    x, t = np.array([0.0, 1.0, 0.0, 1.0]), np.array([0.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(f64("BinaryCrossEntropy", {"reduction": "none"}, x, t, np.ones(4)),
                                  [0.0, 0.0, 100.0, 100.0])  # the logs clamped at -100
    g = f64("BinaryCrossEntropyBackward", {"reduction": "none"}, x, t, np.ones(4), np.ones(4))
    np.testing.assert_array_equal(g, [0.0, 0.0, -1 / BCE_EPS, 1 / BCE_EPS])  # the denominator clamped
    big = np.array([800.0, -800.0])
    y = np.array([-1.0, -1.0])
    np.testing.assert_allclose(f64("SoftMarginLoss", {"reduction": "none"}, big, y), [800.0, 0.0], atol=1e-300)
    np.testing.assert_allclose(f64("SoftMarginLossBackward", {"reduction": "none"}, big, y, np.ones(2)), [1.0, 0.0],
                               atol=1e-300)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("op", LOSSES)
def test_backward_ops_are_the_derivatives(op: str, reduction: str) -> None:
    attrs = {"reduction": reduction, **LOSSES[op][0]}
    x, t, w = _values(op, attrs, seed=4)
    x = x[1:]  # off the kinks and clamps: central differences need a smooth neighbourhood
    t, w = t[1:], w[1:]
    p = attrs.get("beta", attrs.get("delta", 0.0))
    if p:
        d = x - t
        x = np.where(np.abs(np.abs(d) - p) < 1e-3, x + 0.01, x)
    rng = np.random.default_rng(5)
    dy = rng.standard_normal(x.shape) if reduction == "none" else np.array(-0.7)

    def loss(v: np.ndarray) -> float:
        return float(np.sum(dy * f64(op, attrs, *_args(op, v, t, w))))

    got = f64(f"{op}Backward", attrs, *_args(op, x, t, w), dy)
    np.testing.assert_allclose(got, numeric_grad(loss, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
@pytest.mark.parametrize("op", LOSSES)
def test_torch_kernels_agree_with_the_evaluator(op: str, dtype: str) -> None:
    from egraph_lower.torch.common import FORMAT_TO_TORCH
    from egraph_lower.torch.kernels import KERNELS
    for reduction in REDUCTIONS:
        attrs = {"reduction": reduction, **LOSSES[op][0]}
        x, t, w = _values(op, attrs, seed=6)
        dy = _dy(attrs)
        for name, args in ((op, _args(op, x, t, w)), (f"{op}Backward", _args(op, x, t, w) + [dy])):
            rounded = [apply("Cast", {"to": dtype}, [a], dtype) for a in args]
            want = apply(name, attrs, rounded, dtype)
            tensors = [torch.tensor(np.asarray(a, dtype=np.float64)).to(FORMAT_TO_TORCH[dtype]) for a in rounded]
            got = KERNELS[name](*tensors, **attrs)
            assert got.dtype == FORMAT_TO_TORCH[dtype] and tuple(got.shape) == want.shape
            tol = {"f64": 1e-12, "f32": 2e-6, "f16": 2e-3, "bf16": 1.6e-2}[dtype]
            np.testing.assert_allclose(got.double().numpy(), np.asarray(want, dtype=np.float64), rtol=tol, atol=tol,
                                       err_msg=f"{name} {reduction} {dtype}")


def _step(op: str, reduction: str, dtype: str = "f32", rows: int = SHAPE[0]) -> el.Graph:
    attrs = {"reduction": reduction, **LOSSES[op][0]}
    b = GraphBuilder(f"{op} {reduction}")
    shape = [rows, SHAPE[1]]
    x, t = b.input("x", shape, dtype), b.input("t", shape, dtype)
    ins = [x, t, b.input("w", [SHAPE[1]], dtype)] if LOSSES[op][1] else [x, t]
    dy = b.input("dy", shape if reduction == "none" else [], dtype)
    return b.build([b.op(op, *ins, **attrs), b.op(f"{op}Backward", *ins, dy, **attrs)])


def _feeds(graph: el.Graph, op: str, dtype: str) -> dict[str, np.ndarray]:
    x, t, w = _values(op, LOSSES[op][0], seed=8)
    if dtype in ("f16", "bf16"):  # BCE's gradient at x = 0 or 1 is 1e12: inf in f16 (the test compares unrounded)
        x, t = x[1:], t[1:]
    vals = {"x": x, "t": t, "w": w[0], "dy": np.random.default_rng(9).standard_normal(SHAPE)}
    out = {}
    for n in graph.nodes:
        if n.op == "Input":
            v = vals[n.attrs["name"]][-n.shape[0]:] if n.shape else np.asarray(-0.7)
            out[n.attrs["name"]] = apply("Cast", {"to": dtype}, [np.asarray(v)], dtype)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("op", LOSSES)
def test_losses_lower_on_every_backend(op: str, reduction: str, backend: str) -> None:
    graph = _step(op, reduction)
    result = el.lower(graph, backend)
    target = el.load_backend(backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    counts = result.graph.op_counts()
    for name in (op, f"{op}Backward"):
        assert (name in counts) == target.runs(name), name  # cpu keeps its kernels, the others expand
    assert_lowering_matches(graph, result.graph, _feeds(graph, op, "f32"))


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f64"])
@pytest.mark.parametrize("op", LOSSES)
def test_loss_expansions_in_other_dtypes(op: str, dtype: str) -> None:
    graph = _step(op, "mean", dtype, SHAPE[0] - 1 if dtype != "f64" else SHAPE[0])
    assert_lowering_matches(graph, el.lower(graph, "wgpu").graph, _feeds(graph, op, dtype))


def test_bad_attributes_and_shapes_are_refused() -> None:
    b = GraphBuilder("bad")
    x, t, w = b.input("x", [2, 3]), b.input("t", [2, 3]), b.input("w", [2])
    with pytest.raises(Exception, match="beta"):
        b.op("SmoothL1Loss", x, t, reduction="mean", beta=-1.0)
    with pytest.raises(Exception, match="delta"):
        b.op("HuberLoss", x, t, reduction="mean", delta=0.0)
    with pytest.raises(Exception, match="does not broadcast"):
        b.op("BinaryCrossEntropy", x, t, w, reduction="sum")
    with pytest.raises(Exception, match="dy has shape"):
        b.op("SoftMarginLossBackward", x, t, x, reduction="mean")


CALLS = {
    "smooth_l1": lambda x, t, r: torch.nn.functional.smooth_l1_loss(x, t, reduction=r, beta=0.5),
    "huber": lambda x, t, r: torch.nn.functional.huber_loss(x, t, reduction=r, delta=2.0),
    "bce": lambda x, t, r: torch.nn.functional.binary_cross_entropy(torch.sigmoid(x), t.sigmoid(), reduction=r,
                                                                    weight=torch.linspace(0.5, 1.5, 5)),
    "bce_unweighted": lambda x, t, r: torch.nn.functional.binary_cross_entropy(torch.sigmoid(x), t.sigmoid(),
                                                                               reduction=r),
    "soft_margin": lambda x, t, r: torch.nn.functional.soft_margin_loss(x, t.detach().sign(), reduction=r),
    # decomposed by PyTorch's table before the importer (log_sigmoid_forward, ...): no op of its own
    "bce_with_logits": lambda x, t, r: torch.nn.functional.binary_cross_entropy_with_logits(
        x, t.sigmoid(), reduction=r, weight=torch.linspace(0.5, 1.5, 5), pos_weight=torch.full((5,), 2.0)),
}


@pytest.mark.parametrize("target", ["metal", "wgpu", "cpu"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("loss", CALLS)
def test_each_loss_runs_lowered(loss: str, reduction: str, target: str) -> None:
    """Forward and backward lowered (strict: nothing left in PyTorch), gradients as eager's, for the
    input and the target (smooth L1's and Huber's target gradients are the same op, x and target exchanged;
    BCE's ordinary ops; soft margin's target is not differentiable in torch)."""
    import egraph_lower.torch as elt
    torch.manual_seed(0)
    fn = CALLS[loss]
    x, t = torch.randn(4, 5, requires_grad=True), torch.randn(4, 5, requires_grad=True)
    be = elt.backend(target, strict=True)
    compiled = torch.compile(lambda a, b: fn(a, b, reduction), backend=be, dynamic=False)
    cot = torch.randn(4, 5) if reduction == "none" else torch.tensor(1.3)
    out = compiled(x, t)
    got = torch.autograd.grad((out * cot).sum(), [x, t], allow_unused=True)
    want_out = fn(x, t, reduction)
    want = torch.autograd.grad((want_out * cot).sum(), [x, t], allow_unused=True)
    torch.testing.assert_close(out, want_out, rtol=1e-5, atol=1e-6)
    assert [g is None for g in got] == [w is None for w in want] == [False, loss == "soft_margin"]
    for g, w in zip(got, want):
        if w is not None:
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    assert not be.unlowered_ops, be.summary()
    assert all(g.status == "lowered" for g in be.graphs), be.summary()
