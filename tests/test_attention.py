"""The attention ops (opdefs/attention.py): reference semantics against a float64 formula, gradients
checked by finite differences, the fully-masked-row and causal conventions, validation, and lowering on
every backend (numerically equal to the evaluator). PyTorch agreement: tests/test_torch_attention.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import GraphError
from egraph_lower.evaluate import apply, evaluate
from support import assert_lowering_matches, f64, numeric_grad

BACKENDS = ("cpu", "mlx", "metal", "tpu", "wgpu")
ATTENTION_OPS = ("Attention", "AttentionLogSumExp", "AttentionBackwardQuery", "AttentionBackwardKey",
                 "AttentionBackwardValue")
INF = np.inf

def textbook(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray, scale: float,
             causal: bool) -> tuple[np.ndarray, np.ndarray]:
    """(out, lse) written out row by row, independently of the evaluator."""
    lead = q.shape[:-2]
    out = np.zeros(lead + (q.shape[-2], v.shape[-1]))
    lse = np.zeros(lead + (q.shape[-2],))
    m = np.broadcast_to(mask, lead + (q.shape[-2], k.shape[-2]))
    for b in np.ndindex(*lead):
        for i in range(q.shape[-2]):
            cols = [j for j in range(k.shape[-2]) if (not causal or j <= i) and m[b][i, j] != -np.inf]
            if not cols:
                continue
            t = np.array([scale * q[b][i] @ k[b][j] + m[b][i, j] for j in cols])
            w = np.exp(t - t.max())
            out[b][i] = (w / w.sum()) @ v[b][cols]
            lse[b][i] = t.max() + math.log(w.sum())
    return out, lse


def _inputs(seed: int = 0, rows: int = 4, cols: int = 6) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, rows, 3)), rng.standard_normal((2, cols, 3))
    v, dy = rng.standard_normal((2, cols, 5)), rng.standard_normal((2, rows, 5))
    mask = rng.standard_normal((rows, cols))
    mask[1, -1] = -np.inf
    return q, k, v, mask, dy


# --------------------------------------------------------------------------- reference semantics

@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("rows", "cols"), [(4, 6), (6, 3)])
def test_attention_is_the_masked_softmax_of_the_scaled_scores(causal: bool, rows: int, cols: int) -> None:
    q, k, v, mask, _ = _inputs(1, rows, cols)
    for attrs, scale in (({"causal": causal}, 1 / math.sqrt(3)), ({"causal": causal, "scale": 0.7}, 0.7)):
        out, lse = textbook(q, k, v, mask, scale, causal)
        np.testing.assert_allclose(f64("Attention", attrs, q, k, v, mask), out, rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(f64("AttentionLogSumExp", attrs, q, k, mask), lse, rtol=1e-13, atol=1e-14)


def test_a_fully_masked_row_gives_zero_output_lse_and_gradients() -> None:
    q, k, v, mask, dy = _inputs(2)
    mask[2] = -np.inf
    out = f64("Attention", {}, q, k, v, mask)
    lse = f64("AttentionLogSumExp", {}, q, k, mask)
    assert np.all(out[:, 2] == 0) and np.all(lse[:, 2] == 0) and np.all(np.isfinite(out))
    dq = f64("AttentionBackwardQuery", {}, q, k, v, mask, out, lse, dy)
    assert np.all(dq[:, 2] == 0) and np.all(np.isfinite(dq))
    # the other rows are as if row 2 were not there: dv gets nothing from dy's row 2
    dy2 = dy.copy()
    dy2[:, 2] = 1e3
    np.testing.assert_array_equal(f64("AttentionBackwardValue", {}, q, k, mask, lse, dy2),
                                  f64("AttentionBackwardValue", {}, q, k, mask, lse, dy * (np.arange(4) != 2)[:, None]))


def test_causal_is_top_left_aligned() -> None:
    # row i attends to columns j <= i, whatever L and S: with L > S the last rows see every column
    q, k, v, mask, _ = _inputs(3, rows=5, cols=2)
    zero = np.zeros(())
    out = f64("Attention", {"causal": True}, q, k, v, zero)
    np.testing.assert_allclose(out[:, 0], v[:, 0], rtol=1e-14)  # row 0 sees column 0 only
    np.testing.assert_allclose(out[:, 2:], f64("Attention", {}, q, k, v, zero)[:, 2:], rtol=1e-14)


def test_large_logits_do_not_overflow() -> None:
    q, k, v, mask, _ = _inputs(4)
    q *= 300.0  # scores in the thousands: exp without the maximum would overflow float64 too
    out = f64("Attention", {}, q, k, v, np.zeros(()))
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, textbook(q, k, v, np.zeros(()), 1 / math.sqrt(3), False)[0], rtol=1e-12)


# --------------------------------------------------------------------------- derivatives vs finite differences
@pytest.mark.parametrize("attrs", [{}, {"causal": True}, {"scale": 0.3, "causal": True}])
def test_backward_ops_are_the_gradients(attrs: dict[str, object]) -> None:
    q, k, v, mask, dy = _inputs(5, rows=4, cols=5)
    mask[3] = -np.inf  # a fully masked row too

    def loss(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> float:
        return float(np.sum(f64("Attention", attrs, q, k, v, mask) * dy))

    out = f64("Attention", attrs, q, k, v, mask)
    lse = f64("AttentionLogSumExp", attrs, q, k, mask)
    want = (numeric_grad(lambda x: loss(x, k, v), q), numeric_grad(lambda x: loss(q, x, v), k),
            numeric_grad(lambda x: loss(q, k, x), v))
    got = (f64("AttentionBackwardQuery", attrs, q, k, v, mask, out, lse, dy),
           f64("AttentionBackwardKey", attrs, q, k, v, mask, out, lse, dy),
           f64("AttentionBackwardValue", attrs, q, k, mask, lse, dy))
    for name, g, w in zip("qkv", got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8, err_msg=name)


# --------------------------------------------------------------------------- validation

def _doc(op: str, attrs: dict[str, object], shapes: list[list[int]], out: list[int],
         dtypes: list[str] | None = None) -> dict[str, object]:
    dts = dtypes or ["f32"] * len(shapes)
    nodes = [{"id": i, "op": "Input", "attrs": {"name": f"i{i}"}, "inputs": [], "shape": s, "dtype": d}
             for i, (s, d) in enumerate(zip(shapes, dts))]
    nodes.append({"id": len(shapes), "op": op, "attrs": attrs, "inputs": list(range(len(shapes))), "shape": out,
                  "dtype": dts[0]})
    return {"format": "egraph-lower/graph", "version": 2, "outputs": [len(shapes)], "nodes": nodes}


Q, K, V, M = [2, 3, 4], [2, 5, 4], [2, 5, 6], [3, 5]


@pytest.mark.parametrize(("op", "attrs", "shapes", "out", "words"), [
    ("Attention", {}, [Q, [2, 5, 3], V, M], [2, 3, 6], "k has shape [2, 5, 3], expected [2, S, 4]"),
    ("Attention", {}, [Q, K, [2, 4, 6], M], [2, 3, 6], "v has shape [2, 4, 6], expected [2, 5, Ev]"),
    ("Attention", {}, [Q, K, V, [3, 4]], [2, 3, 6], "mask has shape [3, 4], which does not broadcast"),
    ("Attention", {"causal": 1}, [Q, K, V, M], [2, 3, 6], "'causal' must be true or false"),
    ("Attention", {"scale": "x"}, [Q, K, V, M], [2, 3, 6], "'scale' must be a finite number"),
    ("Attention", {"scale": None}, [Q, K, V, M], [2, 3, 6], "'scale' must be a finite number"),
    ("Attention", {"dropout": 0.1}, [Q, K, V, M], [2, 3, 6], "unknown attribute"),
    ("Attention", {}, [[4], [4], [4], []], [4], "q has shape [4], expected rank >= 2"),
    ("AttentionLogSumExp", {}, [Q, K, M], [2, 3, 1], "shape"),
    ("AttentionBackwardValue", {}, [Q, K, M, [2, 3, 1], [2, 3, 6]], [2, 5, 6],
     "lse has shape [2, 3, 1], expected [2, 3]"),
    ("AttentionBackwardQuery", {}, [Q, K, V, M, [2, 3, 6], [2, 3], [2, 3, 4]], [2, 3, 4],
     "dy has shape [2, 3, 4], expected [2, 3, 6]"),
])
def test_bad_nodes_are_refused_in_one_line(op: str, attrs: dict[str, object], shapes: list[list[int]],
                                           out: list[int], words: str) -> None:
    escaped = words.replace("[", r"\[").replace("]", r"\]")
    with pytest.raises(GraphError, match=escaped) as e:
        el.validated(el.from_dict(_doc(op, attrs, shapes, out)))
    assert str(e.value).startswith(f"node {len(shapes)}") and "\n" not in str(e.value)


def test_lse_may_be_f32_for_half_precision_but_not_otherwise() -> None:
    shapes = [Q, K, M, [2, 3], [2, 3, 6]]
    ok = _doc("AttentionBackwardValue", {}, shapes, [2, 5, 6], ["bf16", "bf16", "bf16", "f32", "bf16"])
    el.validated(el.from_dict(ok))
    bad = _doc("AttentionBackwardValue", {}, shapes, [2, 5, 6], ["f32", "f32", "f32", "f16", "f32"])
    with pytest.raises(GraphError, match="lse is f16 but q is f32"):
        el.validated(el.from_dict(bad))


# --------------------------------------------------------------------------- lowering

def attention_step(dtype: str = "f32", causal: bool = False, mask_shape: tuple[int, ...] | None = (4, 6),
                   scale: float | None = None) -> el.Graph:
    """Forward (output and lse) and the three gradients of one attention, q [2, 2, 4, 3], k/v [2, 2, 6, .]."""
    b = GraphBuilder("attention_step")
    q, k = b.input("q", [2, 2, 4, 3], dtype), b.input("k", [2, 2, 6, 3], dtype)
    v, dy = b.input("v", [2, 2, 6, 5], dtype), b.input("dy", [2, 2, 4, 5], dtype)
    mask = b.input("mask", list(mask_shape), dtype) if mask_shape is not None else b.constant(0.0, [], dtype)
    attrs: dict[str, object] = {"causal": causal} if scale is None else {"causal": causal, "scale": scale}
    out = b.op("Attention", q, k, v, mask, **attrs)
    lse = b.op("AttentionLogSumExp", q, k, mask, **attrs)
    grads = [b.op("AttentionBackwardQuery", q, k, v, mask, out, lse, dy, **attrs),
             b.op("AttentionBackwardKey", q, k, v, mask, out, lse, dy, **attrs),
             b.op("AttentionBackwardValue", q, k, mask, lse, dy, **attrs)]
    return b.build([out, lse, *grads])


def step_feeds(graph: el.Graph, dtype: str = "f32", seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for n in graph.nodes:
        if n.op == "Input":
            v = rng.standard_normal(n.shape)
            if n.attrs["name"] == "mask":
                v[1, :] = -np.inf  # a fully masked row
                v[0, 3] = -np.inf
            out[n.attrs["name"]] = apply("Cast", {"to": dtype}, [v], dtype)
    return out


def _lowers_on(graph: el.Graph, backend: str) -> dict[str, int]:
    """`graph` lowered for `backend`: every node one the backend runs, an attention op kept exactly where
    the backend has its kernel, the values those of the unlowered graph; the lowered op counts."""
    result = el.lower(graph, backend)
    target = el.load_backend(backend)
    assert all(target.runs_node(n) for n in result.graph.nodes)
    counts = result.graph.op_counts()
    for op in ATTENTION_OPS:
        assert (op in counts) == target.runs(op), op
    assert_lowering_matches(graph, result.graph, step_feeds(graph))
    return counts


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_lowers_on_every_backend(backend: str, causal: bool) -> None:
    counts = _lowers_on(attention_step(causal=causal), backend)
    if not el.load_backend(backend).runs("AttentionBackwardQuery"):
        assert counts["MatMul"] >= 5  # the scores, P v, dP, dS k, dS^T q, P^T dy (shared where equal)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f64"])
def test_attention_expansions_in_other_dtypes(dtype: str) -> None:
    graph = attention_step(dtype, causal=True)
    assert_lowering_matches(graph, el.lower(graph, "metal").graph, step_feeds(graph, dtype))


@pytest.mark.parametrize("mask_shape", [None, (2, 1, 4, 6), (6,)])
def test_no_mask_and_broadcast_masks_lower(mask_shape: tuple[int, ...] | None) -> None:
    graph = attention_step(mask_shape=mask_shape, scale=0.25)
    rng = np.random.default_rng(1)
    feeds = {n.attrs["name"]: rng.standard_normal(n.shape).astype(np.float32) for n in graph.nodes if n.op == "Input"}
    assert_lowering_matches(graph, el.lower(graph, "wgpu").graph, feeds)


def _fused_backend(tmp_path: Path) -> Path:
    """metal's file with a fused attention kernel for the forward, its lse and every gradient."""
    spec = json.loads((Path(el.__file__).parent / "backends" / "metal.json").read_text())
    spec["name"] = "metal-fused-attention"
    spec["description"] = "metal with fused attention kernels, forward and backward (a test's assumption)"
    spec["ops"] += list(ATTENTION_OPS)
    path = tmp_path / "fused.json"
    path.write_text(json.dumps(spec))
    return path


