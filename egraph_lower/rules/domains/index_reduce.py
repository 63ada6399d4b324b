"""The domain of IndexReduce: x of rank 1 to 3, the axis first, inner and last (negative too), K indices
with repeats (several slices reduced into one position), positions no index names (kept, include_self or
not), an empty index (K = 0: x unchanged) and one of a single index. The values: for amax and amin few
distinct ones (ties between x and src and among src) with NaN, +-inf and -0.0 among them (NaN propagates);
for prod zeros among values of mixed signs near 1 (a zero factor, no overflow of the product in f16); for
mean values of mixed signs and magnitudes without NaN (a sum's error is measured against its magnitude).
"""

from __future__ import annotations

import numpy as np

from ..dsl import App, Rule
from .base import DY, Env, bound_fields, round_to

# (x shape, axis, K)
_CASES = (((4, 5), 0, 6), ((4, 5), 1, 7), ((3, 4, 2), -2, 6), ((6,), 0, 9), ((4, 3), 0, 0), ((3, 4), -1, 1),
          ((2, 3, 4), 2, 5))
_TIES = np.array([0.0, -0.0, 1.5, -2.0, 1.5, 3.0, np.nan, np.inf, -np.inf, -2.0])


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, reduce: str) -> np.ndarray:
    if reduce in ("amax", "amin"):
        v = rng.choice(_TIES, size=shape)
    elif reduce == "prod":
        v = rng.choice(np.array([0.0, 0.5, -0.75, 1.25, -1.5, 2.0, -0.0]), size=shape)
    else:
        v = rng.choice(np.array(DY), size=shape) * rng.uniform(0.5, 2.0, size=shape)
    return round_to(v, dtype)


def index_reduce_domain(rule: Rule, dtype: str) -> list[Env]:
    assert isinstance(rule.lhs, App)
    rng = np.random.default_rng(1919)
    envs: list[Env] = []
    for xs, axis, k in _CASES:
        ax = axis % len(xs)
        ss = xs[:ax] + (k,) + xs[ax + 1:]
        for reduce in ("prod", "mean", "amax", "amin"):
            for keep in (True, False):
                bound = bound_fields(rule, {"axis": axis, "reduce": reduce, "include_self": keep}, xs,
                                     (xs, (k,), ss))
                if bound is None:
                    continue
                # indices in [0, n - 1): the last position is never written, so kept as x's
                hi = max(xs[ax] - 1, 1)
                index = rng.integers(0, hi, size=(k,))
                envs.append({**bound, "x": _values(rng, xs, dtype, reduce), "index": index,
                             "src": _values(rng, ss, dtype, reduce)})
    return envs
