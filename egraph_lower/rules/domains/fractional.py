"""The domain of fractional max pooling (opdefs/fractional_pool.py).

Shapes: windows of mixed kernels and output sizes, one output along an axis (out = 1: only the last
window, at L - K), a kernel as long as the axis (L - K = 0: alpha 0), kernel 1 with O = L (alpha 1), the
largest output aten allows (O + K - 1 = L in 2-D, L - 1 in 3-D), and a 16 x 16 plane whose products
round in f16 and bf16 (so the windows there are the low dtype's, not float32's; no plane has more than
256 positions but two of f16 only, whose larger planes move windows in f16: the checker computes the flat indices in the dtype under test, and bf16 holds the
integers exactly only up to 256). Samples: 0, just
above 0, just below 1 (0.995: still below 1 in bf16) and uniform ones, rounded to the dtype as x is.
x: small integers (ties in most windows), a NaN in some windows (two in one: the last wins the index), -inf
scattered and a plane of -inf only (its windows name their first position).
"""

from __future__ import annotations

import numpy as np

from ...egraph import language
from ..dsl import App, Rule
from .base import Env, bound_fields, round_to

# (x's shape, kernel, output_size)
CASES: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = (
    ((2, 2, 7, 9), (2, 3), (4, 5)), ((1, 2, 5, 6), (2, 2), (1, 1)), ((1, 2, 4, 6), (4, 2), (1, 3)),
    ((2, 1, 6, 6), (1, 1), (6, 6)), ((1, 3, 9, 12), (2, 2), (8, 11)), ((2, 3, 16, 16), (2, 3), (11, 13)),
    ((1, 2, 5, 6, 7), (2, 2, 3), (3, 4, 4)), ((1, 2, 3, 4, 5), (1, 2, 2), (2, 2, 3)),
    ((2, 1, 5, 6, 8), (2, 1, 3), (3, 5, 4)),
)
# f16 only (its integers are exact up to 2048): a plane large enough that f16's rounding moves windows
F16_CASES = (((1, 2, 40, 48), (3, 2), (29, 37)), ((1, 2, 44, 44), (2, 3), (31, 30)))
_SAMPLES = (0.0, 1e-4, 0.995, 0.5)


def _x(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    x = rng.integers(-3, 4, size=shape).astype(np.float64)
    flat = x.reshape(shape[0] * shape[1], -1)
    for row in flat:
        for _ in range(max(1, row.size // 25)):
            row[rng.integers(row.size)] = np.nan
        row[rng.integers(row.size, size=max(1, row.size // 10))] = -np.inf
    flat[-1] = -np.inf  # a plane of -inf only
    if flat.shape[1] > 1:
        flat[0, :2] = np.nan  # two NaNs side by side
    return round_to(x, dtype)


def fractional_domain(rule: Rule, dtype: str) -> list[Env]:
    assert isinstance(rule.lhs, App)
    rank = 5 if "3d" in language.CTORS[rule.lhs.ctor].op else 4
    rng = np.random.default_rng(29)
    envs: list[Env] = []
    for shape, kernel, out in CASES + (F16_CASES if dtype == "f16" else ()):
        if len(shape) != rank:
            continue
        bound = bound_fields(rule, {"kernel": list(kernel), "output_size": list(out)}, shape)
        if bound is None:
            continue
        nd = len(kernel)
        s = rng.uniform(0.0, 1.0, size=(*shape[:2], nd))
        flat = s.reshape(-1)
        flat[:len(_SAMPLES)] = _SAMPLES[:flat.size]
        envs.append({**bound, "x": _x(rng, shape, dtype), "s": round_to(s, dtype)})
    return envs
