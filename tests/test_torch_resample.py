"""The interpolation family against PyTorch: the reference evaluator against aten's upsample kernels and
their backward ops in float64 (every mode and rank, align_corners both ways, output size 1, downsampling,
scales that are not O / L), the helper kernels against the evaluator, the aten mapping both ways, and a
training step of a diffusion-style block with nearest upsampling compiled for metal and wgpu."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.evaluate import apply  # noqa: E402
from egraph_lower.torch import kernels  # noqa: E402
from torch_steps import mse_step, train_like_eager  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

A = torch.ops.aten
# (input spatial shape, output size, scales)
SHAPES = [((5,), [9], [None]), ((5,), [1], [None]), ((7,), [3], [None]), ((5,), [8], [1.7]), ((4,), [12], [3.0]),
          ((1,), [4], [None]), ((4, 5), [8, 10], [None, None]), ((4, 5), [3, 7], [None, 0.9]),
          ((6, 5), [1, 2], [None, None]), ((2, 3, 4), [3, 5, 2], [None, 1.7, None]),
          ((2, 3, 4), [4, 6, 8], [2.0, 2.0, 2.0])]
MODES = [("nearest", False), ("nearest_exact", False), ("linear", False), ("linear", True), ("cubic", False),
         ("cubic", True)]
CASES = [(m, ac, s) for m, ac in MODES for s in SHAPES if m != "cubic" or len(s[0]) == 2]


def _aten(mode: str, ac: bool, x: Any, size: list[int], scales: list[float | None]) -> Any:
    return kernels.interpolate(x, mode=mode, size=size, align_corners=ac, scales=scales)


@pytest.mark.parametrize("case", CASES, ids=[f"{m}-{ac}-{s[0]}-{s[1]}" for m, ac, s in CASES])
def test_evaluator_matches_aten_in_f64(case: tuple[Any, ...]) -> None:
    mode, ac, (spatial, size, scales) = case
    x = torch.randn((2, 3) + spatial, dtype=torch.float64)
    attrs = {"mode": mode, "align_corners": ac, "scales": scales}
    want = _aten(mode, ac, x, size, scales)
    got = apply("Interpolate", {**attrs, "size": size}, [x.numpy()], "f64")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-13, atol=1e-13)
    dy = torch.randn(want.shape, dtype=torch.float64)
    want_dx = kernels.interpolate_backward(dy, mode=mode, input_shape=list(x.shape), align_corners=ac, scales=scales)
    got_dx = apply("InterpolateBackward", {**attrs, "input_shape": list(x.shape)}, [dy.numpy()], "f64")
    np.testing.assert_allclose(got_dx, want_dx.numpy(), rtol=1e-13, atol=1e-13)


def test_helper_kernels_match_the_evaluator() -> None:
    like = torch.zeros(1, dtype=torch.float64)
    for mode, ac in MODES:
        attrs = {"mode": mode, "align_corners": ac, "in_size": 5, "out_size": 8, "scale": 1.7}
        got = kernels.interpolate_weights(like, **attrs)
        np.testing.assert_array_equal(got.numpy(), apply("InterpolateWeights", attrs, [like.numpy()], "f64"))
        if mode.startswith("nearest"):
            attrs = {"mode": mode, "in_size": 5, "out_size": 8, "scale": 1.7}
            got = kernels.interpolate_index(like, **attrs)
            np.testing.assert_array_equal(got.numpy(), apply("InterpolateIndex", attrs, [like.numpy()], "i64"))


def test_upsample_aten_ops_import_one_to_one() -> None:
    def step(x: Any, x3: Any) -> Any:
        a = A.upsample_linear1d(x.flatten(2), [7], True, None)
        b = A.upsample_trilinear3d.vec(x3, None, False, [2.0, 1.5, 0.5])
        c = A.upsample_bicubic2d(x, [5, 3], False, None, 2.0)
        d = A._upsample_nearest_exact2d(x, [6, 9])
        return (A.upsample_linear1d_backward(a, [7], [2, 3, 20], True, None),
                A.upsample_trilinear3d_backward(b, [4, 6, 2], [1, 2, 2, 4, 5], False, 2.0, 1.5, 0.5),
                A.upsample_bicubic2d_backward(c, [5, 3], [2, 3, 4, 5], False, None, 2.0),
                A._upsample_nearest_exact2d_backward(d, [6, 9], [2, 3, 4, 5]))

    x, x3 = torch.randn(2, 3, 4, 5), torch.randn(1, 2, 2, 4, 5)
    imported = elt.import_graph(make_fx(step)(x, x3), [x, x3])
    ops = [n.op for n in imported.graph.nodes]
    assert ops.count("Interpolate") == 4 and ops.count("InterpolateBackward") == 4, ops
    module = elt.export_graph(imported.graph, imported.signature)
    for got, want in zip(module(x, x3), step(x, x3)):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


class _UpBlock(nn.Module):
    """A diffusion-style decoder block: nearest 2x upsampling, a convolution, a linear 1-D resize."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: Any) -> Any:
        h = self.conv(F.interpolate(x, scale_factor=2, mode="nearest"))
        return F.interpolate(h.flatten(2), size=50, mode="linear")


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_upsampling_block_training_step_matches_eager(target: str) -> None:
    torch.manual_seed(0)
    model, x, y = _UpBlock(), torch.randn(2, 3, 4, 5), torch.randn(2, 4, 50)
    be, record, _ = train_like_eager(model, mse_step, x, y, target)
    assert be.unlowered_ops == {}, be.summary()
    ops = {op for g in record for op in g.op_counts()}
    assert "InterpolateBackward" not in ops and "Interpolate" not in ops, ops


