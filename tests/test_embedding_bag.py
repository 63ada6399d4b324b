"""The embedding bags (opdefs/bag.py): every op's reference against aten's `_embedding_bag` and its backward
ops in float64 (modes, padding_idx, include_last_offset, empty and all-padding bags, max ties), the
gradients against the finite difference of the forward, the torch kernels against the reference, validation
in one line, the lowering for metal, wgpu, tpu and mlx against the evaluator, and F.embedding_bag through
the torch backend with nothing left in PyTorch and eager's gradients (the fast sum path's empty offset2bag
included)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.evaluate import apply
from egraph_lower.validate import infer
from support import assert_lowering_matches, numeric_vjp

torch = pytest.importorskip("torch")
F = torch.nn.functional
A = torch.ops.aten

# (indices, offsets, include_last_offset, padding_idx): empty bags first, between and last; a bag of
# padding rows only; positions after include_last_offset's last offset (aten's last bag takes them);
# one bag of everything; repeated rows
CASES = [
    ([1, 2, 2, 5, 0, 3, 2], [0, 0, 3, 7], False, -1),
    ([1, 2, 2, 5, 0, 3, 2], [0, 0, 3, 7], False, 2),
    ([2, 2, 1, 4, 2, 0], [0, 2, 2, 5], False, 2),
    ([0, 1, 3, 4, 5, 1], [0, 2, 4], True, -1),
    ([0, 1, 3, 4, 5, 1], [0, 2, 4], True, 5),
    ([4, 3, 1, 0, 5], [0], False, -1),
    ([5, 5, 2], [0, 3], True, 2),
]
MODES = ("sum", "mean", "max")


def _weight(seed: int) -> Any:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(6, 3, dtype=torch.float64, generator=g) * 3
    w[1, :2] = w[0, :2]  # rows 0 and 1 tie in two columns: aten's max takes the first position
    return w


def _aten(w: Any, case: Any, mode: str, psw: Any = None) -> tuple[Any, ...]:
    idx, off, last, pad = case
    return A._embedding_bag(w, torch.tensor(idx), torch.tensor(off), False, MODES.index(mode), False, psw, last, pad)


def _attrs(case: Any, **more: Any) -> dict[str, Any]:
    return {"padding_idx": case[3], "include_last_offset": case[2], **more}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", range(len(CASES)))
def test_every_forward_op_is_atens_in_float64(k: int, mode: str) -> None:
    case = CASES[k]
    idx, off = np.array(case[0]), np.array(case[1])
    w = _weight(k)
    psw = torch.randn(len(idx), dtype=torch.float64) if mode == "sum" else None
    out, o2b, size, top = _aten(w, case, mode, psw)
    ones = np.ones(len(idx))
    got = apply("EmbeddingBag", _attrs(case, mode=mode), [w.numpy(), idx, off, ones if psw is None else psw.numpy()],
                "f64")
    np.testing.assert_allclose(got, out.numpy(), rtol=1e-14, atol=1e-15)
    if o2b.numel():
        want_o2b = o2b.numpy()
        np.testing.assert_array_equal(apply("EmbeddingBagOffset2Bag", {"include_last_offset": case[2]}, [idx, off],
                                            "i64"), want_o2b)
    if mode != "sum":
        np.testing.assert_array_equal(apply("EmbeddingBagSize", _attrs(case), [idx, off], "i64"), size.numpy())
    if mode == "max":
        np.testing.assert_array_equal(apply("EmbeddingBagMaxIndices", _attrs(case), [w.numpy(), idx, off], "i64"),
                                      top.numpy())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", range(len(CASES)))
def test_every_backward_op_is_atens_in_float64(k: int, mode: str) -> None:
    case = CASES[k]
    idx, off, last, pad = case
    w = _weight(k + 10)
    psw = torch.randn(len(idx), dtype=torch.float64) if mode == "sum" else None
    out, o2b, size, top = _aten(w, case, mode, psw)
    dy = torch.randn(out.shape, dtype=torch.float64)
    want = A._embedding_bag_backward(dy, torch.tensor(idx), torch.tensor(off), o2b, size, top, 6, False,
                                     MODES.index(mode), False, psw, pad)
    if mode == "max":
        got = apply("EmbeddingBagMaxBackward", {"num_weights": 6},
                    [dy.numpy(), top.numpy(), apply("EmbeddingBagSize", _attrs(case), [np.array(idx), np.array(off)],
                                                    "i64")], "f64")
    else:
        p = np.ones(len(idx)) if psw is None else psw.numpy()
        got = apply("EmbeddingBagBackward", _attrs(case, mode=mode, num_weights=6),
                    [dy.numpy(), np.array(idx), np.array(off), p], "f64")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-14, atol=1e-15)
    if mode == "sum":
        want_psw = A._embedding_bag_per_sample_weights_backward(dy, w, torch.tensor(idx), torch.tensor(off), o2b, 0,
                                                                 pad)
        got_psw = apply("EmbeddingBagPerSampleWeightsBackward", _attrs(case),
                        [dy.numpy(), w.numpy(), np.array(idx), np.array(off)], "f64")
        np.testing.assert_allclose(got_psw, want_psw.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_the_gradients_are_the_finite_differences_of_the_bags(mode: str) -> None:
    """Independently of torch: the vjp of EmbeddingBag by central differences, for weight and (sum) the
    per-sample weights."""
    idx, off, last, pad = CASES[2]
    attrs = _attrs(CASES[2], mode=mode)
    rng = np.random.default_rng(5)
    w, psw = rng.standard_normal((6, 3)), rng.standard_normal(len(idx))
    dy = rng.standard_normal((len(off), 3))
    i, o = np.array(idx), np.array(off)
    want = numeric_vjp(lambda v: apply("EmbeddingBag", attrs, [v, i, o, psw], "f64"), w, dy)
    got = apply("EmbeddingBagBackward", dict(attrs, num_weights=6), [dy, i, o, psw], "f64")
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    if mode == "sum":
        want_p = numeric_vjp(lambda v: apply("EmbeddingBag", attrs, [w, i, o, v], "f64"), psw, dy)
        got_p = apply("EmbeddingBagPerSampleWeightsBackward", _attrs(CASES[2]), [dy, w, i, o], "f64")
        np.testing.assert_allclose(got_p, want_p, rtol=1e-7, atol=1e-9)


def test_the_max_gradient_is_the_finite_difference_of_the_max() -> None:
    idx, off, last, pad = CASES[0]
    rng = np.random.default_rng(6)
    w = rng.standard_normal((6, 3))  # no ties: the max is differentiable
    i, o = np.array(idx), np.array(off)
    attrs = _attrs(CASES[0], mode="max")
    dy = rng.standard_normal((len(off), 3))
    want = numeric_vjp(lambda v: apply("EmbeddingBag", attrs, [v, i, o, np.ones(len(i))], "f64"), w, dy)
    mi = apply("EmbeddingBagMaxIndices", _attrs(CASES[0]), [w, i, o], "i64")
    size = apply("EmbeddingBagSize", _attrs(CASES[0]), [i, o], "i64")
    got = apply("EmbeddingBagMaxBackward", {"num_weights": 6}, [dy, mi, size], "f64")
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_the_kernels_are_the_reference(dtype: Any) -> None:
    from egraph_lower.torch import kernels

    name = {torch.float64: "f64", torch.bfloat16: "bf16"}[dtype]
    for k, case in enumerate(CASES):
        w = _weight(k).to(dtype)
        i, o = torch.tensor(case[0]), torch.tensor(case[1])
        psw = torch.randn(len(case[0]), dtype=torch.float64).to(dtype)
        wn, pn, inp, on = w.double().numpy(), psw.double().numpy(), i.numpy(), o.numpy()
        for mode in MODES:
            got = kernels.embedding_bag(w, i, o, psw, **_attrs(case, mode=mode))
            np.testing.assert_array_equal(got.double().numpy(),
                                          apply("EmbeddingBag", _attrs(case, mode=mode), [wn, inp, on, pn], name))
        dy = torch.randn(len(case[1]) - int(case[2]), 3, dtype=torch.float64).to(dtype)
        dyn = dy.double().numpy()
        for mode in ("sum", "mean"):
            a = _attrs(case, mode=mode, num_weights=6)
            np.testing.assert_array_equal(kernels.embedding_bag_backward(dy, i, o, psw, **a).double().numpy(),
                                          apply("EmbeddingBagBackward", a, [dyn, inp, on, pn], name))
        mi = kernels.embedding_bag_max_indices(w, i, o, **_attrs(case))
        size = kernels.embedding_bag_size(i, o, **_attrs(case))
        np.testing.assert_array_equal(mi.numpy(), apply("EmbeddingBagMaxIndices", _attrs(case), [wn, inp, on], "i64"))
        np.testing.assert_array_equal(size.numpy(), apply("EmbeddingBagSize", _attrs(case), [inp, on], "i64"))
        np.testing.assert_array_equal(kernels.embedding_bag_offset2bag(i, o, case[2]).numpy(),
                                      apply("EmbeddingBagOffset2Bag", {"include_last_offset": case[2]}, [inp, on],
                                            "i64"))
        np.testing.assert_array_equal(
            kernels.embedding_bag_max_backward(dy, mi, size, num_weights=6).double().numpy(),
            apply("EmbeddingBagMaxBackward", {"num_weights": 6}, [dyn, mi.numpy(), size.numpy()], name))
        np.testing.assert_array_equal(
            kernels.embedding_bag_psw_backward(dy, w, i, o, **_attrs(case)).double().numpy(),
            apply("EmbeddingBagPerSampleWeightsBackward", _attrs(case), [dyn, wn, inp, on], name))


@pytest.mark.parametrize("op, attrs, shapes, message", [
    ("EmbeddingBag", {"mode": "sum", "padding_idx": -1, "include_last_offset": False},
     [((4, 3), "f32"), ((5,), "i64"), ((2,), "i64"), ((4,), "f32")], r"not indices' \[5\]"),
    ("EmbeddingBag", {"mode": "max", "padding_idx": 4, "include_last_offset": False},
     [((4, 3), "f32"), ((5,), "i64"), ((2,), "i64"), ((5,), "f32")], r"padding_idx 4 is not -1 or in \[0, 4\)"),
    ("EmbeddingBag", {"mode": "sum", "padding_idx": -1, "include_last_offset": True},
     [((4, 3), "f32"), ((5,), "i64"), ((1,), "i64"), ((5,), "f32")], "hold no bag"),
    ("EmbeddingBagSize", {"padding_idx": -1, "include_last_offset": False},
     [((5,), "f32"), ((2,), "i64")], "integer dtype"),
    ("EmbeddingBagBackward", {"mode": "sum", "num_weights": 4, "padding_idx": -1, "include_last_offset": False},
     [((3, 2), "f32"), ((5,), "i64"), ((2,), "i64"), ((5,), "f32")], "dy has 3 bags but offsets hold 2"),
    ("EmbeddingBagMaxBackward", {"num_weights": 4}, [((3, 2), "f32"), ((3, 1), "i64"), ((3,), "i64")],
     r"not dy's \[3, 2\]"),
])
def test_validation_in_one_line(op: str, attrs: dict[str, Any], shapes: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        infer(op, attrs, shapes)
    assert "\n" not in str(err.value)


def _graph(case: Any, mode: str) -> tuple[Any, dict[str, np.ndarray]]:
    idx, off, last, pad = case
    n, b = len(idx), len(off) - int(last)
    gb = GraphBuilder("bag")
    w, i, o = gb.input("w", [6, 3], "f32"), gb.input("i", [n], "i64"), gb.input("o", [len(off)], "i64")
    p, dy = gb.input("p", [n], "f32"), gb.input("dy", [b, 3], "f32")
    a = _attrs(case)
    outs = [gb.op("EmbeddingBag", w, i, o, p, mode=mode, **a), gb.op("EmbeddingBagOffset2Bag", i, o,
                                                                      include_last_offset=last)]
    if mode == "max":
        mi, size = gb.op("EmbeddingBagMaxIndices", w, i, o, **a), gb.op("EmbeddingBagSize", i, o, **a)
        outs += [mi, size, gb.op("EmbeddingBagMaxBackward", dy, mi, size, num_weights=6)]
    else:
        outs += [gb.op("EmbeddingBagBackward", dy, i, o, p, mode=mode, num_weights=6, **a),
                 gb.op("EmbeddingBagPerSampleWeightsBackward", dy, w, i, o, **a)]
    rng = np.random.default_rng(len(idx))
    w_ = rng.standard_normal((6, 3)).astype(np.float32)
    w_[1, :2] = w_[0, :2]
    feeds = {"w": w_, "i": np.array(idx), "o": np.array(off), "p": rng.standard_normal(n).astype(np.float32),
             "dy": rng.standard_normal((b, 3)).astype(np.float32)}
    return gb.build(outs), feeds


@pytest.mark.parametrize("backend", ["metal", "wgpu", "tpu", "mlx"])
@pytest.mark.parametrize("mode", MODES)
def test_the_bags_lower_to_what_the_evaluator_says(mode: str, backend: str) -> None:
    target = el.load_backend(backend)
    for case in CASES[1:5]:
        graph, feeds = _graph(case, mode)
        lowered = el.lower(graph, backend).graph
        assert all(target.runs_node(node) for node in lowered.nodes)
        assert not any(op.startswith("EmbeddingBag") for op in lowered.op_counts())
        assert_lowering_matches(graph, lowered, feeds)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("backend", ["metal", "wgpu", "cpu"])
def test_f_embedding_bag_through_the_backend_leaves_nothing_in_pytorch(backend: str, dtype: Any) -> None:
    """Every mode, per-sample weights, padding_idx, include_last_offset and 2-D indices in one graph; in
    float32 aten's fast sum path gives an empty offset2bag, which the graph carries to the backward."""
    from egraph_lower.torch import backend as make_backend

    idx = torch.tensor([1, 2, 2, 5, 0, 3, 2])
    off = torch.tensor([0, 0, 3, 7])
    idx2 = torch.tensor([[0, 2, 2], [4, 1, 2]])

    def f(w: Any, p: Any) -> Any:
        return torch.cat([F.embedding_bag(idx, w, off, mode="sum", per_sample_weights=p),
                          F.embedding_bag(idx, w, off, mode="mean", padding_idx=2),
                          F.embedding_bag(idx, w, off[:3], mode="max", include_last_offset=True),
                          F.embedding_bag(idx2, w, mode="max", padding_idx=2)]).sin()

    torch._dynamo.reset()
    be = make_backend(backend)
    fn = torch.compile(f, backend=be, dynamic=False)
    g = torch.Generator().manual_seed(3)
    w = (torch.randn(6, 3, generator=g) * 2).to(dtype).requires_grad_(True)
    p = torch.randn(7, generator=g).to(dtype).requires_grad_(True)
    y = fn(w, p)
    dy = torch.randn(y.shape, generator=g).to(dtype)
    got = torch.autograd.grad(y, (w, p), dy)
    want = torch.autograd.grad(f(w, p), (w, p), dy)
    assert be.unlowered_ops == {} and all(not r.errors for r in be.graphs), be.summary()
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2e-2, torch.bfloat16: 1e-1}[dtype]
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("backend", ["metal", "wgpu"])
def test_an_inference_graph_maps_embedding_bag_forward_only(backend: str) -> None:
    """Without a gradient F.embedding_bag calls `_embedding_bag_forward_only` (the same values): lowered too."""
    from egraph_lower.torch import backend as make_backend

    idx, off = torch.tensor([1, 2, 2, 5, 0, 3, 2]), torch.tensor([0, 0, 3, 7])
    w = torch.randn(6, 3, generator=torch.Generator().manual_seed(8))
    torch._dynamo.reset()
    be = make_backend(backend)
    fn = torch.compile(lambda t: F.embedding_bag(idx, t, off, mode="max", padding_idx=2), backend=be, dynamic=False)
    with torch.no_grad():
        got = fn(w)
    assert be.unlowered_ops == {} and all(not r.errors for r in be.graphs), be.summary()
    assert any(r.kind == "inference" and r.status == "lowered" for r in be.graphs), be.summary()
    torch.testing.assert_close(got, F.embedding_bag(idx, w, off, mode="max", padding_idx=2))


