"""Layer norm, RMS norm and batch norm with PyTorch: each op's evaluator against torch's own kernels in
float64, the aten import and export, and training steps compiled for metal and wgpu against eager."""

from __future__ import annotations

import copy
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
from support import f64  # noqa: E402
from torch_steps import mse_step, train_like_eager  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles anew

LR = 0.05  # these models train with a smaller step

A = torch.ops.aten
EPS = 1e-5


def close(got: np.ndarray, want: Any) -> None:
    # torch's float64 kernels round the mean of a row near 1e4 by ~1e-12, 1e-10 of that row's 1e-2 spread,
    # and the gradients amplify it: rtol 1e-8 (the evaluator recovers that rounding, opdefs/norm.py)
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-8, atol=1e-9)


def _rows(shape: tuple[int, ...], seed: int) -> Any:
    """float64 values with awkward slices: a constant one (zero variance) and one near 1e4."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    x[0] = 3.0
    x[-1] = 1e4 + x[-1] * 1e-2
    return x


# --------------------------------------------------------------------------- evaluator vs torch, float64

@pytest.mark.parametrize("shape, k", [((4, 6), 1), ((3, 2, 5), 2), ((3, 2, 5), 1), ((4, 1), 1)])
def test_layer_norm_ops_agree_with_torch_kernels(shape: tuple[int, ...], k: int) -> None:
    x, dy = _rows(shape, 0), torch.randn(shape, dtype=torch.float64)
    tail = shape[len(shape) - k:]
    w, b = torch.randn(tail, dtype=torch.float64), torch.randn(tail, dtype=torch.float64)
    axis = len(shape) - k
    y, mean, rstd = A.native_layer_norm(x, list(tail), w, b, EPS)
    close(f64("LayerNorm", {"axis": axis, "eps": EPS}, x, w, b), y)
    axes = list(range(axis, len(shape)))
    close(f64("Reduce", {"op": "Mean", "axes": axes, "keep_dim": True}, x), mean)
    close(f64("InvStd", {"axes": axes, "eps": EPS, "keep_dim": True}, x), rstd)
    dx, dw, db = A.native_layer_norm_backward(dy, x, list(tail), mean, rstd, w, b, [True, True, True])
    close(f64("LayerNormBackwardInput", {"axis": axis}, x, w, mean, rstd, dy), dx)
    close(f64("LayerNormBackwardWeight", {"axis": axis}, x, mean, rstd, dy), dw)
    close(f64("LayerNormBackwardBias", {"axis": axis}, dy), db)


def test_rms_norm_ops_agree_with_torch_autograd() -> None:
    x = _rows((4, 6), 1).requires_grad_()
    w = torch.randn(6, dtype=torch.float64, requires_grad=True)
    dy = torch.randn(4, 6, dtype=torch.float64)
    y = F.rms_norm(x, (6,), w, EPS)
    dx, dw = torch.autograd.grad(y, (x, w), dy)
    close(f64("RmsNorm", {"axis": 1, "eps": EPS}, x, w), y)
    r = f64("InvRms", {"axes": [1], "eps": EPS, "keep_dim": True}, x)
    close(f64("RmsNormBackwardInput", {"axis": 1}, x, w, r, dy), dx)
    close(f64("RmsNormBackwardWeight", {"axis": 1}, x, r, dy), dw)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4)])
def test_batch_norm_training_ops_agree_with_torch_kernels(shape: tuple[int, ...]) -> None:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    x[:, 0] = 2.0  # a constant channel
    x[:, 2] = 1e4 + x[:, 2] * 1e-2
    dy = torch.randn(shape, generator=g, dtype=torch.float64)
    w, b = torch.randn(3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    y, mean, invstd = A.native_batch_norm(x, w, b, None, None, True, 0.1, EPS)
    others = [i for i in range(len(shape)) if i != 1]
    close(f64("BatchNormTraining", {"axis": 1, "eps": EPS}, x, w, b), y)
    close(f64("Reduce", {"op": "Mean", "axes": others}, x), mean)
    close(f64("InvStd", {"axes": others, "eps": EPS}, x), invstd)
    dx, dw, db = A.native_batch_norm_backward(dy, x, w, None, None, mean, invstd, True, EPS, [True, True, True])
    close(f64("BatchNormTrainingBackwardInput", {"axis": 1}, x, w, mean, invstd, dy), dx)
    close(f64("BatchNormTrainingBackwardGamma", {"axis": 1}, x, mean, invstd, dy), dw)
    close(f64("BatchNormTrainingBackwardBeta", {"axis": 1}, dy), db)


# --------------------------------------------------------------------------- import and export

def _round_trip(fn: Callable[..., Any], *args: Any) -> set[str]:
    """Import fn's aten graph, export it back: the export computes what fn computes; the ops imported."""
    gm = make_fx(fn, tracing_mode="fake")(*args)
    imported = elt.import_graph(gm)
    el.validated(imported.graph)
    exported = elt.export_graph(imported.graph, imported.signature)
    want, got = gm(*args), exported(*args)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        if w is None:
            assert g is None
            continue
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    return {n.op for n in imported.graph.nodes}