class _Patches(nn.Module):
    """A patch model on Tensor.unfold: 4 x 4 patches (overlapping along H: step 2), a Linear per patch."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3 * 16, 5)

    def forward(self, x: Any) -> Any:
        p = x.unfold(2, 4, 2).unfold(3, 4, 4)  # [N, C, nh, nw, 4, 4]
        p = p.permute(0, 2, 3, 1, 4, 5).reshape(x.shape[0], -1, 3 * 16)
        return self.proj(p)


class _FoldBack(nn.Module):
    """F.unfold into overlapping, padded columns, a per-column scale, F.fold back (im2col and col2im)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, 27))

    def forward(self, x: Any) -> Any:
        cols = F.unfold(x, (3, 3), padding=1, stride=2) * self.scale[:, None]
        return F.fold(cols, (9, 8), (3, 3), padding=1, stride=2)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("model", ["patches", "fold"])
def test_unfold_models_training_step_matches_eager(target: str, model: str) -> None:
    torch.manual_seed(0)
    if model == "patches":
        net, x, y = _Patches(), torch.randn(2, 3, 10, 8), torch.randn(2, 8, 5)
    else:
        net, x, y = _FoldBack(), torch.randn(2, 3, 9, 8), torch.randn(2, 3, 9, 8)
    be, record, _ = train_like_eager(net, mse_step, x, y, target)
    assert be.unlowered_ops == {}, be.summary()
    assert any(g.kind == "backward" for g in be.graphs), be.summary()


