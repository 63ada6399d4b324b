"""Reductions and scans of format version 3 (opdefs/reductions.py, Reduce{Prod}, aten_reduce.py): the
evaluator against torch's kernels at awkward points (corrections >= n, ties, NaN, zeros, integer
wrap-around), the lowering on every backend, the aten mappings through the torch.compile backend with
nothing left in PyTorch, prod's gradient at zeros against its derivative, and the OpInfo samples of
the ops without a gradient (argmax, argmin, any, all) forward."""

from __future__ import annotations

import math
import sys
import warnings
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

NAN, INF = float("nan"), float("inf")
ROWS = np.array([[1.0, 3.0, 3.0, -2.0, 3.0], [0.0, -0.0, -1.0, -0.0, 0.0], [NAN, 1.0, 5.0, NAN, 0.0],
                 [1.0, 5.0, 2.0, 0.0, NAN], [INF, 1.0, INF, -INF, 0.0], [-INF] * 5, [2.0] * 5,
                 [1e300, -1e300, 1e-300, 0.0, 4.0], [NAN] * 5, [0.5, 0.0, 0.0, 7.0, -2.0]])


def _same(got: Any, want: Any) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=0, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- the reference against torch


@pytest.mark.parametrize("axes", [[1], [0], [0, 1]])
@pytest.mark.parametrize("correction", [0, 1, 2.5, 4, 5, 10])
@pytest.mark.parametrize("keep", [False, True])
def test_var_agrees_with_torch_in_float64(axes: list[int], correction: float, keep: bool) -> None:
    x = ROWS[[0, 1, 4, 6, 7, 9]]  # zero spread, infinities, a constant row, huge values
    x = np.where(np.abs(x) > 1e200, 1e150 * np.sign(x), x)  # squares stay finite (torch's Welford: no overflow)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.var(torch.tensor(x), dim=axes, correction=correction, keepdim=keep).numpy()
    got = apply("Var", {"axes": axes, "correction": correction, "keep_dim": keep}, [x], "f64")
    _same(got, want)
    _same(K.var(torch.tensor(x), axes, correction, keep).numpy(), want)


