"""Norms and distances of format version 3 (opdefs/distance.py, aten_distance.py): the evaluator against
torch's kernels at awkward points (zeros, a zero row, +-inf, NaN, ties, negative and fractional orders),
the lowering on every backend, and the aten mappings through the torch.compile backend with nothing left
in PyTorch and eager's gradients (the 2-norm's gradient at a zero row is 0, as PyTorch defines it)."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.evaluate import apply

torch = pytest.importorskip("torch")

import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.torch import kernels as K  # noqa: E402

sys.path.insert(0, "tests")
from support import assert_lowering_matches  # noqa: E402
from torch_steps import compiled_matches  # noqa: E402

NAN, INF = float("nan"), float("inf")
ROWS = np.array([[1.0, 3.0, -3.0, -2.0, 3.0], [0.0, -0.0, -1.0, -0.0, 0.0], [0.0] * 5, [NAN, 1.0, 5.0, 0.0, 2.0],
                 [INF, 1.0, -INF, 0.0, 2.0], [2.0] * 5, [1e30, -1e-30, 1e-3, 0.0, 4.0], [0.5, 0.0, 0.0, 7.0, -2.0]])
ORDS: tuple[Any, ...] = (2, 1, "inf", "-inf", 0, 3, 0.5, -1, 1.5, -2.5)
BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")


def _same(got: Any, want: Any) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0, equal_nan=True)


@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize(("axes", "keep"), [([1], False), ([0], True), ([0, 1], False)])
def test_vector_norm_agrees_with_torch_in_float64(ord: Any, axes: list[int], keep: bool) -> None:
    want = torch.linalg.vector_norm(torch.tensor(ROWS), float(ord), dim=axes, keepdim=keep).numpy()
    got = apply("VectorNorm", {"ord": ord, "axes": axes, "keep_dim": keep}, [ROWS], "f64")
    _same(got, want)
    _same(K.vector_norm(torch.tensor(ROWS), ord, axes, keep).numpy(), want)


def test_vector_norm_refuses_an_empty_max() -> None:
    g = GraphBuilder("empty")
    x = g.input("x", (0, 3), "f32")
    with pytest.raises(Exception, match="empty axis"):
        g.op("VectorNorm", x, ord="inf", axes=[0])
    assert g.op("VectorNorm", x, ord=2, axes=[0]) is not None  # an empty sum: 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ord", ORDS)
def test_vector_norm_lowers_on_every_backend(ord: Any, backend: str) -> None:
    target = el.load_backend(backend)
    for dtype in ("f32", "f16"):
        g = GraphBuilder(f"vnorm_{dtype}")
        x = g.input("x", (8, 5), dtype)
        graph = g.build([g.op("VectorNorm", x, ord=ord, axes=[1], keep_dim=True)])
        result = el.lower(graph, backend)
        assert all(target.runs_node(n) for n in result.graph.nodes)
        assert ("VectorNorm" in target.ops) == any(n.op == "VectorNorm" for n in result.graph.nodes)
        rows = np.where(np.abs(ROWS) > 1e3, 3.0, np.where(np.abs(ROWS) < 1e-3, 0.0, ROWS))  # f16's range
        assert_lowering_matches(graph, result.graph, {"x": rows})


def _compiled_matches(f: Any, *args: Any, target: str = "wgpu", grad: bool = True) -> None:
    compiled_matches(f, *args, target=target, grad=grad, equal_nan=True, allow_unused=True)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("ord", [2, 1, INF, -INF, 0, 3.0, -1.0])
def test_linalg_vector_norm_through_the_backend(ord: float, target: str) -> None:
    x = torch.tensor(ROWS[[0, 1, 2, 5, 7]], dtype=torch.float64)  # a zero row: the 2-norm's gradient is 0
    _compiled_matches(lambda t: torch.linalg.vector_norm(t, ord, dim=1), x, target=target, grad=ord != 0)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_norm_users_through_the_backend(target: str) -> None:
    a = torch.tensor(ROWS[[0, 2, 5, 7]], dtype=torch.float32)
    b = torch.tensor(ROWS[[7, 2, 0, 5]], dtype=torch.float32)
    _compiled_matches(lambda t: torch.nn.functional.normalize(t, dim=1), a, target=target)
    _compiled_matches(lambda s, t: torch.nn.functional.cosine_similarity(s, t), a, b, target=target)
    _compiled_matches(lambda s, t: torch.nn.functional.pairwise_distance(s, t), a, b, target=target)
    _compiled_matches(lambda t: torch.linalg.vector_norm(t, 2, dtype=torch.float64), a, target=target)
    _compiled_matches(lambda t: torch.norm(t.half(), dim=(0, 1), keepdim=True).float(), a, target=target)


# ---- Dist (aten's dist)

@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize(("sa", "sb"), [((8, 5), (8, 5)), ((8, 5), (5,)), ((5,), (8, 5)), ((8, 5), ())])
def test_dist_agrees_with_torch_in_float64(ord: Any, sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    rng = np.random.default_rng(7)
    a = ROWS if sa == (8, 5) else ROWS[7]
    b = rng.normal(size=sb) if sb != (8, 5) else np.where(rng.random((8, 5)) < 0.5, ROWS, rng.normal(size=(8, 5)))
    want = torch.dist(torch.tensor(a), torch.tensor(b), float(ord)).numpy()
    _same(apply("Dist", {"ord": ord}, [a, b], "f64"), want)
    _same(K.dist(torch.tensor(a), torch.tensor(b), ord).numpy(), want)


def test_dist_of_equal_tensors_is_zero_and_empty_max_is_refused() -> None:
    assert apply("Dist", {"ord": 2}, [ROWS[[0, 5]], ROWS[[0, 5]]], "f64") == 0.0
    g = GraphBuilder("empty")
    x = g.input("x", (0, 3), "f32")
    with pytest.raises(Exception, match="empty"):
        g.op("Dist", x, x, ord="inf")
    with pytest.raises(Exception, match="broadcast"):
        g.op("Dist", x, g.input("y", (2, 3), "f32"), ord=2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ord", ORDS)
def test_dist_lowers_on_every_backend(ord: Any, backend: str) -> None:
    target = el.load_backend(backend)
    g = GraphBuilder("dist")
    a, b = g.input("a", (8, 5), "f32"), g.input("b", (5,), "f32")
    graph = g.build([g.op("Dist", a, b, ord=ord)])
    result = el.lower(graph, backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    assert ("Dist" in target.ops) == any(n.op == "Dist" for n in result.graph.nodes)
    assert_lowering_matches(graph, result.graph, {"a": ROWS.astype(np.float32), "b": ROWS[7].astype(np.float32)})


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("ord", [2, 1, INF, 0, 3.0, 0.5])
def test_dist_through_the_backend(ord: float, target: str) -> None:
    a = torch.tensor(ROWS[[0, 1, 2, 5, 7]], dtype=torch.float64)
    b = torch.tensor(ROWS[7], dtype=torch.float64)
    _compiled_matches(lambda s, t: torch.dist(s, t, ord), a, b, target=target, grad=ord != 0)
    _compiled_matches(lambda s: torch.dist(s, s.detach(), ord), a, target=target, grad=ord not in (0, 0.5))


# ---- Cdist, CdistBackward (aten's _cdist_forward, _cdist_backward)

CDIST_ORDS: tuple[Any, ...] = (2, 1, "inf", 0, 3, 0.5, 1.5)
_X1 = np.array([[1.0, -2.0, 0.5], [0.0, 0.0, 0.0], [3.0, 1.0, -1.0], [1.0, -2.0, 0.5]])  # a repeated row
_X2 = np.array([[1.0, -2.0, 0.5], [2.0, 2.0, -2.0], [0.0, 0.0, 0.0], [-1e3, 4.0, 1e-3], [3.0, -1.0, -1.0]])


@pytest.mark.parametrize("ord", CDIST_ORDS)
@pytest.mark.parametrize(("s1", "s2"), [((4, 3), (5, 3)), ((2, 4, 3), (1, 5, 3)), ((1, 4, 3), (3, 5, 3))])
def test_cdist_and_its_gradient_agree_with_aten_in_float64(ord: Any, s1: tuple[int, ...], s2: tuple[int, ...]) -> None:
    rng = np.random.default_rng(8)
    x1 = np.broadcast_to(_X1, s1) + (rng.normal(size=s1) if s1[0] == 2 else 0.0)
    x2 = np.broadcast_to(_X2, s2).copy()
    p = float(ord)
    want = torch.cdist(torch.tensor(x1), torch.tensor(x2), p, compute_mode="donot_use_mm_for_euclid_dist")
    _same(apply("Cdist", {"ord": ord}, [x1, x2], "f64"), want.numpy())
    _same(K.cdist(torch.tensor(x1), torch.tensor(x2), ord).numpy(), want.numpy())
    dy = rng.normal(size=want.shape)
    grad = torch.ops.aten._cdist_backward(torch.tensor(dy), torch.tensor(x1), torch.tensor(x2), p, want).numpy()
    got = apply("CdistBackward", {"ord": ord}, [dy, x1, x2, want.numpy()], "f64")
    np.testing.assert_allclose(got, grad, rtol=1e-12, atol=1e-12)  # zero distances (the repeated rows): 0


def test_cdist_gradient_against_float64_differences() -> None:
    """The derivation checked by central differences where every distance is nonzero."""
    rng = np.random.default_rng(9)
    x1, x2 = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    dy = rng.normal(size=(3, 5))
    for ord in (2, 1, 3, 0.5, 1.5, "inf"):
        grad = apply("CdistBackward", {"ord": ord}, [dy, x1, x2, apply("Cdist", {"ord": ord}, [x1, x2], "f64")], "f64")
        h, num = 1e-6, np.zeros_like(x1)
        for idx in np.ndindex(*x1.shape):
            up, down = x1.copy(), x1.copy()
            up[idx] += h
            down[idx] -= h
            f = [np.sum(dy * apply("Cdist", {"ord": ord}, [v, x2], "f64")) for v in (up, down)]
            num[idx] = (f[0] - f[1]) / (2 * h)
        np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-6, err_msg=str(ord))


def test_cdist_refuses_a_negative_order_and_mismatched_rows() -> None:
    g = GraphBuilder("bad")
    a, b = g.input("a", (3, 4), "f32"), g.input("b", (2, 5), "f32")
    with pytest.raises(Exception, match="c"):
        g.op("Cdist", a, b, ord=2)
    with pytest.raises(Exception, match=">= 0"):
        g.op("Cdist", a, a, ord=-1)
    assert math.isfinite(float(apply("Cdist", {"ord": 2}, [_X1, _X1], "f64")[0, 3]))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ord", CDIST_ORDS)
def test_cdist_lowers_on_every_backend(ord: Any, backend: str) -> None:
    target = el.load_backend(backend)
    g = GraphBuilder("cdist")
    a, b = g.input("a", (4, 3), "f32"), g.input("b", (5, 3), "f32")
    dist = g.op("Cdist", a, b, ord=ord)
    graph = g.build([dist, g.op("CdistBackward", g.input("dy", (4, 5), "f32"), a, b, dist, ord=ord)])
    result = el.lower(graph, backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    for op in ("Cdist", "CdistBackward"):
        assert (op in target.ops) == any(n.op == op for n in result.graph.nodes)
    dy = np.linspace(-2, 2, 20).reshape(4, 5).astype(np.float32)
    assert_lowering_matches(graph, result.graph, {"a": _X1.astype(np.float32), "b": _X2.astype(np.float32), "dy": dy})


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("ord", [2, 1, INF, 0, 3.0, 0.5])
def test_cdist_through_the_backend(ord: float, target: str) -> None:
    x1, x2 = torch.tensor(_X1), torch.tensor(_X2)
    _compiled_matches(lambda s, t: torch.cdist(s, t, ord), x1, x2, target=target, grad=ord != 0)


def test_cdist_matrix_product_form_is_left_to_pytorch() -> None:
    torch._dynamo.reset()
    be = elt.backend("wgpu")
    x1, x2 = torch.randn(30, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    got = torch.compile(lambda s, t: torch.ops.aten._cdist_forward(s, t, 2.0, None), backend=be)(x1, x2)
    torch.testing.assert_close(got, torch.cdist(x1, x2))
    assert "aten._cdist_forward.default" in be.unlowered_ops, be.summary()


# ---- Pdist, PdistBackward (aten's _pdist_forward, _pdist_backward)

@pytest.mark.parametrize("ord", CDIST_ORDS)
@pytest.mark.parametrize("rows", [4, 2, 1])
def test_pdist_and_its_gradient_agree_with_aten_in_float64(ord: Any, rows: int) -> None:
    x = _X1[:rows]  # rows 0 and 3 equal: a zero distance, whose gradient is 0
    p = float(ord)
    want = torch.ops.aten._pdist_forward(torch.tensor(x), p)
    _same(apply("Pdist", {"ord": ord}, [x], "f64"), want.numpy())
    _same(K.pdist(torch.tensor(x), ord).numpy(), want.numpy())
    dy = np.linspace(-1.0, 2.0, want.numel())
    grad = torch.ops.aten._pdist_backward(torch.tensor(dy), torch.tensor(x), p, want).numpy()
    got = apply("PdistBackward", {"ord": ord}, [dy, x, want.numpy()], "f64")
    np.testing.assert_allclose(got, grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ord", CDIST_ORDS)
def test_pdist_lowers_on_every_backend(ord: Any, backend: str) -> None:
    target = el.load_backend(backend)
    g = GraphBuilder("pdist")
    x = g.input("x", (5, 3), "f32")
    pd = g.op("Pdist", x, ord=ord)
    graph = g.build([pd, g.op("PdistBackward", g.input("dy", (10,), "f32"), x, pd, ord=ord)])
    result = el.lower(graph, backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    for op in ("Pdist", "PdistBackward"):
        assert (op in target.ops) == any(n.op == op for n in result.graph.nodes)
    feeds = {"x": _X2.astype(np.float32), "dy": np.linspace(-2, 2, 10).astype(np.float32)}
    assert_lowering_matches(graph, result.graph, feeds)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("ord", [2, 1, INF, 0, 3.0, 0.5])
def test_pdist_through_the_backend(ord: float, target: str) -> None:
    _compiled_matches(lambda s: torch.nn.functional.pdist(s, ord), torch.tensor(_X1), target=target, grad=ord != 0)
