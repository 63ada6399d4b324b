"""Addmv and Addbmm (format version 3, opdefs/blas.py, aten_blas.py): the evaluator and the torch kernels
against aten's addmv / addbmm (beta 0 ignoring a NaN and infinities in c, a broadcast c, integer dtypes
with integer scalars), the lowering on every backend, and aten's ops through the torch.compile backend
with nothing left in PyTorch and eager's gradients."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.evaluate import apply
from egraph_lower.validate import check_attrs, infer

torch = pytest.importorskip("torch")

from egraph_lower.torch import kernels as K  # noqa: E402

sys.path.insert(0, "tests")
from support import assert_lowering_matches  # noqa: E402
from torch_steps import compiled_matches  # noqa: E402

SCALARS = ((1.0, 1.0), (2.0, 0.5), (-3.0, 0.0), (0.0, 1.0))
BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")


def _c(shape: tuple[int, ...], beta: float) -> np.ndarray:
    c = np.random.default_rng(1).normal(size=shape)
    if beta == 0 and c.size:
        c.reshape(-1)[:1] = math.nan  # not read
        if c.size > 1:
            c.reshape(-1)[1] = math.inf
    return c


@pytest.mark.parametrize(("alpha", "beta"), SCALARS)
@pytest.mark.parametrize("cshape", [(4,), (1,), ()])
def test_addmv_agrees_with_aten(alpha: float, beta: float, cshape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(2)
    c, mat, vec = _c(cshape, beta), rng.normal(size=(4, 3)), rng.normal(size=3)
    want = torch.addmv(*(torch.tensor(v) for v in (c, mat, vec)), beta=beta, alpha=alpha).numpy()
    got = apply("Addmv", {"alpha": alpha, "beta": beta}, [c, mat, vec], "f64")
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    assert not np.isnan(got).any()
    k = K.addmv(*(torch.tensor(v) for v in (c, mat, vec)), alpha=alpha, beta=beta)
    np.testing.assert_allclose(k.numpy(), want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize(("alpha", "beta"), SCALARS)
@pytest.mark.parametrize("cshape", [(3, 2), (1, 2), (3, 1), ()])
def test_addbmm_agrees_with_aten(alpha: float, beta: float, cshape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(3)
    c, b1, b2 = _c(cshape, beta), rng.normal(size=(5, 3, 4)), rng.normal(size=(5, 4, 2))
    want = torch.addbmm(*(torch.tensor(v) for v in (c, b1, b2)), beta=beta, alpha=alpha).numpy()
    got = apply("Addbmm", {"alpha": alpha, "beta": beta}, [c, b1, b2], "f64")
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
    k = K.addbmm(*(torch.tensor(v) for v in (c, b1, b2)), alpha=alpha, beta=beta)
    np.testing.assert_allclose(k.numpy(), want, rtol=1e-13, atol=1e-14)


def test_integer_dtypes_wrap_and_take_integer_scalars() -> None:
    c, mat, vec = np.array([1, -2], np.int32), np.array([[2**30, 3], [4, -5]], np.int32), np.array([4, 7], np.int32)
    want = torch.addmv(*(torch.tensor(v) for v in (c, mat, vec)), beta=2, alpha=3).numpy()
    np.testing.assert_array_equal(apply("Addmv", {"alpha": 3, "beta": 2}, [c, mat, vec], "i32"), want)
    with pytest.raises(ValueError, match="integer"):
        infer("Addmv", {"alpha": 0.5, "beta": 1}, [((2,), "i32"), ((2, 2), "i32"), ((2,), "i32")])


def test_shapes_and_attributes_are_checked() -> None:
    with pytest.raises(ValueError, match="broadcast"):
        infer("Addmv", {"alpha": 1, "beta": 1}, [((3,), "f32"), ((2, 4), "f32"), ((4,), "f32")])
    with pytest.raises(ValueError, match="b1"):
        infer("Addbmm", {"alpha": 1, "beta": 1}, [((2, 2), "f32"), ((2, 2, 3), "f32"), ((3, 3, 2), "f32")])
    with pytest.raises(ValueError, match="finite"):
        check_attrs("Addmv", {"alpha": math.inf, "beta": 1})
    assert infer("Addbmm", {"alpha": 1, "beta": 0}, [((1, 2), "f32"), ((0, 3, 4), "f32"), ((0, 4, 2), "f32")]) \
        == ((3, 2), "f32")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("alpha", "beta"), [(2.0, 0.5), (1.0, 0.0)])
def test_lowers_on_every_backend(backend: str, alpha: float, beta: float) -> None:
    target = el.load_backend(backend)
    g = GraphBuilder("blas")
    c1, mat, vec = g.input("c1", (1,), "f32"), g.input("mat", (4, 3), "f32"), g.input("vec", (3,), "f32")
    c2, b1, b2 = g.input("c2", (4, 2), "f32"), g.input("b1", (2, 4, 3), "f32"), g.input("b2", (2, 3, 2), "f32")
    graph = g.build([g.op("Addmv", c1, mat, vec, alpha=alpha, beta=beta),
                     g.op("Addbmm", c2, b1, b2, alpha=alpha, beta=beta)])
    result = el.lower(graph, backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    for op in ("Addmv", "Addbmm"):
        assert (op in target.ops) == any(n.op == op for n in result.graph.nodes)
    rng = np.random.default_rng(4)
    feeds = {k: rng.normal(size=s).astype(np.float32) for k, s in
             (("c1", (1,)), ("mat", (4, 3)), ("vec", (3,)), ("c2", (4, 2)), ("b1", (2, 4, 3)), ("b2", (2, 3, 2)))}
    if beta == 0:
        feeds["c1"][0], feeds["c2"][0, 0] = np.nan, np.inf
    assert_lowering_matches(graph, result.graph, feeds)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_addmv_addbmm_through_the_backend(target: str) -> None:
    g = torch.Generator().manual_seed(5)
    c, mat, vec = torch.randn(4, generator=g), torch.randn(4, 3, generator=g), torch.randn(3, generator=g)
    compiled_matches(lambda s, m, v: torch.addmv(s, m, v, beta=0.5, alpha=2.0), c, mat, vec, target=target)
    c2, b1, b2 = torch.randn(1, 2, generator=g), torch.randn(3, 4, 5, generator=g), torch.randn(3, 5, 2, generator=g)
    compiled_matches(lambda s, x, y: torch.addbmm(s, x, y, beta=-1.0, alpha=0.25), c2, b1, b2, target=target)
    compiled_matches(lambda s, x, y: torch.addbmm(s, x, y, beta=0), c2, b1, b2, target=target)
