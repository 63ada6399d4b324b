"""The local search's first-pass filter never drops an alternative the search's own check would try."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.extract import Costs, Selection
from egraph_lower.extract.local_search import promising
from egraph_lower.extract.pricing import Pricer
from egraph_lower.extract.walks import children_first
from egraph_lower.lower import extract_for, saturate_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from conv import resnet18_step  # noqa: E402
from generate import chain, mlp, wide  # noqa: E402


def joint() -> el.Graph:
    b = GraphBuilder("joint")
    x, dy = b.input("x", [16, 16]), b.input("dy", [16, 16])
    y = b.act("Tanh", x)
    return b.build([y, b.act_backward("Tanh", x, dy), b.act_backward("Sigmoid", x, dy), b.act_backward("Gelu", y, dy)])


@pytest.mark.parametrize("backend", ["metal", "wgpu", "tpu"])
@pytest.mark.parametrize("make", [lambda: mlp(3, batch=4, width=8), lambda: wide(12), lambda: chain(40), joint])
def test_the_filter_keeps_every_alternative_the_check_accepts(make, backend: str) -> None:  # type: ignore[no-untyped-def]
    target = el.load_backend(backend)
    s = saturate_graph(make(), [target])
    t = s.tables
    kernel = Costs(t, s.metas, target, s.decoded).array()
    anchored = np.zeros(t.n_classes, dtype=bool)
    anchored[list(t.ref.values())] = True
    priced = Pricer(t, kernel).price(anchored)  # the default extraction's start
    assert priced is not None
    greedy, best = priced.choice.tolist(), priced.best.tolist()
    order = children_first(t, priced.choice, s.roots)
    choice = {c: greedy[c] for c in order}
    state = Selection(t, kernel.tolist(), greedy, choice, s.roots)
    members = t.nodes_by_class()
    legal = {c: [n for n in members[c] if kernel[n] < np.inf] for c in state.choice}
    legal = {c: ns for c, ns in legal.items() if len(ns) > 1}
    candidates = np.zeros(t.n_nodes, dtype=bool)
    candidates[[n for ns in legal.values() for n in ns]] = True
    kept = promising(t, Pricer(t, kernel), kernel, best, state, candidates)

    def adds(k: int) -> float:  # what selecting k adds: its first-pass sub-DAG as a tree, selected classes free
        if k in state.choice:
            return 0.0
        return float(kernel[greedy[k]]) + sum(adds(j) for j in set(t.children[greedy[k]]))

    checked = 0
    for c, alternatives in legal.items():
        cur = state.choice[c]
        own = kernel[cur] + sum(best[k] for k in set(t.children[cur]) if state.refs[k] == 1)
        for n in alternatives:
            kids = set(t.children[n])
            if n == cur or any(greedy[k] < 0 and k not in state.choice for k in kids):
                continue
            if kernel[n] + sum(adds(k) for k in kids) < own:
                checked += 1
                assert n in kept.get(c, ()), (c, n)
    assert sum(map(len, kept.values())) <= sum(map(len, legal.values()))
    assert checked or make is joint  # (the joint graph's new-work choice has nothing to try)


def test_a_switch_that_gains_only_with_what_it_needs_chosen_again_is_found() -> None:
    # wgpu, ResNet-18's weight gradients: the convolution form is the cheapest at 512 channels only with
    # the convolution it needs unfolded by conv-im2col, not as the start prices that class alone
    backend = el.load_backend("wgpu")
    s = saturate_graph(resnet18_step(), [backend])
    greedy, exact = (extract_for(s, backend, how)[0] for how in ("greedy", "exact"))
    assert exact.optimal
    assert greedy.cost == pytest.approx(exact.cost, rel=1e-12)
