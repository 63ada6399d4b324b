"""The domain of the Binary ops' rules (format version 3's FloorDiv, Rem, Fmod, Hypot, Copysign, Xlogy,
FMax, FMin): every pair of a set of awkward values, and quotients near integers.

The values: zeros of both signs, +-1, +-2, +-3, +-0.5, +-7, +-0.1, +-1e-3, +-100, +-1e4, d's smallest
normal and largest finite values and their halves, +-inf and NaN; with them a spread of normal samples
of every scale. Beside the grid of pairs, pairs a = k b (1 +- m eps) for integers k of both signs and
m in 0, 1, 2, 4 (the quotients just off an integer, where floor division and the remainders turn)
and k up to 2^(p+2) (where a / b rounds to an integer before it is one).
"""

from __future__ import annotations

import numpy as np

from ..dsl import Rule
from .base import EPS, MAX, TINY, grid, round_to

_AWKWARD = (0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.5, -0.5, 7.0, -7.0, 0.1, -0.1, 1e-3, -1e-3,
            100.0, -100.0, 1e4, -1e4, float("inf"), float("-inf"), float("nan"))


def _values(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(19)
    big, tiny = MAX[dtype], TINY[dtype]
    if dtype == "f64":
        big = 1e300
    samples = rng.standard_normal(40) * 10.0 ** rng.integers(-6, 7, 40)
    v = np.concatenate([np.array(_AWKWARD), [big, -big, big / 2, -big / 2, tiny, -tiny], samples])
    with np.errstate(all="ignore"):
        return round_to(v, dtype).astype(np.float64)


def binary_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """a, b: every pair of `_values`, and a = k b (1 +- m eps) near integer quotients k."""
    v = _values(dtype)
    a, b = grid(v, v)
    eps = EPS[dtype]
    p = int(round(-np.log2(eps)))
    ks = np.array([1, 2, 3, 5, 7, 10, 2**p - 1, 2**p, 2**p + 1, 2**(p + 2) + 3], dtype=np.float64)
    ks = np.concatenate([ks, -ks])
    bs = np.array([3.0, -3.0, 0.1, -0.1, 7.0, -7.0, 1e-3, 0.7])
    kk, bb, mm, ss = grid(ks, bs, np.array([0.0, 1.0, 2.0, 4.0]), np.array([1.0, -1.0]))
    with np.errstate(all="ignore"):
        bb = round_to(bb, dtype).astype(np.float64)
        near = round_to(kk * bb * (1 + ss * mm * eps), dtype).astype(np.float64)
        keep = np.isfinite(near)
        a = np.concatenate([a, near[keep]])
        b = np.concatenate([b, bb[keep]])
    return {"a": round_to(a, dtype), "b": round_to(b, dtype)}
