"""Dropout, the index ops, the NLL loss and embeddings (opdefs/index.py, opdefs/nll.py, rules/index.py).

Semantics checked by hand-made cases and float64 finite differences; every op lowered
on every backend and compared with the evaluator; bad nodes refused in one line.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.dtypes import to_numpy
from egraph_lower.errors import GraphError, LowerError
from egraph_lower.evaluate import apply
from egraph_lower.explore import explore
from egraph_lower.rules.check import check_rule
from egraph_lower.rules.dsl import rule
from support import assert_lowering_matches

BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")
NEW_OPS = ("Dropout", "DropoutBackward", "EmbeddingBackward", "NllLoss", "NllLossTotalWeight", "NllLossBackward",
           "Embedding")


def _logp(shape: tuple[int, ...], rng: np.random.Generator, spread: float = 3.0) -> np.ndarray:
    x = rng.standard_normal(shape) * spread
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _nll(logp: np.ndarray, target: np.ndarray, weight: np.ndarray, reduction: str, ignore: int) -> np.ndarray:
    return apply("NllLoss", {"reduction": reduction, "ignore_index": ignore}, [logp, target, weight], "f64")


# ---- semantics -------------------------------------------------------------------------------------

def test_gather_scatter_add_take_and_iota_by_hand() -> None:
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    idx = np.array([[2, 0], [1, 1]])
    np.testing.assert_array_equal(apply("Gather", {"axis": 1}, [x, idx], "f64"), [[3.0, 1.0], [5.0, 5.0]])
    src = np.array([[10.0, 20.0], [30.0, 40.0]])
    got = apply("ScatterAdd", {"axis": 1}, [x, idx, src], "f64")
    np.testing.assert_array_equal(got, [[21.0, 2.0, 13.0], [4.0, 75.0, 6.0]])  # repeated index 1: both added
    np.testing.assert_array_equal(apply("Take", {"axis": -1}, [x, np.array([2, 2, 0])], "f64"),
                                  [[3.0, 3.0, 1.0], [6.0, 6.0, 4.0]])
    np.testing.assert_array_equal(apply("Iota", {"axis": 0, "dtype": "i64"}, [x], "i64"), [[0, 0, 0], [1, 1, 1]])


def test_dropout_scales_kept_values_and_zeroes_the_rest() -> None:
    x = np.array([1.0, -2.0, np.inf, 3.0])
    mask = np.array([True, False, False, True])
    for op in ("Dropout", "DropoutBackward"):
        np.testing.assert_array_equal(apply(op, {"scale": 2.5}, [x, mask], "f64"), [2.5, 0.0, 0.0, 7.5])


@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 2, 2)])
def test_nll_loss_by_hand_with_weights_ignore_index_and_reductions(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    logp = _logp(shape, rng)
    target = rng.integers(0, 4, size=(shape[0],) + shape[2:])
    target.flat[::3] = 2  # ignored
    weight = np.array([0.5, 3.0, 7.0, 1e-3])
    flat_t = np.moveaxis(logp, 1, -1).reshape(-1, 4), target.reshape(-1)
    terms = np.array([0.0 if t == 2 else -weight[t] * row[t] for row, t in zip(*flat_t)])
    total = sum(weight[t] for t in flat_t[1] if t != 2)
    np.testing.assert_allclose(_nll(logp, target, weight, "none", 2).reshape(-1), terms, rtol=1e-15)
    np.testing.assert_allclose(_nll(logp, target, weight, "sum", 2), terms.sum(), rtol=1e-14)
    np.testing.assert_allclose(_nll(logp, target, weight, "mean", 2), terms.sum() / total, rtol=1e-14)
    tw = apply("NllLossTotalWeight", {"ignore_index": 2}, [target, weight], "f64")
    np.testing.assert_allclose(tw, total, rtol=1e-15)


def test_mean_over_no_counted_target_is_nan_and_its_gradient_zero() -> None:
    logp, target, weight = _logp((3, 2), np.random.default_rng(1)), np.full(3, -100), np.ones(2)
    assert np.isnan(_nll(logp, target, weight, "mean", -100))
    assert _nll(logp, target, weight, "sum", -100) == 0.0
    grad = apply("NllLossBackward", {"reduction": "mean", "ignore_index": -100},
                 [logp, np.array(1.0), target, weight, np.array(0.0)], "f64")
    np.testing.assert_array_equal(grad, np.zeros((3, 2)))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 2, 2)])
def test_nll_backward_matches_finite_differences(reduction: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(2)
    logp = rng.standard_normal(shape)  # the loss is linear in logp: any values will do
    target = rng.integers(0, 3, size=(shape[0],) + shape[2:])
    target.flat[1] = -1
    weight = np.array([0.25, 4.0, 1.5])
    dy = rng.standard_normal(target.shape) if reduction == "none" else np.array(1.7)
    total = apply("NllLossTotalWeight", {"ignore_index": -1}, [target, weight], "f64")
    attrs = {"reduction": reduction, "ignore_index": -1}
    grad = apply("NllLossBackward", attrs, [logp, dy, target, weight, total], "f64")
    h = 1e-6
    numeric = np.zeros(shape)
    for i in np.ndindex(*shape):
        up, down = logp.copy(), logp.copy()
        up[i] += h
        down[i] -= h
        diff = _nll(up, target, weight, reduction, -1) - _nll(down, target, weight, reduction, -1)
        numeric[i] = np.sum(diff * dy) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-7, atol=1e-8)


def test_embedding_backward_matches_finite_differences_and_zeroes_the_padding_row() -> None:
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((5, 3))
    idx = np.array([[0, 2, 2], [4, 2, 1]])  # repeats; row 3 unused
    dy = rng.standard_normal((2, 3, 3))
    np.testing.assert_array_equal(apply("Embedding", {}, [weight, idx], "f64"), weight[idx])
    grad = apply("EmbeddingBackward", {"num_weights": 5, "padding_idx": -1}, [dy, idx], "f64")
    h = 1e-6
    numeric = np.zeros_like(weight)
    for i in np.ndindex(*weight.shape):
        up, down = weight.copy(), weight.copy()
        up[i] += h
        down[i] -= h
        numeric[i] = np.sum((apply("Embedding", {}, [up, idx], "f64") - apply("Embedding", {}, [down, idx], "f64"))
                            * dy) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-7, atol=1e-8)
    padded = apply("EmbeddingBackward", {"num_weights": 5, "padding_idx": 2}, [dy, idx], "f64")
    np.testing.assert_array_equal(padded[2], 0.0)
    np.testing.assert_array_equal(np.delete(padded, 2, axis=0), np.delete(grad, 2, axis=0))


@pytest.mark.parametrize(("op", "attrs", "args"), [
    ("Gather", {"axis": 0}, [np.zeros((2, 2)), np.array([[0, 2]])]),
    ("Take", {"axis": 0}, [np.zeros((2, 2)), np.array([-1])]),
    ("Embedding", {}, [np.zeros((2, 2)), np.array([5])]),
    ("NllLoss", {"reduction": "sum", "ignore_index": -100}, [np.zeros((1, 2)), np.array([2]), np.ones(2)]),
])
def test_an_index_out_of_range_is_an_error_of_the_evaluator(op: str, attrs: dict, args: list) -> None:
    with pytest.raises(LowerError, match="out of range"):
        apply(op, attrs, args, "f64")


def _doc(nodes: list[dict]) -> dict:
    return {"format": "egraph-lower/graph", "version": 2, "outputs": [nodes[-1]["id"]], "nodes": nodes}


def _input(nid: int, shape: list[int], dtype: str = "f32") -> dict:
    return {"id": nid, "op": "Input", "attrs": {"name": f"x{nid}"}, "inputs": [], "shape": shape, "dtype": dtype}


@pytest.mark.parametrize(("node", "words"), [
    ({"op": "NllLoss", "attrs": {"reduction": "avg", "ignore_index": -100}, "inputs": [0, 1, 2], "shape": []},
     "unknown reduction"),
    ({"op": "NllLoss", "attrs": {"reduction": "sum", "ignore_index": -100}, "inputs": [0, 0, 2], "shape": []},
     "target has shape"),
    ({"op": "EmbeddingBackward", "attrs": {"num_weights": 3, "padding_idx": 3}, "inputs": [0, 1], "shape": [3, 4]},
     "padding_idx 3"),
    ({"op": "Gather", "attrs": {"axis": 0}, "inputs": [0, 2], "shape": [4]}, "must have an integer dtype"),
    ({"op": "Dropout", "attrs": {"scale": -1}, "inputs": [0, 0], "shape": [4, 4]}, "scale"),
])
def test_bad_nodes_are_refused_in_one_line(node: dict, words: str) -> None:
    nodes = [_input(0, [4, 4]), _input(1, [4], "i64"), _input(2, [4]), {"id": 3, "dtype": "f32", **node}]
    with pytest.raises(GraphError, match=words) as e:
        el.validated(el.from_dict(_doc(nodes)))
    assert str(e.value).startswith("node 3") and "\n" not in str(e.value)


# ---- lowering ----------------------------------------------------------------------------------------

def loss_step(reduction: str, shape: tuple[int, ...] = (6, 4), ignore: int = -100) -> el.Graph:
    b = GraphBuilder(f"nll_{reduction}")
    logp, w = b.input("logp", list(shape), "f32"), b.input("w", [shape[1]], "f32")
    t = b.input("t", [shape[0], *shape[2:]], "i64")
    dy = b.input("dy", [shape[0], *shape[2:]] if reduction == "none" else [], "f32")
    loss = b.op("NllLoss", logp, t, w, reduction=reduction, ignore_index=ignore)
    total = b.op("NllLossTotalWeight", t, w, ignore_index=ignore)
    grad = b.op("NllLossBackward", logp, dy, t, w, total, reduction=reduction, ignore_index=ignore)
    return b.build([loss, total, grad])


def loss_feeds(reduction: str, shape: tuple[int, ...] = (6, 4), ignore: int = -100) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(4)
    t = rng.integers(0, shape[1], size=(shape[0], *shape[2:]))
    t.flat[::4] = ignore
    dy = rng.standard_normal(t.shape) if reduction == "none" else np.array(0.75)
    return {"logp": _logp(shape, rng, 30.0).astype(np.float32), "t": t,
            "w": np.array([0.1, 2.0, 30.0, 1.0][:shape[1]], dtype=np.float32), "dy": dy.astype(np.float32)}


def index_step(padding_idx: int = 4) -> el.Graph:
    b = GraphBuilder("index_step")
    w, x = b.input("w", [5, 3], "f32"), b.input("x", [2, 3, 3], "f32")
    idx, mask = b.input("idx", [2, 3], "i64"), b.input("mask", [2, 3, 3], "bool")
    emb = b.op("Embedding", w, idx)
    drop = b.op("Dropout", b.op("Binary", emb, x, op="Add"), mask, scale=1.25)
    dx = b.op("DropoutBackward", x, mask, scale=1.25)
    gw = b.op("EmbeddingBackward", dx, idx, num_weights=5, padding_idx=padding_idx)
    return b.build([drop, gw])


def index_feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {"w": rng.standard_normal((5, 3)).astype(np.float32), "x": rng.standard_normal((2, 3, 3)).astype(np.float32),
            "idx": np.array([[0, 4, 4], [2, 2, 1]]), "mask": rng.random((2, 3, 3)) < 0.7}


def _check_lowered(graph: el.Graph, backend: str, feeds: dict[str, np.ndarray]) -> el.Graph:
    result = el.lower(graph, backend)
    target = el.load_backend(backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    counts = result.graph.op_counts()
    for op in NEW_OPS:
        assert (op in counts) == (target.runs(op) and op in graph.op_counts())
    assert_lowering_matches(graph, result.graph, feeds)
    return result.graph


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_nll_lowers_on_every_backend(backend: str, reduction: str) -> None:
    _check_lowered(loss_step(reduction), backend, loss_feeds(reduction))


@pytest.mark.parametrize("backend", ["metal", "wgpu"])
def test_nll2d_with_an_ignore_index_among_the_classes_lowers(backend: str) -> None:
    shape = (2, 3, 2, 2)
    _check_lowered(loss_step("mean", shape, ignore=1), backend, loss_feeds("mean", shape, ignore=1))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("padding_idx", [4, -1])
def test_dropout_and_embeddings_lower_on_every_backend(backend: str, padding_idx: int) -> None:
    lowered = _check_lowered(index_step(padding_idx), backend, index_feeds())
    if backend == "wgpu":
        assert "ScatterAdd" not in lowered.op_counts()


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_nll_lowered_with_every_target_ignored_gives_nan_mean_and_zero_gradient(reduction: str) -> None:
    feeds = loss_feeds(reduction)
    feeds["t"] = np.full_like(feeds["t"], -100)
    graph = loss_step(reduction)
    lowered = _check_lowered(graph, "wgpu", feeds)
    loss, total, grad = el.evaluate(lowered, feeds)
    assert np.isnan(loss) == (reduction == "mean") and total == 0
    np.testing.assert_array_equal(grad, 0.0)


@pytest.mark.parametrize("backend", ["metal", "wgpu"])
def test_embedding_backward_of_one_index_axis_lowers(backend: str) -> None:
    b = GraphBuilder("embedding_1d")
    dy, idx = b.input("dy", [6, 3], "f32"), b.input("idx", [6], "i64")
    graph = b.build([b.op("EmbeddingBackward", dy, idx, num_weights=4, padding_idx=0)])
    feeds = {"dy": np.random.default_rng(6).standard_normal((6, 3)).astype(np.float32),
             "idx": np.array([0, 1, 1, 3, 3, 3])}
    _check_lowered(graph, backend, feeds)


# ---- the embedding gradient's expansions: scatter-add where the backend has ScatterAdd, else a MatMul

def embedding_backward(m: int, d: int, w: int, padding_idx: int, dtype: str = "f32") -> el.Graph:
    b = GraphBuilder("embedding_bwd")
    dy, idx = b.input("dy", [m, d], dtype), b.input("idx", [m], "i64")
    return b.build([b.op("EmbeddingBackward", dy, idx, num_weights=w, padding_idx=padding_idx)])


def embedding_feeds(m: int, d: int, w: int, dtype: str = "f32") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(8)
    idx = rng.integers(0, w, size=m)
    idx[: m // 3] = 1  # one row (the padding row in some cases) gets many positions
    return {"dy": (rng.standard_normal((m, d)) * 10.0 ** rng.integers(-2, 3, size=(m, d))).astype(to_numpy(dtype)),
            "idx": idx}


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("padding_idx", [1, 0, -1])
@pytest.mark.parametrize(("backend", "has", "lacks"), [("metal", "ScatterAdd", "MatMul"), ("tpu", "ScatterAdd", "MatMul"),
                                                       ("wgpu", "MatMul", "ScatterAdd")])
def test_embedding_backward_scatters_where_the_backend_can_and_multiplies_a_one_hot_where_not(
        backend: str, has: str, lacks: str, padding_idx: int, dtype: str) -> None:
    graph = embedding_backward(40, 8, 30, padding_idx, dtype)
    feeds = embedding_feeds(40, 8, 30, dtype)
    result = el.lower(graph, backend)
    counts = result.graph.op_counts()
    assert has in counts and lacks not in counts and "EmbeddingBackward" not in counts
    assert_lowering_matches(graph, result.graph, feeds)
    got = el.evaluate(result.graph, feeds)[0]
    if padding_idx >= 0:
        np.testing.assert_array_equal(got[padding_idx], 0.0)


def test_explore_shows_the_scatter_chosen_for_metal_and_the_matmul_for_wgpu_on_a_large_vocabulary() -> None:
    graph = embedding_backward(512, 768, 50257, -1)
    (node,) = [n for n in graph.nodes if n.op == "EmbeddingBackward"]
    e = explore(graph, "metal", compare=("wgpu",))
    chosen = {b: [a["rules"] for a in e.alternatives(node.id, b) if a["chosen"]] for b in ("metal", "wgpu")}
    assert chosen == {"metal": [["embedding-bwd-scatter"]], "wgpu": [["embedding-bwd-matmul"]]}
    costs = {a["rules"][0]: a["cost"] for a in e.alternatives(node.id, "wgpu") if a["rules"]}
    assert costs["embedding-bwd-matmul"] < costs["embedding-bwd-onehot"]  # the one-hot sum is [W, D, M]


def test_metal_takes_the_matmul_where_it_costs_less_than_the_scatter() -> None:
    """Two rows and 100,000 positions: the scatter reads an index per element of dy (M x D x 8 bytes),
    the one-hot is only [2, M]; by metal's cost model the MatMul wins, as it should."""
    graph = embedding_backward(100_000, 64, 2, -1)
    (node,) = [n for n in graph.nodes if n.op == "EmbeddingBackward"]
    alts = {a["rules"][0]: a for a in el.explore(graph, "metal").alternatives(node.id) if a["rules"]}
    assert alts["embedding-bwd-matmul"]["chosen"] and alts["embedding-bwd-scatter"]["legal"]
    assert alts["embedding-bwd-matmul"]["cost"] < alts["embedding-bwd-scatter"]["cost"]


