"""The tree pass: each e-class's e-node of least tree cost, bottom up.

An e-node's tree cost is its kernel plus the tree costs of its distinct child
classes (a value used twice below is counted twice further up). It is the `tree`
extractor, the start of the default one where the new-work pricing cannot decide,
what the integer program is set up from, and what explore's alternatives fall back
on for classes an extraction left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..egraph.tables import Tables
from .costs import dag_cost
from .selection import Extraction
from .walks import post_order, reachable


@dataclass
class TreePass:
    """The tree pass over every class the roots reach."""

    node_cost: list[float | None]  # kernel cost per e-node, None where the backend cannot run it
    choice: list[int]  # least tree-cost e-node per class, -1 where none is legal
    best: list[float]  # that tree cost (-1.0 where none)
    settled: list[int]  # classes in the order they settled: children before parents


def tree_pass(t: Tables, kernel: np.ndarray, roots: Sequence[int]) -> TreePass:
    """The least tree cost of every class the roots reach. The classes settle depth first
    (`walks.post_order` over the children of the e-nodes the backend runs): a class settles
    once all the classes below it have. An e-node that would close a cycle (a child not
    settled yet when its class settles) is passed over."""
    members = t.nodes_by_class()
    children = t.children
    node_cost = [None if c == np.inf else c for c in kernel.tolist()]
    order, starts = members.order, members.starts

    def below(c: int) -> Iterable[int]:
        a, b = starts[c], starts[c + 1]
        if b - a == 1:
            n = order[a]
            return children[n] if node_cost[n] is not None else ()
        return {k for n in order[a:b] if node_cost[n] is not None for k in children[n]}

    settled = post_order(roots, below, t.n_classes)
    choice: list[int] = [-1] * t.n_classes
    # value[c]: the settled tree cost of c; None while unsettled, or without a legal form
    value: list[float | None] = [None] * t.n_classes
    for c in settled:
        top, pick = 0.0, -1
        for n in order[starts[c]:starts[c + 1]]:
            cost = node_cost[n]
            if cost is None:
                continue
            ks = children[n]
            if len(ks) == 1:
                v = value[ks[0]]
                if v is None:
                    continue  # no legal form below, or a cycle back to a class not settled yet
                total = cost + v
            elif ks:
                vs = [value[k] for k in set(ks)]
                if None in vs:
                    continue
                total = cost + sum(vs)  # type: ignore[arg-type]
            else:
                total = cost
            if pick < 0 or total < top or (total == top and n < pick):
                top, pick = total, n
        if pick >= 0:
            value[c], choice[c] = top, pick
    best = [-1.0 if v is None else v for v in value]
    return TreePass(node_cost, choice, best, settled)


def collect(t: Tables, roots: Iterable[int], pick: Callable[[int], int],
            node_cost: Sequence[float | None]) -> Extraction:
    """The extraction that takes e-node `pick(c)` for each class the roots reach (`walks.reachable`,
    in whose order the choice is kept), with its DAG cost."""
    chosen: dict[int, int] = {}

    def through(c: int) -> Sequence[int]:
        n = chosen[c] = pick(c)
        return t.children[n]

    reachable(roots, through)
    return Extraction(chosen, dag_cost(node_cost, chosen))  # type: ignore[arg-type]
