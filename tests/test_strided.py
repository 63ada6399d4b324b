"""The strided ops and masked scatter (opdefs/strided.py) against PyTorch: the reference evaluator against
aten's as_strided, as_strided_scatter, masked_scatter and masked_scatter_backward in float64, the helper
kernels against the evaluator, lowerings for wgpu and metal (the expansions of rules/strided.py) against the
reference, the aten mapping of inputs of every layout (transposed, expanded, at an offset, with gaps:
refused), and the fuzzer's finding of an as_strided of a mutated input with gaps, compiled for wgpu."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.build import GraphBuilder  # noqa: E402
from egraph_lower.evaluate import apply, evaluate  # noqa: E402
from egraph_lower.lower import lower  # noqa: E402
from egraph_lower.torch import kernels  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

A = torch.ops.aten

# (x's shape, size, stride, offset): overlapping, zero strides, transposed, contiguous runs, empty, 0-d
READS = [((12,), [2, 3], [1, 2], 1), ((3, 4), [3, 4], [4, 1], 0), ((3, 4), [2, 3], [3, 1], 2),
         ((2, 5), [2, 3], [0, 1], 5), ((3, 4), [4, 3], [1, 4], 0), ((3, 4), [0, 3], [3, 1], 0), ((3, 4), [], [], 7),
         ((2, 3, 2), [2, 2, 2], [5, 0, 3], 1)]
WRITES = [((2, 4), [2, 2], [1, 3], 1), ((3, 4), [2, 3], [3, 1], 2), ((3, 4), [3, 4], [4, 1], 0),
          ((3, 4), [1, 3], [0, 2], 5), ((3, 4), [0, 2], [1, 1], 0), ((3, 4), [], [], 11)]
MASKS = ["random", "none", "all"]


def _mask(shape: tuple[int, ...], kind: str, seed: int = 0) -> torch.Tensor:
    if kind == "none":
        return torch.zeros(shape, dtype=torch.bool)
    if kind == "all":
        return torch.ones(shape, dtype=torch.bool)
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < 0.5


@pytest.mark.parametrize("case", READS, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}" for c in READS])
def test_as_strided_matches_aten(case: tuple[Any, ...]) -> None:
    shape, size, stride, offset = case
    x = torch.randn(shape, dtype=torch.float64)
    want = x.as_strided(size, stride, offset)
    got = apply("AsStrided", {"size": size, "stride": stride, "offset": offset}, [x.numpy()], "f64")
    np.testing.assert_array_equal(got, want.numpy())
    np.testing.assert_array_equal(kernels.as_strided(x, size, stride, offset).numpy(), want.numpy())


@pytest.mark.parametrize("case", WRITES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}" for c in WRITES])
def test_as_strided_scatter_matches_aten(case: tuple[Any, ...]) -> None:
    shape, size, stride, offset = case
    x, src = torch.randn(shape, dtype=torch.float64), torch.randn(size, dtype=torch.float64)
    want = A.as_strided_scatter(x, src, size, stride, offset)
    got = apply("AsStridedScatter", {"size": size, "stride": stride, "offset": offset}, [x.numpy(), src.numpy()],
                "f64")
    np.testing.assert_array_equal(got, want.numpy())


def test_a_window_outside_x_or_writing_twice_is_refused() -> None:
    b = GraphBuilder("bad")
    x = b.input("x", (3, 4), "f32")
    with pytest.raises(ValueError, match="past the 12 elements"):
        b.op("AsStrided", x, size=[2, 3], stride=[4, 2], offset=5)
    with pytest.raises(ValueError, match="writes a position twice"):
        b.op("AsStridedScatter", x, b.input("s", (2, 2), "f32"), size=[2, 2], stride=[1, 1], offset=0)


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("extra", [0, 3])
def test_masked_scatter_and_its_backward_match_aten(kind: str, extra: int) -> None:
    mask = _mask((3, 4), kind)
    count = int(mask.sum())
    x = torch.randn(3, 4, dtype=torch.float64)
    source = torch.randn(count + extra, dtype=torch.float64)
    want = torch.masked_scatter(x, mask, source)
    got = apply("MaskedScatter", {}, [x.numpy(), mask.numpy(), source.numpy()], "f64")
    np.testing.assert_array_equal(got, want.numpy())
    dy = torch.randn(3, 4, dtype=torch.float64)
    want_ds = A.masked_scatter_backward(dy, mask, [count + extra])
    got_ds = apply("MaskedScatterBackward", {"shape": [count + extra]}, [dy.numpy(), mask.numpy()], "f64")
    np.testing.assert_array_equal(got_ds, want_ds.numpy())


def test_helper_kernels_match_the_evaluator() -> None:
    like = torch.zeros(1)
    for size, stride, offset in (([2, 3], [0, 2], 1), ([0, 2], [1, 1], 0), ([], [], 4)):
        attrs = {"size": size, "stride": stride, "offset": offset}
        np.testing.assert_array_equal(kernels.strided_index(like, **attrs).numpy(),
                                      apply("StridedIndex", attrs, [like.numpy()], "f64"))
    attrs = {"size": [2, 2], "stride": [1, 3], "offset": 1, "length": 8}
    np.testing.assert_array_equal(kernels.strided_scatter_index(like, **attrs).numpy(),
                                  apply("StridedScatterIndex", attrs, [like.numpy()], "f64"))


def _graph(op: str, shapes: list[tuple[tuple[int, ...], str]], attrs: dict[str, Any]) -> Any:
    b = GraphBuilder(op)
    ins = [b.input(f"in{i}", s, d) for i, (s, d) in enumerate(shapes)]
    return b.build([b.op(op, *ins, **attrs)])


@pytest.mark.parametrize("target", ["wgpu", "metal"])
def test_lowered_for_backends_without_the_ops(target: str) -> None:
    """Every case lowered (no AsStrided, AsStridedScatter or masked scatter node left) and its value the
    reference's."""
    rng = np.random.default_rng(0)
    cases: list[tuple[str, list[tuple[tuple[int, ...], str]], dict[str, Any], list[np.ndarray]]] = []
    for shape, size, stride, offset in READS:
        cases.append(("AsStrided", [(shape, "f32")], {"size": size, "stride": stride, "offset": offset},
                      [rng.standard_normal(shape).astype(np.float32)]))
    for shape, size, stride, offset in WRITES:
        cases.append(("AsStridedScatter", [(shape, "f32"), (tuple(size), "f32")],
                      {"size": size, "stride": stride, "offset": offset},
                      [rng.standard_normal(shape).astype(np.float32), rng.standard_normal(size).astype(np.float32)]))
    for kind in MASKS:
        mask = _mask((3, 4), kind).numpy()
        m = int(mask.sum()) + 2
        cases.append(("MaskedScatter", [((3, 4), "f32"), ((3, 4), "bool"), ((m,), "f32")], {},
                      [rng.standard_normal((3, 4)).astype(np.float32), mask, rng.standard_normal(m).astype(np.float32)]))
        cases.append(("MaskedScatterBackward", [((3, 4), "f32"), ((3, 4), "bool")], {"shape": [m]},
                      [rng.standard_normal((3, 4)).astype(np.float32), mask]))
    for op, shapes, attrs, values in cases:
        g = _graph(op, shapes, attrs)
        feeds = {f"in{i}": v for i, v in enumerate(values)}
        low = lower(g, target).graph
        assert op not in {n.op for n in low.nodes}, (op, attrs)
        want = evaluate(g, feeds)[0]
        got = evaluate(low, feeds)[0]
        np.testing.assert_array_equal(got, want, err_msg=f"{op} {attrs}")