@pytest.mark.parametrize("with_affine", [True, False])
def test_round_trip_layer_norm(with_affine: bool) -> None:
    x, g = torch.randn(3, 4, 5), torch.randn(3, 4, 5)
    affine = (torch.randn(4, 5), torch.randn(4, 5)) if with_affine else ()

    def f(x: Any, g: Any, *wb: Any) -> Any:
        w, b = wb if wb else (None, None)
        y, mean, rstd = A.native_layer_norm(x, [4, 5], w, b, EPS)
        return (y, mean, rstd, *A.native_layer_norm_backward(g, x, [4, 5], mean, rstd, w, b,
                                                              [True, with_affine, with_affine]))

    ops = _round_trip(f, x, g, *affine)
    assert {"LayerNorm", "InvStd", "LayerNormBackwardInput"} <= ops
    assert ("LayerNormBackwardWeight" in ops) == with_affine


@pytest.mark.parametrize("shape", [(5, 3), (5, 3, 4), (2, 3, 4, 4)])
def test_round_trip_batch_norm_training(shape: tuple[int, ...]) -> None:
    x, g = torch.randn(shape), torch.randn(shape)
    w, b, m, v = torch.rand(3) + 0.5, torch.randn(3), torch.randn(3), torch.rand(3) + 0.5

    def f(x: Any, g: Any, w: Any, b: Any, m: Any, v: Any) -> Any:
        y, mean, invstd, rm, rv = A._native_batch_norm_legit_functional(x, w, b, m, v, True, 0.1, EPS)
        grads = A.native_batch_norm_backward(g, x, w, m, v, mean, invstd, True, EPS, [True, True, True])
        return (y, mean, invstd, rm, rv, *grads)

    ops = _round_trip(f, x, g, w, b, m, v)
    assert {"BatchNormTraining", "BatchNormTrainingBackwardInput", "BatchNormTrainingBackwardGamma",
            "BatchNormTrainingBackwardBeta"} <= ops


@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4, 4)])
def test_round_trip_batch_norm_with_update(shape: tuple[int, ...]) -> None:
    """`_batch_norm_with_update_functional` and its `batch_norm_backward`: the updated running statistics,
    the saved ones and the gradients as aten's; the reserve an empty uint8 tensor, as aten's."""
    x, g = torch.randn(shape), torch.randn(shape)
    w, b, m, v = torch.rand(3) + 0.5, torch.randn(3), torch.randn(3), torch.rand(3) + 0.5

    def f(x: Any, g: Any, w: Any, b: Any, m: Any, v: Any) -> Any:
        y, mean, invstd, reserve, rm, rv = A._batch_norm_with_update_functional(x, w, b, m, v, 0.1, EPS)
        grads = A.batch_norm_backward(g, x, w, rm, rv, mean, invstd, True, EPS, [True, True, True], reserve)
        return (y, mean, invstd, reserve, rm, rv, *grads)

    ops = _round_trip(f, x, g, w, b, m, v)
    assert {"BatchNormTraining", "BatchNormTrainingBackwardInput", "BatchNormTrainingBackwardGamma",
            "BatchNormTrainingBackwardBeta"} <= ops


def test_batch_norm_backward_without_update_is_eval_mode() -> None:
    """`batch_norm_backward(update=False)` differentiates through the running statistics, as eval mode."""
    x, g = torch.randn(4, 3, 5), torch.randn(4, 3, 5)
    w, m, v = torch.rand(3) + 0.5, torch.randn(3), torch.rand(3) + 0.5

    def f(x: Any, g: Any, w: Any, m: Any, v: Any, reserve: Any) -> Any:
        return A.batch_norm_backward(g, x, w, m, v, None, None, False, EPS, [True, True, True], reserve)

    ops = _round_trip(f, x, g, w, m, v, torch.empty(0, dtype=torch.uint8))
    assert {"BatchNormInferenceBackwardInput", "BatchNormInferenceBackwardGamma"} <= ops


