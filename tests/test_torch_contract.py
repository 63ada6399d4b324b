"""A lowered graph or piece honours the FX graph's contract, and a failure anywhere in a graph's first
call runs the whole graph as PyTorch gave it (egraph_lower/torch/contract.py, guard.py, partition.py).

Where a lowered piece meets PyTorch code (an op the format does not map, or one kept in PyTorch with
`keep_in_pytorch`), that code reads the piece's results as the graph was traced: their strides
(group norm's kernels read channels_last memory as channels_last), their storage (`as_strided`), and
their being tensors of their own (an in-place update of one must reach nothing else).
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.torch import exporter  # noqa: E402
from egraph_lower.torch.contract import as_layout  # noqa: E402
from torch_steps import mse_step, train  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

GROUP_NORM = ("aten.native_group_norm", "aten.native_group_norm_backward")
CHANNELS_LAST = torch.channels_last


def _conv_gn_silu() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU())


def _compare_training(eager: nn.Module, x: Any, y: Any, target: str, **options: Any) -> elt.TorchBackend:
    """Two SGD steps compiled for `target` and eagerly, from the same weights: every gradient of every
    step agrees (rtol 1e-4, atol 1e-5), and no stage fell back."""
    compiled = copy.deepcopy(eager)
    be = elt.backend(target, **options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = train(compiled, torch.compile(mse_step(compiled), backend=be, dynamic=False), x, y)
    want = train(eager, mse_step(eager), x, y)
    for g_step, w_step in zip(got, want):
        for (name, _), g, w in zip(eager.named_parameters(), g_step, w_step):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")
    failures = [str(w.message) for w in caught if "runs in PyTorch as it is" in str(w.message)]
    assert not failures, failures
    return be


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("group_norm", ["kept in PyTorch", "as mapped"])
def test_conv_group_norm_silu_trains_as_eager(target: str, layout: str, group_norm: str) -> None:
    """The issue's step: on wgpu it raised (the convolution piece's result was not channels_last where
    group norm's backward expected it), on metal in channels_last its gradients were wrong by their own
    size. Group norm kept in PyTorch keeps the piece boundary tested once the op is mapped."""
    eager = _conv_gn_silu()
    x, y = torch.randn(2, 3, 8, 8), torch.randn(2, 8, 8, 8)
    if layout == "channels_last":
        eager, x = eager.to(memory_format=CHANNELS_LAST), x.to(memory_format=CHANNELS_LAST)
    # mapped, group norm and its backward run lowered: strict, nothing may be left in PyTorch
    options = {"keep_in_pytorch": GROUP_NORM} if group_norm == "kept in PyTorch" else {"strict": True}
    be = _compare_training(eager, x, y, target, **options)
    assert sum(g.replaced for g in be.graphs) >= 1, be.summary()  # something did run lowered
    if group_norm == "as mapped":
        assert not be.unlowered_ops, be.summary()


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_results_have_the_strides_eager_gives(target: str) -> None:
    """A channels_last model's output, and its input's gradient, keep eager's strides."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.GELU(), nn.Conv2d(4, 4, 1)).to(memory_format=CHANNELS_LAST)
    x = torch.randn(2, 3, 6, 6).to(memory_format=CHANNELS_LAST).requires_grad_()
    want = model(x)
    want_grad, = torch.autograd.grad(want.sum(), x)
    got = torch.compile(model, backend=elt.backend(target), dynamic=False)(x)
    got_grad, = torch.autograd.grad(got.sum(), x)
    assert got.stride() == want.stride() and got_grad.stride() == want_grad.stride()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_grad, want_grad)


def test_results_of_their_own_are_never_an_argument_a_constant_or_another_result() -> None:
    """`x.clone()` imports as x itself and `torch.zeros` as a constant: the lowered module returns copies,
    so an in-place update of a result reaches neither the input, nor the next call's zeros, nor the
    other result the e-graph merged with it."""
    def f(x: Any) -> Any:
        return x.clone(), torch.zeros(3), torch.softmax(x, -1), torch.softmax(x, -1) + 0
    compiled = torch.compile(f, backend=elt.backend("wgpu", strict=True), dynamic=False)
    x = torch.randn(3)
    for _ in range(2):
        a, z, s, t = compiled(x)
        torch.testing.assert_close(z, torch.zeros(3))
        before = x.clone()
        a.add_(1)
        z.add_(1)
        s.mul_(0)
        assert torch.equal(x, before)
        torch.testing.assert_close(t, torch.softmax(x, -1))


def test_as_layout_restrides_copies_and_leaves_alone() -> None:
    t = torch.arange(6.0).reshape(2, 3)
    assert as_layout(t, (3, 1)) is t
    moved = as_layout(t, (1, 2))
    assert moved.stride() == (1, 2) and torch.equal(moved, t) and moved.data_ptr() != t.data_ptr()
    row = torch.arange(3.0).reshape(1, 3)  # only a size-1 dim's stride differs: the same memory
    same = as_layout(row, (7, 1))
    assert same.stride() == (7, 1) and same.data_ptr() == row.data_ptr()
    assert as_layout(row, (3, 1), copy=True).data_ptr() != row.data_ptr()
    wide = as_layout(torch.ones(1, 3).expand(4, 3).contiguous(), (0, 1))  # an expanded dim written once
    assert wide.stride() == (0, 1) and torch.equal(wide, torch.ones(4, 3))
    empty = torch.empty(0, 3)
    assert as_layout(empty, (1, 0)).shape == (0, 3)