@pytest.mark.parametrize(("lhs", "rhs"), [
    # the padding row's positions not zeroed
    ("(EmbeddingBackward nw pad wshape dperm paxes iaxes 1 flat icol irow wm g indices)",
     "(ScatterAdd 0 (Pad 0 nw 0 (Slice 0 0 0 1 (Reshape flat g))) (Expand flat (Reshape icol indices)) (Reshape flat g))"),
    # the one-hot not transposed: [M, W] rows picked by position, not by index
    ("(EmbeddingBackward nw pad wshape dperm paxes iaxes 0 flat icol irow wm g indices)",
     "(MatMul (where (== (Iota.i64 1 (Expand wm (Reshape irow indices))) (Reshape irow indices)) 1 "
     "(Reduce.Sum [0,1] 1 (Slice 0 0 0 1 (Reshape flat g)))) (Reshape flat g))"),
])
def test_the_checker_catches_a_wrong_embedding_expansion(lhs: str, rhs: str) -> None:
    broken = rule("broken", "wrong on purpose", lhs, rhs, group="backward")
    assert not all(check_rule(broken, d).ok for d in ("f64", "f32"))


@settings(max_examples=40, deadline=None)
@given(w=st.integers(1, 7), ishape=st.lists(st.integers(0, 4), max_size=2), d=st.integers(1, 3),
       pad=st.integers(-1, 6), backend=st.sampled_from(["metal", "wgpu"]), seed=st.integers(0, 2**16))
def test_any_embedding_gradient_lowers_to_what_the_evaluator_says(w: int, ishape: list[int], d: int, pad: int,
                                                                  backend: str, seed: int) -> None:
    pad = pad if pad < w else -1
    b = GraphBuilder("embedding_bwd")
    dy, idx = b.input("dy", ishape + [d], "f32"), b.input("idx", ishape, "i64")
    graph = b.build([b.op("EmbeddingBackward", dy, idx, num_weights=w, padding_idx=pad)])
    rng = np.random.default_rng(seed)
    feeds = {"dy": rng.standard_normal(ishape + [d]).astype(np.float32), "idx": rng.integers(0, w, size=ishape)}
    lowered = el.lower(graph, backend).graph
    assert "EmbeddingBackward" not in lowered.op_counts()
    assert_lowering_matches(graph, lowered, feeds)