def test_a_backend_with_a_fused_backward_keeps_it_whole(tmp_path: Path) -> None:
    graph = attention_step(causal=True)
    fused = el.lower(graph, el.load_backend(str(_fused_backend(tmp_path)))).graph
    assert {op: n for op, n in fused.op_counts().items() if op.startswith("Attention")} == \
        {op: 1 for op in ATTENTION_OPS}
    assert "MatMul" not in fused.op_counts()
    metal = el.lower(graph, "metal").graph
    assert not any(op.startswith("Attention") for op in metal.op_counts()) and "MatMul" in metal.op_counts()
    assert_lowering_matches(graph, fused, step_feeds(graph))


def test_explore_shows_the_attention_expansions(tmp_path: Path) -> None:
    b = GraphBuilder("attention_backward")
    q, k = b.input("q", [2, 4, 3]), b.input("k", [2, 6, 3])
    v, dy = b.input("v", [2, 6, 5]), b.input("dy", [2, 4, 5])
    mask = b.constant(0.0, [])
    out = b.op("Attention", q, k, v, mask)
    lse = b.op("AttentionLogSumExp", q, k, mask)
    dq = b.op("AttentionBackwardQuery", q, k, v, mask, out, lse, dy)
    graph = b.build([dq])
    fused = el.load_backend(str(_fused_backend(tmp_path)))
    ex = el.explore(graph, "metal", compare=(fused,))
    assert "attn-bwd-query" in json.dumps(ex.report())
    whole = {"AttentionBackwardQuery": 1}
    on_metal, on_fused = ex.alternatives(dq), ex.alternatives(dq, fused)
    # the op kept whole is one of the forms: not runnable on metal, chosen where a kernel runs it
    assert [f["legal"] for f in on_metal if f["ops"] == whole] == [False]
    assert [f["chosen"] for f in on_fused if f["ops"] == whole] == [True]
    expanded = [f for f in on_metal if f["ops"] != whole]
    assert len(expanded) >= 2 and all(f["legal"] and f["ops"]["MatMul"] >= 2 for f in expanded)  # dS k, dP
    chosen = [f for f in on_metal if f["chosen"]]
    assert len(chosen) == 1 and chosen[0]["cost"] == min(f["cost"] for f in expanded)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_precision_with_an_f32_lse_lowers(dtype: str) -> None:
    # torch's layout for f16/bf16: the lse computed from q, k, mask cast to f32 and kept in f32
    b = GraphBuilder("half_attention")
    q, k = b.input("q", [2, 4, 3], dtype), b.input("k", [2, 6, 3], dtype)
    v, dy = b.input("v", [2, 6, 5], dtype), b.input("dy", [2, 4, 5], dtype)
    mask = b.input("mask", [4, 6], dtype)
    out = b.op("Attention", q, k, v, mask, causal=True)
    lse = b.op("AttentionLogSumExp", *(b.op("Cast", n, to="f32") for n in (q, k, mask)), causal=True)
    grads = [b.op("AttentionBackwardQuery", q, k, v, mask, out, lse, dy, causal=True),
             b.op("AttentionBackwardKey", q, k, v, mask, out, lse, dy, causal=True),
             b.op("AttentionBackwardValue", q, k, mask, lse, dy, causal=True)]
    graph = b.build([out, lse, *grads])
    for backend in ("metal", "wgpu"):
        lowered = el.lower(graph, backend).graph
        assert not any(n.op.startswith("Attention") for n in lowered.nodes)
        assert_lowering_matches(graph, lowered, step_feeds(graph, dtype))


