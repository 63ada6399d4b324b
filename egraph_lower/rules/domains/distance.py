"""The domain of VectorNorm (opdefs/distance.py).

Rows of 6 of random signs and magnitudes spread log-uniformly over the range where |x|^p neither
underflows to a subnormal nor overflows when 6 of them are summed in the dtype (the expansion rounds
|x|^p in the dtype, as aten's kernel in that dtype does; the whole range for ord inf, -inf and 0), with
the awkward points added: zeros (one, several, a whole row: the 2-norm's 0, a negative p's 0), -0.0, one
nonzero element, +-inf (every finite p's inf, a negative p's skipped term), NaN (NaN, counted by ord 0),
ties of |x| (inf / -inf), the range's two ends. Over axis 1 of [rows, 6], axis 0 of its transpose, axes
(0, 2) of a [2, 6, 3] x and every axis; kept and not; ords 2, 1, inf, -inf, 0 and p = 3, 0.5, -1, 1.5, 4, -2.5.
Dist: those rows as a against zeros, a itself (zero distances, equal rows), values near 1, broadcast b
(a row, 0-d) and a broadcast a, and empty tensors (`_dist`).
"""

from __future__ import annotations

import math

import numpy as np

from ...egraph import language
from ..dsl import App, Rule
from .base import MAX, TINY, Env, bound_fields, round_to

ORDS: tuple[float | str, ...] = (2, 1, "inf", "-inf", 0, 3.0, 0.5, -1.0, 1.5, 4.0, -2.5)
_N = 6


def _range(ord: float | str, dtype: str) -> tuple[float, float]:
    """The magnitudes whose |x|^p is a normal number and whose 6 powers sum below MAX / 16."""
    top, low = MAX[dtype] / (16 * _N), TINY[dtype] * 16
    if dtype == "f64":
        top, low = 1e200, 1e-200
    if isinstance(ord, str) or ord == 0:
        return low, top
    p = abs(float(ord))
    # in log space (p < 1 would overflow), x itself kept in [low, top]
    a, b = math.exp(max(math.log(low) / p, math.log(low))), math.exp(min(math.log(top) / p, math.log(top)))
    return (a, b) if float(ord) > 0 else (1 / b, 1 / a)


def _rows(ord: float | str, dtype: str, rng: np.random.Generator) -> np.ndarray:
    lo, hi = _range(ord, dtype)
    mid = math.sqrt(lo * hi)
    inf, nan = math.inf, math.nan
    odd = [[0.0] * _N, [0.0, 0.0, 3.0, 0.0, 0.0, 0.0], [1.5, -0.0, 2.0, 0.0, -1.0, 0.5],
           [inf, 1.0, -2.0, 0.5, 0.0, 3.0], [-inf, inf, 1.0, 2.0, 3.0, 4.0], [1.0, nan, 2.0, 0.0, 3.0, 4.0],
           [2.0, -2.0, 2.0, 1.0, -2.0, 0.5], [hi, -hi, lo, -lo, mid, 1.0], [lo] * _N, [-hi] * _N]
    if not isinstance(ord, str) and float(ord) > 0:
        odd[1][2] = min(3.0, hi)  # one nonzero element (within range)
    mags = np.exp(rng.uniform(math.log(lo), math.log(hi), size=(8, _N)))
    near = rng.uniform(0.25, 4.0, size=(6, _N))  # values near 1, where rounding shows
    signs = rng.choice([1.0, -1.0], size=(14, _N))
    rows = np.concatenate([np.array(odd), np.concatenate([mags, near]) * signs])
    return rows


def _vector_norm(rule: Rule, dtype: str, rng: np.random.Generator) -> list[Env]:
    envs: list[Env] = []
    for ord in ORDS:
        rows = _rows(ord, dtype, rng)
        x3 = rows[:12, :3].reshape(2, 6, 3).copy()  # [2, 6, 3], reduced over (0, 2)
        for x, axes in ((rows, [1]), (rows.T.copy(), [0]), (x3, [0, 2]), (rows[:4], [0, 1]), (rows[0], [0])):
            for keep in (True, False):
                bound = bound_fields(rule, {"ord": ord, "axes": axes, "keep_dim": keep}, x.shape)
                if bound is not None:
                    with np.errstate(all="ignore"):
                        envs.append({**bound, "x": round_to(x, dtype)})
    return envs


def _dist(rule: Rule, dtype: str, rng: np.random.Generator) -> list[Env]:
    """Dist: the rows above three at a time as a, against b of zeros (d = a), a itself (every distance 0),
    values near 1 of a's shape, one row broadcast ([6]) and a 0-d b; a row against a [3, 6] b (a broadcast);
    empty a and b for the finite orders."""
    pairs: list[tuple[float | str, np.ndarray, np.ndarray]] = []
    for ord in ORDS:
        rows = _rows(ord, dtype, rng)
        for k in range(0, len(rows) - 2, 3):
            a = rows[k:k + 3]
            near = rng.uniform(0.25, 4.0, size=a.shape) * rng.choice([1.0, -1.0], size=a.shape)
            for b in (np.zeros(_N), a, near, near[0], np.array(0.5)):
                pairs.append((ord, a, b))
            pairs.append((ord, a[0], near))
        if not isinstance(ord, str):
            pairs.append((ord, np.zeros((0, _N)), np.zeros(_N)))
    envs: list[Env] = []
    for ord, a, b in pairs:
        bound = bound_fields(rule, {"ord": ord}, a.shape, (a.shape, b.shape))
        if bound is not None:
            with np.errstate(all="ignore"):
                envs.append({**bound, "a": round_to(a, dtype), "b": round_to(b, dtype)})
    return envs


def distance_domain(rule: Rule, dtype: str) -> list[Env]:
    """The environments of a rule whose lhs is VectorNorm or Dist."""
    assert isinstance(rule.lhs, App)
    op = language.CTORS[rule.lhs.ctor].op
    if op == "Dist":
        return _dist(rule, dtype, np.random.default_rng(20))
    return _vector_norm(rule, dtype, np.random.default_rng(19))
