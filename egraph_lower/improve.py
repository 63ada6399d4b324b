"""DAG-aware improvement of an extraction by local search.

The greedy pass (`extract.extract`) costs each e-node as if its sub-DAG were
its own, so a value that several users share is counted once per user when
choosing, though it is paid once in the graph. This pass fixes what that
misjudges: for every chosen class with another legal e-node, it computes the
exact change of the DAG cost if the class switched to that e-node (classes that
become needed are added with their current or greedy choice; classes nobody
needs any more are dropped, recursively) and keeps switches that lower it.
Reference counts make each trial cost only the part of the graph it touches.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np

from .anchored import Pricer
from .egraph.tables import Tables, distinct_kids
from .extract import Extraction, dag_cost

_EPS = 1e-9
_INF = float("inf")


class _State:
    def __init__(self, t: Tables, node_cost: Sequence[float], greedy: Sequence[int], ex: Extraction,
                 roots: Sequence[int]) -> None:
        self.t, self.node_cost, self.greedy = t, node_cost, greedy
        self.flat, self.start = t.kid_rows
        self.choice = ex.choice  # the start's, changed in place: it is not used again
        # refs[c]: how many chosen e-nodes use class c (each e-node once), roots never dropping to 0
        kids = distinct_kids(t.kids_array[np.fromiter(self.choice.values(), dtype=np.int64, count=len(self.choice))])
        users = np.bincount(kids[kids >= 0], minlength=t.n_classes)
        for r in roots:
            users[r] += 1 << 20
        self.refs = array("q", users.astype(np.int64).tobytes())  # per class: a machine int, not a dict entry
        self.log: list[tuple[str, int, int]] = []

    def _kids(self, n: int) -> set[int]:
        return set(self.flat[self.start[n]:self.start[n + 1]])

    def _add_ref(self, k: int) -> float:
        """One more user of class k; if it was unused, select it (and its sub-DAG) and return the cost added."""
        added = 0.0
        stack = [k]
        while stack:
            c = stack.pop()
            r = self.refs[c]
            self.refs[c] = r + 1
            self.log.append(("ref+", c, 0))
            if r == 0 and c not in self.choice:
                n = self.greedy[c]
                self.choice[c] = n
                self.log.append(("sel", c, n))
                added += self.node_cost[n]
                stack.extend(self._kids(n))
        return added

    def _drop_ref(self, k: int) -> float:
        """One user fewer; when none is left, deselect it (and what only it used) and return the cost removed."""
        removed = 0.0
        stack = [k]
        while stack:
            c = stack.pop()
            r = self.refs[c] - 1
            self.refs[c] = r
            self.log.append(("ref-", c, 0))
            if r == 0:
                n = self.choice.pop(c)
                self.log.append(("unsel", c, n))
                removed += self.node_cost[n]
                stack.extend(self._kids(n))
        return removed

    def switch(self, c: int, new: int) -> float:
        """Switch class c to e-node `new`; the change of DAG cost (log kept for undo)."""
        old = self.choice[c]
        self.choice[c] = new
        self.log.append(("set", c, old))
        delta = self.node_cost[new] - self.node_cost[old]
        for k in self._kids(new):
            delta += self._add_ref(k)
        for k in self._kids(old):
            delta -= self._drop_ref(k)
        return delta

    def undo(self) -> None:
        for what, c, n in reversed(self.log):
            if what == "ref+":
                self.refs[c] -= 1
            elif what == "ref-":
                self.refs[c] += 1
            elif what == "sel":
                del self.choice[c]
            elif what == "unsel":
                self.choice[c] = n
            else:  # set
                self.choice[c] = n
        self.log.clear()

    def cycle_free(self, touched: set[int], cyclic: set[int]) -> bool:
        """Whether the selection has no cycle through the touched classes (only classes of the
        e-graph's cycles can form one, so the search stays inside them)."""
        t, choice = self.t, self.choice
        start = [c for c in touched if c in cyclic and c in choice]
        state: dict[int, int] = {}  # 1 on the path, 2 done
        for s0 in start:
            if s0 in state:
                continue
            stack = [(s0, iter(set(t.children[choice[s0]])))]
            state[s0] = 1
            while stack:
                c, it = stack[-1]
                k = next(it, None)
                if k is None:
                    state[c] = 2
                    stack.pop()
                elif k in cyclic and k in choice:
                    if state.get(k) == 1:
                        return False
                    if k not in state:
                        state[k] = 1
                        stack.append((k, iter(set(t.children[choice[k]]))))
        return True


def cyclic_classes(t: Tables, usable: Sequence[bool]) -> set[int]:
    """Classes on a cycle of the e-graph through usable e-nodes (Tarjan, iterative)."""
    nodes = t.nodes_by_class()
    succ = [[k for n in nodes[c] if usable[n] for k in t.children[n]] for c in range(t.n_classes)]
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set[int] = set()
    scc_stack: list[int] = []
    out: set[int] = set()
    counter = 0
    for root in range(t.n_classes):
        if root in index or not nodes[root]:
            continue
        work = [(root, 0)]
        while work:
            c, i = work.pop()
            if i == 0:
                index[c] = low[c] = counter
                counter += 1
                scc_stack.append(c)
                on.add(c)
            recurse = False
            while i < len(succ[c]):
                k = succ[c][i]
                i += 1
                if k not in index:
                    work.append((c, i))
                    work.append((k, 0))
                    recurse = True
                    break
                if k in on:
                    low[c] = min(low[c], index[k])
            if recurse:
                continue
            if low[c] == index[c]:
                comp = []
                while True:
                    k = scc_stack.pop()
                    on.discard(k)
                    comp.append(k)
                    if k == c:
                        break
                if len(comp) > 1 or c in succ[c]:
                    out.update(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[c])
    return out


def _touched(c: int, log: list[tuple[str, int, int]]) -> set[int]:
    return {c} | {k for what, k, _ in log if what == "sel"}


def improve(t: Tables, kernel: np.ndarray, greedy: Sequence[int], best: Sequence[float],
            ex: Extraction, roots: Sequence[int], passes: int = 3, work: float = 0.25,
            pricer: Pricer | None = None) -> Extraction:
    """Local search over the chosen DAG; returns an extraction of no greater DAG cost
    (taking over `ex.choice`, changed in place).

    A switch is tried only where it looks promising: the alternative's kernel plus what
    its children would add (their greedy sub-DAGs, free where already computed) is below
    the current e-node's kernel plus the tree cost of the children only it uses. The
    search stops after `passes` passes or `work` x (number of e-nodes) steps (at least
    50,000: small graphs are searched to the end), so it stays within a small multiple of
    the greedy pass.
    """
    node_cost = array("d", kernel.tobytes())  # inf where the backend cannot run the e-node
    s = _State(t, node_cost, greedy, ex, roots)
    kids_of = s._kids
    nodes = t.nodes_by_class()
    cyclic: set[int] | None = None  # computed at the first switch worth keeping
    budget = max(work * t.n_nodes, 50_000.0)  # small graphs are searched to the end
    added: dict[int, float] = {}  # class -> cost its greedy sub-DAG adds to the selection

    def adds(k: int) -> float:
        """What selecting class k would add (its greedy sub-DAG, selected classes free), memoised."""
        nonlocal budget
        if k in s.choice:
            return 0.0
        if k in added:
            return added[k]
        stack = [k]
        while stack:
            c = stack[-1]
            kids = [j for j in kids_of(greedy[c]) if j not in s.choice and j not in added]
            if kids:
                stack.extend(kids)
                budget -= len(kids)
                continue
            stack.pop()
            if c not in added:
                added[c] = node_cost[greedy[c]] + sum(added[j] for j in kids_of(greedy[c]) if j not in s.choice)
        return added[k]

    runnable = kernel < np.inf
    choosing = np.bincount(t.eclass_array[runnable], minlength=t.n_classes) > 1  # classes with a choice
    switched = False
    for pass_ in range(passes):
        improved = False
        if pass_ == 0:
            scan = _promising(t, pricer or Pricer(t, kernel), kernel, best, s, runnable & choosing[t.eclass_array])
        else:
            scan = {c: [n for n in nodes[c] if node_cost[n] < _INF] for c in s.choice if choosing[c]}
        for c in [c for c in s.choice if c in scan] if scan else ():
            if c not in s.choice:
                continue
            budget -= len(scan[c])
            cur = s.choice[c]
            own = node_cost[cur] + sum(best[k] for k in kids_of(cur) if s.refs[k] == 1)
            for n in scan[c]:
                cost = node_cost[n]
                if n == s.choice[c] or cost >= own:
                    continue
                kids = kids_of(n)
                if any(greedy[k] < 0 and k not in s.choice for k in kids):
                    continue
                if cost + sum(adds(k) for k in kids) >= own:
                    continue
                s.log.clear()
                delta = s.switch(c, n)
                budget -= len(s.log)
                if delta < -_EPS and cyclic is None:
                    cyclic = cyclic_classes(t, runnable.tolist())
                if delta < -_EPS and (not cyclic or s.cycle_free(_touched(c, s.log), cyclic)):
                    s.log.clear()
                    improved = switched = True
                    added.clear()  # the selection changed
                    cur = n
                    own = cost + sum(best[k] for k in kids if s.refs[k] == 1)
                else:
                    s.undo()
            if budget < 0:
                break
        if not improved or budget < 0:
            break
    order = _order(ex.order, s.choice) if switched else ex.order
    return Extraction(s.choice, dag_cost(node_cost, s.choice), order)


def _promising(t: Tables, pricer: Pricer, kernel: np.ndarray, best: Sequence[float], s: _State,
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
        classes = np.unique(of)
        cur = pick[classes]
        kids = distinct_kids(t.kids_array[cur])
        refs = np.frombuffer(s.refs, dtype=np.int64)  # (no switch made yet: the counts as they start)
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
