"""Sort, ArgSort, TopK and ArgTopK (opdefs/sort.py): the reference against torch in float64 (aten's order:
NaN the largest, 0.0 and -0.0 tied, ties by index as torch's stable sort orders them), the torch kernels
in every float dtype, the lowering on every backend (the expansions where a backend has no sort kernel,
bit for bit: a -0.0 comes out where its index puts it), the importer's mapping of sort, topk (and argsort,
msort) through the torch.compile backend, and argsort's OpInfo samples forward (it has no gradient)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import LowerError
from egraph_lower.evaluate import apply, evaluate
from egraph_lower.validate import infer
from support import compiled_strict

torch = pytest.importorskip("torch")

import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.torch import kernels  # noqa: E402

NAN, INF = float("nan"), float("inf")
BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")
VALUES = (NAN, INF, -INF, 0.0, -0.0, 1.0, 2.0, -3.0, 1e-3)


def _awkward(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.choice(np.array(VALUES), size=shape)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal element for element, NaN where NaN, and the same sign of every zero."""
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def _cases(rng: np.random.Generator) -> list[tuple[np.ndarray, int]]:
    out = []
    for shape in ((7,), (3, 6), (4, 1), (2, 0), (0, 3), (2, 3, 5)):
        x = _awkward(rng, shape)
        out += [(x, axis) for axis in range(-len(shape), len(shape))]
    return out


