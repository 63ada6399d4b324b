"""The mode paddings (ModePad, ModePadBackward: opdefs/padding.py): the reference agrees with numpy.pad
and with aten's reflection and replication kernels and their backward ops in float64 (negative pads
included), the gradient with torch's autograd; validation refuses what aten refuses, in one line; every
padding lowers for metal and wgpu to what the evaluator says; F.pad of each mode through the torch
backend has nothing left in PyTorch and eager's gradients."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import LowerError
from egraph_lower.evaluate import apply
from egraph_lower.opdefs.padding import check_padding
from egraph_lower.validate import check_attrs, infer
from support import assert_lowering_matches

torch = pytest.importorskip("torch")
F = torch.nn.functional

_NUMPY = {"Reflect": "reflect", "Replicate": "edge", "Circular": "wrap"}
_TORCH = {"Reflect": "reflect", "Replicate": "replicate", "Circular": "circular"}
_MODES = tuple(_NUMPY)


def _valid(mode: str, n: int, pads: range = range(-6, 7)) -> list[tuple[int, int]]:
    out = []
    for b, a in itertools.product(pads, pads):
        try:
            check_padding(mode, n, b, a)
        except ValueError:
            continue
        out.append((b, a))
    return out


def _numpy_pad(x: np.ndarray, axis: int, mode: str, before: int, after: int) -> np.ndarray:
    """numpy.pad by the positive parts, then the negative ones cropped (what aten's kernels do)."""
    width = [(0, 0)] * x.ndim
    width[axis] = (max(before, 0), max(after, 0))
    padded = np.pad(x, width, mode=_NUMPY[mode])  # type: ignore[call-overload]
    end = padded.shape[axis] - max(-after, 0)
    return np.take(padded, np.arange(max(-before, 0), end), axis=axis)


@pytest.mark.parametrize("mode", _MODES)
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_mode_pad_is_numpy_pad_on_every_axis(mode: str, n: int) -> None:
    rng = np.random.default_rng(n)
    for axis in (0, 1, 2, -1):
        shape = [2, 3, 4]
        shape[axis] = n
        x = rng.standard_normal(shape)
        for b, a in _valid(mode, n):
            attrs = {"axis": axis, "mode": mode, "before": b, "after": a}
            np.testing.assert_array_equal(apply("ModePad", attrs, [x], "f64"), _numpy_pad(x, axis % 3, mode, b, a))


def _aten(name: str, mode: str) -> Any:
    return getattr(torch.ops.aten, f"{'reflection' if mode == 'Reflect' else 'replication'}_pad{name}")


@pytest.mark.parametrize("mode", ["Reflect", "Replicate"])
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_forward_and_backward_are_atens_kernels_with_negative_pads(mode: str, n: int) -> None:
    """1-D: every valid (before, after), negative ones included, against aten's pad and pad_backward."""
    g = torch.Generator().manual_seed(n)
    x = torch.randn(2, 3, n, dtype=torch.float64, generator=g)
    for b, a in _valid(mode, n):
        attrs = {"axis": -1, "mode": mode, "before": b, "after": a}
        want = _aten("1d", mode)(x, [b, a])
        np.testing.assert_array_equal(apply("ModePad", attrs, [x.numpy()], "f64"), want.numpy())
        dy = torch.randn(want.shape, dtype=torch.float64, generator=g)
        dx = _aten("1d_backward", mode)(dy, x, [b, a])
        np.testing.assert_allclose(apply("ModePadBackward", attrs, [dy.numpy()], "f64"), dx.numpy(), rtol=1e-14,
                                   atol=1e-14)


@pytest.mark.parametrize("mode", _MODES)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_k_axis_padding_is_the_axes_paddings_composed_and_its_gradient_torchs(mode: str, k: int) -> None:
    """F.pad over the last k axes (k = 1..3) = a ModePad per axis; its vjp (torch autograd, float64) = a
    ModePadBackward per axis, in either order."""
    g = torch.Generator().manual_seed(k)
    shape = (2, 2, 4, 3, 5)[: 2 + k]
    pad = [(2, 1), (0, 2), (3, 0)][:k] if mode != "Replicate" else [(4, 1), (0, 2), (1, 3)][:k]
    x = torch.randn(shape, dtype=torch.float64, generator=g, requires_grad=True)
    y = F.pad(x, [p for pair in pad for p in pair], mode=_TORCH[mode])
    dy = torch.randn(y.shape, dtype=torch.float64, generator=g)
    (dx,) = torch.autograd.grad(y, x, dy)
    got = x.detach().numpy()
    for i, (b, a) in enumerate(pad):
        got = apply("ModePad", {"axis": -1 - i, "mode": mode, "before": b, "after": a}, [got], "f64")
    np.testing.assert_array_equal(got, y.detach().numpy())
    for order in (range(k), reversed(range(k))):
        grad = dy.numpy()
        for i in order:
            b, a = pad[i]
            grad = apply("ModePadBackward", {"axis": -1 - i, "mode": mode, "before": b, "after": a}, [grad], "f64")
        np.testing.assert_allclose(grad, dx.numpy(), rtol=1e-14, atol=1e-14)


def test_the_gradient_is_the_finite_difference_of_the_padding() -> None:
    """Independently of torch: the vjp of a linear map, column by column (the padding is linear, so
    the central difference is exact up to rounding)."""
    rng = np.random.default_rng(0)
    for mode, (b, a) in (("Reflect", (3, -2)), ("Replicate", (-1, 4)), ("Circular", (4, 2))):
        x = rng.standard_normal((2, 4))
        attrs = {"axis": 1, "mode": mode, "before": b, "after": a}
        dy = rng.standard_normal(apply("ModePad", attrs, [x], "f64").shape)
        want = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            e = np.zeros_like(x)
            e[idx] = 1e-3
            diff = apply("ModePad", attrs, [x + e], "f64") - apply("ModePad", attrs, [x - e], "f64")
            want[idx] = np.sum(dy * diff) / 2e-3
        np.testing.assert_allclose(apply("ModePadBackward", attrs, [dy], "f64"), want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("mode, n, before, after, message", [
    ("Reflect", 3, 3, 0, "must be less than the axis's size 3"),
    ("Reflect", 3, -1, 3, "must be less than"),
    ("Replicate", 0, 1, 1, "empty axis"),
    ("Replicate", 4, -2, -2, "leaves 0 positions"),
    ("Circular", 3, 4, 0, "more than once"),
    ("Circular", 3, -1, 2, "negative"),
])
def test_validation_refuses_what_aten_refuses_in_one_line(mode: str, n: int, before: int, after: int,
                                                         message: str) -> None:
    attrs = {"axis": 1, "mode": mode, "before": before, "after": after}
    with pytest.raises(ValueError, match=message) as err:
        infer("ModePad", attrs, [((2, n), "f32")])
    assert "\n" not in str(err.value)
    with pytest.raises(LowerError, match=message):
        apply("ModePad", attrs, [np.zeros((2, n))], "f64")


def test_validation_checks_the_backwards_shapes_and_mode() -> None:
    with pytest.raises(ValueError, match="fewer than the padding"):
        infer("ModePadBackward", {"axis": 0, "mode": "Reflect", "before": 2, "after": 2}, [((3, 2), "f32")])
    with pytest.raises(ValueError, match="float dtype"):
        infer("ModePadBackward", {"axis": 0, "mode": "Reflect", "before": 1, "after": 1}, [((5, 2), "i32")])
    with pytest.raises(ValueError, match="unknown padding mode 'reflect'"):
        check_attrs("ModePad", {"axis": 0, "mode": "reflect", "before": 1, "after": 1})
    assert infer("ModePadBackward", {"axis": -1, "mode": "Replicate", "before": -1, "after": 3},
                 [((2, 6), "f32")]) == ((2, 4), "f32")


_CASES = [("Reflect", 5, 4, 1), ("Reflect", 5, 1, 0), ("Reflect", 2, 1, 1), ("Reflect", 5, -3, 2),
          ("Reflect", 4, 2, -5), ("Replicate", 1, 3, 2), ("Replicate", 4, 0, 1), ("Replicate", 4, -5, 3),
          ("Replicate", 3, 2, -1), ("Circular", 3, 3, 1), ("Circular", 4, 0, 2), ("Circular", 2, 2, 2),
          ("Reflect", 5, 0, 0)]


@pytest.mark.parametrize("backend", ["metal", "wgpu", "tpu", "mlx"])
@pytest.mark.parametrize("case", _CASES, ids=lambda c: "{}-n{}-{}-{}".format(*c))
def test_every_padding_and_gradient_lowers_to_what_the_evaluator_says(case: tuple[str, int, int, int],
                                                                   backend: str) -> None:
    mode, n, before, after = case
    attrs = {"axis": 1, "mode": mode, "before": before, "after": after}
    b = GraphBuilder("mode_pad")
    x = b.input("x", [2, n, 3], "f32")
    y = b.op("ModePad", x, **attrs)
    dy = b.input("dy", list(b.nodes[y].shape), "f32")
    graph = b.build([y, b.op("ModePadBackward", dy, **attrs)])
    rng = np.random.default_rng(n)
    feeds = {k: rng.standard_normal(graph.node(i).shape).astype(np.float32) for k, i in (("x", x), ("dy", dy))}
    lowered = el.lower(graph, backend).graph
    target = el.load_backend(backend)
    assert all(target.runs_node(node) for node in lowered.nodes)
    assert "ModePadBackward" not in lowered.op_counts()
    assert ("ModePad" in lowered.op_counts()) == (backend == "metal")  # metal runs it, the others lack it
    assert_lowering_matches(graph, lowered, feeds)
    np.testing.assert_array_equal(el.evaluate(lowered, feeds)[0], el.evaluate(graph, feeds)[0])


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("backend", ["metal", "wgpu", "cpu"])
def test_f_pad_through_the_backend_leaves_nothing_in_pytorch(mode: str, backend: str) -> None:
    from egraph_lower.torch import backend as make_backend

    torch._dynamo.reset()
    be = make_backend(backend)
    pad = (2, 1, 0, 3) if mode != "circular" else (2, 1, 1, 3)
    fn = torch.compile(lambda t: F.pad(t, pad, mode=mode).sin(), backend=be, dynamic=False)
    x = torch.randn(2, 3, 4, 5, dtype=torch.float64, requires_grad=True)
    y = fn(x)
    dy = torch.randn(y.shape, dtype=torch.float64)
    (got,) = torch.autograd.grad(y, x, dy)
    (want,) = torch.autograd.grad(F.pad(x, pad, mode=mode).sin(), x, dy)
    assert be.unlowered_ops == {} and all(not g.errors for g in be.graphs), be.summary()
    if backend != "cpu":  # (cpu runs the graphs as they are: its kernels are aten's)
        assert sum(g.replaced for g in be.graphs) >= 1  # the backward at least runs lowered
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_the_exporters_kernels_are_the_reference_and_half_sums_once() -> None:
    from egraph_lower.torch import kernels

    g = torch.Generator().manual_seed(3)
    for mode, (b, a) in (("Reflect", (2, -1)), ("Replicate", (3, 3)), ("Circular", (1, 2))):
        x = torch.randn(3, 4, 2, dtype=torch.float64, generator=g)
        attrs = {"axis": 1, "mode": mode, "before": b, "after": a}
        np.testing.assert_array_equal(kernels.mode_pad(x, **attrs).numpy(), apply("ModePad", attrs, [x.numpy()], "f64"))
        dy = torch.randn(kernels.mode_pad(x, **attrs).shape, dtype=torch.float64, generator=g)
        np.testing.assert_allclose(kernels.mode_pad_backward(dy, **attrs).numpy(),
                                   apply("ModePadBackward", attrs, [dy.numpy()], "f64"), rtol=1e-15, atol=1e-15)
    # a replication of 40 positions sums 41 terms into an edge: in float32, rounded once to f16
    dy = torch.full((1, 42), 1.0 + 2.0**-10, dtype=torch.float16)
    attrs = {"axis": 1, "mode": "Replicate", "before": 40, "after": 0}
    got = kernels.mode_pad_backward(dy, **attrs)
    want = apply("ModePadBackward", attrs, [dy.float().numpy()], "f16")
    np.testing.assert_array_equal(got.float().numpy(), want.astype(np.float32))


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("backend", ["metal", "wgpu"])
def test_half_precision_2d_gradients_are_no_worse_than_eagers(mode: str, dtype: Any, backend: str) -> None:
    """reflection_pad2d_backward and replication_pad2d_backward in f16/bf16 (a corner sums the terms of
    both axes' bands): no further from float64 than eager's kernel, plus HALF_MARGIN ulp of the largest."""
    from egraph_lower.rules.check import HALF_MARGIN
    from egraph_lower.torch import backend as make_backend

    pad = (3, 2, 2, 3)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 3, 5, 6, generator=g).to(dtype)
    dy = (torch.randn(2, 3, 10, 11, generator=g) * 4).to(dtype)
    torch._dynamo.reset()
    be = make_backend(backend)
    fn = torch.compile(lambda t: F.pad(t, pad, mode=mode), backend=be, dynamic=False)
    xs = [x.clone().requires_grad_(True) for _ in range(3)]
    (got,) = torch.autograd.grad(fn(xs[0]), xs[0], dy)
    (eager,) = torch.autograd.grad(F.pad(xs[1], pad, mode=mode), xs[1], dy)
    wide = xs[2].detach().double().requires_grad_(True)
    (ref,) = torch.autograd.grad(F.pad(wide, pad, mode=mode), wide, dy.double())
    assert be.unlowered_ops == {} and all(not r.errors for r in be.graphs), be.summary()
    margin = HALF_MARGIN * torch.finfo(dtype).eps * float(ref.abs().max())
    err, eager_err = float((got.double() - ref).abs().max()), float((eager.double() - ref).abs().max())
    assert err <= eager_err + margin, (err, eager_err, margin)


@pytest.mark.parametrize("start, end", [(0, 2), (1, 3), (2, 5), (-3, None), (None, -4), (3, 3), (-100, 100)])
def test_slice_scatter_of_step_1_is_the_slices_around_src(start: Any, end: Any) -> None:
    """aten's circular padding writes its bands with slice_scatter: the positions before, src, the positions
    after (the bounds clamped as Python's); its gradients are slice_scatter's too (a slice and zeros)."""
    from egraph_lower.torch import backend as make_backend

    x = torch.randn(3, 5, 2, dtype=torch.float64, requires_grad=True)
    n = len(range(*slice(start, end).indices(5)))
    src = torch.randn(3, n, 2, dtype=torch.float64, requires_grad=True)
    torch._dynamo.reset()
    be = make_backend("wgpu")
    fn = torch.compile(lambda a, s: torch.slice_scatter(a, s, 1, start, end) * 3, backend=be, dynamic=False)
    y = fn(x, src)
    dy = torch.randn(y.shape, dtype=torch.float64)
    got = torch.autograd.grad(y, (x, src), dy)
    want_y = torch.slice_scatter(x, src, 1, start, end) * 3
    want = torch.autograd.grad(want_y, (x, src), dy)
    assert be.unlowered_ops == {} and all(not r.errors for r in be.graphs), be.summary()
    torch.testing.assert_close(y, want_y, rtol=0, atol=0)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("pad, value", [((1, 2, 0, 1), 0.0), ((-1, 2, 1, -1), 1.5), ((0, -3, -1, -1), 0.0),
                                        ((2, -1), -2.0)])
def test_constant_pad_nd_with_negative_pads_crops_and_its_backward_lowers(pad: tuple[int, ...], value: float) -> None:
    """constant_pad_nd's backward is constant_pad_nd with the pads negated: a crop (a Slice first), so that a
    constant padding's gradient, of positive pads too, no longer runs in PyTorch."""
    from egraph_lower.torch import backend as make_backend

    torch._dynamo.reset()
    be = make_backend("wgpu")
    fn = torch.compile(lambda t: F.pad(t, pad, value=value).sin(), backend=be, dynamic=False)
    x = torch.randn(2, 3, 4, 5, dtype=torch.float64, requires_grad=True)
    y = fn(x)
    dy = torch.randn(y.shape, dtype=torch.float64)
    (got,) = torch.autograd.grad(y, x, dy)
    want_y = F.pad(x, pad, value=value).sin()
    (want,) = torch.autograd.grad(want_y, x, dy)
    assert be.unlowered_ops == {} and all(not r.errors for r in be.graphs), be.summary()
    torch.testing.assert_close(y, want_y, rtol=0, atol=0)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