# --------------------------------------------------------------------------- training steps

class _Block(nn.Module):
    """A LLaMA-like block: RMSNorm, single-head attention, residual, RMSNorm, SiLU-gated MLP (q, k, v as
    three projections and no causal mask: splitting and masking ops belong to other work)."""

    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.n1, self.n2 = nn.RMSNorm(d, eps=EPS), nn.RMSNorm(d, eps=EPS)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.up, self.gate, self.down = (nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False),
                                         nn.Linear(2 * d, d, bias=False))

    def forward(self, x: Any) -> Any:
        h = self.n1(x)
        q, k, v = self.q(h), self.k(h), self.v(h)
        att = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        x = x + self.o(att @ v)
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[int, ...]]]] = {
    "mlp-layernorm": lambda: (nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4)), (8, 6)),
    "batchnorm1d-nc": lambda: (nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4)),
                               (8, 6)),
    "batchnorm1d-ncl": lambda: (nn.Sequential(nn.BatchNorm1d(3), nn.Flatten(), nn.Linear(21, 4)), (5, 3, 7)),
    "batchnorm2d": lambda: (nn.Sequential(nn.BatchNorm2d(3), nn.Tanh(), nn.Flatten(), nn.Linear(48, 4)),
                            (4, 3, 4, 4)),
    "llama-block": lambda: (nn.Sequential(_Block(), nn.Flatten(), nn.Linear(32, 4)), (2, 4, 8)),
}


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("name", list(MODELS))
def test_training_step_matches_eager(name: str, target: str) -> None:
    torch.manual_seed(0)
    eager, shape = MODELS[name]()
    x, y = torch.randn(shape), torch.randn(shape[0], 4)
    be, record, compiled = train_like_eager(eager, mse_step, x, y, target, lr=LR)
    for b1, b2 in zip(compiled.buffers(), eager.buffers()):  # batch norm's running statistics
        torch.testing.assert_close(b1, b2, rtol=1e-5, atol=1e-6)
    assert {g.kind for g in be.graphs if g.status == "lowered"} == {"forward", "backward"}
    backend = el.load_backend(target)
    for graph in record:
        assert all(backend.runs_node(n) for n in graph.nodes)
        assert not [n for n in graph.nodes if "Norm" in n.op and n.op != "BatchNormInference"]


EVAL_MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[int, ...]]]] = {
    "batchnorm1d-nc": MODELS["batchnorm1d-nc"],
    "batchnorm2d": MODELS["batchnorm2d"],
}


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("name", list(EVAL_MODELS))
def test_eval_mode_batch_norm_step_matches_eager(name: str, target: str) -> None:
    torch.manual_seed(0)
    eager, shape = EVAL_MODELS[name]()
    bn = next(m for m in eager.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm))
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    eager.eval()
    x, y = torch.randn(shape), torch.randn(shape[0], 4)
    train_like_eager(eager, mse_step, x, y, target, lr=LR)


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 5), (2, 3, 4, 4)])
def test_eval_mode_import_and_evaluator_agree_with_torch(shape: tuple[int, ...]) -> None:
    x, g = torch.randn(shape, dtype=torch.float64), torch.randn(shape, dtype=torch.float64)
    w, b, m = (torch.randn(3, dtype=torch.float64) for _ in range(3))
    v = torch.rand(3, dtype=torch.float64) + 0.5

    def f(x: Any, g: Any, w: Any, b: Any, m: Any, v: Any) -> Any:
        y, _, _ = A._native_batch_norm_legit_no_training(x, w, b, m, v, 0.1, EPS)
        return (y, *A.native_batch_norm_backward(g, x, w, m, v, None, None, False, EPS, [True, True, True]))

    gm = make_fx(f, tracing_mode="fake")(x, g, w, b, m, v)
    graph = el.validated(elt.import_graph(gm).graph)
    bns = [n for n in graph.nodes if n.op.startswith("BatchNormInference")]
    assert len(bns) == 4
    # [N, C] keeps version 1's form (no `axis`); higher ranks name the channel axis
    assert all(n.attrs.get("axis") == (None if len(shape) == 2 else 1) for n in bns)
    feeds = {n.attrs["name"]: t.numpy() for n, t in zip([n for n in graph.nodes if n.op == "Input"],
                                                         (x, g, w, b, m, v))}
    for got, want in zip(el.evaluate(graph, feeds), f(x, g, w, b, m, v)):
        close(got, want)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("momentum", [0.1, 0.5])
