"""The domain of Sort, ArgSort, TopK, ArgTopK (opdefs/sort.py) and KthValue, ArgKthValue, Median, ArgMedian,
Mode, ArgMode (opdefs/order_stats.py).

Rows of 6 with ties (three equal values, pairs), 0.0 and -0.0 tied with each other (their order is the
index's, so a -0.0 must come out where its index puts it), NaN first, last, twice and everywhere, +-inf
with NaN, all equal, values of every magnitude up to the dtype's largest, already sorted and reversed,
and random rows from a few values (many ties); axes first, inner and last of 2-D and 3-D x, a row of
one element and an empty axis; both orders, stable and not; TopK's k = 0, 1, a middle one and the whole
axis; KthValue's k = 1, the middle and n; Median over rows with no NaN, one, several and only NaNs,
propagating and ignoring them (an empty axis has no order statistic), kept and not; Mode over the same rows
(ties of frequency: the smallest value; 0.0 and -0.0 one value, NaNs one).
"""

from __future__ import annotations

import numpy as np

from ..dsl import App, Rule
from .base import DY, MAX, Env, bound_fields, round_to

_NAN, _INF = float("nan"), float("inf")


def _rows(dtype: str, rng: np.random.Generator) -> np.ndarray:
    big = MAX[dtype]
    rows = [[3.0, 1.0, 3.0, -2.0, 3.0, 1.0], [0.0, -0.0, -1.0, -0.0, 0.0, 1.0], [-0.0, 0.0, 0.0, -0.0, -0.0, 0.0],
            [_NAN, 1.0, 5.0, 2.0, 0.0, -1.0], [1.0, 5.0, 2.0, 0.0, -1.0, _NAN], [1.0, _NAN, 7.0, _NAN, -7.0, 7.0],
            [_NAN] * 6, [_INF, 1.0, _INF, -_INF, _NAN, -_INF], [-_INF] * 6, [2.0] * 6,
            [big, -big, big, 1e-3, -1e-3, -big], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]]
    rows += list(rng.choice(np.array(DY[:4]), size=(4, 6)))  # random rows of four values: many ties
    return np.array(rows)


def _sort_attrs(lhs: App, axis: int, n: int) -> list[dict[str, object]]:
    if lhs.ctor in ("KthValue", "ArgKthValue", "Median", "ArgMedian", "Mode", "ArgMode") and n == 0:
        return []  # an empty axis has no order statistic
    if lhs.ctor in ("KthValue", "ArgKthValue"):
        return [{"k": k, "axis": axis, "keep_dim": keep} for k in sorted({1, (n + 1) // 2, n}) for keep in (False, True)]
    if lhs.ctor in ("Mode", "ArgMode"):
        return [{"axis": axis, "keep_dim": keep} for keep in (False, True)]
    if lhs.ctor in ("Median", "ArgMedian"):
        return [{"axis": axis, "keep_dim": keep, "ignore_nan": nan} for keep in (False, True) for nan in (False, True)]
    if lhs.ctor in ("Sort", "ArgSort"):
        return [{"axis": axis, "descending": d, "stable": s} for d in (False, True) for s in (False, True)]
    ks = sorted({0, 1, n // 2, n} & set(range(n + 1)))
    return [{"k": k, "axis": axis, "largest": b, "sorted": True} for k in ks for b in (False, True)]


def sort_domain(rule: Rule, dtype: str) -> list[Env]:
    """The environments of a rule whose lhs is one of the eight ops (by its constructor)."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    rows = _rows(dtype, np.random.default_rng(23))
    x3 = rows[:12].reshape(2, 6, 6).transpose(0, 2, 1).copy()  # [2, 6, 6]: the inner axis 1 of 6
    envs: list[Env] = []
    for x, axis in ((rows, 1), (rows, -1), (rows.T.copy(), 0), (x3, 1), (x3, 2), (x3, 0), (rows[:, :1], 1),
                    (rows[:2, :0], 1), (rows[0], 0)):
        for attrs in _sort_attrs(lhs, axis, x.shape[axis]):
            bound = bound_fields(rule, attrs, x.shape)
            if bound is not None:
                envs.append({**bound, "x": round_to(x, dtype)})
    return envs