# --------------------------------------------------------------------------- SafeSoftmax

def test_safe_softmax_is_softmax_but_zero_on_an_all_minus_inf_slice() -> None:
    x = np.array([[0.0, 1.0, -INF], [-INF, -INF, -INF], [3.0, 3.0, 3.0], [-1e4, -1e4 - 1, -INF]])
    y = f64("SafeSoftmax", {"axis": -1}, x)
    np.testing.assert_array_equal(y[1], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(np.delete(y, 1, axis=0), np.delete(f64("Softmax", {"axis": -1}, x), 1, axis=0),
                               rtol=1e-15)
    x[2, 2] = -INF  # now column 2 is all -inf too
    np.testing.assert_array_equal(f64("SafeSoftmax", {"axis": 0}, x)[:, 2], [0.0] * 4)
    assert np.all(np.isnan(f64("SafeSoftmax", {"axis": -1}, np.array([[INF, 1.0]]))))  # as Softmax, as torch


@pytest.mark.parametrize("backend", BACKENDS)
def test_safe_softmax_lowers_on_every_backend(backend: str) -> None:
    b = GraphBuilder("safe_softmax")
    x, dy = b.input("x", [3, 4, 5]), b.input("dy", [3, 4, 5])
    y = b.op("SafeSoftmax", x, axis=1)
    graph = b.build([y, b.op("SoftmaxBackward", y, dy, axis=1)])
    result = el.lower(graph, backend)
    assert ("SafeSoftmax" in result.graph.op_counts()) == el.load_backend(backend).runs("SafeSoftmax")
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((3, 4, 5)) * 10
    xv[1, :, 2] = -INF  # an all -inf slice along axis 1
    xv[2, 0, 0] = -INF
    feeds = {"x": xv.astype(np.float32), "dy": rng.standard_normal((3, 4, 5)).astype(np.float32)}
    assert_lowering_matches(graph, result.graph, feeds)


def _backward_graph(causal: bool) -> el.Graph:
    """The three attention backward ops of one q, k, v, mask, out, lse and dy (torch's backward graph)."""
    b = GraphBuilder("attention_backward")
    q, k = b.input("q", [2, 2, 4, 3]), b.input("k", [2, 2, 6, 3])
    v, dy = b.input("v", [2, 2, 6, 5]), b.input("dy", [2, 2, 4, 5])
    mask, out, lse = b.input("mask", [4, 6]), b.input("out", [2, 2, 4, 5]), b.input("lse", [2, 2, 4])
    graph = b.build([b.op("AttentionBackwardQuery", q, k, v, mask, out, lse, dy, causal=causal),
                     b.op("AttentionBackwardKey", q, k, v, mask, out, lse, dy, causal=causal),
                     b.op("AttentionBackwardValue", q, k, mask, lse, dy, causal=causal)])
    return graph


def _backward_feeds(graph: el.Graph, causal: bool) -> dict[str, np.ndarray]:
    """Feeds of `_backward_graph`, out and lse as the forward gives them (the backward ops' contract)."""
    feeds = step_feeds(graph)
    fwd = {"causal": causal}
    args = [feeds[n].astype(np.float64) for n in ("q", "k", "v", "mask")]
    feeds["out"] = f64("Attention", fwd, *args).astype(np.float32)
    feeds["lse"] = f64("AttentionLogSumExp", fwd, args[0], args[1], args[3]).astype(np.float32)
    return feeds


@pytest.mark.parametrize("causal", [False, True])
def test_a_backward_graph_recomputes_the_probabilities_from_the_saved_lse(causal: bool) -> None:
    # torch's backward graph gets out and lse as inputs: on wgpu (no Softmax kernel) P = e / sum(e),
    # e = exp(t - lse), needs no maximum: its row sum and the softmax backward's are the only reductions
    # (metal may take its Softmax kernel and a maximum instead: two reductions too)
    graph = _backward_graph(causal)
    lowered = el.lower(graph, "wgpu").graph
    assert [n.attrs["op"] for n in lowered.nodes if n.op == "Reduce"] == ["Sum", "Sum"]
    assert len([n for n in el.lower(graph, "metal").graph.nodes if n.op == "Reduce"]) == 2
    feeds = _backward_feeds(graph, causal)
    assert_lowering_matches(graph, lowered, feeds)


@pytest.mark.parametrize("causal", [False, True])
def test_the_lowered_backward_is_blind_to_the_rounding_of_the_saved_lse(causal: bool) -> None:
    # lse rounded to float32 is off by up to half an ulp of |lse| (8e-6 near 200, where OpInfo's logits
    # are), which scales a whole row of exp(t - lse): the lse form divides by the row's sum, so the
    # gradients taken with lse and with lse shifted by 1e-3 agree to float32's rounding (P = exp(t - lse)
    # alone gave results 1e-3 apart: dq 2.6x eager's error from float64 on that OpInfo sample)
    graph = _backward_graph(causal)
    lowered = el.lower(graph, "wgpu").graph
    assert not any(n.op == "Reduce" and n.attrs["op"] == "Max" for n in lowered.nodes)  # the lse form
    feeds = _backward_feeds(graph, causal)
    shifted = dict(feeds, lse=(feeds["lse"] + np.float32(1e-3)).astype(np.float32))
    for a, b_ in zip(evaluate(lowered, feeds), evaluate(lowered, shifted)):
        np.testing.assert_allclose(b_, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("causal", [False, True])
def test_rank_two_attention_lowers(causal: bool) -> None:
    # no batch dims: q [L, E], k [S, E]; the derived fields (k^T's perm, lse's shapes) follow the rank
    b = GraphBuilder("rank2")
    q, k, v, dy = b.input("q", [4, 3]), b.input("k", [6, 3]), b.input("v", [6, 2]), b.input("dy", [4, 2])
    m = b.constant(0.0, [])
    out, lse = b.op("Attention", q, k, v, m, causal=causal), b.op("AttentionLogSumExp", q, k, m, causal=causal)
    graph = b.build([out, lse, b.op("AttentionBackwardQuery", q, k, v, m, out, lse, dy, causal=causal),
                     b.op("AttentionBackwardKey", q, k, v, m, out, lse, dy, causal=causal),
                     b.op("AttentionBackwardValue", q, k, m, lse, dy, causal=causal)])
    rng = np.random.default_rng(0)
    feeds = {n.attrs["name"]: rng.standard_normal(n.shape).astype(np.float32) for n in graph.nodes if n.op == "Input"}
    for backend in ("metal", "tpu"):
        assert_lowering_matches(graph, el.lower(graph, backend).graph, feeds)


# --------------------------------------------------------------------------- grouped-query attention (version 3)

def _grouped(seed: int, groups: int, rows: int = 4, cols: int = 6) -> tuple[np.ndarray, ...]:
    """q [2, 2g, L, 3] against k [2, 2, S, 3], v [2, 2, S, 5]; a [L, S] mask; dy."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, 2 * groups, rows, 3)), rng.standard_normal((2, 2, cols, 3))
    v, dy = rng.standard_normal((2, 2, cols, 5)), rng.standard_normal((2, 2 * groups, rows, 5))
    mask = rng.standard_normal((rows, cols))
    mask[1, -1] = -np.inf
    return q, k, v, mask, dy


@pytest.mark.parametrize("groups", [1, 2, 3])
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_attention_is_attention_on_k_and_v_repeated_per_group(groups: int, causal: bool) -> None:
    q, k, v, mask, dy = _grouped(6, groups)
    kx, vx = np.repeat(k, groups, axis=1), np.repeat(v, groups, axis=1)  # q's head h reads kv head h // g
    for b, h in ((0, 0), (1, 2 * groups - 1)):
        out, lse = textbook(q[b, h], k[b, h // groups], v[b, h // groups], mask, 1 / math.sqrt(3), causal)
        np.testing.assert_allclose(f64("Attention", {"causal": causal, "groups": groups}, q, k, v, mask)[b, h], out,
                                   rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(f64("AttentionLogSumExp", {"causal": causal, "groups": groups}, q, k, mask)[b, h],
                                   lse, rtol=1e-13, atol=1e-14)
    attrs, plain = {"causal": causal, "groups": groups}, {"causal": causal}
    out, lse = f64("Attention", plain, q, kx, vx, mask), f64("AttentionLogSumExp", plain, q, kx, mask)
    np.testing.assert_array_equal(f64("AttentionBackwardQuery", attrs, q, k, v, mask, out, lse, dy),
                                  f64("AttentionBackwardQuery", plain, q, kx, vx, mask, out, lse, dy))
    dk = f64("AttentionBackwardKey", plain, q, kx, vx, mask, out, lse, dy).reshape(2, 2, groups, 6, 3).sum(axis=2)
    dv = f64("AttentionBackwardValue", plain, q, kx, mask, lse, dy).reshape(2, 2, groups, 6, 5).sum(axis=2)
    np.testing.assert_allclose(f64("AttentionBackwardKey", attrs, q, k, v, mask, out, lse, dy), dk, rtol=1e-14)
    np.testing.assert_allclose(f64("AttentionBackwardValue", attrs, q, k, mask, lse, dy), dv, rtol=1e-14)


@pytest.mark.parametrize("attrs", [{"groups": 2}, {"groups": 2, "causal": True, "scale": 0.4}])
def test_grouped_backward_ops_are_the_gradients(attrs: dict[str, object]) -> None:
    q, k, v, mask, dy = _grouped(7, 2, rows=3, cols=4)

    def loss(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> float:
        return float(np.sum(f64("Attention", attrs, q, k, v, mask) * dy))

    out, lse = f64("Attention", attrs, q, k, v, mask), f64("AttentionLogSumExp", attrs, q, k, mask)
    want = (numeric_grad(lambda x: loss(x, k, v), q), numeric_grad(lambda x: loss(q, x, v), k),
            numeric_grad(lambda x: loss(q, k, x), v))
    got = (f64("AttentionBackwardQuery", attrs, q, k, v, mask, out, lse, dy),
           f64("AttentionBackwardKey", attrs, q, k, v, mask, out, lse, dy),
           f64("AttentionBackwardValue", attrs, q, k, mask, lse, dy))
    for name, g, w in zip("qkv", got, want):
        assert g.shape == w.shape, name  # the key and value gradients are k's and v's shapes
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8, err_msg=name)


QG, KG, VG = [2, 4, 3, 4], [2, 2, 5, 4], [2, 2, 5, 6]


@pytest.mark.parametrize(("op", "attrs", "shapes", "out", "words"), [
    ("Attention", {"groups": 3}, [QG, KG, VG, []], [2, 4, 3, 6], "q has 4 heads, which groups 3 does not divide"),
    ("Attention", {"groups": 4}, [QG, KG, VG, []], [2, 4, 3, 6],
     "k has shape [2, 2, 5, 4], expected [2, 1, S, 4] for q [2, 4, 3, 4] in groups of 4"),
    ("Attention", {}, [QG, KG, VG, []], [2, 4, 3, 6], "k has shape [2, 2, 5, 4], expected [2, 4, S, 4]"),
    ("Attention", {"groups": 2}, [QG, KG, [2, 4, 5, 6], []], [2, 4, 3, 6],
     "v has shape [2, 4, 5, 6], expected [2, 2, 5, Ev]"),
    ("Attention", {"groups": 2}, [QG, KG, VG, [2, 3, 5]], [2, 4, 3, 6],
     "mask has shape [2, 3, 5], which does not broadcast to the scores [2, 4, 3, 5]"),  # a mask per kv head
    ("Attention", {"groups": 1}, [[3, 4], [5, 4], [5, 6], []], [3, 6],
     "expected rank >= 3 ([..., H, L, E]) with groups"),
    ("Attention", {"groups": 0}, [QG, KG, VG, []], [2, 4, 3, 6], "'groups' must be a positive integer"),
    ("AttentionBackwardKey", {"groups": 2}, [QG, KG, VG, [], [2, 4, 3, 6], [2, 4, 3], [2, 4, 3, 6]], [2, 4, 5, 4],
     "declared shape [2, 4, 5, 4], but the inputs give [2, 2, 5, 4]"),  # dk is k's shape
    ("AttentionBackwardValue", {"groups": 2}, [QG, [2, 3, 5, 4], [], [2, 4, 3], [2, 4, 3, 6]], [2, 2, 5, 6],
     "k has shape [2, 3, 5, 4], expected [2, 2, S, 4]"),
])
def test_bad_grouped_nodes_are_refused_in_one_line(op: str, attrs: dict[str, object], shapes: list[list[int]],
                                                   out: list[int], words: str) -> None:
    escaped = words.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(").replace(")", r"\)")
    d = _doc(op, attrs, shapes, out)
    d["version"] = 3
    with pytest.raises(GraphError, match=escaped) as e:
        el.validated(el.from_dict(d))
    assert str(e.value).startswith(f"node {len(shapes)}") and "\n" not in str(e.value)


def test_groups_is_new_in_version_3() -> None:
    d = _doc("Attention", {"groups": 2}, [QG, KG, VG, []], [2, 4, 3, 6])
    with pytest.raises(GraphError, match="attribute 'groups' of Attention is new in version 3") as e:
        el.validated(el.from_dict(d))
    assert str(e.value).startswith("node 4")
    d["version"] = 3
    graph = el.validated(el.from_dict(d))
    assert graph.to_dict()["version"] == 3 and el.from_dict(graph.to_dict()).node(4).attrs == {"groups": 2}


def grouped_step(dtype: str = "f32", causal: bool = False, mask_shape: tuple[int, ...] | None = (4, 6),
                 groups: int = 2) -> el.Graph:
    """attention_step with q of 2g heads against k, v of 2."""
    b = GraphBuilder("grouped_step")
    q, k = b.input("q", [2, 2 * groups, 4, 3], dtype), b.input("k", [2, 2, 6, 3], dtype)
    v, dy = b.input("v", [2, 2, 6, 5], dtype), b.input("dy", [2, 2 * groups, 4, 5], dtype)
    mask = b.input("mask", list(mask_shape), dtype) if mask_shape is not None else b.constant(0.0, [], dtype)
    attrs: dict[str, object] = {"causal": causal, "groups": groups}
    out = b.op("Attention", q, k, v, mask, **attrs)
    lse = b.op("AttentionLogSumExp", q, k, mask, **attrs)
    grads = [b.op("AttentionBackwardQuery", q, k, v, mask, out, lse, dy, **attrs),
             b.op("AttentionBackwardKey", q, k, v, mask, out, lse, dy, **attrs),
             b.op("AttentionBackwardValue", q, k, mask, lse, dy, **attrs)]
    return b.build([out, lse, *grads])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_attention_lowers_on_every_backend(backend: str, causal: bool) -> None:
    _lowers_on(grouped_step(causal=causal), backend)


@pytest.mark.parametrize("mask_shape", [None, (2, 1, 1, 6), (6,)])
def test_grouped_attention_without_a_row_mask_folds_q_instead_of_repeating_k_and_v(
        mask_shape: tuple[int, ...] | None) -> None:
    # not causal, a mask constant along heads and rows: q [2, 4, 4, 3] read as [2, 2, 8, 3] costs less than
    # k and v repeated (no Expand, no sum over the group); causal, the rows' order matters: k, v repeated
    for causal in (False, True):
        graph = grouped_step(causal=causal, mask_shape=mask_shape)
        result = el.lower(graph, "wgpu")
        expands = [n.shape for n in result.graph.nodes if n.op == "Expand" and len(n.shape) == 5]
        assert (expands == []) != causal, (causal, expands)
        rng = np.random.default_rng(3)
        feeds = {n.attrs["name"]: rng.standard_normal(n.shape).astype(np.float32) for n in graph.nodes
                 if n.op == "Input"}
        if mask_shape is not None:
            feeds["mask"].reshape(-1)[0] = -np.inf
        assert_lowering_matches(graph, result.graph, feeds)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f64"])
@pytest.mark.parametrize("groups", [1, 4])
def test_grouped_attention_expansions_in_other_dtypes(dtype: str, groups: int) -> None:
    graph = grouped_step(dtype, causal=True, groups=groups)
    assert_lowering_matches(graph, el.lower(graph, "metal").graph, step_feeds(graph, dtype))
