"""The domains of softmax, log-softmax and the MSE loss.

Softmax rows: single logits (the row sum is the logit itself), spreads from 1e-3 to 100 (some y
underflow d), equal logits, one dominant logit, logits near d's largest value (where x - max must be
taken first), -inf entries and a row all -inf (nan, as torch), with gradients scaled to 1e-30 and to
1e30: the points where a sum, a max or a subtraction in an expansion underflows, overflows or
cancels. MSE: x and target equal, close (x - t cancels), opposite and far apart, over magnitudes
1e-20 to 1e20.
"""

from __future__ import annotations

import math

import numpy as np

from ...egraph import language
from ..dsl import App, Rule
from .base import DY, MAX, Env, lhs_ctor, lhs_variables, round_to

def softmax_domain(rule: Rule, dtype: str) -> list[Env]:
    """Two environments over the last axis: rows of length 1 (y = 1, or 0 for log-softmax; nan for -inf)
    with every dy (half of them times 1e-30), and rows of C = 7 logits: spreads from 1e-3 to 100 (so some
    y underflow d), rows of equal logits, rows with one dominant logit, large logits (1e4 and beyond, up to a quarter of d's
    largest finite value), rows with -inf entries (masked) and a row all -inf (nan, as torch); y is the
    lhs's forward output (softmax or log-softmax of x, in float64) rounded to d; dy of mixed signs and
    magnitudes, with rows scaled to tiny (1e-30) and huge (1e30, capped to d's range) gradients."""
    names = lhs_variables(rule)
    rng = np.random.default_rng(2)
    rows = [rng.standard_normal(7) * s + c for s in (1e-3, 0.3, 1.0, 5.0, 30.0, 100.0) for c in (0.0, -40.0, 25.0)
            for _ in range(6)]
    rows += [np.full(7, v) for v in (0.0, 3.0, -100.0)]
    rows += [np.where(np.arange(7) == k, big, 0.0) for k in (0, 6) for big in (10.0, 50.0, -50.0)]
    top = MAX[dtype] / 4
    rows += [np.minimum(np.array([1e4, 1e4, 1e4 - 1, 1e4 + 3, -1e4, 0.0, 9990.0]) * m, top) for m in (1.0, 10.0, 1e30)]
    rows += [np.full(7, min(1e4, top)), np.full(7, -top)]
    masked = rng.standard_normal((4, 7)) * 3.0
    masked[0, :6] = masked[1, 1::2] = masked[2, 0] = -np.inf
    masked[3, :] = -np.inf
    x = round_to(np.concatenate([np.array(rows), masked]), dtype).astype(np.float64)
    dy = rng.choice(np.array(DY), size=x.shape) * rng.uniform(0.5, 2.0, size=x.shape)
    dy[-6] *= 1e-30
    dy[-5] *= min(1e30, MAX[dtype] / 1e5)
    single = round_to(np.array([0.0, -3.5, 1e4, -1e4, MAX[dtype] / 4, -MAX[dtype] / 4, -np.inf]), dtype)
    x1 = np.repeat(single.astype(np.float64), len(DY))[:, None]  # every logit with every dy
    dy1 = np.tile(np.array(DY), len(single))[:, None]
    dy1[1::2] *= 1e-30
    return [_softmax_env(names, rule, x1, dy1, dtype), _softmax_env(names, rule, x, dy, dtype)]


def _softmax_env(names: set[str], rule: Rule, x: np.ndarray, dy: np.ndarray, dtype: str) -> Env:
    with np.errstate(invalid="ignore"):
        s = x - x.max(axis=1, keepdims=True)
        e = np.exp(s)
        total = e.sum(axis=1, keepdims=True)
        y = s - np.log(total) if "LogSoftmax" in lhs_ctor(rule) else e / total
    env: Env = {"axis": -1, "axes": "[1]"}
    for name, v in (("x", x), ("y", y), ("dy", dy)):
        if name in names:
            env[name] = round_to(v, dtype)
    return env


def mse_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """x and target [R, 5] of equal, close (x - t cancels), opposite and far values, magnitudes 1e-20 to
    1e20, within a quarter of d's largest value (x - t is finite in d, as a kernel in d computes it;
    (x - t)^2 may overflow d, and the reference then overflows the same way; for a sum or mean, small
    enough that it is finite); dy of x's shape for reduction none, else one scalar of mixed magnitude
    per reduction."""
    names = lhs_variables(rule)
    rng = np.random.default_rng(3)
    lhs = rule.lhs
    assert isinstance(lhs, App)
    base = np.concatenate([rng.standard_normal(40) * m for m in (1e-20, 1e-3, 1.0, 30.0, 1e4, 1e20)])
    reduction = lhs.params[[f.name for f in language.CTORS[lhs.ctor].fields].index("reduction")]
    # a reduced loss over every element is one number: keep it finite, or the check says only inf == inf
    cap = MAX[dtype] / 4 if reduction == "None" or "Bwd" in lhs.ctor else math.sqrt(MAX[dtype] / base.size) / 4
    x = np.clip(base.reshape(-1, 5), -cap, cap)
    t = np.concatenate([x[:12], x[12:24] * (1 + 1e-3), -x[24:36], rng.standard_normal(x[36:].shape) * 10.0])
    dy = rng.choice(np.array(DY), size=x.shape) if reduction == "None" else np.array(-0.37)
    env: dict[str, object] = {"axes": "[0,1]"}
    for name, v in (("x", x), ("t", t), ("dy", dy)):
        if name in names:
            env[name] = round_to(v, dtype)
    return env
