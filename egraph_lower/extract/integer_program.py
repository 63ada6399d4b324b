"""The integer program: the least DAG cost, solved by SciPy's `milp` (HiGHS; the `exact` extra).

Variables: x_n (e-node n chosen) and y_c (class c computed). Minimise
sum(cost_n x_n) subject to: y_root = 1; sum over the e-nodes of c of x_n = y_c;
x_n <= y_k for every child class k of n. Where the e-graph has cycles, order
variables o_c forbid a cyclic choice: o_c >= o_k + 1 - M (1 - x_n) for the
children k of n on the same cycle. Meant for graphs small enough to solve:
beyond `MAX_VARIABLES` it refuses rather than run for hours.

The solver stops at `seconds` (120 by default) with the best choice it has found.
The result says whether it is proven optimal (`Extraction.optimal`: HiGHS ended with
status 0, optimal within its default relative gap of 1e-4) and carries the solver's
status and message (`Extraction.status`): a choice cut short by the time limit is
never reported as optimal.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..egraph.tables import Tables
from ..errors import LowerError
from ..signals import held
from .selection import Extraction
from .tree import TreePass, collect
from .walks import classes_on_cycles, reachable

MAX_VARIABLES = 200_000
TIME_LIMIT = 120.0  # seconds the solver may take


def solve(t: Tables, g: TreePass, kernel: np.ndarray, roots: Sequence[int], seconds: float = TIME_LIMIT) -> Extraction:
    """The choice of least DAG cost among the e-nodes the tree pass `g` found legal ways to
    compute, as the solver left it after at most `seconds`."""
    try:
        with held():  # an interruption lands after SciPy's import, not inside it (signals)
            from scipy.optimize import Bounds, LinearConstraint, milp
            from scipy.sparse import coo_array
    except ImportError:
        raise LowerError("the exact extractor needs SciPy: pip install 'egraph-lower[exact]'") from None
    nodes = t.nodes_by_class()
    feasible = [c >= 0 for c in g.choice]

    def usable(n: int) -> bool:
        return g.node_cost[n] is not None and all(feasible[k] for k in t.children[n])

    # the classes the roots can reach through usable e-nodes
    classes = reachable(roots, lambda c: [k for n in nodes[c] if usable(n) for k in t.children[n]])
    enodes = [n for c in classes for n in nodes[c] if usable(n)]
    on_cycle = classes_on_cycles(t, kernel < np.inf)
    cyclic = {c for c in classes if on_cycle[c]}
    n_x, n_y, n_o = len(enodes), len(classes), len(cyclic)
    if n_x + n_y + n_o > MAX_VARIABLES:
        raise LowerError(f"too large for the exact extractor: {n_x + n_y + n_o:,} variables "
                         f"(limit {MAX_VARIABLES:,}); use the greedy extractor")
    xi = {n: i for i, n in enumerate(enodes)}
    yi = {c: n_x + i for i, c in enumerate(classes)}
    oi = {c: n_x + n_y + i for i, c in enumerate(sorted(cyclic))}
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def constraint(terms: list[tuple[int, float]], low: float, high: float) -> None:
        r = len(lo)
        for col, v in terms:
            rows.append(r)
            cols.append(col)
            vals.append(v)
        lo.append(low)
        hi.append(high)

    big = float(n_o + 1)
    for c in classes:
        members = [n for n in nodes[c] if n in xi]
        constraint([(xi[n], 1.0) for n in members] + [(yi[c], -1.0)], 0.0, 0.0)
    for n in enodes:
        c = t.eclass[n]
        for k in set(t.children[n]):
            constraint([(xi[n], 1.0), (yi[k], -1.0)], -np.inf, 0.0)
            if c in cyclic and k in cyclic:  # o_c - o_k - M x_n >= 1 - M
                constraint([(oi[c], 1.0), (oi[k], -1.0), (xi[n], -big)], 1.0 - big, np.inf)
    n_vars = n_x + n_y + n_o
    cost = np.zeros(n_vars)
    cost[:n_x] = [g.node_cost[n] for n in enodes]
    lower, upper = np.zeros(n_vars), np.ones(n_vars)
    upper[n_x + n_y:] = big
    for r in roots:
        lower[yi[r]] = 1.0
    integrality = np.ones(n_vars)
    integrality[n_x + n_y:] = 0
    a = coo_array((vals, (rows, cols)), shape=(len(lo), n_vars)).tocsr()
    res = milp(cost, integrality=integrality, bounds=Bounds(lower, upper),
               constraints=LinearConstraint(a, lo, hi), options={"time_limit": seconds})
    if res.x is None:
        raise LowerError(f"the exact extractor found no solution: {res.message}")
    ex = collect(t, roots, lambda c: next(n for n in nodes[c] if n in xi and res.x[xi[n]] > 0.5), g.node_cost)
    ex.optimal = res.status == 0
    ex.status = f"status {res.status}: {res.message}"
    return ex