@pytest.mark.parametrize("n", [3, 4])  # n / (n - 1) = 1.5 exactly, 4/3 not (1.3359375 as a bf16 constant)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_half_training_step_running_statistics_round_once(dtype: Any, n: int, momentum: float,
                                                          target: str) -> None:
    """A half-precision BatchNorm2d training step updates its running statistics in float32 and rounds
    once into the buffers' dtype: no further from the float64 step's than eager's, and equal to eager's in
    float16, where eager's CPU kernel rounds once too (in bfloat16 it rounds its variance sum first)."""
    torch.manual_seed(n)
    bn = nn.BatchNorm2d(4, momentum=momentum)
    with torch.no_grad():
        bn.running_mean.uniform_(-1.0, 1.0)
        bn.running_var.uniform_(0.5, 2.0)
    eager, exact = bn.to(dtype), copy.deepcopy(bn).to(torch.float64)
    compiled, start = copy.deepcopy(eager), {k: v.float() for k, v in eager.named_buffers()}
    x = (torch.randn(n, 4, 1, 1) * 3.0 + 1.0).to(dtype)
    be = elt.backend(target, strict=True)
    step = torch.compile(lambda m, x: m(x).float().pow(2).sum().backward(), backend=be, dynamic=False)
    step(compiled, x)
    eager(x).float().pow(2).sum().backward()
    exact(x.double()).pow(2).sum().backward()
    assert be.unlowered_ops == {}, be.summary()
    for name in ("running_mean", "running_var"):
        got, want, best = (getattr(m, name) for m in (compiled, eager, exact))
        assert got.dtype == dtype
        got_err, want_err = ((t.double() - best).abs() for t in (got, want))
        assert bool((got_err <= want_err).all()), f"{name}: {got_err} vs eager's {want_err}"
        if dtype == torch.float16:
            torch.testing.assert_close(got, want, rtol=0, atol=0)
        batch = x.float().mean((0, 2, 3)) if name == "running_mean" else x.float().var((0, 2, 3))
        want_once = ((1 - momentum) * start[name] + momentum * batch).to(dtype)  # float32, rounded once
        torch.testing.assert_close(got, want_once, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name", ["batch_norm_inference", "batch_norm_backward_gamma", "batch_norm_training",
                                  "batch_norm_training_backward_input", "layer_norm", "rms_norm",
                                  "layer_norm_backward_input", "inv_std"])
def test_norm_kernels_compute_half_in_float32_and_round_once(name: str, dtype: torch.dtype) -> None:
    """A backend's fused norm kernel (the torch kernels stand in for Metal's and WebGPU's) computes in
    float32 and rounds once, as PyTorch's own do: each kernel on f16/bf16 tensors is its float32 result
    rounded to the dtype, bit for bit. (In the tensors' dtype a bf16 eval batch norm rounded five times;
    the fuzzer found its gradients up to 3x eager's noise from float64.)"""
    from egraph_lower.torch import kernels_norm as k

    g = torch.Generator().manual_seed(0)
    x, dy = (torch.randn(4, 3, 5, generator=g) * 3 + 7 for _ in range(2))
    c, w = torch.rand(3, generator=g) + 0.5, torch.rand(5, generator=g) + 0.5  # per channel, per last dim
    args: dict[str, tuple[Any, ...]] = {
        "batch_norm_inference": (x, c, c - 1, c * 2, c, EPS, 1),
        "batch_norm_backward_gamma": (x, c * 2, c, dy, EPS, 1),
        "batch_norm_training": (x, c, c - 1, 1, EPS),
        "batch_norm_training_backward_input": (x, c, c * 7, c, dy, 1),
        "layer_norm": (x, w, w - 1, 2, EPS),
        "rms_norm": (x, w, 2, EPS),
        "layer_norm_backward_input": (x, w, x.mean(2, keepdim=True), x.std(2, keepdim=True).reciprocal(), dy, 2),
        "inv_std": (x, (0, 2), EPS),
    }
    fn = getattr(k, name)
    f32 = fn(*args[name])
    half = fn(*(a.to(dtype) if isinstance(a, torch.Tensor) else a for a in args[name]))
    wide = fn(*(a.to(dtype).float() if isinstance(a, torch.Tensor) else a for a in args[name]))
    assert half.dtype == dtype and f32.dtype == torch.float32
    assert torch.equal(half, wide.to(dtype))