@pytest.mark.parametrize("op", ["Max", "Min"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_arg_reduce_takes_the_first_extreme_and_a_nan_as_torch(op: str, axis: int) -> None:
    fn = torch.argmax if op == "Max" else torch.argmin
    for x in (ROWS, ROWS.astype(np.float32), np.array([[3, 1, 3, -2], [0, 0, 0, 0], [-5, 7, 7, -5]])):
        for keep in (False, True):
            want = fn(torch.tensor(x), dim=axis, keepdim=keep).numpy()
            _same(apply("ArgReduce", {"op": op, "axis": axis, "keep_dim": keep}, [x], "i64"), want)
            _same(K.arg_reduce(torch.tensor(x), op, axis, keep).numpy(), want)
            values = (torch.amax if op == "Max" else torch.amin)(torch.tensor(x), dim=axis, keepdim=keep)
            kept = (torch.max if op == "Max" else torch.min)(torch.tensor(x), dim=axis, keepdim=keep)
            assert torch.equal(kept.indices, torch.tensor(want))  # max.dim's indices are argmax's
            torch.testing.assert_close(kept.values, values, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("op", ["Add", "Mul"])
@pytest.mark.parametrize("dtype", ["f64", "i64", "i32"])
def test_scan_agrees_with_torch(op: str, dtype: str) -> None:
    fn = torch.cumsum if op == "Add" else torch.cumprod
    if dtype == "f64":
        x = ROWS
    else:  # wrapping: the int64 values of the reference reduced to the dtype
        big = 2**62 if dtype == "i64" else 2**30
        x = np.array([[big, big, 3, -big, 7], [3, 5, 7, 11, 13], [-1, 0, 2, -3, 4], [big, 2, 2, 2, 2]])
        x = x.astype(np.int64 if dtype == "i64" else np.int32)
    for axis in (0, 1, -1):
        want = fn(torch.tensor(x), dim=axis, dtype=torch.tensor(x).dtype).numpy()
        _same(apply("Scan", {"op": op, "axis": axis}, [x], dtype), want)
        _same(K.scan(torch.tensor(x), op, axis).numpy(), want)


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_cummax_cummin_values_and_indices_agree_with_torch(op: str) -> None:
    fn = torch.cummax if op == "Max" else torch.cummin
    for x in (ROWS, np.array([[2.0, NAN, 1.0, NAN, 9.0, 0.0], [1.0, 3.0, 3.0, 2.0, 3.0, 5.0]]),
              np.array([[3, 3, 1, 3, -7], [0, 0, 0, 0, 0], [-5, 7, 7, -5, 8]])):
        dtype = "f64" if x.dtype.kind == "f" else "i64"
        for axis in (0, 1, -1):
            want = fn(torch.tensor(x), dim=axis)
            _same(apply("Scan", {"op": op, "axis": axis}, [x], dtype), want.values.numpy())
            _same(apply("ArgScan", {"op": op, "axis": axis}, [x], "i64"), want.indices.numpy())
            _same(K.scan(torch.tensor(x), op, axis).numpy(), want.values.numpy())
            _same(K.arg_scan(torch.tensor(x), op, axis).numpy(), want.indices.numpy())


def test_log_cum_sum_exp_agrees_with_torch() -> None:
    x = np.concatenate([ROWS, [[-INF, -INF, 1.0, INF, 2.0], [-1e4, 0.0, -1e4, 30.0, -30.0]]])
    for axis in (0, 1, -1):
        want = torch.logcumsumexp(torch.tensor(x), dim=axis).numpy()
        _same(apply("LogCumSumExp", {"axis": axis}, [x], "f64"), want)
        _same(K.log_cum_sum_exp(torch.tensor(x), axis).numpy(), want)
    x16 = torch.tensor(x[:, :4]).half()  # the kernel in f16 computes in f32 and rounds once
    ref = torch.logcumsumexp(x16.double(), dim=1).half()
    assert torch.equal(K.log_cum_sum_exp(x16, 1).isnan(), ref.isnan())
    torch.testing.assert_close(K.log_cum_sum_exp(x16, 1), ref, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["f64", "i64", "i32"])
def test_reduce_prod_agrees_with_torch(dtype: str) -> None:
    x = ROWS if dtype == "f64" else np.array([[2**40, 2**30, 3], [0, -5, 7], [-1, -1, -1]]).astype(
        np.int64 if dtype == "i64" else np.int32)
    for axes in ([0], [1], [0, 1]):
        for keep in (False, True):
            t = torch.tensor(x)
            want = t
            for d in sorted(axes, reverse=True):
                want = torch.prod(want, dim=d, keepdim=keep)
            want = want.to(t.dtype).numpy()
            _same(apply("Reduce", {"op": "Prod", "axes": axes, "keep_dim": keep}, [x], dtype), want)
            _same(K.reduce(t, "Prod", axes, keep).numpy(), want)


def test_shape_inference_of_the_new_ops() -> None:
    b = GraphBuilder()
    x, i = b.input("x", [4, 5]), b.input("i", [4, 5], "bool")
    assert b.meta(b.op("Var", x, axes=[0, 1], correction=1)) == ((), "f32")
    assert b.meta(b.op("ArgReduce", x, op="Max", axis=-1, keep_dim=True)) == ((4, 1), "i64")
    assert b.meta(b.op("Scan", x, op="Mul", axis=0)) == ((4, 5), "f32")
    assert b.meta(b.op("Reduce", x, op="Prod", axes=[1])) == ((4,), "f32")
    for op, attrs, arg, words in (("Var", {"axes": [2], "correction": 0}, x, "out of range"),
                                  ("Var", {"axes": [0], "correction": 0}, i, "float dtype"),
                                  ("Scan", {"op": "Add", "axis": 0}, i, "bool"),
                                  ("ArgReduce", {"op": "Min", "axis": 0}, i, "bool"),
                                  ("Reduce", {"op": "Prod", "axes": [0]}, i, "Cast")):
        with pytest.raises(ValueError, match=words):
            b.op(op, arg, **attrs)
    e = b.input("e", [0, 3])
    with pytest.raises(ValueError, match="empty axis"):
        b.op("ArgReduce", e, op="Max", axis=0)
    with pytest.raises(ValueError, match="rank >= 1"):
        b.op("Scan", b.input("s", []), op="Add", axis=0)


# --------------------------------------------------------------------------- lowering


_GRAPHS = {
    "Var": ({"axes": [1], "correction": 1, "keep_dim": True}, (6, 5)),
    "ArgReduce": ({"op": "Max", "axis": 0}, (6, 5)),
    "Scan.Add": ({"op": "Add", "axis": 1}, (3, 6, 2)),
    "Scan.Mul": ({"op": "Mul", "axis": -1}, (4, 6)),
    "LogCumSumExp": ({"axis": 0}, (6, 3)),
    "Scan.Max": ({"op": "Max", "axis": 1}, (4, 6)),
    "ArgScan": ({"op": "Min", "axis": 0}, (6, 3)),
}


@pytest.mark.parametrize("backend", list(el.backends.BUILTIN))
@pytest.mark.parametrize("which", list(_GRAPHS))
def test_each_new_op_lowers_on_every_backend(which: str, backend: str) -> None:
    attrs, shape = _GRAPHS[which]
    op = which.split(".")[0]
    target = el.load_backend(backend)
    for dtype in ("f32", "f16"):
        g = GraphBuilder(f"{which}_{dtype}")
        x = g.input("x", shape, dtype)
        graph = g.build([g.op(op, x, **attrs)])
        result = el.lower(graph, backend)
        assert all(target.runs_node(n) for n in result.graph.nodes)
        assert (op in target.ops) == any(n.op == op for n in result.graph.nodes)
        rng = np.random.default_rng(5)
        v = rng.standard_normal(math.prod(shape)) * 3
        v[:4] = [0.0, -0.0, 2.0, 2.0]  # a zero (products), ties (arg)
        assert_lowering_matches(graph, result.graph, {"x": v.reshape(shape)})


def test_the_cost_model_chooses_between_the_two_cumsums_on_wgpu() -> None:
    """A short scan as the [.., n, n, ..] selection, a long one as the triangular MatMuls (4 of them:
    the finite values and the counts of NaN, +inf and -inf), each exact at infinities."""
    for n, matmul in ((6, False), (512, True)):
        g = GraphBuilder(f"cumsum_{n}")
        x = g.input("x", (3, n), "f32")
        graph = g.build([g.op("Scan", x, op="Add", axis=1)])
        lowered = el.lower(graph, "wgpu").graph
        assert any(nd.op == "MatMul" for nd in lowered.nodes) == matmul, n
        v = np.random.default_rng(2).standard_normal((3, n))
        v[0, 1], v[1, 2], v[1, 4], v[2, 3], v[2, 5] = INF, NAN, -INF, INF, -INF  # inf; NaN; inf then -inf
        assert_lowering_matches(graph, lowered, {"x": v})


# --------------------------------------------------------------------------- through the torch backend


def _compiled(fn: Any, *args: Any, target: str = "metal") -> Any:
    from torch.fx.experimental.proxy_tensor import make_fx

    be = elt.backend(target, strict=True)
    out = be(make_fx(fn)(*args), list(args))(*args)
    assert be.unlowered_ops == {} and all(not g.errors for g in be.graphs), be.summary()
    return out


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_the_aten_reductions_and_scans_through_the_backend(target: str) -> None:
    x = torch.tensor(ROWS[[0, 1, 2, 3, 6, 9]])
    i = torch.tensor([[3, 1, 3, -2], [0, 0, 0, 0], [-5, 7, 7, -5]], dtype=torch.int32)
    m = torch.tensor([[True, False, False], [False, False, False]])

    def fn(x: Any, i: Any, m: Any) -> tuple[Any, ...]:
        return (torch.var(x, dim=1), torch.var(x, dim=[0, 1], correction=0), torch.var(x, 1, correction=5),
                torch.var(x, 1, correction=7, keepdim=True), torch.std(x, dim=0, unbiased=False),
                *torch.var_mean(x, dim=1, correction=2), *torch.std_mean(x, keepdim=True),
                *torch.max(x, 1), *torch.min(x, 0, keepdim=True), *torch.max(i, 1), torch.argmax(x),
                torch.argmin(x, 1, keepdim=True), torch.argmax(i, keepdim=True), *torch.max(m, 0),
                torch.any(m, 1), torch.all(m, 0, keepdim=True), torch.any(i, dim=(0, 1)), torch.all(x, 1),
                torch.prod(x, 1), torch.prod(i), torch.prod(m, 0), torch.prod(x, 0, keepdim=True, dtype=torch.float32),
                torch.cumsum(x, 1), torch.cumsum(i, 0), torch.cumsum(m, 1), torch.cumprod(x, 0),
                torch.cumprod(i, 1, dtype=torch.float64), torch.cumsum(x[0, 0], 0), torch.logcumsumexp(x, 1),
                torch.logcumsumexp(x * 300, 0), *torch.cummax(x, 1), *torch.cummin(i, 0), *torch.cummax(m, 1))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = _compiled(fn, x, i, m, target=target), fn(x, i, m)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, k
        # atol: logcumsumexp log(1 + e^-600) is 0 through its expansion (exact to eps of max(|y|, 1))
        torch.testing.assert_close(g, w, equal_nan=True, rtol=1e-12, atol=1e-15, msg=lambda s: f"output {k}: {s}")


def _prod_gradient(x: Any) -> Any:
    """d prod(x) / dx_i = prod_{j != i} x_j, written out (no division: exact at zeros)."""
    flat = x.reshape(-1)
    return torch.stack([torch.cat([flat[:i], flat[i + 1:]]).prod() for i in range(flat.numel())]).reshape(x.shape)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("zeros", [0, 1, 2])
def test_prod_gradient_at_zeros(zeros: int, target: str) -> None:
    """prod's gradient is the product of the other elements: P / x_i without zeros; with one zero at k,
    0 except at k, where it is the product of the rest; with two zeros, 0 everywhere. For prod over a
    dim, the same per slice."""
    from torch.fx.experimental.proxy_tensor import make_fx

    x = torch.tensor([[1.5, -2.0, 0.5, 3.0], [2.0, 0.25, -1.0, 4.0], [0.75, 1.25, -3.0, 2.0]], dtype=torch.float64)
    x[0, :zeros] = 0.0  # the tensor, and its row 0, hold `zeros` zeros

    def fn(x: Any) -> tuple[Any, Any]:
        return torch.prod(x), torch.prod(x, 1)

    xs = x.clone().requires_grad_(True)
    be = elt.backend(target, strict=True)
    compiled = be(make_fx(fn)(x), [xs])
    whole, rows = compiled(xs)
    (g_whole,) = torch.autograd.grad(whole, xs, retain_graph=True)
    (g_rows,) = torch.autograd.grad(rows, xs, torch.ones_like(rows))
    assert be.unlowered_ops == {} and all(not g.errors for g in be.graphs), be.summary()
    assert any(g.kind == "backward" and g.status == "lowered" for g in be.graphs), be.summary()
    torch.testing.assert_close(g_whole, _prod_gradient(x), rtol=1e-14, atol=0)
    torch.testing.assert_close(g_rows, torch.stack([_prod_gradient(r) for r in x]), rtol=1e-14, atol=0)
    nonzero = {0: list(range(4)), 1: [0], 2: []}[zeros]  # where the gradient of a row with `zeros` zeros lives
    assert (g_rows[0] != 0).nonzero().reshape(-1).tolist() == nonzero
    assert bool((g_rows[1:] != 0).all())
    assert int((g_whole != 0).sum()) == {0: x.numel(), 1: 1, 2: 0}[zeros]


# --------------------------------------------------------------------------- OpInfo samples without a gradient


def _bound(op: Any, args: Any, kwargs: Any) -> Any:
    return lambda x: (op(x, *args, **kwargs),)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize(("name", "variant"), __import__("opinfo_reduce").FORWARD_ONLY,
                         ids=[n for n, _ in __import__("opinfo_reduce").FORWARD_ONLY])
def test_opinfo_samples_without_a_gradient_match_eager(name: str, variant: str, target: str) -> None:
    pytest.importorskip("expecttest")
    import itertools

    from torch.testing._internal.common_methods_invocations import op_db

    opinfo = next(o for o in op_db if o.name == name and o.variant_test_name == variant)
    checked = 0
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        for s in itertools.islice(opinfo.sample_inputs("cpu", dtype), 12):
            if not isinstance(s.input, torch.Tensor) or (s.input.numel() == 0 and name.startswith("arg")):
                continue

            fn = _bound(opinfo.op, s.args, s.kwargs)
            (got,), (want,) = _compiled(fn, s.input, target=target), fn(s.input)
            assert got.dtype == want.dtype and got.shape == want.shape
            assert torch.equal(got, want), (name, dtype, s)
            checked += 1
    assert checked
