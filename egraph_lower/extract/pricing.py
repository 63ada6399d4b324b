"""The new-work pricing, where the default extractor starts: each e-node priced by the new work
it adds, in NumPy rounds.

The tree pass (`tree.tree_pass`, the `tree` extractor) prices an e-node as
its kernel plus the tree costs of its child classes. On a deep graph that is
meaningless: a value used twice below is counted twice at every level, so tree
costs double with depth and are infinite a few thousand nodes down, where every
choice becomes a tie. It is also sequential: a class waits for every class below it.

This pass instead takes the values of the input graph as given (the classes that
hold an original node: they are computed anyway, whatever each of them is computed
as) and prices each e-node as its kernel plus the new classes it needs, down to
those anchors:

    value(c) = 0                                       for an anchored child class
    best(c)  = min over legal e-nodes n of c of  kernel(n) + sum of value(k), k a distinct child of n
    value(c) = best(c)                                 otherwise

New classes only ever sit a few rules deep between anchors, so the fixpoint takes
a handful of rounds, each one vectorised over every e-node. An anchored class that
turns out to have no legal form (`best` infinite) is then priced infinite for its
users and the rounds go on, so infeasibility spreads; deep spreading (a graph whose
bottom the backend cannot run) or a cycle in the choice hands over to the tree
pass, which names the node at fault.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..egraph.tables import Tables, distinct_kids

MAX_ROUNDS = 64  # rounds of the fixpoint, per spreading of infeasibility
MAX_SPREADS = 8  # times infeasible anchors are re-priced before handing over


@dataclass
class Priced:
    choice: np.ndarray  # per class: its cheapest legal e-node, -1 where none
    best: np.ndarray  # that e-node's new-work cost (inf where none)


class Pricer:
    """The new-work pricing of one e-graph for one backend's kernels, set up once: the e-nodes
    the backend runs, grouped by class, and their distinct children. `price` then runs the
    rounds for any choice of free (anchored) classes."""

    def __init__(self, t: Tables, kernel: np.ndarray) -> None:
        self.n_classes, self.n_nodes = t.n_classes, t.n_nodes
        members = t.nodes_by_class().order_array  # grouped by class, in id order within one
        self.order = order = members[kernel[members] < np.inf]
        self.cls = cls = t.eclass_array[order].astype(np.int64)
        self.heads = np.flatnonzero(np.r_[True, cls[1:] != cls[:-1]]) if len(order) else np.empty(0, dtype=np.int64)
        self.present = cls[self.heads]
        self.base = kernel[order]
        self.kids = distinct_kids(t.kids_array[order])

    def price(self, anchored: np.ndarray) -> Priced | None:
        """`anchored`: per class, whether it is free (holds an original node). None when the
        rounds do not settle. Each round gathers the values of the e-nodes' priced children
        (the (e-node, child) pairs that are not free) and sums them per e-node."""
        order, cls, heads, present, base, kids = self.order, self.cls, self.heads, self.present, self.base, self.kids
        best = np.full(self.n_classes, np.inf)
        blocked = np.zeros(self.n_classes, dtype=bool)  # anchors found to have no legal form
        for _ in range(MAX_SPREADS):
            priced = (kids >= 0) & ~(anchored & ~blocked)[np.maximum(kids, 0)]  # children that are not free
            row, col = np.nonzero(priced)  # row-major: each e-node's children summed in order
            kid = kids[row, col]
            for _ in range(MAX_ROUNDS):
                total = base + np.bincount(row, weights=best[kid], minlength=len(order))
                new = np.full(self.n_classes, np.inf)
                if len(heads):
                    new[present] = np.minimum.reduceat(total, heads)
                if np.array_equal(new, best):
                    break
                best = new
            else:
                return None
            stuck = anchored & np.isinf(best) & ~blocked
            if not stuck.any():
                break
            blocked |= stuck
        else:
            return None
        choice = np.full(self.n_classes, -1, dtype=np.int64)
        if len(heads):
            tie = np.where(total == best[cls], order, self.n_nodes)
            choice[present] = np.minimum.reduceat(tie, heads)
        choice[np.isinf(best)] = -1
        return Priced(choice, best)


def price(t: Tables, kernel: np.ndarray, anchored: np.ndarray) -> Priced | None:
    """`kernel`: per e-node cost on the backend, inf where it cannot run. `anchored`: per
    class, whether it holds an original node. None when the rounds do not settle."""
    return Pricer(t, kernel).price(anchored)
