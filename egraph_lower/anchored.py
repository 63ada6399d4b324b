"""The default bottom-up pass: each e-node priced by the new work it adds, in NumPy rounds.

A plain tree-cost pass (`extract.greedy`, the `tree` extractor) prices an e-node as
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
bottom the backend cannot run) or a cycle in the choice hands over to the exact
sequential pass, which names the node at fault.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from .egraph.tables import Tables, distinct_kids

MAX_ROUNDS = 64  # rounds of the fixpoint, per spreading of infeasibility
MAX_SPREADS = 8  # times infeasible anchors are re-priced before handing over


@dataclass
class Priced:
    choice: np.ndarray  # per class: its cheapest legal e-node, -1 where none
    best: np.ndarray  # that e-node's new-work cost (inf where none)


def price(t: Tables, kernel: np.ndarray, anchored: np.ndarray) -> Priced | None:
    """`kernel`: per e-node cost on the backend, inf where it cannot run. `anchored`: per
    class, whether it holds an original node. None when the rounds do not settle."""
    n_classes = t.n_classes
    eclass = t.eclass_array
    kids = distinct_kids(t.kids_array)
    has_kid = kids >= 0
    safe_kids = np.where(has_kid, kids, 0)
    kid_anchored = anchored[safe_kids] & has_kid
    members = t.nodes_by_class()  # e-nodes grouped by class, in id order within one
    order, all_starts = members.order_array, members.starts_array
    present = np.flatnonzero(np.diff(all_starts))
    starts = all_starts[present]
    best = np.full(n_classes, np.inf)
    blocked = np.zeros(n_classes, dtype=bool)  # anchors found to have no legal form
    for _ in range(MAX_SPREADS):
        for _ in range(MAX_ROUNDS):
            value = np.where(kid_anchored & ~blocked[safe_kids], 0.0, best[safe_kids])
            value[~has_kid] = 0.0
            total_sorted = (kernel + value.sum(axis=1))[order]
            new = np.full(n_classes, np.inf)
            new[present] = np.minimum.reduceat(total_sorted, starts)
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
    tie = np.where(total_sorted == best[eclass[order]], order, t.n_nodes)
    choice = np.full(n_classes, -1, dtype=np.int64)
    choice[present] = np.minimum.reduceat(tie, starts)
    choice[np.isinf(best)] = -1
    return Priced(choice, best)


class Cycle(Exception):
    """The choice loops back on itself (possible only where rules made the e-graph cyclic)."""


def settle(t: Tables, choice: np.ndarray, roots: list[int]) -> tuple[list[int], list[int]]:
    """The classes the roots reach through `choice`, children first, and their chosen e-nodes.
    Raises Cycle if the choice is not a DAG; a class without a choice is returned with -1."""
    flat, start = t.kid_rows
    pick = array("q", choice.tobytes())
    state = bytearray(t.n_classes)  # 0 unseen, 1 open (on the path), 2 settled
    order: list[int] = []
    picked: list[int] = []
    for root in roots:
        if state[root]:
            continue
        stack = [root]
        while stack:
            c = stack.pop()
            if c < 0:  # all below ~c settled
                c = ~c
                state[c] = 2
                order.append(c)
                picked.append(pick[c])
                continue
            if state[c]:
                continue
            state[c] = 1
            stack.append(~c)
            n = pick[c]
            if n < 0:
                continue
            for k in flat[start[n]:start[n + 1]]:
                s = state[k]
                if s == 0:
                    stack.append(k)
                elif s == 1:
                    raise Cycle
    return order, picked
