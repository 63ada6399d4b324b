"""The views written back (opdefs/views.py): SliceScatter's reference agrees with aten's slice_scatter in
float64 at every step, Python's clamping and empty slices included; validation refuses a src of the wrong
shape in one line; every case lowers for metal and wgpu (which lack it) to what the evaluator says, by its
rules (rules/views.py), which the checker would catch were they wrong; slice_scatter through the torch
backend is one SliceScatter node (the importer does not expand it) with eager's values and gradients."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.evaluate import apply
from egraph_lower.rules.check import check_rule
from egraph_lower.rules.domains.views import SLICES
from egraph_lower.rules.dsl import rule
from egraph_lower.validate import infer
from support import assert_lowering_matches

torch = pytest.importorskip("torch")


def _m(n: int, start: int, end: int, step: int) -> int:
    return len(range(*slice(start, end, step).indices(n)))


def _ids(case: tuple[int, ...]) -> str:
    return "n{}[{}:{}:{}]".format(*case)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("case", SLICES, ids=_ids)
def test_slice_scatter_is_atens_at_every_step(case: tuple[int, int, int, int], axis: int) -> None:
    n, start, end, step = case
    shape = [3, 2, 2]
    shape[axis] = n
    sshape = list(shape)
    sshape[axis] = _m(*case)
    g = torch.Generator().manual_seed(n * 7 + step)
    x, src = torch.randn(shape, dtype=torch.float64, generator=g), torch.randn(sshape, dtype=torch.float64, generator=g)
    attrs = {"axis": axis, "start": start, "end": end, "step": step}
    got = apply("SliceScatter", attrs, [x.numpy(), src.numpy()], "f64")
    want = torch.slice_scatter(x, src, axis, start, min(end, 2**63 - 1), step)
    np.testing.assert_array_equal(got, want.numpy())
    from egraph_lower.torch import kernels
    np.testing.assert_array_equal(kernels.slice_scatter(x, src, **attrs).numpy(), got)
    assert infer("SliceScatter", attrs, [(tuple(shape), "f64"), (tuple(sshape), "f64")]) == (tuple(shape), "f64")


def test_validation_refuses_a_src_of_another_shape_in_one_line() -> None:
    attrs = {"axis": 1, "start": 0, "end": 5, "step": 2}
    with pytest.raises(ValueError, match=r"src has shape \[3, 2\], not the slice's \[3, 3\]$"):
        infer("SliceScatter", attrs, [((3, 5), "f32"), ((3, 2), "f32")])
    with pytest.raises(ValueError, match="axis 2 is out of range for rank 2"):
        infer("SliceScatter", {**attrs, "axis": 2}, [((3, 5), "f32"), ((3, 3), "f32")])


def _graph(case: tuple[int, int, int, int], dtype: str = "f32") -> tuple[el.Graph, dict[str, Any]]:
    n, start, end, step = case
    b = GraphBuilder("slice_scatter")
    x = b.input("x", [2, n, 3], dtype)
    src = b.input("src", [2, _m(*case), 3], dtype)
    graph = b.build([b.op("SliceScatter", x, src, axis=1, start=start, end=end, step=step)])
    rng = np.random.default_rng(n + 11 * step)
    feeds = {k: rng.standard_normal(graph.node(i).shape).astype(np.float32) for k, i in (("x", x), ("src", src))}
    return graph, feeds


@pytest.mark.parametrize("backend", ["metal", "wgpu"])
@pytest.mark.parametrize("case", SLICES, ids=_ids)
def test_every_slice_scatter_lowers_to_what_the_evaluator_says(case: tuple[int, int, int, int], backend: str) -> None:
    graph, feeds = _graph(case)
    lowered = el.lower(graph, backend).graph
    target = el.load_backend(backend)
    assert all(target.runs_node(node) for node in lowered.nodes)
    assert "SliceScatter" not in lowered.op_counts()
    assert_lowering_matches(graph, lowered, feeds)
    np.testing.assert_array_equal(el.evaluate(lowered, feeds)[0], el.evaluate(graph, feeds)[0])


def test_cpu_runs_it_as_it_is() -> None:
    graph, _ = _graph((8, 1, 8, 2))
    assert el.lower(graph, "cpu").graph.op_counts().get("SliceScatter") == 1


_LHS = "(SliceScatter axis start end {step} lo hi n inner gap col spread keep before after x src)"


@pytest.mark.parametrize("step, rhs", [
    # x's own slice kept instead of src
    (1, "(Concat axis (Concat axis (Slice axis 0 lo 1 x) (Slice axis lo hi 1 x)) (Slice axis hi n 1 x))"),
    # the mask off by one: the spread's zeros kept as well as its values
    ("step", "(where (>= (Pad axis before after (Slice axis 0 keep 1 (Reshape spread (Pad inner 0 gap (Reshape col "
             "(+ (Iota.i64 axis src) 1)))))) 0) (Pad axis before after (Slice axis 0 keep 1 (Reshape spread (Pad "
             "inner 0 gap (Reshape col src))))) x)"),
    # src spread with its zeros before each value
    ("step", "(where (> (Pad axis before after (Slice axis 0 keep 1 (Reshape spread (Pad inner gap 0 (Reshape col "
             "(+ (Iota.i64 axis src) 1)))))) 0) (Pad axis before after (Slice axis 0 keep 1 (Reshape spread (Pad "
             "inner gap 0 (Reshape col src))))) x)"),
])
def test_the_checker_catches_a_wrong_expansion(step: Any, rhs: str) -> None:
    broken = rule("broken", "wrong on purpose", _LHS.format(step=step), rhs, group="forward")
    assert not all(check_rule(broken, d).ok for d in ("f64", "f32"))


@pytest.mark.parametrize("start, end, step", [(0, 2, 1), (1, 3, 1), (-3, None, 1), (None, -4, 1), (3, 3, 1),
                                              (-100, 100, 1), (0, None, 2), (1, 4, 3), (4, None, 9)])
@pytest.mark.parametrize("backend", ["wgpu", "cpu"])
def test_slice_scatter_through_the_backend_is_one_node_with_eagers_values_and_gradients(
        start: Any, end: Any, step: int, backend: str) -> None:
    from egraph_lower.torch import backend as make_backend

    x = torch.randn(3, 5, 2, dtype=torch.float64, requires_grad=True)
    n = len(range(*slice(start, end, step).indices(5)))
    src = torch.randn(3, n, 2, dtype=torch.float64, requires_grad=True)
    torch._dynamo.reset()
    record: list[el.Graph] = []
    be = make_backend(backend, record=record)
    fn = torch.compile(lambda a, s: torch.slice_scatter(a, s, 1, start, end, step) * 3, backend=be, dynamic=False)
    y = fn(x, src)
    dy = torch.randn(y.shape, dtype=torch.float64)
    got = torch.autograd.grad(y, (x, src), dy)
    want_y = torch.slice_scatter(x, src, 1, start, end, step) * 3
    want = torch.autograd.grad(want_y, (x, src), dy)
    assert be.unlowered_ops == {} and all(not r.errors for r in be.graphs), be.summary()
    ops = {op for g in record for op in g.op_counts()}
    assert ("SliceScatter" in ops) == (backend == "cpu")  # one node, which cpu runs and wgpu expands
    torch.testing.assert_close(y, want_y, rtol=0, atol=0)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
