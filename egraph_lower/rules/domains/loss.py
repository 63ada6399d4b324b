"""The domains of the elementwise losses (opdefs/loss.py) and their backward ops.

Smooth L1 and Huber: d = x - t at 0 and -0, exactly at +-beta (delta) and one and two ulp either
side, inside and outside the quadratic branch, tiny (1e-30) and large (1e4, 1e20, an eighth of d's
largest value) magnitudes, with t 0 and t random (x - t rounded in d as a kernel computes it), for
beta 0 (L1: its kink at 0), 0.5, 1 and 3 (delta 0.5, 1, 3). BCE: x at 0, 1, d's smallest normal,
1e-30 and 1e-44 (log x below -100 in f64 and f32: the clamp), 1 - eps, 1/2 and uniform in (0, 1),
against t 0, 1, 0.3 and uniform, weights 1, 0 and uniform in (0, 2); x = t at 0 and at 1 (the
backward's 0 / max(0, 1e-12)) and weight 0 there, except in f16, where 1e-12 is 0 and the
kernel's 0 / 0 (inf times 0) is nan, as torch's f16 kernel gives. Soft margin: x from 0 to +-1e4
and a quarter of d's range, t +-1, 0, 0.7 and normal, so -t x runs past exp's overflow in every dtype,
and with t = 0.7 (t x rounded) down to exp's underflow, where the rounding of t x grows by |t x|.
A sum or a mean is kept finite (its inputs capped by the element count); dy is d's mixed DY of x's
shape for "none", else one scalar.
"""

from __future__ import annotations

import math

import numpy as np

from ...egraph import language
from ..dsl import App, Rule
from .base import DY, EPS, MAX, TINY, UNDERFLOW_X, Env, bound_fields, lhs_ctor, lhs_variables, round_to

_COLS = 5


def _reduction(rule: Rule) -> str:
    lhs = rule.lhs
    assert isinstance(lhs, App)
    return lhs.params[[f.name for f in language.CTORS[lhs.ctor].fields].index("reduction")]


def _rows(v: np.ndarray) -> np.ndarray:
    pad = (-v.size) % _COLS
    return np.concatenate([v, v[:pad]]).reshape(-1, _COLS)


def _env(rule: Rule, dtype: str, values: dict[str, np.ndarray], prims: dict[str, object]) -> Env:
    names = lhs_variables(rule)
    x = values["x"]
    rng = np.random.default_rng(7)
    reduced = _reduction(rule) != "None"
    dy = np.array(-0.37) if reduced else rng.choice(np.array(DY), size=x.shape) * rng.uniform(0.5, 2.0, x.shape)
    env: Env = {"axes": "[0,1]", **prims}
    for name, v in {**values, "dy": dy}.items():
        if name in names:
            env[name] = round_to(v, dtype)
    return env


def _cap(rule: Rule, dtype: str, size: int, per: float = 1.0) -> float:
    """The largest |input| for which the lhs stays finite: a quarter of d's range elementwise, the
    range shared by every element (and `per`, the growth of one element's loss) for a sum."""
    if _reduction(rule) == "None" or "Bwd" in lhs_ctor(rule):
        return MAX[dtype] / 4
    return MAX[dtype] / (4 * size * per)


