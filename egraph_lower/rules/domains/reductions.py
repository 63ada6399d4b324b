"""The domain of Var, ArgReduce, Scan and LogCumSumExp.

Var: rows of 6 from the normalization domain (spreads 1e-3 to 30 around 0, -5 and a large offset,
constant rows, an outlier) and rows holding +-inf and NaN, over one axis and over two of a 3-D x, with
corrections 0, 1, 2.5, n - 1, n (divisor 0: inf, and NaN on a constant row) and n + 2, kept and not.
ArgReduce: rows with ties (the first one wins), ties of 0.0 and -0.0, NaN first, last and twice, all
NaN, +-inf, all -inf, one element, values of every magnitude up to the dtype's largest; axes first,
inner and last. Scan: mixed signs and magnitudes (cancelling prefixes), zeros (a product through one
zero and two), values near 1, +-inf and NaN (only the prefixes holding them), products that overflow.
"""

from __future__ import annotations

import numpy as np

from ..dsl import App, Rule
from .base import DY, MAX, Env, bound_fields, round_to
from .normalization import _norm_rows

_NAN, _INF = float("nan"), float("inf")
NAN_, INF_ = _NAN, _INF


def _var(rule: Rule, dtype: str, rng: np.random.Generator) -> list[Env]:
    rows = _norm_rows(rng, 6, dtype)
    odd = np.array([[1.0, _INF, 2.0, 3.0, 4.0, 5.0], [1.0, 2.0, _NAN, 3.0, 4.0, 5.0], [-_INF, _INF, 0, 0, 1, 1]])
    x2 = np.concatenate([rows, odd])
    x3 = rows[:6].reshape(6, 2, 3).transpose(1, 0, 2).copy()  # [2, 6, 3], reduced over (0, 2): n = 6
    envs: list[Env] = []
    for x, axes, n in ((x2, [1], 6), (x3, [0, 2], 6), (x2, [0, 1], x2.size)):
        for c in (0, 1, 2.5, n - 1, n, n + 2):
            for keep in (True, False):
                bound = bound_fields(rule, {"axes": axes, "correction": c, "keep_dim": keep}, x.shape)
                if bound is not None:
                    envs.append({**bound, "x": round_to(x, dtype)})
    return envs


def _arg_rows(dtype: str) -> np.ndarray:
    big = MAX[dtype]
    rows = [[1.0, 3.0, 3.0, -2.0, 3.0], [0.0, -0.0, -1.0, -0.0, 0.0], [-0.0, 0.0, 1.0, -0.0, 1.0],
            [_NAN, 1.0, 5.0, 2.0, 0.0], [1.0, 5.0, 2.0, 0.0, _NAN], [1.0, _NAN, 7.0, _NAN, -7.0],
            [_NAN] * 5, [_INF, 1.0, _INF, -_INF, 0.0], [-_INF] * 5, [-_INF, _INF, _NAN, _INF, -_INF],
            [big, -big, big, 1e-3, -1e-3], [2.0] * 5, [-3.0, -1e4, 7.5, 7.5, 1e4]]
    return np.array(rows)


def _arg(rule: Rule, dtype: str, rng: np.random.Generator) -> list[Env]:
    rows = _arg_rows(dtype)
    samples = rng.choice(np.array(DY), size=(4, 3, 5)) * rng.integers(1, 3, size=(4, 3, 5))  # ties
    envs: list[Env] = []
    for x, axis in ((rows, 1), (rows, -1), (rows.T.copy(), 0), (samples, 1), (samples, 0), (samples, 2),
                    (rows[:, :1], 1), (rows[:1, :], 0)):
        for keep in (True, False):
            bound = bound_fields(rule, {"op": "Max", "axis": axis, "keep_dim": keep}, x.shape)
            if bound is None:
                bound = bound_fields(rule, {"op": "Min", "axis": axis, "keep_dim": keep}, x.shape)
            if bound is not None:
                with np.errstate(all="ignore"):
                    envs.append({**bound, "x": round_to(x, dtype)})
    return envs


def _scan_rows(dtype: str, op: str, rng: np.random.Generator) -> np.ndarray:
    if op in ("Max", "Min"):  # ties (the last one's index), NaN once and twice, +-inf, -0.0 and 0.0
        rows = [[1.0, 3.0, 3.0, 2.0, 3.0, 5.0], [2.0, NAN_, 1.0, NAN_, 9.0, 0.0], [0.0, -0.0, 0.0, -1.0, -0.0, 1.0],
                [INF_, 1.0, INF_, -INF_, 2.0, 2.0], [-INF_] * 6, [5.0, 4.0, 3.0, 3.0, 2.0, 1.0], [NAN_] * 6]
        rows += list(rng.choice(np.array(DY), size=(4, 6)) * rng.integers(1, 3, size=(4, 6)))
    elif op == "Mul":
        rows = [[1.5, -0.5, 2.0, 0.0, 3.0, -4.0], [2.0, 0.0, 3.0, 0.0, 5.0, 1.0], [0.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                [1.0 + 1e-3, 1.0 - 1e-3, 1.0, 1.25, 0.8, -1.0], [1e3, 1e3, 1e3, 1e3, 1e3, 1e-3],
                [_INF, 0.0, 2.0, -1.0, 3.0, 1.0], [2.0, _NAN, 3.0, 0.5, 1.0, 1.0], [-2.0, -3.0, -0.5, 4.0, 1.0, 0.1]]
        rows += list(rng.uniform(0.5, 2.0, size=(3, 6)) * rng.choice([1.0, -1.0], size=(3, 6)))
    else:
        rows = [[1.0, -1.0, 1e4, -1e4, 3.0, 1e-3], [0.0, -0.0, 0.0, 1.0, -1.0, 0.0], [_INF, 1.0, -2.0, 3.0, 0.0, 1.0],
                [1.0, 2.0, _NAN, 3.0, 4.0, 5.0], [1.0, -_INF, 2.0, _INF, 0.0, 1.0], [MAX[dtype] / 2] * 6]
        rows += list(rng.choice(np.array(DY), size=(4, 6)) * rng.uniform(0.5, 2.0, size=(4, 6)))
    return np.array(rows)


def _scan(rule: Rule, dtype: str, rng: np.random.Generator) -> list[Env]:
    head = rule.source[0].split()[0][1:]  # Scan.Add, ArgScan.Max, LogCumSumExp, ...
    op = head.split(".")[1] if "." in head else "Add"
    attrs: dict[str, object] = {} if head == "LogCumSumExp" else {"op": op}
    rows = _scan_rows(dtype, op, rng)
    x3 = rows[:6].reshape(2, 3, 6).transpose(0, 2, 1).copy()  # [2, 6, 3]: scanned along axis 1 of 6
    envs: list[Env] = []
    for x, axis in ((rows, 1), (rows, -1), (rows.T.copy(), 0), (x3, 1), (x3, -1), (rows[:, :1], 1), (rows[0], 0)):
        bound = bound_fields(rule, {**attrs, "axis": axis}, x.shape)
        if bound is not None:
            with np.errstate(all="ignore"):
                envs.append({**bound, "x": round_to(x, dtype)})
    return envs


def reductions_domain(rule: Rule, dtype: str) -> list[Env]:
    """The environments of a rule whose lhs is Var, ArgReduce or Scan (by its constructor)."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    rng = np.random.default_rng(19)
    if lhs.ctor == "Var":
        return _var(rule, dtype, rng)
    if lhs.ctor == "ArgReduce":
        return _arg(rule, dtype, rng)
    return _scan(rule, dtype, rng)  # Scan and LogCumSumExp (the Add rows: cancelling terms, +-inf, NaN)