def test_unfold_and_col2im_match_aten_in_f64() -> None:
    x = torch.randn(2, 9, 3, dtype=torch.float64)
    for axis, size, step in ((1, 3, 2), (1, 3, 3), (1, 2, 3), (-1, 3, 1), (0, 2, 1)):
        attrs = {"axis": axis, "size": size, "step": step}
        want = x.unfold(axis, size, step)
        np.testing.assert_array_equal(apply("Unfold", attrs, [x.numpy()], "f64"), want.numpy())
        dy = torch.randn(want.shape, dtype=torch.float64)
        want_dx = A.unfold_backward(dy, list(x.shape), axis, size, step)
        got_dx = apply("UnfoldBackward", {**attrs, "input_shape": list(x.shape)}, [dy.numpy()], "f64")
        np.testing.assert_allclose(got_dx, want_dx.numpy(), rtol=1e-15, atol=1e-15)
    img = torch.randn(2, 3, 7, 6, dtype=torch.float64)
    for k, s, p, d in (([2, 3], [2, 1], [1, 0], [1, 2]), ([2, 2], [2, 2], [0, 1], [1, 1]), ([3, 3], [1, 1], [1, 1], [2, 1])):
        cols = A.im2col(img, k, d, p, s)
        dy = torch.randn(cols.shape, dtype=torch.float64)
        attrs = {"kernel": k, "stride": s, "padding": p, "dilation": d, "output_size": [7, 6]}
        want = A.col2im(dy, [7, 6], k, d, p, s)
        np.testing.assert_allclose(apply("Col2Im", attrs, [dy.numpy()], "f64"), want.numpy(), rtol=1e-14, atol=1e-14)


def test_window_helper_kernels_match_the_evaluator() -> None:
    like = torch.zeros(1, dtype=torch.float64)
    attrs = {"windows": 3, "size": 3, "step": 2, "dilation": 2, "length": 9, "kernel_major": True}
    got = kernels.window_one_hot(like, **attrs)
    np.testing.assert_array_equal(got.numpy(), apply("WindowOneHot", attrs, [like.numpy()], "f64"))
    attrs = {"windows": 3, "size": 3, "step": 2}
    got = kernels.window_index(like, **attrs)
    np.testing.assert_array_equal(got.numpy(), apply("WindowIndex", attrs, [like.numpy()], "i64"))


# every mapped upsample backward op (and unfold's and col2im's), imported as it is (make_fx does not
# decompose it), lowered for metal and wgpu and compared against float64 in f16 and bf16: the lowered
# gradient's error no more than eager's plus HALF_MARGIN ulp (as tests/test_torch_half.py checks)
_DY2, _DY1, _DY3 = (2, 3, 7, 9), (2, 3, 11), (1, 2, 3, 5, 4)
HALF_BACKWARD: dict[str, tuple[tuple[int, ...], Any]] = {
    "upsample_nearest1d_backward": (_DY1, lambda g: A.upsample_nearest1d_backward(g, [11], [2, 3, 5], None)),
    "upsample_nearest2d_backward": (_DY2, lambda g: A.upsample_nearest2d_backward(g, [7, 9], [2, 3, 4, 5], None, 1.8)),
    "upsample_nearest3d_backward": (_DY3, lambda g: A.upsample_nearest3d_backward(g, [3, 5, 4], [1, 2, 2, 3, 4])),
    "_upsample_nearest_exact1d_backward": (_DY1, lambda g: A._upsample_nearest_exact1d_backward(g, [11], [2, 3, 5])),
    "_upsample_nearest_exact2d_backward": (_DY2, lambda g: A._upsample_nearest_exact2d_backward(g, [7, 9],
                                                                                               [2, 3, 4, 5])),
    "_upsample_nearest_exact3d_backward": (_DY3, lambda g: A._upsample_nearest_exact3d_backward(g, [3, 5, 4],
                                                                                               [1, 2, 2, 3, 4])),
    "upsample_linear1d_backward": (_DY1, lambda g: A.upsample_linear1d_backward(g, [11], [2, 3, 5], False)),
    "upsample_bilinear2d_backward": (_DY2, lambda g: A.upsample_bilinear2d_backward(g, [7, 9], [2, 3, 4, 5], True)),
    "upsample_trilinear3d_backward": (_DY3, lambda g: A.upsample_trilinear3d_backward(g, [3, 5, 4], [1, 2, 2, 3, 4],
                                                                                      False)),
    "upsample_bicubic2d_backward": (_DY2, lambda g: A.upsample_bicubic2d_backward(g, [7, 9], [2, 3, 4, 5], False)),
    "unfold_backward": ((2, 4, 3, 3), lambda g: A.unfold_backward(g, [2, 9, 3], 1, 3, 2)),
    "col2im": ((2, 27, 12), lambda g: A.col2im(g, [7, 6], [3, 3], [1, 1], [1, 1], [2, 2])),
}