def _distance_envs(rule: Rule, dtype: str, param: str, values: tuple[float, ...]) -> list[Env]:
    eps = EPS[dtype]
    rng = np.random.default_rng(11)
    out = []
    for p in values:
        kinks = [p * (1 + s * m * eps) for s in (1, -1) for m in (0, 1, 2)] + [p / 2, 2 * p, p / 3]
        mags = [0.0, -0.0, 1e-30, 1e-3, 0.25, 1.0, 2.5, 30.0, 1e4, 1e20, MAX[dtype] / 8]
        d = np.array(kinks + [-k for k in kinks] + mags + [-m for m in mags] + list(rng.standard_normal(24) * 3))
        quad = d.size  # the first rows have t = 0: x is d exactly
        cap = _cap(rule, dtype, 2 * quad, max(p, 1.0))
        if _reduction(rule) != "None" and "Bwd" not in lhs_ctor(rule):
            cap = min(cap, math.sqrt(MAX[dtype] / (4 * 2 * quad)))  # 0.5 d^2 / beta of every element
        d = np.clip(d, -cap, cap)
        t = np.concatenate([np.zeros(quad), np.clip(rng.standard_normal(quad) * 4, -cap, cap)])
        x = np.clip(round_to(np.concatenate([d, d]) + t, dtype).astype(np.float64), -cap, cap)
        fields = bound_fields(rule, {"reduction": _reduction(rule).lower(), param: p}, (1, _COLS)) or {}
        prims = {k: v for k, v in fields.items() if k != "axes"}  # beta and its derived fields
        out.append(_env(rule, dtype, {"x": _rows(x), "t": _rows(t)}, prims))
    return out


def _bce_env(rule: Rule, dtype: str) -> Env:
    rng = np.random.default_rng(13)
    xs = np.array([0.0, 1.0, TINY[dtype], 1e-30, 1e-44, 1 - EPS[dtype], 0.5, 1e-4, 1 - 1e-4]
                  + list(rng.uniform(0, 1, 7)))
    ts = np.array([0.0, 1.0, 0.3] + list(rng.uniform(0, 1, 3)))
    with np.errstate(all="ignore"):  # 1e-44 is 0 in f16 and 1e-30 too; bf16 rounds them to its own
        xs = round_to(xs, dtype).astype(np.float64)
    x, t = (m.ravel() for m in np.meshgrid(xs, ts, indexing="ij"))
    w = rng.permutation(np.concatenate([np.ones(x.size // 3), np.zeros(x.size // 6), rng.uniform(0, 2, x.size)])[:x.size])
    if dtype == "f16":  # x (1 - x) = 0: 0 / max(0, 1e-12) is 0 / 0 in f16, inf times w = 0 nan (torch's too)
        keep = ~(((x == 0) | (x == 1)) & ((x == t) | (w == 0)))
        x, t, w = x[keep], t[keep], w[keep]
    return _env(rule, dtype, {"x": _rows(x), "t": _rows(t), "w": _rows(w)}, {})


def _margin_env(rule: Rule, dtype: str) -> Env:
    rng = np.random.default_rng(17)
    mags = [0.0, 1e-30, 1e-3, 0.5, 1.0, 3.0, 10.0, 17.0, 20.0, 30.0, 50.0, 89.0, 100.0, 800.0, 1e4, 1e20,
            MAX[dtype] / 16]
    # -t x down to the underflow of exp(-t x), t x rounded (t = 0.7): its rounding grows by |t x| in exp
    mags += list(np.linspace(10.0, UNDERFLOW_X[dtype] / 0.7, 24))
    xs = np.array(mags + [-m for m in mags] + list(rng.standard_normal(8) * 5))
    ts = np.array([1.0, -1.0, 0.0, 0.5, -2.0, 0.7] + list(rng.standard_normal(2)))
    x, t = (m.ravel() for m in np.meshgrid(xs, ts, indexing="ij"))
    cap = _cap(rule, dtype, x.size, 2.0)
    return _env(rule, dtype, {"x": _rows(np.clip(x, -cap, cap)), "t": _rows(t)}, {})


def loss_domain(rule: Rule, dtype: str) -> list[Env]:
    """The environments of the rule's loss (one per beta or delta for smooth L1 and Huber)."""
    ctor = lhs_ctor(rule)
    if ctor.startswith("SmoothL1"):
        return _distance_envs(rule, dtype, "beta", (0.0, 0.5, 1.0, 3.0))
    if ctor.startswith("Huber"):
        return _distance_envs(rule, dtype, "delta", (0.5, 1.0, 3.0))
    if ctor.startswith("Bce"):
        return [_bce_env(rule, dtype)]
    return [_margin_env(rule, dtype)]