@pytest.mark.parametrize("backend", ["metal", "wgpu"])
def test_large_bags_lower_without_a_bags_by_positions_by_d_tensor(backend: str) -> None:
    """400 positions in 40 bags of D = 16: sum and mean with their gradients take the Take / ScatterAdd forms
    (no value of B N D elements; metal scatters, wgpu has no ScatterAdd), and agree with the evaluator."""
    n, b, d, w = 400, 40, 16, 100
    rng = np.random.default_rng(9)
    feeds = {"w": rng.standard_normal((w, d)).astype(np.float32), "i": rng.integers(0, w, n),
             "o": np.sort(rng.integers(0, n, b)), "p": rng.standard_normal(n).astype(np.float32),
             "dy": rng.standard_normal((b, d)).astype(np.float32)}
    feeds["o"][0] = 0
    for mode in ("sum", "mean"):
        gb = GraphBuilder("bags")
        W, i, o = gb.input("w", [w, d], "f32"), gb.input("i", [n], "i64"), gb.input("o", [b], "i64")
        p, dy = gb.input("p", [n], "f32"), gb.input("dy", [b, d], "f32")
        a = {"padding_idx": 3, "include_last_offset": False}
        graph = gb.build([gb.op("EmbeddingBag", W, i, o, p, mode=mode, **a),
                          gb.op("EmbeddingBagBackward", dy, i, o, p, mode=mode, num_weights=w, **a),
                          gb.op("EmbeddingBagPerSampleWeightsBackward", dy, W, i, o, **a)])
        lowered = el.lower(graph, backend).graph
        assert max(int(np.prod(node.shape)) for node in lowered.nodes) < b * n * d
        assert ("ScatterAdd" in lowered.op_counts()) == (backend == "metal")
        assert_lowering_matches(graph, lowered, feeds)
