"""KthValue, Median, Mode and their indices (opdefs/order_stats.py): the reference against torch in float64
(values always; indices where the values are distinct, and otherwise an index holding the value, the
last one for Mode), the torch kernels, the lowering on every backend bit for bit, and aten's kthvalue,
median, nanmedian (with and without a dim) and mode through the torch.compile backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import LowerError
from egraph_lower.evaluate import apply, evaluate
from egraph_lower.validate import infer

torch = pytest.importorskip("torch")

import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.torch import kernels  # noqa: E402

NAN, INF = float("nan"), float("inf")
BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")


def _cases(rng: np.random.Generator, distinct: bool) -> list[tuple[np.ndarray, int]]:
    out = []
    for shape in ((7,), (3, 6), (4, 1), (2, 3, 5)):
        size = int(np.prod(shape))
        x = (rng.permutation(size) - size / 2.0).reshape(shape) if distinct else \
            rng.choice(np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, 2.0, -3.0]), size=shape)
        out += [(x, axis) for axis in range(-len(shape), len(shape))]
    return out


def _kept(a: np.ndarray, axis: int, keep: bool) -> np.ndarray:
    return a if keep else np.expand_dims(a, axis)


def _ops(n: int) -> list[tuple[str, dict[str, Any], Any]]:
    """(op, attrs without axis and keep_dim, torch's function of (x, dim, keepdim))."""
    out: list[tuple[str, dict[str, Any], Any]] = [
        ("KthValue", {"k": k}, lambda t, d, kd, k=k: torch.kthvalue(t, k, d, kd)) for k in sorted({1, (n + 1) // 2, n})]
    out += [("Median", {"ignore_nan": False}, torch.median), ("Median", {"ignore_nan": True}, torch.nanmedian),
            ("Mode", {}, torch.mode)]
    return out


@pytest.mark.parametrize("distinct", [True, False])
def test_the_reference_is_torchs_in_float64(distinct: bool) -> None:
    rng = np.random.default_rng(0)
    for x, axis in _cases(rng, distinct):
        t, a = torch.tensor(x), axis % x.ndim
        for keep in (False, True):
            for op, extra, fn in _ops(x.shape[axis]):
                attrs = {**extra, "axis": axis, "keep_dim": keep}
                want = fn(t, axis, keep)
                value, index = apply(op, attrs, [x], "f64"), apply("Arg" + op, attrs, [x], "i64")
                assert value.shape == tuple(want.values.shape) and index.dtype == np.int64
                # aten's mode of a row with a NaN depends on where its unstable sort leaves the NaN (its
                # comparisons are false): the format counts NaNs as one value (checked below)
                clean = ~np.any(np.isnan(x), axis=a, keepdims=keep) if op == "Mode" else np.ones(value.shape, bool)
                np.testing.assert_array_equal(value[clean], want.values.numpy()[clean])
                held = np.take_along_axis(x, _kept(index, a, keep), a)
                np.testing.assert_array_equal(held, _kept(value, a, keep))  # the index holds the value
                np.testing.assert_array_equal(np.signbit(held), np.signbit(_kept(value, a, keep)))
                if distinct:
                    np.testing.assert_array_equal(index, want.indices.numpy())
                elif op == "Mode":  # the value's last index
                    rows = np.moveaxis(x, a, -1) == np.moveaxis(_kept(value, a, keep), a, -1)
                    last = rows.shape[-1] - 1 - np.argmax(rows[..., ::-1], axis=-1)
                    np.testing.assert_array_equal(np.moveaxis(_kept(index, a, keep), a, -1)[..., 0], last)


def test_the_medians_positions_and_the_refusals() -> None:
    x = np.array([[3.0, NAN, 1.0, NAN, 2.0], [NAN] * 5, [4.0, 1.0, 3.0, 2.0, -0.0]])
    prop = {"axis": 1, "keep_dim": False, "ignore_nan": False}
    np.testing.assert_array_equal(apply("Median", prop, [x], "f64"), [NAN, NAN, 2.0])
    np.testing.assert_array_equal(apply("ArgMedian", prop, [x], "i64"), [1, 0, 3])  # the first NaN
    ign = {**prop, "ignore_nan": True}
    np.testing.assert_array_equal(apply("Median", ign, [x], "f64"), [2.0, NAN, 2.0])
    np.testing.assert_array_equal(apply("ArgMedian", ign, [x], "i64"), [4, 0, 3])
    np.testing.assert_array_equal(apply("Mode", {"axis": 1, "keep_dim": False}, [x], "f64"), [NAN, NAN, -0.0])
    with pytest.raises(ValueError, match="empty axis 1"):
        infer("Median", prop, [((3, 0), "f32")])
    with pytest.raises(ValueError, match=r"k 4 is out of range \[1, 3\]"):
        infer("KthValue", {"k": 4, "axis": 0, "keep_dim": True}, [((3, 2), "f32")])
    with pytest.raises(LowerError, match="out of range"):
        apply("ArgKthValue", {"k": 0, "axis": 0, "keep_dim": True}, [np.ones((3, 2))], "i64")
    assert infer("ArgMode", {"axis": -1, "keep_dim": True}, [((3, 2), "f16")]) == ((3, 1), "i64")


@pytest.mark.parametrize("distinct", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_the_torch_kernels_are_the_reference(dtype: Any, distinct: bool) -> None:
    """Values always; indices where the values are distinct, and Mode's always (its kernel is the format's
    run count over torch's stable sort, NaNs one value)."""
    rng = np.random.default_rng(1)
    for x, axis in _cases(rng, distinct):
        t = torch.tensor(x).to(dtype)
        v = t.double().numpy()
        for keep in (False, True):
            attrs: dict[str, Any]
            for op, extra, _ in _ops(x.shape[axis]):
                attrs = {**extra, "axis": axis, "keep_dim": keep}
                name = {"KthValue": "kth_value", "Median": "median", "Mode": "mode"}[op]
                got = getattr(kernels, name)(t, **attrs)
                assert got.dtype == dtype
                np.testing.assert_array_equal(got.double().numpy(), apply(op, attrs, [v], "f64"))
                if distinct or op == "Mode":
                    np.testing.assert_array_equal(getattr(kernels, "arg_" + name)(t, **attrs).numpy(),
                                                  apply("Arg" + op, attrs, [v], "i64"))


def _graph(shape: tuple[int, ...], dtype: str) -> Any:
    b = GraphBuilder("order_stats")
    x = b.input("x", list(shape), dtype)
    outs = []
    for axis in range(len(shape)):
        n = shape[axis]
        for op, attrs in [("KthValue", {"k": 1}), ("KthValue", {"k": n}), ("KthValue", {"k": (n + 1) // 2}),
                          ("Median", {"ignore_nan": False}), ("Median", {"ignore_nan": True}), ("Mode", {})]:
            for keep in (False, True):
                outs += [b.op(op, x, axis=axis, keep_dim=keep, **attrs),
                         b.op("Arg" + op, x, axis=axis, keep_dim=keep, **attrs)]
    return b.build(outs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_lowering_is_the_reference_bit_for_bit_on_every_backend(backend: str) -> None:
    graph = _graph((4, 5), "f32")
    target = el.load_backend(backend)
    result = el.lower(graph, target)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    counts = result.graph.op_counts()
    for op in ("KthValue", "ArgKthValue", "Median", "ArgMedian", "Mode", "ArgMode"):
        assert (op in counts) == target.runs(op), (backend, op)
    x = np.array([[0.0, -0.0, 1.0, NAN, 1.0], [NAN, NAN, 2.0, NAN, -INF], [3.0, 1.0, 3.0, 1.0, 2.0],
                  [NAN] * 5], dtype=np.float32)
    for got, want in zip(evaluate(result.graph, {"x": x}), evaluate(graph, {"x": x})):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


# (which input, dim, keepdim, the op of (t, dim, keepdim)) of the pairs the test below compiles
_PAIRS = [(0, 1, False, lambda t, d, k: torch.kthvalue(t[1:2], 2, d, k)), (0, 0, True, lambda t, d, k: torch.kthvalue(t, 1, d, k)),
          (0, 1, False, torch.median), (0, 1, True, torch.nanmedian), (0, 1, False, lambda t, d, k: torch.mode(t[1:], d, k)),
          (1, 1, False, lambda t, d, k: torch.kthvalue(t, 3, d, k)), (1, 0, False, torch.median), (1, 1, True, torch.mode),
          (2, 0, False, torch.median), (2, 0, False, lambda t, d, k: torch.kthvalue(t, 1, d, k))]


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_kthvalue_median_and_mode_through_the_backend(target: str) -> None:
    """Values as eager's; each index holds its value (eager's own among ties: here the all-NaN row and
    the integer ties), and is eager's where the row's values are distinct."""
    from torch.fx.experimental.proxy_tensor import make_fx

    x = torch.tensor([[1.0, 4.0, NAN, 0.5, 2.0, -INF], [3.0, 2.0, 1.0, 0.0, INF, -1.0], [NAN] * 6])
    i = torch.tensor([[3, 1, 3, -2], [0, 5, 0, 9]], dtype=torch.int32)
    s = torch.tensor(2.5)
    ins = (x, i, s)

    def fn(x: Any, i: Any, s: Any) -> tuple[Any, ...]:
        pairs = [out for which, d, k, op in _PAIRS for out in op((x, i, s)[which], d, k)]
        return (*pairs, torch.median(x), torch.nanmedian(x), torch.median(x[1]), torch.nanmedian(x[:2]))

    be = elt.backend(target, strict=True)
    got = be(make_fx(fn)(*ins), list(ins))(*ins)
    assert be.unlowered_ops == {} and all(not g.errors for g in be.graphs), be.summary()
    want = fn(*ins)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, k
        if k % 2 == 0 or k >= 2 * len(_PAIRS):
            assert torch.equal(g.nan_to_num(7.0), w.nan_to_num(7.0)), (k, g, w)
            continue
        which, d, keep, _ = _PAIRS[k // 2]
        src = ins[which] if k // 2 not in (0, 4) else (x[1:2] if k // 2 == 0 else x[1:])
        if src.dim() == 0:
            assert int(g) == 0
            continue
        held = src.gather(d, g if keep else g.unsqueeze(d))
        assert torch.equal(held.nan_to_num(7.0), (got[k - 1] if keep else got[k - 1].unsqueeze(d)).nan_to_num(7.0)), k
        if k // 2 in (0, 1):  # rows (columns) of distinct values: the index is eager's
            assert torch.equal(g, w), (k, g, w)
