"""The domain of the view-scatter ops (opdefs/views.py): SliceScatter.

SliceScatter: slices of axes of 0 to 10 positions, each with Python's clamping of negative and too large
bounds, step 1 and steps that fill the axis exactly, leave positions after the last one, run past the end,
a step larger than the axis, the last index alone, and empty slices (an empty axis too), on axis 1 of a
rank-2 x [3, n] and on axis -3 of a rank-3 one [n, 2, 2]; x and src hold values of mixed signs and
magnitudes with a NaN and an infinity, so a select that blends instead of choosing shows.
"""

from __future__ import annotations

import numpy as np

from ...egraph import language
from ..dsl import App, Rule
from .base import DY, Env, bound_fields, round_to

# (n, start, end, step)
SLICES = (
    (9, -7, 6, 1), (6, 0, 6, 1), (6, 4, 2, 1), (6, 5, 6, 1), (6, -1, 2**62, 1), (0, 0, 2**62, 1), (5, 0, 0, 1),
    (8, 0, 8, 2), (8, 1, 8, 2), (9, 0, 9, 2), (10, 0, 5, 2), (7, 0, 100, 3), (5, 2, 3, 7), (6, -100, -2, 4),
    (5, 1, 50, 2), (10, -9, -1, 3), (6, -1, -5, 2), (4, 3, 2**62, 5), (6, 5, 6, 3), (0, 0, 2**62, 2),
    (1, 0, 1, 3), (7, -1, 2**62, 2),
)


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    v = rng.choice(np.array(DY), size=shape) * rng.uniform(0.5, 2.0, size=shape)
    flat = v.reshape(-1)
    if flat.size >= 3:
        flat[rng.integers(flat.size)] = np.nan
        flat[rng.integers(flat.size)] = -np.inf
    return round_to(v, dtype)


def views_domain(rule: Rule, dtype: str) -> list[Env]:
    assert isinstance(rule.lhs, App)
    op = language.CTORS[rule.lhs.ctor].op
    rng = np.random.default_rng(19)
    envs: list[Env] = []
    if op == "SliceScatter":
        for n, start, end, step in SLICES:
            m = len(range(*slice(start, end, step).indices(n)))
            for axis, shape, sshape in ((1, (3, n), (3, m)), (-3, (n, 2, 2), (m, 2, 2))):
                bound = bound_fields(rule, {"axis": axis, "start": start, "end": end, "step": step}, shape)
                if bound is not None:
                    envs.append({**bound, "x": _values(rng, shape, dtype), "src": _values(rng, sshape, dtype)})
    return envs