def _half_error(got: Any, ref: Any) -> float:
    return float((got.double() - ref).abs().max())


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", HALF_BACKWARD)
def test_backward_ops_in_half_precision_are_no_worse_than_eager(name: str, dtype: Any, target: str) -> None:
    from egraph_lower.rules.check import HALF_MARGIN
    import egraph_lower as el

    shape, fn = HALF_BACKWARD[name]
    torch.manual_seed(2)
    g = (torch.randn(shape) * torch.rand(shape) * 4).to(dtype)
    imported = elt.import_graph(make_fx(lambda t: (fn(t),))(g), [g])
    op = {"unfold_backward": "UnfoldBackward", "col2im": "Col2Im"}.get(name, "InterpolateBackward")
    assert imported.graph.op_counts().get(op) == 1, imported.graph.op_counts()  # imported as it is
    result = el.lower(imported.graph, target)
    got = elt.export_graph(result.graph, imported.signature)(g)[0]
    eager, ref = fn(g), fn(g.double())
    assert got.dtype == dtype
    margin = HALF_MARGIN * torch.finfo(dtype).eps * max(1.0, float(ref.abs().max()))
    assert _half_error(got, ref) <= _half_error(eager, ref) + margin, (name, _half_error(got, ref),
                                                                        _half_error(eager, ref))


def test_unbatched_im2col_col2im_and_a_0d_unfold_import_and_export_as_aten_computes_them() -> None:
    def step(img: Any, s: Any) -> Any:
        cols = A.im2col(img, [2, 3], [1, 1], [1, 0], [2, 1])        # [C, H, W] -> [C K, L]
        u = A.unfold(s, 0, 1, 1)                                    # a 0-d tensor: [1]
        return cols, A.col2im(cols, [5, 6], [2, 3], [1, 1], [1, 0], [2, 1]), u, A.unfold_backward(u, [], 0, 1, 1)

    img, s = torch.randn(3, 5, 6), torch.tensor(2.5)
    imported = elt.import_graph(make_fx(step)(img, s), [img, s])
    ops = imported.graph.op_counts()
    assert ops.get("Im2Col") == 1 and ops.get("Col2Im") == 1 and ops.get("Unfold") == 1, ops
    module = elt.export_graph(imported.graph, imported.signature)
    for got, want in zip(module(img, s), step(img, s)):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


# ---- antialiased interpolation: F.interpolate(antialias=True), aten's _upsample_bilinear2d_aa and
# _upsample_bicubic2d_aa and their backward ops (2 axes; CPU kernels in f32 and f64 only)
AA_OPS = {"linear": (A._upsample_bilinear2d_aa, A._upsample_bilinear2d_aa_backward),
          "cubic": (A._upsample_bicubic2d_aa, A._upsample_bicubic2d_aa_backward)}
# (input spatial shape, output size, scales): strong and mild downsampling, upsampling, one axis of each,
# output size 1, an input of length 1, scales that are not O / L, an axis of unchanged length
AA_SHAPES = [((10, 20), [3, 5], [None, None]), ((10, 20), [17, 18], [1.7, 0.9]), ((6, 5), [1, 2], [None, None]),
             ((4, 5), [9, 3], [None, 0.6]), ((9, 4), [4, 7], [0.45, None]), ((1, 8), [3, 2], [None, None]),
             ((3, 8), [2, 8], [None, None]), ((13, 7), [6, 16], [0.5, 2.5])]
AA_CASES = [(m, ac, s) for m in AA_OPS for ac in (False, True) for s in AA_SHAPES]


