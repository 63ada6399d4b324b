"""The interpolation family: the reference's backward is the adjoint of its forward, the lowering on
backends without an interpolation kernel (each form and when the cost model takes it), the rules'
numerical check, validation and versions. (Against torch: tests/test_torch_resample.py.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import GraphError
from egraph_lower.evaluate import apply, evaluate
from egraph_lower.rules import BY_NAME
from egraph_lower.rules.check import check_rule
from egraph_lower.versions import required_version

RESAMPLE_RULES = [name for name in BY_NAME if name.startswith("interpolate")]
# (mode, align_corners, input spatial shape, output size, scales)
CASES = [
    ("linear", False, (5,), [9], [None]), ("linear", True, (5,), [1], [None]), ("nearest", False, (7,), [3], [None]),
    ("nearest_exact", False, (5,), [8], [1.7]), ("cubic", True, (4, 5), [7, 3], [None, None]),
    ("cubic", False, (4, 5), [8, 10], [2.0, 2.0]), ("linear", False, (2, 3, 4), [3, 5, 2], [None, 1.7, None]),
    ("nearest", False, (2, 3, 4), [4, 6, 8], [None, None, None]),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{len(c[2])}d" for c in CASES])
def test_backward_is_the_adjoint_of_the_forward(case: tuple[Any, ...]) -> None:
    mode, ac, spatial, size, scales = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3) + spatial)
    attrs = {"mode": mode, "align_corners": ac, "scales": scales}
    y = apply("Interpolate", {**attrs, "size": size}, [x], "f64")
    dy = rng.standard_normal(y.shape)
    dx = apply("InterpolateBackward", {**attrs, "input_shape": list(x.shape)}, [dy], "f64")
    assert dx.shape == x.shape
    np.testing.assert_allclose(np.sum(y * dy), np.sum(x * dx), rtol=1e-12)


def test_weights_rows_sum_to_one_and_nearest_picks_one_input() -> None:
    for mode in ("nearest", "nearest_exact", "linear", "cubic"):
        for ac in ((False, True) if mode in ("linear", "cubic") else (False,)):
            w = apply("InterpolateWeights", {"mode": mode, "align_corners": ac, "in_size": 5, "out_size": 9},
                      [np.zeros(1)], "f64")
            np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-12)
            if mode.startswith("nearest"):
                assert set(np.unique(w)) == {0.0, 1.0}
                idx = apply("InterpolateIndex", {"mode": mode, "in_size": 5, "out_size": 9}, [np.zeros(1)], "i64")
                np.testing.assert_array_equal(np.argmax(w, axis=1), idx)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("ac", [False, True])
@pytest.mark.parametrize(("spatial", "size", "scales"), [((10, 9), [3, 4], [None, None]), ((4, 5), [9, 11], [None, 2.5]),
                                                         ((9, 7), [4, 7], [0.45, 1.1])])
def test_antialiased_backward_is_the_adjoint_and_each_row_sums_to_one(mode: str, ac: bool, spatial: tuple[int, ...],
                                                                       size: list[int], scales: list[Any]) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3) + spatial)
    attrs = {"mode": mode, "align_corners": ac, "antialias": True, "scales": scales}
    y = apply("Interpolate", {**attrs, "size": size}, [x], "f64")
    dy = rng.standard_normal(y.shape)
    dx = apply("InterpolateBackward", {**attrs, "input_shape": list(x.shape)}, [dy], "f64")
    np.testing.assert_allclose(np.sum(y * dy), np.sum(x * dx), rtol=1e-12)
    ones = apply("Interpolate", {**attrs, "size": size}, [np.ones_like(x)], "f64")
    np.testing.assert_allclose(ones, 1.0, rtol=1e-13)  # normalised weights: a constant stays itself
    plain = apply("Interpolate", {**attrs, "antialias": False, "size": size}, [x], "f64")
    if mode == "cubic" or any(o < n for o, n in zip(size, spatial)):
        assert not np.allclose(y, plain)  # a widened filter, or Keys' A = -0.5 for -0.75
    elif not ac:
        np.testing.assert_allclose(y, plain, rtol=1e-13, atol=1e-13)  # upsampling: linear's triangle


@pytest.mark.parametrize("backend", ["metal", "wgpu"])
@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_antialiased_lowering_is_products_by_its_matrices(backend: str, backward: bool, mode: str) -> None:
    b = GraphBuilder("aa")
    spatial, size = (12, 9), [5, 4]
    x = b.input("x", (2, 3) + (tuple(size) if backward else spatial))
    attrs = {"mode": mode, "align_corners": False, "antialias": True}
    out = (b.op("InterpolateBackward", x, **attrs, input_shape=[2, 3, *spatial]) if backward
           else b.op("Interpolate", x, **attrs, size=size))
    graph = b.build([out])
    assert required_version(graph.nodes) == 3
    result = el.lower(graph, backend)
    ops = result.graph.op_counts()
    assert "Interpolate" not in ops and "InterpolateBackward" not in ops and ops.get("MatMul") == 2, ops
    weights = [n for n in result.graph.nodes if n.op == "InterpolateWeights"]
    assert weights and all(n.attrs["antialias"] for n in weights), weights
    v = np.random.default_rng(1).standard_normal(graph.nodes[0].shape).astype(np.float32)
    for got, ref in zip(evaluate(result.graph, {"x": v}), evaluate(graph, {"x": v})):
        np.testing.assert_allclose(got, ref, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", RESAMPLE_RULES)
@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16"])
def test_rules_pass_the_numerical_check(name: str, dtype: str) -> None:
    result = check_rule(BY_NAME[name], dtype)
    assert result.ok, result


def _graph(mode: str, spatial: tuple[int, ...], size: list[int], backward: bool, ac: bool = False) -> el.Graph:
    b = GraphBuilder("interp")
    shape = (2, 3) + (tuple(size) if backward else spatial)
    x = b.input("x", shape)
    attrs: dict[str, Any] = {"mode": mode, "align_corners": ac}
    if backward:
        out = b.op("InterpolateBackward", x, **attrs, input_shape=[2, 3, *spatial])
    else:
        out = b.op("Interpolate", x, **attrs, size=size)
    return b.build([out])


@pytest.mark.parametrize("backend", ["metal", "wgpu", "tpu", "mlx"])
@pytest.mark.parametrize(("mode", "spatial", "size", "backward", "want"), [
    ("nearest", (16, 16), [32, 32], False, "Expand"),          # whole factors: the repeat
    ("nearest", (16, 16), [32, 32], True, "Reduce"),           # and its backward: a sum
    ("nearest", (16, 16), [24, 20], False, "Take"),            # fractional: a gather per axis
    ("linear", (16, 16), [32, 32], False, "InterpolateWeights"),
    ("linear", (16, 16), [32, 32], True, "InterpolateWeights"),
    ("cubic", (6, 7), [9, 4], True, "InterpolateWeights"),
    ("linear", (4, 5, 6), [8, 10, 12], True, "InterpolateWeights"),
    ("nearest_exact", (5,), [9], True, "InterpolateWeights"),  # no index form backward: the one-hot matrix
])
def test_lowering_picks_a_form_and_keeps_the_values(backend: str, mode: str, spatial: tuple[int, ...],
                                                    size: list[int], backward: bool, want: str) -> None:
    graph = _graph(mode, spatial, size, backward, ac=mode == "cubic")
    result = el.lower(graph, backend)
    ops = result.graph.op_counts()
    assert "Interpolate" not in ops and "InterpolateBackward" not in ops and want in ops, ops
    x = np.random.default_rng(1).standard_normal(graph.nodes[0].shape).astype(np.float32)
    for got, ref in zip(evaluate(result.graph, {"x": x}), evaluate(graph, {"x": x})):
        np.testing.assert_allclose(got, ref, rtol=2e-6, atol=2e-6)


def test_cpu_keeps_the_ops() -> None:
    ops = el.lower(_graph("linear", (4, 5), [8, 10], True), "cpu").graph.op_counts()
    assert ops.get("InterpolateBackward") == 1, ops


@pytest.mark.parametrize(("attrs", "shape", "message"), [
    ({"mode": "cubic", "size": [4]}, (2, 3, 5), "cubic interpolation is over 2 spatial axes, not 1"),
    ({"mode": "nearest", "align_corners": True, "size": [4, 4]}, (2, 3, 5, 5), "align_corners is for linear"),
    ({"mode": "linear", "size": [4, 4], "scales": [2.0]}, (2, 3, 5, 5), "'scales' has 1 entries for 2 spatial axes"),
    ({"mode": "linear", "size": [4, 4]}, (2, 3, 5), "x [2, 3, 5] must be [N, C] and 2 spatial sizes"),
    ({"mode": "bilinear", "size": [4, 4]}, (2, 3, 5, 5), "unknown interpolation mode 'bilinear'"),
    ({"mode": "linear", "size": [0]}, (2, 3, 5), "'size' must be a list of 1 to 3 integers >= 1"),
    ({"mode": "linear", "size": [4], "scales": [-1.0]}, (2, 3, 5), "'scales' must be a list of numbers > 0"),
    ({"mode": "nearest", "antialias": True, "size": [4, 4]}, (2, 3, 5, 5), "antialias is for linear and cubic"),
    ({"mode": "linear", "antialias": True, "size": [4, 4, 4]}, (2, 3, 5, 5, 5), "antialias is over 2 spatial axes"),
])
def test_bad_attributes_are_refused_in_one_line(attrs: dict[str, Any], shape: tuple[int, ...], message: str) -> None:
    b = GraphBuilder("bad")
    x = b.input("x", shape)
    with pytest.raises((GraphError, ValueError)) as e:
        b.op("Interpolate", x, **attrs)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_interpolation_is_version_3() -> None:
    assert required_version(_graph("linear", (4,), [8], False).nodes) == 3


# ---- sliding windows (opdefs/unfold.py)

UNFOLD_RULES = [name for name in BY_NAME if name.startswith(("unfold", "col2im"))]


@pytest.mark.parametrize("name", UNFOLD_RULES)
@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16"])
def test_window_rules_pass_the_numerical_check(name: str, dtype: str) -> None:
    result = check_rule(BY_NAME[name], dtype)
    assert result.ok, result


@pytest.mark.parametrize(("axis", "size", "step"), [(1, 3, 2), (1, 3, 3), (-1, 2, 3), (0, 5, 1)])
def test_unfold_backward_is_the_adjoint(axis: int, size: int, step: int) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 9, 4))
    attrs = {"axis": axis, "size": size, "step": step}
    y = apply("Unfold", attrs, [x], "f64")
    dy = rng.standard_normal(y.shape)
    dx = apply("UnfoldBackward", {**attrs, "input_shape": list(x.shape)}, [dy], "f64")
    np.testing.assert_allclose(np.sum(y * dy), np.sum(x * dx), rtol=1e-12)


def test_col2im_is_the_adjoint_of_im2col() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 7, 6))
    win = {"kernel": [2, 3], "stride": [2, 1], "padding": [1, 0], "dilation": [1, 2]}
    cols = apply("Im2Col", {**win, "groups": 1}, [x], "f64")  # [N, 1, C K, L]
    dy = rng.standard_normal(cols.shape[:1] + cols.shape[2:])
    dx = apply("Col2Im", {**win, "output_size": [7, 6]}, [dy], "f64")
    np.testing.assert_allclose(np.sum(cols[:, 0] * dy), np.sum(x * dx), rtol=1e-12)


def _window_graph(op: str, shape: tuple[int, ...], **attrs: Any) -> el.Graph:
    b = GraphBuilder("windows")
    return b.build([b.op(op, b.input("x", shape), **attrs)])


@pytest.mark.parametrize("backend", ["metal", "wgpu"])
@pytest.mark.parametrize(("op", "shape", "attrs", "want"), [
    ("Unfold", (4, 64, 8), {"axis": 1, "size": 8, "step": 8}, "Slice"),          # tiles: no index
    ("Unfold", (4, 64, 8), {"axis": 1, "size": 8, "step": 4}, "Take"),           # overlapping: a gather
    ("UnfoldBackward", (4, 8, 8, 8), {"axis": 1, "size": 8, "step": 8, "input_shape": [4, 64, 8]}, "Pad"),
    ("UnfoldBackward", (4, 15, 8, 8), {"axis": 1, "size": 8, "step": 4, "input_shape": [4, 64, 8]}, "WindowOneHot"),
])
def test_window_lowering_picks_a_form_and_keeps_the_values(backend: str, op: str, shape: tuple[int, ...],
                                                           attrs: dict[str, Any], want: str) -> None:
    graph = _window_graph(op, shape, **attrs)
    result = el.lower(graph, backend)
    ops = result.graph.op_counts()
    assert op not in ops and want in ops, ops
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    for got, ref in zip(evaluate(result.graph, {"x": x}), evaluate(graph, {"x": x})):
        np.testing.assert_allclose(got, ref, rtol=2e-6, atol=2e-6)


def test_metal_runs_col2im_and_wgpu_expands_it() -> None:
    attrs = {"kernel": [3, 3], "stride": [2, 1], "padding": [1, 1], "dilation": [1, 1], "output_size": [8, 8]}
    graph = _window_graph("Col2Im", (2, 27, 32), **attrs)
    assert el.lower(graph, "metal").graph.op_counts().get("Col2Im") == 1
    x = np.random.default_rng(6).standard_normal((2, 27, 32)).astype(np.float32)
    for shape, win, form in (((2, 27, 32), attrs, "MatMul"),  # overlapping windows: the one-hot products
                             ((2, 12, 16), {**attrs, "kernel": [2, 2], "stride": [2, 2], "padding": [0, 0]}, "Pad")):
        g = _window_graph("Col2Im", shape, **win)
        lowered = el.lower(g, "wgpu").graph
        assert form in lowered.op_counts() and "Col2Im" not in lowered.op_counts(), lowered.op_counts()
        xs = {"x": x[:, :shape[1], :shape[2]].copy()}
        np.testing.assert_allclose(evaluate(lowered, xs)[0], evaluate(g, xs)[0], rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize(("op", "shape", "attrs", "message"), [
    ("Unfold", (2, 3), {"axis": 1, "size": 4, "step": 1}, "window size 4 exceeds the axis's length 3"),
    ("Unfold", (2, 3), {"axis": 2, "size": 1, "step": 1}, "axis 2 is out of range for x of rank 2"),
    ("Unfold", (2, 3), {"axis": 1, "size": 1, "step": 0}, "attribute 'step' must be an integer >= 1"),
    ("Col2Im", (2, 8, 5), {"kernel": [2, 2], "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1],
                           "output_size": [3, 4]}, "cols [2, 8, 5] must be [N, C * 4, 6]"),
])
def test_bad_window_attributes_are_refused_in_one_line(op: str, shape: tuple[int, ...], attrs: dict[str, Any],
                                                       message: str) -> None:
    b = GraphBuilder("bad")
    x = b.input("x", shape)
    with pytest.raises((GraphError, ValueError)) as e:
        b.op(op, x, **attrs)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_nearest_backward_scatter_form_is_an_alternative_where_scatter_add_runs() -> None:
    graph = _graph("nearest", (16, 16), [24, 20], True)
    fired = el.lower(graph, "metal").report.rules_fired
    assert fired.get("interpolate-bwd-scatter-2d") == 1 and fired.get("interpolate-bwd-matmul-2d") == 1, fired
    assert "ScatterAdd" not in el.lower(graph, "wgpu").graph.op_counts()  # no float atomics: not a choice there


def test_explore_shows_each_backends_forms_of_an_upsampling_backward() -> None:
    from egraph_lower.explore import explore

    graph = _graph("nearest", (16, 16), [32, 32], True)
    ex = explore(graph, "metal", compare=["wgpu"])
    node = graph.outputs[0]
    for backend in ("metal", "wgpu"):
        forms = {tuple(a["rules"]): a for a in ex.alternatives(node, backend)}
        runnable = {r: a["cost"] for r, a in forms.items() if a["legal"]}
        # the whole-factor sum is the cheapest: a Reshape and a Reduce, against two MatMuls or two scatters
        assert [r for r, a in forms.items() if a["chosen"]] == [("interpolate-bwd-repeat",)]
        assert runnable[("interpolate-bwd-repeat",)] == min(runnable.values())
        assert ("interpolate-bwd-matmul-2d",) in runnable
        # the scatter form needs ScatterAdd, which metal runs and wgpu does not (no float atomics)
        assert (("interpolate-bwd-scatter-2d",) in runnable) == (backend == "metal")