def test_a_view_read_by_pytorch_is_computed_there_from_its_base(monkeypatch: Any) -> None:
    """`as_strided` of a slice reads the slice's storage, which is its base's: the lowered piece returns
    the base, and the slice is taken in PyTorch, as the graph takes it. (The exported Slice is made to
    return a tensor of its own, as a device's kernel would; torch's slicing would return a view.)"""
    slice_ = exporter.kernels.KERNELS["Slice"]
    monkeypatch.setitem(exporter.kernels.KERNELS, "Slice", lambda *a, **k: slice_(*a, **k).clone())

    def f(x: Any) -> Any:
        y = torch.softmax(x, -1) * 2
        return (y[1:].as_strided((2, 3), (3, 1), 0) * 3,)
    x = torch.randn(4, 3)
    gm = make_fx(f, tracing_mode="fake")(x)  # as traced: the slice feeds as_strided (AOTAutograd would rebase it)
    be = elt.backend("wgpu", keep_in_pytorch=["aten.as_strided"])
    run = be._compiler("inference")(gm, [x])
    got = run([x])
    torch.testing.assert_close(got[0], f(x)[0])
    assert be.graphs[0].replaced == 1, be.summary()


def test_a_failure_after_a_lowered_piece_runs_the_whole_graph_as_pytorch_gave_it(monkeypatch: Any) -> None:
    """With the layouts not honoured (as before the contract), group norm's kernel after the lowered
    convolution raises on wgpu: the graph's first call falls back from its start, warns once, and the
    step, dropout included, is eager's."""
    monkeypatch.setattr(exporter, "as_layout", lambda t, stride, copy: t)
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.Dropout(0.3), nn.SiLU())
    x, y = torch.randn(2, 3, 8, 8).to(memory_format=CHANNELS_LAST), torch.randn(2, 8, 8, 8)
    eager = eager.to(memory_format=CHANNELS_LAST)
    compiled = copy.deepcopy(eager)
    be = elt.backend("wgpu", keep_in_pytorch=GROUP_NORM)
    step = torch.compile(mse_step(compiled), backend=be, dynamic=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.manual_seed(1)
        got = step(x, y)
    torch.manual_seed(1)
    want = mse_step(eager)(x, y)
    torch.testing.assert_close(got, want)
    for p, q in zip(compiled.parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    failures = [str(w.message) for w in caught if "runs in PyTorch as it is" in str(w.message)]
    assert failures and all(": run: " in f for f in failures), failures
    assert any(e.startswith("run: ") for g in be.graphs for e in g.errors), be.summary()


def test_strict_raises_a_failure_after_a_lowered_piece(monkeypatch: Any) -> None:
    monkeypatch.setattr(exporter, "as_layout", lambda t, stride, copy: t)
    eager = _conv_gn_silu().to(memory_format=CHANNELS_LAST)
    x = torch.randn(2, 3, 8, 8).to(memory_format=CHANNELS_LAST)
    be = elt.backend("wgpu", keep_in_pytorch=GROUP_NORM, strict=True)
    with pytest.raises(RuntimeError, match="is_contiguous"):
        torch.compile(mse_step(eager), backend=be, dynamic=False)(x, torch.randn(2, 8, 8, 8))


def _bn_then_relu(x: Any, w: Any, b: Any, mean: Any, var: Any) -> Any:
    return torch.relu(torch.ops.aten._native_batch_norm_legit_no_training(x, w, b, mean, var, 0.1, 1e-5)[0])


@pytest.mark.parametrize("layout", ["transposed 2-D", "permuted 4-D", "channels_last", "contiguous"])
def test_batch_norm_meta_is_restated_as_its_real_kernel_lays_it_out(layout: str) -> None:
    """PyTorch's fake kernel of batch norm gives a permuted input's result that input's strides, the real
    CPU kernel a result contiguous in the input's suggested memory format (kernel_strides.py). After
    `restate`, the meta of batch norm and of what follows it (a relu) has eager's strides; where fake and
    real agree (channels_last, contiguous), the graph is left as it is."""
    from egraph_lower.torch import kernel_strides

    x = {"transposed 2-D": torch.randn(3, 4).t(), "permuted 4-D": torch.randn(2, 3, 5, 4).transpose(-1, -2),
         "channels_last": torch.randn(2, 4, 3, 5).to(memory_format=torch.channels_last),
         "contiguous": torch.randn(2, 4, 3, 5)}[layout]
    c = x.shape[1]
    args = (x, torch.randn(c), torch.randn(c), torch.randn(c), torch.rand(c) + 0.5)
    gm = make_fx(_bn_then_relu, tracing_mode="fake")(*args)
    changed = kernel_strides.restate(gm)
    assert changed == (layout in ("transposed 2-D", "permuted 4-D"))
    want = _bn_then_relu(*args)
    (relu,) = [n for n in gm.graph.nodes if n.target is torch.ops.aten.relu.default]
    assert relu.meta["val"].stride() == want.stride()
    assert not kernel_strides.misstated(gm)
