"""IndexReduce (opdefs/index_reduce.py) and the mapping of aten's index_reduce and put: the reference
against aten in float64 at the awkward points (repeated indices, positions no index names, with and
without include_self, zeros in a product, ties and NaN in amax / amin, an empty index, a 0-d operand),
the torch kernel in every float dtype, the lowering on every backend (through ScatterReduce's expansions
where a backend lacks the kernel) and the torch.compile backend forward and backward, put (flat indices,
negative ones from the end, accumulate both ways) included."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import LowerError
from egraph_lower.evaluate import apply, evaluate
from support import compiled_strict

torch = pytest.importorskip("torch")

import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.torch import kernels  # noqa: E402

warnings.filterwarnings("ignore", message="index_reduce")
NAN, INF = float("nan"), float("inf")
REDUCTIONS = ("prod", "mean", "amax", "amin")
BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")


def _x() -> Any:
    return torch.tensor([[1.0, -0.0, NAN, 2.0], [0.0, 3.0, -1.5, INF], [2.0, 2.0, -2.0, 0.5]], dtype=torch.float64)


def _src() -> Any:  # 5 slices along axis 0: zeros, ties with x, NaN, -inf
    return torch.tensor([[0.0, 1.0, 2.0, 2.0], [2.0, -0.0, NAN, 1.0], [1.0, 3.0, -2.0, -INF],
                         [-1.0, 0.5, 4.0, 0.0], [2.0, 2.0, 1.0, 3.0]], dtype=torch.float64)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_the_reference_is_atens_index_reduce(reduce: str, include_self: bool) -> None:
    x, src = _x(), _src()
    i = torch.tensor([0, 2, 0, 0, 2])  # row 1 is never written; rows 0 and 2 several times
    attrs = {"axis": 0, "reduce": reduce, "include_self": include_self}
    want = x.index_reduce(0, i, src, reduce, include_self=include_self)
    got = apply("IndexReduce", attrs, [x.numpy(), i.numpy(), src.numpy()], "f64")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-15, equal_nan=True)
    np.testing.assert_array_equal(np.signbit(got[1]), np.signbit(x[1].numpy()))  # untouched: -0.0 kept
    # along the last axis, and an empty index (x unchanged)
    i2 = torch.tensor([3, 3, 1])
    s2 = src[:3, :3].T.contiguous()
    attrs2 = {**attrs, "axis": -1}
    np.testing.assert_allclose(apply("IndexReduce", attrs2, [x.numpy(), i2.numpy(), s2.numpy()], "f64"),
                               x.index_reduce(1, i2, s2, reduce, include_self=include_self).numpy(), equal_nan=True)
    e = torch.zeros(0, dtype=torch.long)
    np.testing.assert_array_equal(apply("IndexReduce", attrs, [x.numpy(), e.numpy(), np.zeros((0, 4))], "f64"),
                                  x.numpy())
    # integers (amax, amin, prod: exact)
    if reduce != "mean":
        xi, si = torch.arange(12).reshape(3, 4) - 5, torch.arange(20).reshape(5, 4) % 7 - 3
        np.testing.assert_array_equal(apply("IndexReduce", attrs, [xi.numpy(), i.numpy(), si.numpy()], "i64"),
                                      xi.index_reduce(0, i, si, reduce, include_self=include_self).numpy())


def test_bad_operands_are_refused() -> None:
    x = np.zeros((3, 4))
    with pytest.raises(LowerError, match="out of range"):
        apply("IndexReduce", {"axis": 0, "reduce": "amax", "include_self": True}, [x, np.array([-1]), np.ones((1, 4))],
              "f64")
    b = GraphBuilder("bad")
    with pytest.raises(Exception, match="src of shape"):
        b.op("IndexReduce", b.input("x", [3, 4], "f32"), b.input("i", [2], "i64"), b.input("s", [3, 4], "f32"),
             axis=0, reduce="prod", include_self=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_the_torch_kernel_is_the_reference_rounded_once(dtype: Any) -> None:
    x, src = _x().to(dtype), _src().to(dtype)
    i = torch.tensor([0, 2, 0, 0, 2])
    name = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]
    for reduce in REDUCTIONS:
        for keep in (True, False):
            attrs = {"axis": 0, "reduce": reduce, "include_self": keep}
            got = kernels.index_reduce(x, i, src, **attrs)
            want = apply("IndexReduce", attrs, [x.double().numpy(), i.numpy(), src.double().numpy()], name)
            np.testing.assert_array_equal(got.double().numpy(), np.asarray(want, dtype=np.float64))


def _graph(dtype: str) -> Any:
    b = GraphBuilder("index_reduce")
    x, i, s = b.input("x", [3, 4], dtype), b.input("i", [5], "i64"), b.input("s", [5, 4], dtype)
    return b.build([b.op("IndexReduce", x, i, s, axis=0, reduce=r, include_self=k)
                    for r in REDUCTIONS for k in (True, False)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_lowering_is_the_reference_on_every_backend(backend: str) -> None:
    graph = _graph("f32")
    target = el.load_backend(backend)
    result = el.lower(graph, target)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    assert ("IndexReduce" in result.graph.op_counts()) == target.runs("IndexReduce")
    feeds = {"x": _x().float().numpy(), "i": np.array([0, 2, 0, 0, 2]), "s": _src().float().numpy()}
    for got, want in zip(evaluate(result.graph, feeds), evaluate(graph, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_index_reduce_and_put_through_the_backend(target: str) -> None:
    x, src = _x().float(), _src().float()
    i = torch.tensor([0, 2, 0, 0, 2])
    pi = torch.tensor([[0, -1], [5, 5]])  # flat positions, -1 the last, 5 twice
    pv = torch.tensor([[1.5, -2.0], [3.0, 4.0]])

    def fn(x: Any, i: Any, src: Any, pi: Any, pv: Any) -> tuple[Any, ...]:
        outs = tuple(x.index_reduce(0, i, src, r, include_self=k) for r in REDUCTIONS for k in (True, False))
        return outs + (x.put(pi, pv, accumulate=True), x.put(pi[:1], pv[:1]), x[0, 0].index_reduce(
            0, torch.tensor(0), src[0, 0], "amax"))

    got, want = compiled_strict(fn, x, i, src, pi, pv, target=target), fn(x, i, src, pi, pv)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, k
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, equal_nan=True, err_msg=str(k))


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_gradients_match_eager(target: str) -> None:
    """aten's gradient formula (index_select, index_add, masked_fill, where around the forward op), at a
    zero in x and in src (prod), ties between x and src (amax, amin) and repeated indices."""
    x0 = torch.tensor([[1.0, 0.0, 2.0], [0.5, 3.0, -1.5], [2.0, 2.0, -2.0]])
    s0 = torch.tensor([[0.0, 1.0, 2.0], [2.0, 0.0, 4.0], [1.0, 3.0, -2.0], [-1.0, 0.5, 2.0]])
    i = torch.tensor([0, 2, 0, 2])
    for reduce in REDUCTIONS:
        for keep in (True, False):
            def f(x: Any, s: Any) -> Any:
                return x.index_reduce(0, i, s, reduce, include_self=keep) * torch.arange(9.0).reshape(3, 3)

            torch._dynamo.reset()
            be = elt.backend(target, strict=True)
            xs = [t.clone().requires_grad_() for t in (x0, s0)]
            xe = [t.clone().requires_grad_() for t in (x0, s0)]
            torch.compile(f, backend=be, dynamic=False)(*xs).sum().backward()
            f(*xe).sum().backward()
            assert be.unlowered_ops == {}, be.summary()
            for a, b in zip(xs, xe):
                torch.testing.assert_close(a.grad, b.grad, equal_nan=True, msg=f"{reduce} {keep}")
