"""`Selection`: switching a class's e-node keeps the reference counts and the DAG cost exact, and undoes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.extract import Costs, Selection, dag_cost, tree_pass
from egraph_lower.egraph.tables import Tables
from egraph_lower.extract.walks import reachable
from egraph_lower.lower import saturate_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from generate import mlp, wide  # noqa: E402


def users(t: Tables, choice: dict[int, int], roots: list[int]) -> dict[int, int]:
    """Per class the roots reach through `choice`: how many of the chosen e-nodes use it."""
    users: dict[int, int] = {}
    for c in reachable(roots, lambda c: set(t.children[choice[c]])):
        for k in set(t.children[choice[c]]):
            users[k] = users.get(k, 0) + 1
    return users


@pytest.mark.parametrize("backend", ["metal", "wgpu"])
@pytest.mark.parametrize("make", [lambda: mlp(2, batch=4, width=8), lambda: wide(6)])
def test_a_switch_changes_the_cost_by_what_it_says_and_undo_restores(  # type: ignore[no-untyped-def]
        make, backend: str) -> None:
    target = el.load_backend(backend)
    s = saturate_graph(make(), [target])
    t, roots = s.tables, s.roots
    kernel = Costs(t, s.metas, target, s.decoded).array()
    g = tree_pass(t, kernel, roots)
    choice = {c: g.choice[c] for c in reachable(roots, lambda c: t.children[g.choice[c]])}
    sel = Selection(t, kernel.tolist(), g.choice, choice, roots)
    members = t.nodes_by_class()
    tried = 0
    for c in list(choice):
        for n in members[c]:
            if n == choice[c] or kernel[n] == np.inf or any(g.choice[k] < 0 for k in t.children[n]):
                continue
            if c in t.children[n]:
                continue  # a form needing its own value: a cycle (the local search refuses those)
            before, refs = dict(choice), sel.ref_counts().copy()
            sel.keep()
            delta = sel.switch(c, n)
            reach = users(t, choice, roots)
            assert set(choice) == set(reachable(roots, lambda c: t.children[choice[c]]))  # exactly what is needed
            assert delta == pytest.approx(dag_cost(kernel, choice) - dag_cost(kernel, before), abs=1e-6)
            counts = sel.ref_counts()
            assert all(counts[k] % (1 << 20) == u for k, u in reach.items())  # (the outputs' counts start high)
            sel.undo()
            assert choice == before and np.array_equal(sel.ref_counts(), refs)
            tried += 1
    assert tried > 0
