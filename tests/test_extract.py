"""Extraction quality: exact <= greedy <= tree, greedy close to exact, and the exact extractor's limits."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.extract import distinct_rows
from egraph_lower.lower import convert_back, extract_for, saturate_graph
from support import assert_lowering_matches, feeds_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from generate import mlp, wide  # noqa: E402

pytest.importorskip("scipy")


def costs(graph: el.Graph, backend: str) -> dict[str, float]:
    target = el.load_backend(backend)
    s = saturate_graph(graph, [target])
    return {m: extract_for(s, target, m)[0].cost for m in ("tree", "greedy", "exact")}


@pytest.mark.parametrize("backend", ["metal", "wgpu", "mlx"])
@pytest.mark.parametrize("make", [lambda: mlp(3, batch=4, width=8), lambda: wide(12)])
def test_exact_greedy_tree_order(make, backend: str) -> None:  # type: ignore[no-untyped-def]
    c = costs(make(), backend)
    assert c["exact"] <= c["greedy"] + 1e-9 <= c["tree"] + 2e-9
    assert c["greedy"] <= c["exact"] * 1.01, c


def test_shared_forward_value_beats_tree_cost() -> None:
    """sigmoid(x) is an output anyway: the backward must reuse it even where, priced on its own,
    the route through exp looks cheaper (a backend whose Sigmoid kernel is dear)."""
    from egraph_lower.build import GraphBuilder

    b = GraphBuilder("shared")
    x, dy = b.input("x", [64, 64]), b.input("dy", [64, 64])
    graph = b.build([b.act("Sigmoid", x), b.act_backward("Sigmoid", x, dy)])
    doc = {"name": "dear-sigmoid", "ops": ["Input", "Param", "Constant", "Activation", "Binary", "Compare", "Where"],
           "activation_kinds": "all", "cost": {"launch": 1.0, "byte": 0.0, "flop": 1.0, "view": 0.0,
                                                "weights": {"Activation.Sigmoid": 30.0}}}
    target = el.backends.from_dict(doc)
    s = saturate_graph(graph, [target])
    tree, greedy, exact = (extract_for(s, target, m)[0] for m in ("tree", "greedy", "exact"))
    assert greedy.cost == pytest.approx(exact.cost)
    assert greedy.cost < tree.cost  # the tree pass alone prices sigmoid twice and takes the exp route
    lowered = convert_back(s, greedy)
    assert lowered.op_counts().get("Activation") == 1  # one sigmoid, shared
    assert_lowering_matches(graph, lowered, feeds_for(graph, np.random.default_rng(0)))


def test_exact_from_the_command_line() -> None:
    graph = el.load_graph(el.__path__[0] + "/examples/mlp_step.json")
    exact = el.lower(graph, "wgpu", extractor="exact")
    greedy = el.lower(graph, "wgpu")
    assert exact.report.after["cost"] <= greedy.report.after["cost"] + 1e-9


def test_unknown_extractor() -> None:
    graph = el.load_graph(el.__path__[0] + "/examples/mlp_step.json")
    with pytest.raises(el.LowerError, match="unknown extractor"):
        el.lower(graph, "metal", extractor="fastest")


def test_an_unsound_rule_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule that merges values of different dtypes must fail the lowering loudly."""
    from egraph_lower import rules
    from egraph_lower.build import GraphBuilder
    from egraph_lower.rules.dsl import rule

    bad = rule("sigmoid-bwd-wrong", "not an identity", "(Backward.Sigmoid x dy)", "(> x dy)", group="backward")
    monkeypatch.setattr(rules, "select", lambda missing=None, present=None, extra=(): (bad,))
    b = GraphBuilder("bad")
    x, dy = b.input("x", [4]), b.input("dy", [4])
    graph = b.build([b.act_backward("Sigmoid", x, dy)])
    with pytest.raises(el.IllegalGraphError, match="unsound"):
        el.lower(graph, "metal")


@pytest.mark.parametrize("high", [3, 1 << 20, 1 << 40])  # packed exactly, packed, too wide to pack
def test_distinct_rows_are_numpys_unique_rows(high: int) -> None:
    rng = np.random.default_rng(high)
    a = rng.integers(-2, high, size=(500, 1))
    a[::7] = -2  # repeats
    b = rng.integers(-1, 3, size=(500, 3))
    rows, inverse = distinct_rows(a[:, 0], b)
    whole = np.column_stack([a, b])
    assert np.array_equal(rows[inverse], whole)
    assert len(rows) == len(np.unique(whole, axis=0))


def test_distinct_rows_of_nothing() -> None:
    rows, inverse = distinct_rows(np.empty(0, dtype=np.int64), np.empty((0, 2), dtype=np.int64))
    assert rows.shape == (0, 3) and inverse.shape == (0,)


def test_the_exact_extractor_says_when_it_proved_its_choice_optimal() -> None:
    graph = el.load_graph(el.__path__[0] + "/examples/mlp_step.json")
    report = el.lower(graph, "wgpu", extractor="exact").report
    assert report.to_dict()["extraction"]["optimal"] is True
    assert report.extraction["status"].startswith("status 0:")
    assert "(exact: proven optimal)" in report.summary()
    default = el.lower(graph, "wgpu").report
    assert default.to_dict()["extraction"] == {"extractor": "greedy", "optimal": False, "status": None}
    assert "optimal" not in default.summary()


def test_a_solver_stopped_short_is_not_reported_optimal(monkeypatch: pytest.MonkeyPatch) -> None:
    """What SciPy returns when the time limit cuts HiGHS short with a feasible choice in hand."""
    import scipy.optimize

    solve = scipy.optimize.milp

    def stopped(*args, **kwargs):  # type: ignore[no-untyped-def]
        res = solve(*args, **kwargs)
        res.status, res.success, res.message = 1, False, "Time limit reached. (mocked)"
        return res

    monkeypatch.setattr(scipy.optimize, "milp", stopped)
    graph = el.load_graph(el.__path__[0] + "/examples/mlp_step.json")
    report = el.lower(graph, "wgpu", extractor="exact").report
    assert report.to_dict()["extraction"] == {"extractor": "exact", "optimal": False,
                                              "status": "status 1: Time limit reached. (mocked)"}
    after = next(line for line in report.summary().splitlines() if line.lstrip().startswith("after"))
    assert "NOT proven optimal" in after and "Time limit reached" in after
    explored = el.explore(graph, "wgpu", compare=("metal",), extractor="exact")
    assert explored.report()["extraction"]["optimal"] is False
    assert explored.report()["compare"]["metal"]["optimal"] is False
    assert "NOT proven optimal" in explored.summary()