@pytest.mark.parametrize("case", AA_CASES, ids=[f"{m}-{ac}-{s[0]}-{s[1]}" for m, ac, s in AA_CASES])
def test_antialiased_evaluator_matches_aten_in_f64(case: tuple[Any, ...]) -> None:
    mode, ac, (spatial, size, scales) = case
    fwd, bwd = AA_OPS[mode]
    x = torch.randn((2, 3) + spatial, dtype=torch.float64)
    attrs = {"mode": mode, "align_corners": ac, "antialias": True, "scales": scales}
    want = fwd(x, size, ac, *scales)
    got = apply("Interpolate", {**attrs, "size": size}, [x.numpy()], "f64")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(kernels.interpolate(x, mode, size, ac, scales, antialias=True), want,
                               rtol=1e-12, atol=1e-12)
    dy = torch.randn(want.shape, dtype=torch.float64)
    want_dx = bwd(dy, size, list(x.shape), ac, *scales)
    got_dx = apply("InterpolateBackward", {**attrs, "input_shape": list(x.shape)}, [dy.numpy()], "f64")
    np.testing.assert_allclose(got_dx, want_dx.numpy(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(kernels.interpolate_backward(dy, mode, list(x.shape), ac, scales, antialias=True),
                               want_dx, rtol=1e-12, atol=1e-12)


def test_antialiased_helper_kernel_matches_the_evaluator_and_downsampling_averages() -> None:
    like = torch.zeros(1, dtype=torch.float64)
    for mode in AA_OPS:
        for ac in (False, True):
            attrs = {"mode": mode, "align_corners": ac, "antialias": True, "in_size": 10, "out_size": 3, "scale": None}
            got = kernels.interpolate_weights(like, **attrs)
            want = apply("InterpolateWeights", attrs, [like.numpy()], "f64")
            np.testing.assert_array_equal(got.numpy(), want)
            np.testing.assert_allclose(want.sum(axis=1), 1.0, rtol=1e-14)
            # 10 -> 3 widens the filter (3.3 inputs each side, 4.5 with align_corners): the middle output
            # reads 6 inputs or more (the border ones are cut by the edges), plain interpolation 2 or 4
            assert (want[1] != 0).sum() >= 6, want
            plain = apply("InterpolateWeights", {**attrs, "antialias": False}, [like.numpy()], "f64")
            assert ((plain != 0).sum(axis=1) <= 4).all()


def test_antialiased_aten_ops_import_one_to_one_and_an_unchanged_axis_keeps_its_scale_only_backward() -> None:
    """aten's antialiased forward copies an axis of unchanged length whatever its scale (here H, 7 at
    1.1), its backward applies the scale's weights there; the importer gives the forward's axis no scale."""
    def step(x: Any, y: Any) -> Any:
        a = A._upsample_bilinear2d_aa(x, [7, 4], False, 1.1, None)
        b = A._upsample_bicubic2d_aa.vec(y, None, True, [0.5, 1.5])
        return (a, b, A._upsample_bilinear2d_aa_backward(a, [7, 4], [2, 3, 7, 9], False, 1.1, None),
                A._upsample_bicubic2d_aa_backward(b, [5, 12], [1, 2, 10, 8], True, 0.5, 1.5))

    x, y = torch.randn(2, 3, 7, 9), torch.randn(1, 2, 10, 8)
    imported = elt.import_graph(make_fx(step)(x, y), [x, y])
    nodes = [n for n in imported.graph.nodes if n.op in ("Interpolate", "InterpolateBackward")]
    assert len(nodes) == 4 and all(n.attrs["antialias"] for n in nodes), nodes
    scales = {(n.op, n.attrs["mode"]): n.attrs["scales"] for n in nodes}
    assert scales[("Interpolate", "linear")] == [None, None]
    assert scales[("InterpolateBackward", "linear")] == [1.1, None]
    module = elt.export_graph(imported.graph, imported.signature)
    for got, want in zip(module(x, y), step(x, y)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


class _AaBlock(nn.Module):
    """An image pyramid step: antialiased bilinear downsampling, a convolution, antialiased bicubic
    upsampling with align_corners."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: Any) -> Any:
        h = self.conv(F.interpolate(x, size=(5, 6), mode="bilinear", antialias=True))
        return F.interpolate(h, scale_factor=(1.5, 2.0), mode="bicubic", align_corners=True, antialias=True)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_antialiased_block_training_step_matches_eager(target: str, dtype: Any) -> None:
    torch.manual_seed(0)
    model, x, y = _AaBlock().to(dtype), torch.randn(2, 3, 16, 13, dtype=dtype), torch.randn(2, 4, 7, 12, dtype=dtype)
    be, record, _ = train_like_eager(model, mse_step, x, y, target)
    assert be.unlowered_ops == {}, be.summary()
    ops = {op for g in record for op in g.op_counts()}
    assert "InterpolateWeights" in ops and not ops & {"Interpolate", "InterpolateBackward"}, ops


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_antialiased_ops_in_half_precision_are_no_worse_than_float32_rounded_once(mode: str, dtype: Any,
                                                                                 target: str) -> None:
    """aten has no f16/bf16 antialiased kernel on CPU: the yardstick is the op computed in float32 and
    rounded once (the torch kernel, the cpu backend's), against float64; the lowered forward and backward
    are no further from float64 than it, plus HALF_MARGIN ulp."""
    from egraph_lower.rules.check import HALF_MARGIN
    import egraph_lower as el

    fwd, bwd = AA_OPS[mode]
    torch.manual_seed(3)
    x = (torch.randn(2, 3, 12, 7) * 3).to(dtype)
    g = (torch.randn(2, 3, 5, 11) * 3).to(dtype)

    def fn(x: Any, g: Any) -> Any:
        return fwd(x, [5, 11], False, None, None), bwd(g, [5, 11], [2, 3, 12, 7], False, None, None)

    imported = elt.import_graph(make_fx(fn, tracing_mode="fake")(x, g), [x, g])  # meta kernels: no half kernel
    result = el.lower(imported.graph, target)
    assert not {"Interpolate", "InterpolateBackward"} & set(result.graph.op_counts()), result.graph.op_counts()
    got = elt.export_graph(result.graph, imported.signature)(x, g)
    rounded = (kernels.interpolate(x, mode, [5, 11], antialias=True),
               kernels.interpolate_backward(g, mode, [2, 3, 12, 7], antialias=True))
    for lowered, once, ref in zip(got, rounded, fn(x.double(), g.double())):
        assert lowered.dtype == once.dtype == dtype
        margin = HALF_MARGIN * torch.finfo(dtype).eps * max(1.0, float(ref.abs().max()))
        assert _half_error(lowered, ref) <= _half_error(once, ref) + margin, (_half_error(lowered, ref),
                                                                              _half_error(once, ref))


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_antialiased_ops_in_float32_are_no_further_from_float64_than_eager(mode: str, target: str) -> None:
    """aten computes antialiased weights in float32 for float32 data (its filter centres rounded to float32:
    opdefs/resample_math.py), the format in float64: the lowered forward and backward are within a few ulp
    of float64, eager's kernel not (measured here: lowered 0.7 to 1.4 ulp of the largest value, eager 27 to 41)."""
    import egraph_lower as el

    fwd, bwd = AA_OPS[mode]
    torch.manual_seed(4)
    x, g = torch.randn(6, 3, 10, 40) * 3, torch.randn(6, 3, 17, 37) * 3

    def fn(x: Any, g: Any) -> Any:
        return fwd(x, [17, 37], False, 1.7, 0.9), bwd(g, [17, 37], [6, 3, 10, 40], False, 1.7, 0.9)

    imported = elt.import_graph(make_fx(fn)(x, g), [x, g])
    result = el.lower(imported.graph, target)
    got = elt.export_graph(result.graph, imported.signature)(x, g)
    for lowered, eager, ref in zip(got, fn(x, g), fn(x.double(), g.double())):
        ulp = torch.finfo(torch.float32).eps * float(ref.abs().max())
        assert _half_error(lowered, ref) <= 4 * ulp, _half_error(lowered, ref) / ulp
        assert _half_error(lowered, ref) <= _half_error(eager, ref), (_half_error(lowered, ref), _half_error(eager, ref))