def test_the_reference_is_torchs_stable_sort_and_topk_in_float64() -> None:
    rng = np.random.default_rng(0)
    for x, axis in _cases(rng):
        t = torch.tensor(x)
        for descending, stable in itertools.product((False, True), (False, True)):
            want = torch.sort(t, dim=axis, descending=descending, stable=True)
            attrs = {"axis": axis, "descending": descending, "stable": stable}
            _same(apply("Sort", attrs, [x], "f64"), want.values.numpy())
            np.testing.assert_array_equal(apply("ArgSort", attrs, [x], "i64"), want.indices.numpy())
        n = x.shape[axis]
        for k, largest in itertools.product(sorted({0, 1, n // 2, n} & set(range(n + 1))), (False, True)):
            order = torch.sort(t, dim=axis, descending=largest, stable=True)
            attrs = {"k": k, "axis": axis, "largest": largest, "sorted": True}
            _same(apply("TopK", attrs, [x], "f64"), order.values.narrow(axis, 0, k).numpy())
            np.testing.assert_array_equal(apply("ArgTopK", attrs, [x], "i64"), order.indices.narrow(axis, 0, k).numpy())
            # torch's topk selects the same values (its indices among ties are its kernel's own)
            np.testing.assert_array_equal(apply("TopK", attrs, [x], "f64"),
                                          torch.topk(t, k, dim=axis, largest=largest).values.numpy())


def test_integers_sort_as_numbers_and_bool_is_refused() -> None:
    x = np.array([[3, -1, 3, 7, -1], [0, 0, 5, -9, 2]], dtype=np.int64)
    for d in (False, True):
        want = torch.sort(torch.tensor(x), dim=1, descending=d, stable=True)
        np.testing.assert_array_equal(apply("Sort", {"axis": 1, "descending": d, "stable": True}, [x], "i64"),
                                      want.values.numpy())
        np.testing.assert_array_equal(apply("ArgSort", {"axis": 1, "descending": d, "stable": False}, [x], "i64"),
                                      want.indices.numpy())
    with pytest.raises(ValueError, match="Cast to a number dtype"):
        infer("Sort", {"axis": 0, "descending": False, "stable": False}, [((3,), "bool")])
    with pytest.raises(LowerError, match="Cast to a number dtype"):
        apply("ArgSort", {"axis": 0, "descending": False, "stable": False}, [np.array([True, False])], "i64")


def test_shapes_and_bad_attributes() -> None:
    top = {"k": 2, "axis": -1, "largest": True, "sorted": False}
    assert infer("TopK", top, [((3, 4), "f16")]) == ((3, 2), "f16")
    assert infer("ArgTopK", {**top, "k": 0}, [((3, 4), "f16")]) == ((3, 0), "i64")
    assert infer("ArgSort", {"axis": 0, "descending": False, "stable": True}, [((0, 4), "f32")]) == ((0, 4), "i64")
    with pytest.raises(ValueError, match="k 5 is larger than axis 1's length 4"):
        infer("TopK", {**top, "k": 5}, [((3, 4), "f32")])
    with pytest.raises(ValueError, match="rank >= 1"):
        infer("Sort", {"axis": 0, "descending": False, "stable": True}, [((), "f32")])
    with pytest.raises(ValueError, match="axis 2 is out of range for rank 2"):
        infer("ArgSort", {"axis": 2, "descending": False, "stable": True}, [((3, 4), "f32")])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_the_torch_kernels_are_the_reference(dtype: Any) -> None:
    rng = np.random.default_rng(1)
    for x, axis in _cases(rng):
        t = torch.tensor(x).to(dtype)
        v = t.double().numpy()
        for descending in (False, True):
            attrs = {"axis": axis, "descending": descending, "stable": True}
            got = kernels.sort(t, **attrs)
            assert got.dtype == dtype
            _same(got.double().numpy(), apply("Sort", attrs, [v], "f64"))
            np.testing.assert_array_equal(kernels.arg_sort(t, **attrs).numpy(), apply("ArgSort", attrs, [v], "i64"))
        k = x.shape[axis] // 2
        for largest in (False, True):
            attrs = {"k": k, "axis": axis, "largest": largest, "sorted": True}
            np.testing.assert_array_equal(kernels.top_k(t, **attrs).double().numpy(), apply("TopK", attrs, [v], "f64"))


def _graph(shape: tuple[int, ...], dtype: str) -> Any:
    b = GraphBuilder("sort")
    x = b.input("x", list(shape), dtype)
    outs = []
    for axis in range(len(shape)):
        for d, s in ((False, True), (True, False)):
            outs += [b.op("Sort", x, axis=axis, descending=d, stable=s), b.op("ArgSort", x, axis=axis, descending=d, stable=s)]
        for k, largest in ((0, True), (1, False), (2, True), (shape[axis], False)):
            outs += [b.op("TopK", x, k=k, axis=axis, largest=largest, sorted=True),
                     b.op("ArgTopK", x, k=k, axis=axis, largest=largest, sorted=True)]
    return b.build(outs)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_the_lowering_is_the_reference_bit_for_bit_on_every_backend(backend: str, dtype: str) -> None:
    graph = _graph((4, 6), dtype)
    target = el.load_backend(backend)
    result = el.lower(graph, target)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    counts = result.graph.op_counts()
    for op in ("Sort", "ArgSort", "TopK", "ArgTopK"):
        assert (op in counts) == target.runs(op), (backend, op)
    rng = np.random.default_rng(3)
    x = apply("Cast", {"to": dtype}, [_awkward(rng, (4, 6))], dtype)
    x[0] = apply("Cast", {"to": dtype}, [np.array([0.0, -0.0, 1.0, -0.0, 0.0, NAN])], dtype)
    for got, want in zip(evaluate(result.graph, {"x": x}), evaluate(graph, {"x": x})):
        assert got.dtype == want.dtype
        _same(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64))


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_sort_and_topk_through_the_backend(target: str) -> None:
    x = torch.tensor([[1.0, -0.0, NAN, 0.0, 1.0, -INF], [3.0, 2.0, 1.0, 2.0, INF, NAN], [0.5] * 6])
    i = torch.tensor([[3, 1, 3, -2], [0, 0, 0, 0]], dtype=torch.int32)
    m = torch.tensor([[True, False, True], [False, False, True]])
    s = torch.tensor(2.5)

    def fn(x: Any, i: Any, m: Any, s: Any) -> tuple[Any, ...]:
        return (*torch.sort(x, dim=1, stable=True), *torch.sort(x, dim=0, descending=True, stable=True),
                torch.argsort(x, dim=1, stable=True), torch.msort(x), *torch.sort(i, dim=1, stable=True),
                *torch.sort(m, dim=1, stable=True), *torch.topk(x, 3, dim=1), *torch.topk(x, 0, dim=0),
                *torch.topk(i, 2, dim=1, largest=False), *torch.sort(s), *torch.topk(s, 1))

    got, want = compiled_strict(fn, x, i, m, s, target=target), fn(x, i, m, s)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, k
        if w.is_floating_point():
            _same(g.numpy(), w.numpy())
        elif k not in (11, 13, 15):  # topk's indices among ties are its kernel's own (the values are checked)
            assert torch.equal(g, w), (k, g, w)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_argsort_opinfo_samples_match_eager(target: str) -> None:
    """argsort's OpInfo samples forward: with stable=True the indices are eager's; otherwise (eager's
    unstable sort orders ties its own way) a permutation that sorts x as eager's does."""
    pytest.importorskip("expecttest")
    from torch.testing._internal.common_methods_invocations import op_db

    from opinfo_sort import FORWARD_ONLY

    checked = 0
    for name, variant in FORWARD_ONLY:
        opinfo = next(o for o in op_db if o.name == name and o.variant_test_name == variant)
        for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
            for s in list(opinfo.sample_inputs("cpu", dtype))[1::4]:  # the small ones: the first is 8000 long
                fn = (lambda a, k: lambda x: (opinfo.op(x, *a, **k),))(s.args, s.kwargs)
                (got,), (want,) = compiled_strict(fn, s.input, target=target), fn(s.input)
                assert got.dtype == want.dtype and got.shape == want.shape
                if s.kwargs.get("stable"):
                    assert torch.equal(got, want), (name, dtype, s)
                elif s.input.dim():
                    dim = s.args[0] if s.args else s.kwargs.get("dim", -1)
                    assert torch.equal(s.input.gather(dim, got), s.input.gather(dim, want)), (name, dtype, s)
                    assert torch.equal(got.sort(dim).values, want.sort(dim).values)
                checked += 1
    assert checked >= 20


def _per_tie_group(x: np.ndarray, g: np.ndarray, dim: int) -> list[list[float]]:
    """For each row along `dim` and each group of equal values in it (NaNs one group, 0.0 and -0.0 one),
    the sorted gradients of the group."""
    xs, gs = np.moveaxis(x, dim, -1).reshape(-1, x.shape[dim]), np.moveaxis(g, dim, -1).reshape(-1, x.shape[dim])
    out = []
    for row, grad in zip(xs, gs):
        keys = np.where(np.isnan(row), np.inf, row) + 0.0  # + 0.0: -0.0 becomes 0.0
        keys = np.where(np.isnan(row), np.nan, keys)
        for v in np.unique(keys[~np.isnan(keys)]):
            out.append(sorted(grad[keys == v].tolist()))
        out.append(sorted(grad[np.isnan(keys)].tolist()))
    return out


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_gradients_at_ties_are_eagers_within_each_tie_group(target: str) -> None:
    """Where values tie, aten's kernels and the expansions may pick other positions of the tie group (the
    format guarantees the values, and indices only up to a permutation within a tie group): the gradient
    a tie group receives is eager's as a multiset, row by row; where values are distinct it is eager's."""
    x0 = torch.tensor([[2.0, 1.0, 2.0, 2.0, -0.0, 0.0, 1.0, NAN], [3.0, 3.0, 3.0, 3.0, 1.0, 1.0, NAN, NAN],
                       [0.5, -1.0, 0.5, 4.0, 4.0, -1.0, 0.5, 2.0]], dtype=torch.float64)
    ops = [lambda x: torch.sort(x, dim=1)[0], lambda x: torch.sort(x, dim=1, descending=True)[0],
           lambda x: torch.topk(x, 3, dim=1)[0], lambda x: torch.topk(x, 2, dim=1, largest=False)[0],
           lambda x: torch.kthvalue(x, 3, 1)[0], lambda x: torch.median(x, 1)[0],
           lambda x: torch.nanmedian(x, 1)[0], lambda x: torch.mode(x, 1)[0], lambda x: torch.msort(x.T)]
    differ = 0
    for k, f in enumerate(ops):  # each along dim 1 of x (msort along dim 0 of x.T)
        x = x0.clone().requires_grad_(True)
        be = elt.backend(target, strict=True)
        y = torch.compile(f, backend=be, dynamic=False)(x)
        dy = torch.linspace(1.0, 2.0, y.numel(), dtype=torch.float64).reshape(y.shape)
        (got,) = torch.autograd.grad(y, x, dy)
        want_y = f(x)
        (want,) = torch.autograd.grad(want_y, x, dy)
        assert be.unlowered_ops == {}, be.summary()
        assert torch.equal(y.nan_to_num(7.0), want_y.nan_to_num(7.0)), k
        assert _per_tie_group(x0.numpy(), got.numpy(), 1) == _per_tie_group(x0.numpy(), want.numpy(), 1), k
        differ += not torch.equal(got, want)
    assert target == "metal" or differ  # on wgpu some tie group is ordered otherwise than by eager's kernels


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_an_unstable_sort_orders_ties_as_eagers_kernel_where_the_backend_sorts(target: str) -> None:
    """Sort{stable: false} on a backend with a sort kernel is torch's unstable sort (the exported kernel
    passes `stable` on): eager's indices, ties included. Expanded (wgpu), ties are by index: a permutation
    that sorts x as well."""
    x = torch.tensor(np.random.default_rng(5).integers(0, 3, size=(4, 40)).astype(np.float32))

    def fn(x: Any) -> tuple[Any, ...]:
        return (*torch.sort(x, dim=1), *torch.sort(x, dim=1, descending=True))

    got, want = compiled_strict(fn, x, target=target), fn(x)
    for k in (0, 2):
        assert torch.equal(got[k], want[k])
        assert torch.equal(x.gather(1, got[k + 1]), want[k])
        assert torch.equal(got[k + 1].sort(1).values, torch.arange(40).expand(4, 40))
    stable = torch.sort(x, dim=1, stable=True).indices
    if target == "metal":
        assert torch.equal(got[1], want[1]) and torch.equal(got[3], want[3])
    else:
        assert torch.equal(got[1], stable)
    assert not torch.equal(want[1], stable)  # eager's unstable sort does reorder ties here