# ---- through torch.compile ------------------------------------------------------------------------

def _compare(fn: Any, make: Any, target: str, lowered: str | None = None) -> elt.TorchBackend:
    """fn eager and compiled for target on fresh arguments from make(): the result, every gradient and
    every argument (mutations) equal; `lowered`: an op that must appear in the lowered graphs."""
    eager_args = make()
    want = fn(*eager_args)
    want.backward()
    record: list[Any] = []
    be = elt.backend(target, record=record)
    args = make()
    got = torch.compile(fn, backend=be, dynamic=False)(*args)
    got.backward()
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    for a, b in zip(args, eager_args):
        torch.testing.assert_close(a.detach(), b.detach(), rtol=0, atol=0)
        if b.grad is not None:
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-6, atol=1e-6)
    if lowered is not None:
        assert any(lowered in g.op_counts() for g in record), be.summary()
    return be


def _fuzz_step(x1: Any, p3: Any) -> Any:
    x1[0] = 1.5
    h1 = x1.as_strided((1, 2), (1, 1))
    return (torch.relu(h1) * p3).sum()


def _fuzz_args() -> tuple[Any, Any]:
    base = torch.tensor([3.0, -0.25, 0.7, 0.5, -1.0]).reshape(5, 1, 1, 1)  # base[2] > 0: relu keeps it
    return base[1::2], torch.tensor([[0.5, -2.0]], requires_grad=True)


