"""The new-work pricing that starts the default extraction, on hand-made e-graphs."""

from __future__ import annotations

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.graph import Graph
from egraph_lower.extract.pricing import price
from egraph_lower.extract.walks import Cycle, children_first
from egraph_lower.build import GraphBuilder
from egraph_lower.egraph.tables import MAX_ARITY, Tables

INF = np.inf


def tables(enodes: list[tuple[int, tuple[int, ...]]], ref: dict[int, int] | None = None) -> Tables:
    """E-nodes as (class, child classes); every e-node its own signature."""
    kids = np.full((len(enodes), MAX_ARITY), -1, dtype=np.int32)
    for i, (_, ks) in enumerate(enodes):
        kids[i, :len(ks)] = ks
    eclass = np.array([c for c, _ in enodes], dtype=np.int32)
    return Tables(sig_array=np.arange(len(enodes), dtype=np.int32), sigs=[("X", (i,)) for i in range(len(enodes))],
                  kids_array=kids, eclass_array=eclass, n_classes=int(eclass.max()) + 1, ref=ref or {})


def anchors(t: Tables, *classes: int) -> np.ndarray:
    a = np.zeros(t.n_classes, dtype=bool)
    a[list(classes)] = True
    return a


def test_anchored_children_are_free_and_new_ones_are_paid() -> None:
    # class 0: a leaf (anchored); class 2 (anchored) is either e-node 2 = f(0) at 5,
    # or e-node 3 = g(1) at 1, where class 1 is new: e-node 1 = h(0) at 3 -> 1 + 3 = 4 < 5
    t = tables([(0, ()), (1, (0,)), (2, (0,)), (2, (1,))])
    p = price(t, np.array([0.0, 3.0, 5.0, 1.0]), anchors(t, 0, 2))
    assert p is not None
    assert p.choice.tolist() == [0, 1, 3]
    assert p.best.tolist() == [0.0, 3.0, 4.0]


def test_a_child_used_twice_is_paid_once() -> None:
    # e-node 2 = f(1, 1) at 1, class 1 new at 3: 1 + 3, not 1 + 6; e-node 3 = g(0) at 5
    t = tables([(0, ()), (1, (0,)), (2, (1, 1)), (2, (0,))])
    p = price(t, np.array([0.0, 3.0, 1.0, 5.0]), anchors(t, 0, 2))
    assert p is not None and p.choice[2] == 2 and p.best[2] == 4.0


def test_an_anchor_with_no_legal_form_is_avoided_where_another_form_exists() -> None:
    # class 1 (anchored) cannot run at all; class 2 is f(1) at 1 (cheap, but needs class 1)
    # or g(0) at 9: the rounds first take f(1) with class 1 free, then learn class 1 has no form
    t = tables([(0, ()), (1, (0,)), (2, (1,)), (2, (0,))])
    p = price(t, np.array([0.0, INF, 1.0, 9.0]), anchors(t, 0, 1, 2))
    assert p is not None
    assert p.choice.tolist() == [0, -1, 3]


def test_ties_go_to_the_lowest_enode() -> None:
    t = tables([(0, ()), (1, (0,)), (1, (0,))])
    p = price(t, np.array([0.0, 2.0, 2.0]), anchors(t, 0, 1))
    assert p is not None and p.choice[1] == 1


def test_a_choice_is_settled_children_first_and_its_cycles_found() -> None:
    t = tables([(0, ()), (1, (0,)), (2, (1, 0))])
    assert children_first(t, np.array([0, 1, 2]), [2]) == [0, 1, 2]
    cyclic = tables([(0, (1,)), (1, (0,)), (1, ())])
    with pytest.raises(Cycle):
        children_first(cyclic, np.array([0, 1]), [0])
    assert children_first(cyclic, np.array([0, 2]), [0]) == [1, 0]


def chain(n: int) -> Graph:
    b = GraphBuilder(f"deep{n}")
    x = b.input("x", [4])
    for i in range(n):
        x = b.relu_backward(x, x) if i % 2 else b.act_backward("Sigmoid", x, x)
    return b.build([x])


def test_deep_chains_are_priced_op_by_op() -> None:
    """Tree costs double with every level of a chain whose ops read their input twice
    (inf after about a thousand levels, where every choice ties); new-work prices stay the
    cost of one op's expansion, so a 1,500-op chain costs 750 times a 2-op one."""
    deep, short = el.lower(chain(1500), "metal"), el.lower(chain(2), "metal")
    assert not any(n.op in ("ReluBackward", "ActivationBackward") for n in deep.graph.nodes)
    assert deep.report.after["cost"] == pytest.approx(750 * short.report.after["cost"])
