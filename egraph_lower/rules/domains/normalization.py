"""The normalization domains (batch norm in inference and training, layer norm, RMS norm) and the
error scales of their rules.

Channels and rows of mixed means and spreads: a large offset (1e4; 100 in f16, where its square
overflows) against a small spread, where the mean cancels; constant rows and channels, whose variance
is 0 and whose rstd is 1/sqrt(eps); weights and biases of mixed signs and magnitudes; dy of mixed
magnitudes, scaled so that the terms a lowering rounds to d stay finite. The saved statistics (mean,
rstd, invstd) are computed from x in float64. A rule's result is summed or cancelled from terms much
larger than itself, so its error is measured against the size of those terms (`NORM_SCALES`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..dsl import Rule
from .base import BN_EPS, DY, MAX, lhs_variables, round_to

def bn_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """Batch norm in inference: x [N, C] around each channel's mean (z scores over [-8, 8], 0 and
    +-1e-3), C channels with mean, var, gamma and beta of mixed magnitudes, var >= 0 (0 included), eps
    BN_EPS, dy scaled so that each term dy (x - mean) / std is finite in d; x [N, C, 2] with the channel
    on axis 1 for the rules with an `axis` field."""
    names = lhs_variables(rule)
    mean = np.array([0.0, 1.5, -300.0, 1e4, 0.01, -2.0])
    var = np.array([1.0, 0.0, 1e-3, 4e4, 0.25, 1e3])
    gamma = np.array([1.0, -0.5, 2.5, 1e-2, 3.0, -1.0])
    beta = np.array([0.0, 0.1, -5.0, 1e3, 2.0, -0.3])
    z = np.concatenate([np.linspace(-8, 8, 161), [0.0, 1e-3, -1e-3]])
    x = mean[None, :] + z[:, None] * np.sqrt(var + BN_EPS)[None, :]
    rng = np.random.default_rng(1)
    dy = rng.choice(np.array(DY), size=x.shape) * rng.uniform(0.5, 2.0, size=x.shape)
    # each per-element term dy (x - mean) / std must be finite in d: a lowering rounds it to d
    # (the fused op need not); the sum, and so the result, may still overflow
    terms = np.abs(dy * (x - mean) / np.sqrt(var + BN_EPS))
    dy = dy * min(1.0, MAX[dtype] / (4 * terms.max()))
    env: dict[str, object] = {"eps": BN_EPS, "axes": "[0]"}
    if "axis" in names:  # the channel on axis 1 of [N, C, 2] (format version 2's `axis`)
        x, dy = np.stack([x, x[::-1]], axis=2), np.stack([dy, dy[::-1]], axis=2)
        env.update(axis=1, cshape=f"[{len(mean)},1]", axes="[0,2]")
    for name, v in (("x", x), ("mean", mean), ("var", var), ("gamma", gamma), ("beta", beta), ("dy", dy)):
        if name in names:
            env[name] = round_to(v, dtype)
    return env


def _offset(dtype: str) -> float:
    """The large offset of the normalization domains: 1e4, or 100 in f16, where a square of 1e4
    overflows (65504) and the half-precision work computes such ops in f32."""
    return 100.0 if dtype == "f16" else 1e4


def _norm_rows(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    """Rows of n values: spreads 1e-3 to 30 around 0, -5 and a large offset, constant rows (zero
    variance) and a row with one outlier."""
    big = _offset(dtype)
    rows = [rng.standard_normal(n) * s + c for s in (1e-3, 1.0, 30.0) for c in (0.0, -5.0, big) for _ in range(2)]
    rows += [np.full(n, v) for v in (0.0, 3.0, big)]
    rows.append(np.where(np.arange(n) == 2, 50.0, 0.1))
    return np.array(rows)


def layernorm_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """Layer norm, RMS norm and their statistics: x of shape [R, 6] (rows from `_norm_rows`) normalised
    over axis 1, weight and bias of mixed signs, the saved mean and rstd computed from x in float64, dy of
    mixed magnitudes scaled so that dy * weight * rstd stays finite in d."""
    names = lhs_variables(rule)
    rng = np.random.default_rng(3)
    x = round_to(_norm_rows(rng, 6, dtype), dtype).astype(np.float64)
    w = np.array([1.0, -0.5, 2.5, 1e-2, 3.0, -1.0])
    b = np.array([0.0, 0.1, -5.0, 1e3, 2.0, -0.3])
    mean = x.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + BN_EPS)
    r = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + BN_EPS)
    dy = rng.choice(np.array(DY), size=x.shape) * rng.uniform(0.5, 2.0, size=x.shape)
    big = np.abs(dy * w * np.maximum(rstd, r) * np.maximum(1.0, np.abs(x - mean) * rstd)).max()
    dy = dy * min(1.0, MAX[dtype] / (16 * big))
    env: dict[str, object] = {"axis": 1, "axes": "[1]", "lead": "[0]", "eps": BN_EPS, "keep": 1}
    for name, v in (("x", x), ("w", w), ("b", b), ("mean", mean), ("rstd", rstd), ("r", r), ("dy", dy)):
        if name in names:
            env[name] = round_to(v, dtype)
    return env


def bntrain_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """Batch norm in training: x [5, 6, 3] with the channel on axis 1, channels of mixed means and spreads
    (one constant: zero variance; one around 1e4), the saved mean and invstd from x in float64."""
    names = lhs_variables(rule)
    rng = np.random.default_rng(4)
    centre = np.array([0.0, 1.5, -300.0, _offset(dtype), 0.01, -2.0])
    spread = np.array([1.0, 0.0, 1e-3, 200.0, 0.5, 30.0])
    x = centre[None, :, None] + rng.standard_normal((5, 6, 3)) * spread[None, :, None]
    x = round_to(x, dtype).astype(np.float64)
    gamma = np.array([1.0, -0.5, 2.5, 1e-2, 3.0, -1.0])
    beta = np.array([0.0, 0.1, -5.0, 1e3, 2.0, -0.3])
    mean = x.mean(axis=(0, 2))
    invstd = 1.0 / np.sqrt(((x - mean[None, :, None]) ** 2).mean(axis=(0, 2)) + BN_EPS)
    dy = rng.choice(np.array(DY), size=x.shape) * rng.uniform(0.5, 2.0, size=x.shape)
    big = np.abs(dy * (gamma * invstd)[None, :, None]).max() * 8
    dy = dy * min(1.0, MAX[dtype] / (16 * big))
    env: dict[str, object] = {"axis": 1, "axes": "[0,2]", "cshape": "[6,1]", "eps": BN_EPS}
    for name, v in (("x", x), ("gamma", gamma), ("beta", beta), ("mean", mean), ("invstd", invstd), ("dy", dy)):
        if name in names:
            env[name] = round_to(v, dtype)
    return env


def _sum_abs(v: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.sum(np.abs(v), axis=axes)


def _ln_stats(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    m = x.mean(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(axis=axes, keepdims=True) + BN_EPS)


def _bwd_input_scale(g: np.ndarray, xhat: np.ndarray, scale: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """|scale| (|g| + mean|g| + |xhat| mean|g xhat|): the size of the terms a backward input cancels."""
    mean = np.mean(np.abs(g), axis=axes, keepdims=True)
    return np.abs(scale) * (np.abs(g) + mean + np.abs(xhat) * np.mean(np.abs(g * xhat), axis=axes, keepdims=True))


def _bn_c(v: np.ndarray) -> np.ndarray:
    return v[None, :, None]


# The error scale of a normalization rule, by its lhs constructor: the size of the terms the result is
# summed or cancelled from (an error relative to |result| alone is unbounded where they cancel).
NORM_SCALES: dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]] = {
    "LayerNorm": lambda f: np.abs(_ln_stats(f["x"], (1,)) * f["w"]) + np.abs(f["b"]),
    "RmsNorm": lambda f: np.abs(f["x"] / np.sqrt((f["x"] ** 2).mean(axis=1, keepdims=True) + BN_EPS) * f["w"]),
    "LnBwdInput": lambda f: _bwd_input_scale(f["dy"] * f["w"], (f["x"] - f["mean"]) * f["rstd"], f["rstd"], (1,)),
    "LnBwdWeight": lambda f: _sum_abs(f["dy"] * (f["x"] - f["mean"]) * f["rstd"], (0,)),
    "LnBwdBias": lambda f: _sum_abs(f["dy"], (0,)),
    "RmsBwdInput": lambda f: _bwd_input_scale(f["dy"] * f["w"], f["x"] * f["r"], f["r"], (1,)),
    "RmsBwdWeight": lambda f: _sum_abs(f["dy"] * f["x"] * f["r"], (0,)),
    "BnTrain": lambda f: np.abs(_ln_stats(f["x"], (0, 2)) * _bn_c(f["gamma"])) + np.abs(_bn_c(f["beta"])),
    "BnTrainBwdInput": lambda f: _bwd_input_scale(f["dy"], (f["x"] - _bn_c(f["mean"])) * _bn_c(f["invstd"]),
                                                  _bn_c(f["gamma"] * f["invstd"]), (0, 2)),
    "BnTrainBwdGamma": lambda f: _sum_abs(f["dy"] * (f["x"] - _bn_c(f["mean"])) * _bn_c(f["invstd"]), (0, 2)),
    "BnTrainBwdBeta": lambda f: _sum_abs(f["dy"], (0, 2)),
    # batch-norm inference with the channel on axis 1 of [N, C, 2] (the version-1 forms: check.py)
    "BNAxis": lambda f: np.abs((f["x"] - _bn_c(f["mean"])) / _bn_c(np.sqrt(f["var"] + BN_EPS) / f["gamma"]))
    + np.abs(_bn_c(f["beta"])),
    "BnBwdGammaAxis": lambda f: _sum_abs(f["dy"] * (f["x"] - _bn_c(f["mean"])), (0, 2)) / np.sqrt(f["var"] + BN_EPS),
    "BnBwdBetaAxis": lambda f: _sum_abs(f["dy"], (0, 2)),
}

