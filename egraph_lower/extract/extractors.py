"""The extractors, by the name the command line takes (`EXTRACTORS`), and `extract`, which runs one.

- `greedy` (the default): the new-work pricing (`pricing`) settled from the outputs,
  then the local search (`local_search`). Where the pricing cannot decide (a cycle in
  its choice, or infeasibility spreading deep) it starts from the tree pass instead.
- `tree`: the tree pass (`tree`) alone.
- `exact`: the integer program (`integer_program`), set up from the tree pass.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..egraph.tables import Tables
from ..errors import LowerError
from .costs import Costs, dag_cost
from .integer_program import TIME_LIMIT, solve
from .local_search import local_search
from .pricing import Pricer
from .selection import Extraction
from .tree import TreePass, collect, tree_pass
from .walks import Cycle, children_first

EXTRACTORS = ("greedy", "exact", "tree")


def extract(t: Tables, costs: Costs, roots: Sequence[int], describe: Sequence[tuple[int, str]] = (),
            method: str = "greedy", seconds: float = TIME_LIMIT) -> Extraction:
    """The extraction by `method` (one of `EXTRACTORS`) for the backend of `costs`. `describe`:
    (e-class, what) per original node in graph order, to name the first one left without a form
    the backend runs. `seconds`: the integer program's time limit."""
    if method not in EXTRACTORS:
        raise LowerError(f"unknown extractor {method!r}: use one of {', '.join(EXTRACTORS)}")
    ex = _extract(t, costs, roots, describe, method, seconds)
    ex.extractor = method
    return ex


def _extract(t: Tables, costs: Costs, roots: Sequence[int], describe: Sequence[tuple[int, str]],
             method: str, seconds: float) -> Extraction:
    kernel = costs.array()
    if method == "greedy":
        start = _priced_start(t, kernel, roots, costs.backend.name, describe)
        if start is not None:
            ex = local_search(t, kernel, start.fallback, start.best, start.extraction, roots, pricer=start.pricer)
            if ex.order is None:  # the search added classes: settle the final choice afresh
                ex.order = _children_first(t, ex.choice, roots)
            return ex
    g = tree_pass(t, kernel, roots)
    ex = _tree_extraction(t, g, roots, costs.backend.name, describe)
    if method == "greedy":
        ex = local_search(t, kernel, g.choice, g.best, ex, roots)
    elif method == "exact":
        ex = solve(t, g, kernel, roots, seconds)
    ex.order = [c for c in g.settled if c in ex.choice]  # a topological order, unless a switch made a cycle-closing choice
    return ex


def _tree_extraction(t: Tables, g: TreePass, roots: Sequence[int], backend: str,
                     describe: Sequence[tuple[int, str]]) -> Extraction:
    """The tree pass's choices of the classes the roots reach."""

    def pick(c: int) -> int:
        if g.choice[c] < 0:
            raise LowerError(_no_form(g.choice, describe, backend))
        return g.choice[c]

    return collect(t, roots, pick, g.node_cost)


@dataclass
class _Start:
    extraction: Extraction
    fallback: Sequence[int]  # per class: the new-work choice
    best: Sequence[float]
    pricer: Pricer  # set up for the kernels: the local search prices again with it


def _priced_start(t: Tables, kernel: np.ndarray, roots: Sequence[int], backend: str,
                  describe: Sequence[tuple[int, str]]) -> _Start | None:
    """The new-work pricing's choice settled from the outputs; None where it cannot decide."""
    anchored = np.zeros(t.n_classes, dtype=bool)
    anchored[list(t.ref.values())] = True
    pricer = Pricer(t, kernel)
    priced = pricer.price(anchored)
    if priced is None:
        return None
    try:
        order = children_first(t, priced.choice, roots)
    except Cycle:
        return None
    pick = priced.choice
    picked = pick[np.asarray(order, dtype=np.int64)].tolist()
    if -1 in picked:
        raise LowerError(_no_form(pick.tolist(), describe, backend))
    choice = dict(zip(order, picked))
    ex = Extraction(choice, dag_cost(kernel, choice), order)
    return _Start(ex, array("q", pick.tobytes()), array("d", priced.best.tobytes()), pricer)


def _children_first(t: Tables, choice: dict[int, int], roots: Sequence[int]) -> list[int] | None:
    """The chosen classes children first, or None if the choice has a cycle."""
    pick = np.full(t.n_classes, -1, dtype=np.int64)
    pick[np.fromiter(choice.keys(), dtype=np.int64, count=len(choice))] = list(choice.values())
    try:
        return children_first(t, pick, roots)
    except Cycle:
        return None


def _no_form(choice: Sequence[int], describe: Sequence[tuple[int, str]], backend: str) -> str:
    """Name the first original node (in graph order) left without a form the backend runs: a leaf's class
    is left without one only when what needs it has none, so the first node that is not a leaf first."""
    leaves = ("(Input)", "(Param)", "(Constant)")
    for skip in (True, False):
        for c, what in describe:
            if choice[c] < 0 and not (skip and what.endswith(leaves)):
                return f"{what}: backend {backend} does not run it and no rule lowers it into what it runs"
    return f"no form the backend {backend} runs was found for an output"
