"""Provenance's grouping of classes by local shape, against its definition."""

from __future__ import annotations

from importlib import resources
from typing import Any

import numpy as np
import pytest

from egraph_lower import backends
from egraph_lower.document import load_graph
from egraph_lower.lower import saturate_graph
from egraph_lower.provenance import Matcher


def saturated_wgpu() -> Any:
    graph = load_graph(str(resources.files("egraph_lower") / "examples" / "mlp_step.json"))
    return saturate_graph(graph, [backends.load("wgpu")])


@pytest.mark.parametrize("wide", [16, 2, 1])  # matrix rows, a mix with tuples, tuples only
def test_classes_share_a_shape_id_exactly_when_their_signature_multisets_match(wide: int) -> None:
    s = saturated_wgpu()
    t = s.tables
    m = Matcher(t, s.rules, wide=wide)
    present = np.unique(t.eclass_array)
    asked = np.delete(present, np.s_[::7])
    shape = m.shape_ids(np.concatenate([asked, asked[:5]]))  # repeats are fine
    multiset = {c: tuple(sorted(t.sig[n] for n in m.nodes[c])) for c in asked.tolist()}
    assert len({len(v) for v in multiset.values()}) > 2  # classes of several sizes
    by_id: dict[int, tuple[int, ...]] = {}
    for c, key in multiset.items():
        assert by_id.setdefault(int(shape[c]), key) == key
    assert len(by_id) == len(set(multiset.values()))
    others = np.setdiff1d(np.arange(t.n_classes), asked)
    assert (shape[others] == -1).all()


@pytest.mark.parametrize("wide", [16, 2, 1])
def test_rules_of_many_classes_is_rule_of_each(wide: int) -> None:
    s = saturated_wgpu()
    t = s.tables
    members = Matcher(t, s.rules).nodes
    classes = np.array([c for c in range(t.n_classes) if len(members[c]) > 1], dtype=np.int64)
    chosen = np.array([members[c][-1] for c in classes.tolist()], dtype=np.int64)  # one e-node of each
    got = Matcher(t, s.rules, wide=wide).rules_of(classes, chosen)
    one_by_one = Matcher(t, s.rules)
    assert got == [one_by_one.rule_of(c, n) for c, n in zip(classes.tolist(), chosen.tolist())]
    assert any(r is not None for r in got)  # some chosen e-nodes were made by a rule


def test_the_order_of_a_class_s_enodes_does_not_matter() -> None:
    from egraph_lower.egraph.tables import MAX_ARITY, Tables

    # classes 0 and 1 hold signatures {5, 7} in opposite e-node order; class 2 holds {5, 5}; class 3 {7}
    eclass = np.array([0, 0, 1, 1, 2, 2, 3], dtype=np.int32)
    sig = np.array([5, 7, 7, 5, 5, 5, 7], dtype=np.int32)
    t = Tables(sig_array=sig, sigs=[("X", (i,)) for i in range(8)], kids_array=np.full((7, MAX_ARITY), -1, dtype=np.int32),
               eclass_array=eclass, n_classes=4)
    shape = Matcher(t, []).shape_ids(np.arange(4))
    assert shape[0] == shape[1] and len({shape[0], shape[2], shape[3]}) == 3
