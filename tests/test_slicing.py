"""SliceBackward's expansions (rules/slicing.py): every step, Python's clamping, empty slices; lowered
for a backend with ScatterAdd and one without, against the evaluator and torch's slice_backward in
float64; and the torch importer's slice_backward / select_backward as one SliceBackward node."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.evaluate import apply
from egraph_lower.rules.check import check_rule
from egraph_lower.rules.dsl import rule
from support import assert_lowering_matches

# (size, start, end, step): exact fits, zeros after the run, runs past the end, a step past the size,
# negative and out-of-range bounds, empty slices
SLICES = [
    (8, 0, 8, 2), (8, 1, 8, 2), (9, 0, 9, 2), (10, 0, 5, 2), (7, 0, 100, 3), (5, 2, 3, 7), (5, 0, 5, 9),
    (6, -100, -2, 4), (5, 1, 50, 2), (10, -9, -1, 3), (10, -3, 2**62, 2), (6, -1, -5, 2), (6, 4, 2, 1),
    (9, -7, 6, 1), (4, 3, 2**62, 5), (1, 0, 1, 3),
]


def _ids(case: tuple[int, int, int, int]) -> str:
    return "size{}[{}:{}:{}]".format(*case)


def slice_backward(size: int, start: int, end: int, step: int, axis: int = 1) -> tuple[el.Graph, dict[str, Any]]:
    """The gradient of x[start:end:step] on `axis` of x [3, 2, 2] with `size` there (axis 2 written as -1)."""
    n = len(range(*slice(start, end, step).indices(size)))
    shape = [3, 2, 2]
    shape[axis] = n
    b = GraphBuilder("slice_backward")
    dy = b.input("dy", shape, "f32")
    graph = b.build([b.op("SliceBackward", dy, axis=-1 if axis == 2 else axis, start=start, end=end, step=step,
                          size=size)])
    feeds = {"dy": np.random.default_rng(size * 31 + step).standard_normal(shape).astype(np.float32)}
    return graph, feeds


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("case", SLICES, ids=_ids)
def test_slice_backward_is_dy_where_the_slice_took_it_as_torch_says(case: tuple[int, int, int, int], axis: int) -> None:
    torch = pytest.importorskip("torch")
    size, start, end, step = case
    graph, feeds = slice_backward(size, start, end, step, axis)
    (node,) = [n for n in graph.nodes if n.op == "SliceBackward"]
    got = apply("SliceBackward", node.attrs, [feeds["dy"].astype(np.float64)], "f64")
    sizes = [3, 2, 2]
    sizes[axis] = size
    want = torch.ops.aten.slice_backward(torch.tensor(feeds["dy"], dtype=torch.float64), sizes, axis, start,
                                         min(end, 2**63 - 1), step)
    np.testing.assert_array_equal(got, want.numpy())


@pytest.mark.parametrize("backend", ["metal", "wgpu"])
@pytest.mark.parametrize("case", SLICES, ids=_ids)
def test_every_slice_backward_lowers_and_matches_the_evaluator(case: tuple[int, int, int, int], backend: str) -> None:
    for axis in (1, 2):
        graph, feeds = slice_backward(*case, axis=axis)
        result = el.lower(graph, backend)
        assert "SliceBackward" not in result.graph.op_counts()
        assert all(el.load_backend(backend).runs_node(n) for n in result.graph.nodes)
        assert_lowering_matches(graph, result.graph, feeds)
        np.testing.assert_array_equal(el.evaluate(result.graph, feeds)[0], el.evaluate(graph, feeds)[0])


def _chosen(graph: el.Graph, backend: str) -> list[str]:
    (node,) = [n for n in graph.nodes if n.op == "SliceBackward"]
    e = el.explore(graph, backend)
    (chosen,) = [a for a in e.alternatives(node.id) if a["chosen"]]
    return chosen["rules"]


@pytest.mark.parametrize(("case", "name"), [
    ((8, 0, 8, 2), "slice-bwd-interleave"),  # x[::2] of an even size: the run is the axis
    ((10, 0, 5, 2), "slice-bwd-interleave-pad"),
    ((7, 0, 100, 3), "slice-bwd-interleave-cut"),
    ((8, 1, 8, 2), "slice-bwd-interleave-cut-pad"),
    ((9, -7, 6, 1), "slice-bwd-pad"),
])
def test_the_interleave_takes_no_step_that_changes_nothing(case: tuple[int, int, int, int], name: str) -> None:
    graph, _ = slice_backward(*case)
    assert _chosen(graph, "wgpu") == [name]


def test_a_backend_with_scatter_add_can_take_the_scatter_form() -> None:
    graph, feeds = slice_backward(9, 0, 9, 2)
    (node,) = [n for n in graph.nodes if n.op == "SliceBackward"]
    e = el.explore(graph, "metal", compare=("wgpu",))
    legal = {b: {a["rules"][0] for a in e.alternatives(node.id, b) if a["legal"] and a["rules"]}
             for b in ("metal", "wgpu")}
    assert "slice-bwd-scatter" in legal["metal"] and "slice-bwd-scatter" not in legal["wgpu"]
    assert "slice-bwd-interleave-cut" in legal["metal"] & legal["wgpu"]


@pytest.mark.parametrize("rhs", [
    # the step - 1 zeros before each value instead of after
    "(Pad axis before after (Slice axis 0 keep 1 (Reshape spread (Pad inner gap 0 (Reshape col g)))))",
    # the zeros before and after swapped
    "(Pad axis after before (Slice axis 0 keep 1 (Reshape spread (Pad inner 0 gap (Reshape col g)))))",
])
def test_the_checker_catches_a_wrong_interleave(rhs: str) -> None:
    lhs = "(SliceBackward axis start end step size before after keep cut strided inner gap col spread g)"
    broken = rule("broken", "wrong on purpose", lhs, rhs, group="backward")
    assert not all(check_rule(broken, d).ok for d in ("f64", "f32"))


def test_where_a_reshape_costs_a_kernel_the_scatter_form_is_chosen_and_correct(tmp_path: Any) -> None:
    """A backend file whose Reshape is no view but costs 100 (metal's: 0.1): the interleave reshapes
    twice, the scatter not at all, so extraction takes the scatter; the result is still exact."""
    spec = json.loads((Path(el.__file__).parent / "backends" / "metal.json").read_text())
    spec["name"] = "metal_dear_reshape"
    spec["cost"]["view"] = 100.0
    (tmp_path / "b.json").write_text(json.dumps(spec))
    backend = el.load_backend(str(tmp_path / "b.json"))
    for case in SLICES:
        if case[3] == 1:
            continue
        graph, feeds = slice_backward(*case)
        result = el.lower(graph, backend)
        assert "ScatterAdd" in result.graph.op_counts(), case
        np.testing.assert_array_equal(el.evaluate(result.graph, feeds)[0], el.evaluate(graph, feeds)[0])


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 12), start=st.integers(-16, 16), end=st.one_of(st.integers(-16, 16), st.just(2**62)),
       step=st.integers(1, 14), backend=st.sampled_from(["metal", "wgpu"]))
def test_any_slice_gradient_lowers_to_what_the_evaluator_says(size: int, start: int, end: int, step: int,
                                                              backend: str) -> None:
    graph, feeds = slice_backward(size, start, end, step)
    lowered = el.lower(graph, backend).graph
    assert "SliceBackward" not in lowered.op_counts()
    want = np.zeros((3, size, 2), dtype=np.float32)
    want[:, start:end:step] = feeds["dy"]
    np.testing.assert_array_equal(el.evaluate(lowered, feeds)[0], want)