@pytest.mark.parametrize("target", ["wgpu", "metal", "cpu"])
def test_as_strided_of_a_mutated_input_with_gaps(target: str) -> None:
    """The fuzzer's finding: x1 = randn(5, 1, 1, 1)[1::2] (strides (2, 1, 1, 1), offset 1), x1[0] = 1.5,
    then x1.as_strided((1, 2), (1, 1)) reads storage positions 1 and 2: x1[0] and base[2], which is no
    element of x1. A previous mapping took the input as contiguous (wrong value and wrong gradient of p3
    on wgpu). The storage of a layout with gaps is not a function of its elements: as_strided stays in
    PyTorch and says why."""
    be = _compare(_fuzz_step, _fuzz_args, target)
    assert "aten.as_strided.default" in be.unlowered_ops, be.summary()


def _gapped_step(x1: Any, p3: Any) -> Any:
    x1[0] = x1[1].cumsum(0) + 1.0  # a Scan: wgpu expands it, so the piece runs lowered
    h1 = x1.as_strided((1, 2), (1, 1))
    return (torch.relu(h1) * p3).sum()


def _gapped_args() -> tuple[Any, Any]:
    base = torch.tensor([3.0, 0.7, 0.5, -1.0, 2.0]).reshape(5, 1, 1, 1)  # base[1] > 0: relu keeps it
    return base[::2], torch.tensor([[0.5, -2.0]], requires_grad=True)


def test_as_strided_of_a_mutated_input_with_gaps_when_select_scatter_lowers(monkeypatch: Any) -> None:
    """x1 = base[::2] (strides (2, 1, 1, 1), offset 0, its storage exactly the extent its strides span),
    x1[0] written, then x1.as_strided((1, 2), (1, 1)) reads storage positions 0 and 1: x1[0] and base[1],
    the gap. With aten.select_scatter mapped (as a Where of an Iota) the lowered piece computes the mutated
    x1 (select_scatter, meta strides (2, 1, 1, 1), offset 0) and, were it returned, a fresh tensor of that
    layout would hold nothing in the gap: without `partition._needs_base`'s check of values with gaps read
    by PyTorch's as_strided, p3's gradient came out [1.5, 4.6e-41] (uninitialised memory) instead of
    [1.5, 0.7]. Now select_scatter is recomputed in PyTorch from x1 after the piece, and its gap holds
    base[1] as in eager. The piece must run lowered (or the test would not test the piece's result)."""
    from egraph_lower.torch.mappings import HANDLERS

    def select_scatter(ctx: Any, a: dict[str, Any]) -> int:
        x = ctx.t(a["self"])
        shape, dt = ctx.shape(x), ctx.dtype(x)
        dim, index = int(a["dim"]) % len(shape), int(a["index"]) % shape[int(a["dim"])]
        src = ctx.cast(ctx.t(a["src"]), dt)
        src = ctx.expand(ctx.add("Reshape", (src,), {"shape": [*shape[:dim], 1, *shape[dim + 1:]]}), shape)
        hit = ctx.add("Compare", (ctx.add("Iota", (x,), {"axis": dim, "dtype": "i64"}), ctx.const(index, "i64")),
                      {"op": "Eq"})
        return ctx.add("Where", (hit, src, x))

    monkeypatch.setitem(HANDLERS, "aten.select_scatter.default", select_scatter)
    be = _compare(_gapped_step, _gapped_args, "wgpu")
    assert "aten.select_scatter.default" not in be.unlowered_ops, be.summary()
    assert be.graphs[0].kind == "forward" and be.graphs[0].replaced >= 1, be.summary()


