"""The group-norm domain and the error scales of its rules.

Two shapes: x [3, 6, 2] in 2 groups (K = 6 values a group) and x [4, 3] in 3 groups (K = 1: a group of
one element, whose variance is 0 and whose xhat is 0). The groups of the first have mixed means and
spreads: a large offset (1e4; 100 in f16, where its square overflows) against a small spread, where
the mean cancels; constant groups (zero variance, rstd = 1/sqrt(eps)); one outlier. Weights and biases
of mixed signs and magnitudes, dy of mixed magnitudes scaled so that dy w rstd stays finite in d. The
saved mean and rstd are computed from x in float64. Each rule's result is summed or cancelled from
terms much larger than itself, so its error is measured against the size of those terms
(`GROUP_SCALES`, which need the group count: the environment's `groups`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..dsl import Rule
from .base import BN_EPS, DY, MAX, Env, lhs_variables, round_to


def _offset(dtype: str) -> float:
    return 100.0 if dtype == "f16" else 1e4


def _x(rng: np.random.Generator, shape: tuple[int, ...], groups: int, dtype: str) -> np.ndarray:
    n, c = shape[:2]
    k = (c // groups) * int(np.prod(shape[2:], dtype=np.int64))
    centres = [0.0, -5.0, _offset(dtype), 3.0, _offset(dtype), 0.5]
    spreads = [1.0, 1e-3, 30.0, 0.0, 1e-3, 0.0]
    rows = [rng.standard_normal(k) * spreads[i % 6] + centres[i % 6] for i in range(n * groups)]
    if k > 2:
        rows[0][1] = 50.0  # an outlier
    return np.array(rows).reshape(shape)


def _env(names: set[str], shape: tuple[int, ...], groups: int, dtype: str, seed: int) -> Env:
    rng = np.random.default_rng(seed)
    n, c = shape[:2]
    x = round_to(_x(rng, shape, groups, dtype), dtype).astype(np.float64)
    w = np.resize(np.array([1.0, -0.5, 2.5, 1e-2, 3.0, -1.0]), c)
    b = np.resize(np.array([0.0, 0.1, -5.0, 1e3, 2.0, -0.3]), c)
    xg = x.reshape(n, groups, -1)
    mean = xg.mean(axis=2)
    rstd = 1.0 / np.sqrt(((xg - mean[..., None]) ** 2).mean(axis=2) + BN_EPS)
    dy = rng.choice(np.array(DY), size=x.shape) * rng.uniform(0.5, 2.0, size=x.shape)
    wc = w.reshape((c,) + (1,) * (x.ndim - 2))
    big = np.abs(dy * wc).max() * rstd.max()
    dy = dy * min(1.0, MAX[dtype] / (16 * big))
    k = xg.shape[2]
    env: Env = {"groups": groups, "eps": BN_EPS, "gshape": f"[{n},{groups},{k}]", "gstat": f"[{n},{groups},1]",
                "xshape": "[" + ",".join(str(d) for d in shape) + "]",
                "cshape": "[" + ",".join([str(c)] + ["1"] * (x.ndim - 2)) + "]",
                "others": "[" + ",".join(["0"] + [str(i) for i in range(2, x.ndim)]) + "]"}
    for name, v in (("x", x), ("w", w), ("b", b), ("mean", mean), ("rstd", rstd), ("dy", dy)):
        if name in names:
            env[name] = round_to(v, dtype)
    return env


def groupnorm_domain(rule: Rule, dtype: str) -> list[Env]:
    names = lhs_variables(rule)
    return [_env(names, (3, 6, 2), 2, dtype, 5), _env(names, (4, 3), 3, dtype, 6)]


def _grouped(v: np.ndarray, groups: int) -> np.ndarray:
    return v.reshape(v.shape[0], groups, -1)


def _wc(w: np.ndarray, ndim: int) -> np.ndarray:
    return w.reshape(w.shape + (1,) * (ndim - 2))


def _xhat(f: dict[str, np.ndarray], groups: int) -> np.ndarray:
    x = f["x"]
    xg = _grouped(x, groups)
    if "mean" in f:
        return ((xg - f["mean"][..., None]) * f["rstd"][..., None]).reshape(x.shape)
    m = xg.mean(axis=2, keepdims=True)
    return ((xg - m) / np.sqrt(((xg - m) ** 2).mean(axis=2, keepdims=True) + BN_EPS)).reshape(x.shape)


def _input_scale(f: dict[str, np.ndarray], groups: int) -> np.ndarray:
    """|rstd| (|g| + mean|g| + |xhat| mean|g xhat|): the terms a backward input cancels."""
    x = f["x"]
    g = _grouped(f["dy"] * _wc(f["w"], x.ndim), groups)
    xhat = _grouped(_xhat(f, groups), groups)
    s = np.abs(f["rstd"][..., None]) * (np.abs(g) + np.abs(g).mean(axis=2, keepdims=True)
                                        + np.abs(xhat) * np.abs(g * xhat).mean(axis=2, keepdims=True))
    return s.reshape(x.shape)


GROUP_SCALES: dict[str, Callable[[dict[str, np.ndarray], int], np.ndarray]] = {
    "GroupNorm": lambda f, g: np.abs(_xhat(f, g) * _wc(f["w"], f["x"].ndim)) + np.abs(_wc(f["b"], f["x"].ndim)),
    "GnBwdInput": _input_scale,
    "GnBwdWeight": lambda f, g: np.sum(np.abs(f["dy"] * _xhat(f, g)), axis=(0,) + tuple(range(2, f["x"].ndim))),
}
