"""Selections: an e-node chosen per e-class the outputs reach, finished or being changed.

`Extraction` is a finished selection (what every extractor returns): the choice,
its DAG cost, the chosen classes children first where known, and whether it is
proven the cheapest. `Selection` is one being changed in place, by switching a
class to another e-node: it keeps each class's reference count (how many chosen
e-nodes use it, the outputs never dropping to none), selects the classes a switch
makes needed and drops the ones nobody needs any more, and undoes a trial. The
local search (`local_search`) and explore's alternatives both switch through it.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..egraph.tables import Tables, distinct_kids

ROOT_REFS = 1 << 20  # what an output's reference count starts with: no removal reaches 0


@dataclass
class Extraction:
    choice: dict[int, int]  # e-class -> chosen e-node, for every class the roots reach
    cost: float  # DAG cost: each chosen class counted once
    order: list[int] | None = None  # the chosen classes, children first, when known
    optimal: bool = False  # proven the least DAG cost (only the integer program proves it)
    status: str | None = None  # the integer program's: the solver's status and message
    extractor: str = ""  # the name of the extractor that made it (`extractors.EXTRACTORS`)

    def describe(self) -> dict[str, Any]:
        """How it was made, for reports: extractor, whether proven optimal, the solver's status."""
        return {"extractor": self.extractor, "optimal": self.optimal, "status": self.status}


class Selection:
    """A choice being changed in place, with reference counts, logged so a trial can be undone.

    `fallback[c]` is the e-node a class takes when a switch makes it needed (-1: it has none:
    such a class is selected as -1 and not walked below; the trial is then not a way to
    compute it). `node_cost[n]` is e-node n's kernel cost."""

    def __init__(self, t: Tables, node_cost: Sequence[float], fallback: Sequence[int], choice: dict[int, int],
                 roots: Iterable[int]) -> None:
        self.t, self.node_cost, self.fallback = t, node_cost, fallback
        self.flat, self.start = t.kid_rows
        self.choice = choice  # changed in place
        # refs[c]: how many chosen e-nodes use class c (each e-node once), roots never dropping to 0
        kids = distinct_kids(t.kids_array[np.fromiter(choice.values(), dtype=np.int64, count=len(choice))])
        users = np.bincount(kids[kids >= 0], minlength=t.n_classes).astype(np.int64)
        for r in roots:
            users[r] += ROOT_REFS
        self.refs = array("q", users.tobytes())  # per class: a machine int, not a dict entry
        self.log: list[tuple[str, int, int]] = []

    def kids(self, n: int) -> Sequence[int]:
        """The distinct child classes of e-node n, in the order of its inputs."""
        a, b = self.start[n], self.start[n + 1]
        if b - a < 2:
            return self.flat[a:b]
        return tuple(dict.fromkeys(self.flat[a:b]))

    def ref_counts(self) -> np.ndarray:
        """The reference counts as they stand, as a NumPy view (no copy)."""
        return np.frombuffer(self.refs, dtype=np.int64)

    def add_ref(self, k: int) -> float:
        """One more user of class k; if it was unused, select it (and its sub-DAG) and return the cost added."""
        added = 0.0
        stack = [k]
        while stack:
            c = stack.pop()
            r = self.refs[c]
            self.refs[c] = r + 1
            self.log.append(("ref+", c, 0))
            if r == 0 and c not in self.choice:
                n = self.fallback[c]
                self.choice[c] = n
                self.log.append(("sel", c, n))
                if n >= 0:
                    added += self.node_cost[n]
                    stack.extend(reversed(self.kids(n)))  # its first input's side first
        return added

    def drop_ref(self, k: int) -> float:
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
                stack.extend(self.kids(n))
        return removed

    def switch(self, c: int, new: int) -> float:
        """Switch class c to e-node `new`; the change of DAG cost (logged: `undo` reverts it). The
        classes `new` needs are counted (and selected where new) first, its first input's side
        first; then the old e-node's inputs lose a user, its last input's side first. A class not
        selected yet is selected with `new`, as if something needed it: nothing is dropped then."""
        old = self.choice.get(c, -1)
        self.choice[c] = new
        self.log.append(("set", c, old) if old >= 0 else ("sel", c, new))
        delta = self.node_cost[new] - (self.node_cost[old] if old >= 0 else 0.0)
        for k in self.kids(new):
            delta += self.add_ref(k)
        if old >= 0:
            for k in reversed(self.kids(old)):
                delta -= self.drop_ref(k)
        return delta

    def selected(self) -> list[tuple[int, int]]:
        """(class, e-node) of each class the logged trial selected, in the order selected."""
        return [(c, n) for what, c, n in self.log if what == "sel"]

    def dropped(self) -> list[tuple[int, int]]:
        """(class, e-node) of each class the logged trial dropped, in the order dropped."""
        return [(c, n) for what, c, n in self.log if what == "unsel"]

    def keep(self) -> None:
        """Keep what was logged: the next trial starts a new log."""
        self.log.clear()

    def undo(self, since: int = 0) -> None:
        """Revert what was logged since the last `keep`, or only its entries from `since` on (a part
        of the trial, `len(log)` when that part began)."""
        for what, c, n in reversed(self.log[since:]):
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
        del self.log[since:]