@pytest.mark.parametrize("target", ["wgpu", "metal"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "expanded", "offset"])
def test_as_strided_of_dense_layouts_lowers(target: str, layout: str) -> None:
    """as_strided of a transposed input reads its storage in the transposed order, of an expanded one the
    one row it holds, of a slice at an offset its base from that offset: AsStrided of the value in storage
    order, lowered for the backend; result and gradients eager's."""
    def fn(x: Any, p: Any) -> Any:
        h = x * 1.0
        start = 1
        if layout == "transposed":
            h = h.t()
        elif layout == "expanded":
            h = h[:1].expand(3, 4)
        elif layout == "offset":
            h, start = h[1:], 5  # storage offset 4: the view starts one past the slice's first element
        v = h.as_strided((2, 3), (1, 2), start)
        return (torch.tanh(v) * p).sum()

    def make() -> tuple[Any, Any]:
        g = torch.Generator().manual_seed(3)
        x = torch.randn(3, 4, generator=g, requires_grad=True)
        return x, torch.randn(2, 3, generator=g, requires_grad=True)

    _compare(fn, make, target, lowered="Take")


@pytest.mark.parametrize("target", ["wgpu", "metal"])
@pytest.mark.parametrize("kind", MASKS)
def test_masked_scatter_step_lowers(target: str, kind: str) -> None:
    """masked_scatter with a broadcast mask, forward and backward (aten's masked_scatter_backward) lowered."""
    mask = _mask((4,), kind, 1)

    def fn(x: Any, s: Any) -> Any:
        return (torch.sin(x.masked_scatter(mask, s)) ** 2).sum()

    def make() -> tuple[Any, Any]:
        g = torch.Generator().manual_seed(5)
        return (torch.randn(3, 4, generator=g, requires_grad=True),
                torch.randn(3, 5, generator=g, requires_grad=True))

    be = _compare(fn, make, target, lowered="Take")
    assert not be.unlowered_ops, be.summary()


@pytest.mark.parametrize("target", ["wgpu", "metal"])
def test_as_strided_copy_lowers_as_as_strided(target: str) -> None:
    """as_strided_copy (the OpInfo entry's op) is as_strided's values in a fresh tensor: the same AsStrided,
    nothing left in PyTorch, eager's result and gradients."""
    def fn(x: Any, p: Any) -> Any:
        v = torch.ops.aten.as_strided_copy.default(x * 1.0, (2, 3), (1, 2), 1)
        return (torch.tanh(v) * p).sum()

    def make() -> tuple[Any, Any]:
        g = torch.Generator().manual_seed(8)
        x = torch.randn(3, 4, generator=g, requires_grad=True)
        return x, torch.randn(2, 3, generator=g, requires_grad=True)

    be = _compare(fn, make, target, lowered="Take")
    assert not be.unlowered_ops, be.summary()
