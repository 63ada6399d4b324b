"""The group-norm ops (opdefs/groupnorm.py): reference semantics against PyTorch's native_group_norm in
float64 at the awkward points (a group of one element, zero variance, large means), the backward ops
against finite differences and against native_group_norm_backward, the lowering on every backend, and
the aten mapping (a step's forward and backward lowered with nothing left in PyTorch)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from support import assert_lowering_matches, f64, numeric_grad

torch = pytest.importorskip("torch")

EPS = 1e-5
BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")
OPS = ("GroupNorm", "GroupNormBackwardInput", "GroupNormBackwardWeight")
# (shape, groups, what): a group of one element, constant groups, a large mean, rank 2 to 4
CASES = [((4, 3), 3, "one element a group"), ((2, 6, 5), 2, "large mean"), ((2, 4, 3, 2), 4, "constant groups"),
         ((3, 4, 1), 1, "one group")]


def _x(shape: tuple[int, ...], groups: int, what: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 2.0
    if what == "large mean":
        x = x * 1e-3 + 1e4
    if what == "constant groups":
        x.reshape(shape[0], groups, -1)[0, 1:] = 3.25
    return x


def _stats(x: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    xg = x.reshape(x.shape[0], groups, -1)
    return f64("Reduce", {"op": "Mean", "axes": [2]}, xg), f64("InvStd", {"axes": [2], "eps": EPS}, xg)


@pytest.mark.parametrize("shape,groups,what", CASES)
def test_group_norm_agrees_with_torch_in_float64(shape: tuple[int, ...], groups: int, what: str) -> None:
    x = _x(shape, groups, what)
    c = shape[1]
    w, b = np.linspace(-2, 3, c), np.linspace(1, -1, c)
    n, hxw = shape[0], math.prod(shape[2:])
    tx, tw, tb = (torch.tensor(v) for v in (x, w, b))
    y, mean, rstd = torch.ops.aten.native_group_norm(tx, tw, tb, n, c, hxw, groups, EPS)
    # torch's variance is one-pass: at a mean of 1e4 it is off by ~1e-9 of the spread, ours is not
    np.testing.assert_allclose(f64("GroupNorm", {"groups": groups, "eps": EPS}, x, w, b), y.numpy(),
                               rtol=1e-7, atol=1e-7)
    m, r = _stats(x, groups)
    np.testing.assert_allclose(m, mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(r, rstd.numpy(), rtol=1e-6)  # torch's one-pass variance at a mean of 1e4
    dy = np.random.default_rng(1).standard_normal(shape)
    dx, dw, db = torch.ops.aten.native_group_norm_backward(torch.tensor(dy), tx, mean, rstd, tw, n, c, hxw, groups,
                                                           [True, True, True])
    np.testing.assert_allclose(f64("GroupNormBackwardInput", {"groups": groups}, x, w, m, r, dy), dx.numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f64("GroupNormBackwardWeight", {"groups": groups}, x, m, r, dy), dw.numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f64("BatchNormTrainingBackwardBeta", {"axis": 1}, dy), db.numpy(), rtol=1e-12)


@pytest.mark.parametrize("shape,groups,what", CASES)
def test_backward_ops_are_the_derivatives(shape: tuple[int, ...], groups: int, what: str) -> None:
    x = _x(shape, groups, what if what != "large mean" else "", seed=2)  # finite differences need O(1) values
    rng = np.random.default_rng(3)
    w, b, dy = rng.standard_normal(shape[1]), rng.standard_normal(shape[1]), rng.standard_normal(shape)
    attrs = {"groups": groups, "eps": 1e-3}

    def loss(x: np.ndarray, w: np.ndarray) -> float:
        return float(np.sum(dy * f64("GroupNorm", attrs, x, w, b)))

    xg = x.reshape(shape[0], groups, -1)
    mean = f64("Reduce", {"op": "Mean", "axes": [2]}, xg)
    rstd = f64("InvStd", {"axes": [2], "eps": 1e-3}, xg)
    dx = f64("GroupNormBackwardInput", {"groups": groups}, x, w, mean, rstd, dy)
    dw = f64("GroupNormBackwardWeight", {"groups": groups}, x, mean, rstd, dy)
    np.testing.assert_allclose(dx, numeric_grad(lambda v: loss(v, w), x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dw, numeric_grad(lambda v: loss(x, v), w), rtol=1e-6, atol=1e-7)
    if what == "one element a group":
        np.testing.assert_array_equal(dx, np.zeros(shape))  # xhat = 0 whatever x is


def _step(shape: tuple[int, ...], groups: int, dtype: str = "f32") -> el.Graph:
    b = GraphBuilder("gn")
    c = shape[1]
    x, dy = b.input("x", list(shape), dtype), b.input("dy", list(shape), dtype)
    w, bias = b.param("w", [c], dtype), b.param("b", [c], dtype)
    xg = b.op("Reshape", x, shape=[shape[0], groups, math.prod(shape) // (shape[0] * groups)])
    mean = b.op("Reduce", xg, op="Mean", axes=[2])
    rstd = b.op("InvStd", xg, axes=[2], eps=EPS)
    outs = [b.op("GroupNorm", x, w, bias, groups=groups, eps=EPS), mean, rstd,
            b.op("GroupNormBackwardInput", x, w, mean, rstd, dy, groups=groups),
            b.op("GroupNormBackwardWeight", x, mean, rstd, dy, groups=groups),
            b.op("BatchNormTrainingBackwardBeta", dy, axis=1)]
    return b.build(outs)


def _feeds(graph: el.Graph, dtype: str, offset: float) -> dict[str, np.ndarray]:
    from egraph_lower.evaluate import apply
    rng = np.random.default_rng(4)
    out = {}
    for n in graph.nodes:
        if n.op in ("Input", "Param"):
            v = rng.standard_normal(n.shape) + (offset if n.attrs["name"] == "x" else 0.0)
            out[n.attrs["name"]] = apply("Cast", {"to": dtype}, [v], dtype)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((4, 3), 3), ((2, 4, 2, 3), 2)])
def test_group_norm_lowers_on_every_backend(backend: str, shape: tuple[int, ...], groups: int) -> None:
    graph = _step(shape, groups)
    result = el.lower(graph, backend)
    target = el.load_backend(backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    counts = result.graph.op_counts()
    for op in OPS:
        assert (op in counts) == target.runs(op), op
    assert_lowering_matches(graph, result.graph, _feeds(graph, "f32", 50.0))


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f64"])
def test_group_norm_expansions_in_other_dtypes(dtype: str) -> None:
    graph = _step((2, 6, 5), 3, dtype)
    assert_lowering_matches(graph, el.lower(graph, "wgpu").graph, _feeds(graph, dtype, 2.0))


def test_the_expansion_shares_the_saved_statistics() -> None:
    graph = _step((2, 6, 5), 3)
    lowered = el.lower(graph, "wgpu").graph
    (xid,) = [n.id for n in lowered.nodes if n.op == "Input" and n.attrs["name"] == "x"]
    grouped = [n.id for n in lowered.nodes if n.op == "Reshape" and tuple(n.inputs) == (xid,)
               and tuple(n.shape) == (2, 3, 10)]
    means = [n for n in lowered.nodes if n.op == "Reduce" and tuple(n.inputs) == tuple(grouped)
             and n.attrs["op"] == "Mean" and not n.attrs.get("keep_dim")]
    assert len(grouped) == 1 and len(means) == 1  # the saved mean is the forward's, computed once
    assert lowered.outputs[1] == means[0].id


def test_groups_that_do_not_divide_the_channels_are_refused() -> None:
    b = GraphBuilder("bad")
    x, w = b.input("x", [2, 6, 3]), b.param("w", [6])
    with pytest.raises(Exception, match="do not split into 4 groups"):
        b.op("GroupNorm", x, w, w, groups=4, eps=EPS)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_a_group_norm_step_runs_lowered(target: str, layout: str) -> None:
    """Conv1d, GroupNorm without affine weights on a rank-3 input and with them on rank 4: forward and
    backward lowered (strict), gradients as eager's."""
    import egraph_lower.torch as elt
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 6, 3, padding=1), torch.nn.GroupNorm(3, 6),
                                torch.nn.Flatten(2), torch.nn.GroupNorm(2, 6, affine=False))
    x = torch.randn(2, 3, 5, 4)
    if layout == "channels_last":
        model, x = model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    compiled = copy.deepcopy(model)
    be = elt.backend(target, strict=True)
    fn = torch.compile(compiled, backend=be, dynamic=False)
    r = torch.randn(2, 6, 20)  # a cotangent: the sum of squares of a normalised group is nearly constant
    got = torch.autograd.grad((fn(x) * r).sum(), list(compiled.parameters()))
    want = torch.autograd.grad((model(x) * r).sum(), list(model.parameters()))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    assert not be.unlowered_ops, be.summary()
