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
from .base import DY, MAX, TINY, Env, bound_fields, round_to

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


CDIST_ORDS: tuple[float | str, ...] = (2, 1, "inf", 0, 3.0, 0.5, 1.5, 4.0)


def _clipped(rows: np.ndarray, dtype: str) -> np.ndarray:
    """Nonzero magnitudes clipped to 1e-4 .. 1e4 (f16: 1e-2 .. 1e2, so |d| / D stays a normal f16)."""
    lo, hi = (1e-2, 1e2) if dtype == "f16" else (1e-4, 1e4)
    return np.where(rows == 0, rows, np.sign(rows) * np.clip(np.abs(rows), lo, hi))


def _cdist(rule: Rule, dtype: str, rng: np.random.Generator, backward: bool) -> list[Env]:
    """Cdist and its gradient: the rows above (finite ones for the gradient) as x1 and x2: different rows,
    x1 = x2 (every diagonal distance 0: equal rows), a row of x1 repeated in x2, batches broadcast
    ([2, 3, 6] against [1, 4, 6]) and an empty x1; the gradient's dy from `DY`, its dist the forward
    value rounded to the dtype; measured against sum_j |dy| |g| (`cond`, CDIST_SCALES)."""
    from ...opdefs.distance import _op_cdist, _pairs, cdist_grad_terms

    envs: list[Env] = []
    for ord in CDIST_ORDS:
        rows = _rows(ord, dtype, rng)
        if backward:  # finite, over 1e-4 .. 1e4 (f16: 1e-2 .. 1e2; and one case scaled by sqrt(hi)): a
            # gradient of p < 1 is (|d| / D)^(p - 1), beyond the dtype's range where |d| / D underflows
            rows = rows[np.all(np.isfinite(rows), axis=1)]
            rows = _clipped(rows, dtype)
            if ord == "inf":  # ties decide the gradient: values whose differences are exact in every
                # dtype (small multiples of 1/2 at one scale a case), so a tie is one in float64 too
                rows = rng.choice(np.array([0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -2.0, 2.0, 3.0, -4.0]), size=rows.shape)
                rows[-1] = rows[0]
        x2r = rows[5:9].copy()
        x2r[1] = rows[2]
        cases = [(rows[0:5], rows[5:9]), (rows[8:12], rows[8:12]), (rows[0:5], x2r),
                 (rows[0:6].reshape(2, 3, _N), rows[6:10].reshape(1, 4, _N)), (rows[:0], rows[0:3])]
        if backward and dtype != "f16":  # f16: the gradient of p < 1 there leaves f16's range
            big = 2.0**12 if ord == "inf" else math.sqrt(_range(ord, dtype)[1]) / 1e4
            cases.append((rows[0:5] * big, rows[5:9] * big))
        for x1, x2 in cases:
            with np.errstate(all="ignore"):
                a, b = round_to(x1, dtype), round_to(x2, dtype)
            shapes = (a.shape, b.shape)
            if not backward:
                bound = bound_fields(rule, {"ord": ord}, a.shape, shapes)
                if bound is not None:
                    envs.append({**bound, "x1": a, "x2": b})
                continue
            dist = _op_cdist({"ord": ord}, [a, b], dtype, None)
            # f16: dy / 64, so the sum of the gradient's terms (up to 1e2 each for p = 0.5) stays in range
            dy = round_to(rng.choice(np.array(DY), size=dist.shape) / (64 if dtype == "f16" else 1), dtype)
            bound = bound_fields(rule, {"ord": ord}, dy.shape, (dy.shape,) + shapes + (dist.shape,))
            if bound is None:
                continue
            with np.errstate(all="ignore"):
                g = cdist_grad_terms(_pairs(np.asarray(a, np.float64), np.asarray(b, np.float64)),
                                     np.asarray(dist, np.float64)[..., None], ord)
                cond = np.sum(np.abs(np.asarray(dy, np.float64))[..., None] * np.abs(g), axis=-2)
            envs.append({**bound, "dy": dy, "x1": a, "x2": b, "dist": dist, "cond": cond})
    return envs


def _pdist(rule: Rule, dtype: str, rng: np.random.Generator, backward: bool) -> list[Env]:
    """Pdist and its gradient: the rows above (for the gradient as for Cdist's) as x [n, 6]: five rows, four
    with one repeated (a zero distance), two, and one (no pair: an empty result); dy from `DY`, pdist the
    forward value rounded to the dtype; the gradient measured against sum_j |S| |g| (`cond`)."""
    from ...opdefs.distance import _op_pdist, _pairs, cdist_grad_terms

    envs: list[Env] = []
    for ord in CDIST_ORDS:
        rows = _rows(ord, dtype, rng)
        if backward:
            rows = rows[np.all(np.isfinite(rows), axis=1)]
            rows = _clipped(rows, dtype)
            if ord == "inf":
                rows = rng.choice(np.array([0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -2.0, 2.0, 3.0, -4.0]), size=rows.shape)
        dup = rows[6:10].copy()
        dup[3] = dup[0]
        for x in (rows[0:5], dup, rows[10:12], rows[12:13]):
            with np.errstate(all="ignore"):
                xr = round_to(x, dtype)
            if not backward:
                bound = bound_fields(rule, {"ord": ord}, xr.shape, (xr.shape,))
                if bound is not None:
                    envs.append({**bound, "x": xr})
                continue
            pd = _op_pdist({"ord": ord}, [xr], dtype, None)
            dy = round_to(rng.choice(np.array(DY), size=pd.shape), dtype)
            bound = bound_fields(rule, {"ord": ord}, dy.shape, (dy.shape, xr.shape, pd.shape))
            if bound is None:
                continue
            n = x.shape[0]
            up = np.triu_indices(n, 1)
            sym, dist = np.zeros((n, n)), np.zeros((n, n))
            sym[up], dist[up] = np.abs(np.asarray(dy, np.float64)), np.asarray(pd, np.float64)
            sym, dist = sym + sym.T, dist + dist.T
            xf = np.asarray(xr, np.float64)
            with np.errstate(all="ignore"):
                cond = np.sum(sym[..., None] * np.abs(cdist_grad_terms(_pairs(xf, xf), dist[..., None], ord)), axis=-2)
            envs.append({**bound, "dy": dy, "x": xr, "pd": pd, "cond": cond})
    return envs


CDIST_SCALES = {"CdistBwd": lambda f: f["cond"], "PdistBwd": lambda f: f["cond"]}


def distance_domain(rule: Rule, dtype: str) -> list[Env]:
    """The environments of a rule whose lhs is VectorNorm or Dist."""
    assert isinstance(rule.lhs, App)
    op = language.CTORS[rule.lhs.ctor].op
    if op == "Dist":
        return _dist(rule, dtype, np.random.default_rng(20))
    if op in ("Pdist", "PdistBackward"):
        return _pdist(rule, dtype, np.random.default_rng(22), op == "PdistBackward")
    if op in ("Cdist", "CdistBackward"):
        return _cdist(rule, dtype, np.random.default_rng(21), op == "CdistBackward")
    return _vector_norm(rule, dtype, np.random.default_rng(19))
