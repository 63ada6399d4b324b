"""The local search: DAG-aware improvement of an extraction, one switch of e-node at a time.

The start (the new-work pricing, or the tree pass) costs each e-node as if
its sub-DAG were its own, so a value that several users share is counted once per user when
choosing, though it is paid once in the graph. This pass fixes what that
misjudges: for every chosen class with another legal e-node, it computes the
exact change of the DAG cost if the class switched to that e-node (classes that
become needed are added with the start's choice; classes nobody
needs any more are dropped, recursively) and keeps switches that lower it. Then
compound switches: a switch together with new choices for the classes it made
needed (the start priced those alone, not in the company the switch gives them).
Reference counts (`selection.Selection`) make each trial cost only the part of
the graph it touches.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np

from ..egraph.tables import Tables, distinct_kids
from .costs import dag_cost
from .pricing import Pricer
from .selection import Extraction, Selection
from .walks import classes_on_cycles, has_cycle

_EPS = 1e-9
_INF = float("inf")


def _touched(c: int, s: Selection) -> set[int]:
    return {c} | {k for k, _ in s.selected()}


def cycle_free(s: Selection, touched: set[int], cyclic: set[int]) -> bool:
    """Whether the selection has no cycle through the touched classes (only classes on the
    e-graph's cycles, `cyclic`, can form one, so the walk stays inside them)."""
    t, choice = s.t, s.choice

    def below(c: int) -> list[int]:
        return [k for k in s.kids(choice[c]) if k in cyclic and k in choice]

    return not has_cycle([c for c in touched if c in cyclic and c in choice], below, t.n_classes)


def local_search(t: Tables, kernel: np.ndarray, fallback: Sequence[int], best: Sequence[float],
                 ex: Extraction, roots: Sequence[int], passes: int = 3, work: float = 0.25,
                 pricer: Pricer | None = None) -> Extraction:
    """Local search over the chosen DAG; returns an extraction of no greater DAG cost
    (taking over `ex.choice`, changed in place). `fallback[c]` and `best[c]`: the start's
    e-node of each class and its price there (what a class a switch makes needed takes).

    A switch is tried only where it looks promising: the alternative's kernel plus what
    its children would add (their start's sub-DAGs, free where already computed) is below
    the current e-node's kernel plus the tree cost of the children only it uses. The
    search stops after `passes` passes or `work` x (number of e-nodes) steps (at least
    50,000: small graphs are searched to the end), so it stays within a small multiple of
    the start. The compound passes that follow try every alternative under what is left of
    that work.
    """
    node_cost = array("d", kernel.tobytes())  # inf where the backend cannot run the e-node
    s = Selection(t, node_cost, fallback, ex.choice, roots)
    kids_of = s.kids
    nodes = t.nodes_by_class()
    cyclic: set[int] | None = None  # computed at the first switch worth keeping
    budget = max(work * t.n_nodes, 50_000.0)  # small graphs are searched to the end
    added: dict[int, float] = {}  # class -> cost its start's sub-DAG adds to the selection

    def adds(k: int) -> float:
        """What selecting class k would add (its start's sub-DAG, selected classes free), memoised."""
        nonlocal budget
        if k in s.choice:
            return 0.0
        if k in added:
            return added[k]
        stack = [k]
        while stack:
            c = stack[-1]
            kids = [j for j in kids_of(fallback[c]) if j not in s.choice and j not in added]
            if kids:
                stack.extend(kids)
                budget -= len(kids)
                continue
            stack.pop()
            if c not in added:
                added[c] = node_cost[fallback[c]] + sum(added[j] for j in kids_of(fallback[c]) if j not in s.choice)
        return added[k]

    runnable = kernel < np.inf
    choosing = np.bincount(t.eclass_array[runnable], minlength=t.n_classes) > 1  # classes with a choice

    def uncomputable(kids: Sequence[int]) -> bool:
        """Whether a child would be needed that is not selected and has no e-node to take."""
        return any(fallback[k] < 0 and k not in s.choice for k in kids)

    def every_alternative() -> dict[int, list[int]]:
        return {c: [n for n in nodes[c] if node_cost[n] < _INF] for c in s.choice if choosing[c]}

    def rechoose(new: list[tuple[int, int]]) -> float:
        """Switch each class the trial made needed (taken with the start's e-node) to another e-node
        where that lowers the cost in the trial's company; the change of cost, logged with the trial."""
        nonlocal budget
        gain = 0.0
        for k, _ in new:
            if k not in s.choice or not choosing[k]:
                continue
            for m in nodes[k]:
                if m == s.choice[k] or node_cost[m] == _INF or uncomputable(kids_of(m)):
                    continue
                mark = len(s.log)
                d = s.switch(k, m)
                budget -= len(s.log) - mark
                if d < -_EPS:
                    gain += d
                else:
                    s.undo(since=mark)
        return gain

    def search(scan: dict[int, list[int]], compound: bool) -> bool:
        """One pass over the selected classes of `scan`; whether a switch was kept. Plain: each
        alternative alone, skipped where the bounds say it cannot gain. Compound: every
        alternative, with the classes it makes needed chosen again (`rechoose`), which the
        bounds do not cover."""
        nonlocal budget, cyclic
        improved = False
        for c in [c for c in s.choice if c in scan]:
            if c not in s.choice:
                continue
            budget -= len(scan[c])
            cur = s.choice[c]
            own = node_cost[cur] + sum(best[k] for k in kids_of(cur) if s.refs[k] == 1)
            for n in scan[c]:
                cost = node_cost[n]
                if n == s.choice[c] or (cost >= own and not compound):
                    continue
                kids = kids_of(n)
                if uncomputable(kids):
                    continue
                if not compound and cost + sum(adds(k) for k in kids) >= own:
                    continue
                s.keep()
                delta = s.switch(c, n)
                budget -= len(s.log)
                if compound and delta >= -_EPS:
                    delta += rechoose(s.selected())
                if delta < -_EPS and cyclic is None:
                    cyclic = set(np.flatnonzero(classes_on_cycles(t, runnable)).tolist())
                if delta < -_EPS and (not cyclic or cycle_free(s, _touched(c, s), cyclic)):
                    s.keep()
                    improved = True
                    added.clear()  # the selection changed
                    own = cost + sum(best[k] for k in kids if s.refs[k] == 1)
                else:
                    s.undo()
            if budget < 0:
                break
        return improved

    switched = False
    for pass_ in range(passes):
        scan = promising(t, pricer or Pricer(t, kernel), kernel, best, s, runnable & choosing[t.eclass_array]) \
            if pass_ == 0 else every_alternative()
        improved = search(scan, compound=False)
        switched |= improved
        if not improved or budget < 0:
            break
    for _ in range(passes):  # then compound switches, while the work allows
        if budget < 0 or not search(every_alternative(), compound=True):
            break
        switched = True
    order = _order(ex.order, s.choice) if switched else ex.order
    return Extraction(s.choice, dag_cost(node_cost, s.choice), order)


def promising(t: Tables, pricer: Pricer, kernel: np.ndarray, best: Sequence[float], s: Selection,
               candidates: np.ndarray) -> dict[int, list[int]]:
    """Per selected class, the alternatives (among the `candidates` e-nodes) worth trying first,
    decided for all at once in NumPy: those whose kernel plus a lower bound of what their
    children would add is below what the current e-node costs with the children only it uses.
    The bound is the new-work price with every selected class free (no choice of the e-nodes
    below adds less). The search checks each with the exact amounts; this only skips, in the
    first pass, those that check would turn down before any switch (rounding allowed for)."""
    selected = np.zeros(t.n_classes, dtype=bool)
    pick = np.full(t.n_classes, -1, dtype=np.int64)
    chosen = np.fromiter(s.choice.keys(), dtype=np.int64, count=len(s.choice))
    selected[chosen] = True
    pick[chosen] = np.fromiter(s.choice.values(), dtype=np.int64, count=len(s.choice))
    alts = np.flatnonzero(candidates & selected[t.eclass_array])
    of = t.eclass_array[alts].astype(np.int64)
    alts, of = alts[alts != pick[of]], of[alts != pick[of]]
    if not len(alts):
        return {}
    priced = pricer.price(selected)
    keep = np.ones(len(alts), dtype=bool)
    if priced is not None:  # (None never seen: everything below a selected class is free)
        adds = np.where(selected, 0.0, priced.best)  # at least what selecting each class would add
        classes = np.flatnonzero(np.bincount(of))  # (not np.unique: see tables.SORT_KEYS)
        cur = pick[classes]
        kids = distinct_kids(t.kids_array[cur])
        refs = s.ref_counts()  # (no switch made yet: the counts as they start)
        only_user = (kids >= 0) & (refs[np.maximum(kids, 0)] == 1)
        own = np.full(t.n_classes, np.inf)
        best_a = np.asarray(best, dtype=np.float64)
        own[classes] = kernel[cur] + np.where(only_user, best_a[np.maximum(kids, 0)], 0.0).sum(axis=1)
        kids = distinct_kids(t.kids_array[alts])
        lower = kernel[alts] + np.where(kids >= 0, adds[np.maximum(kids, 0)], 0.0).sum(axis=1)
        bound = own[of]
        keep = lower < bound + 1e-9 * (1.0 + np.abs(bound))
    out: dict[int, list[int]] = {}
    for c, n in zip(of[keep].tolist(), alts[keep].tolist()):
        out.setdefault(c, []).append(n)
    return out


def _order(before: list[int] | None, choice: dict[int, int]) -> list[int] | None:
    """The chosen classes in the order the start had them (children first), if the search
    added none; a class it added has no place there, and conversion orders afresh."""
    if before is None or len(choice) > len(before):
        return None
    order = [c for c in before if c in choice]
    return order if len(order) == len(choice) else None
