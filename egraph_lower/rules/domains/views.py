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
from ...opdefs.views import _diagonal_shape
from .base import DY, Env, bound_fields, round_to

# (n, start, end, step)
SLICES = (
    (9, -7, 6, 1), (6, 0, 6, 1), (6, 4, 2, 1), (6, 5, 6, 1), (6, -1, 2**62, 1), (0, 0, 2**62, 1), (5, 0, 0, 1),
    (8, 0, 8, 2), (8, 1, 8, 2), (9, 0, 9, 2), (10, 0, 5, 2), (7, 0, 100, 3), (5, 2, 3, 7), (6, -100, -2, 4),
    (5, 1, 50, 2), (10, -9, -1, 3), (6, -1, -5, 2), (4, 3, 2**62, 5), (6, 5, 6, 3), (0, 0, 2**62, 2),
    (1, 0, 1, 3), (7, -1, 2**62, 2),
)

# (x's shape, offset, dim1, dim2): offsets on and off the main diagonal both ways, the last ones that
# still hold an element, past the matrix (empty diagonals), an empty matrix, dim1 > dim2, negative dims,
# the two axes apart with others between and around them, 1 x 1 and 1-wide matrices
DIAGONALS: tuple[tuple[tuple[int, ...], int, int, int], ...] = (
    ((3, 4), 0, 0, 1), ((3, 4), 1, 0, 1), ((3, 4), 3, 0, 1), ((3, 4), 4, 0, 1), ((3, 4), 9, 0, 1),
    ((3, 4), -1, 0, 1), ((3, 4), -2, 0, 1), ((3, 4), -3, 0, 1), ((3, 4), -7, 0, 1), ((3, 4), 2, 1, 0),
    ((3, 4), -1, -1, -2), ((4, 3), 1, -2, -1), ((0, 3), 0, 0, 1), ((3, 0), -1, 0, 1), ((1, 1), 0, 0, 1),
    ((5, 1), -2, 0, 1), ((2, 3, 4), 1, 0, 2), ((2, 3, 4), -1, 2, 0), ((2, 3, 4), 0, -1, 1), ((2, 3, 4), 2, 1, -1),
    ((4, 1, 3, 2), 0, 1, 3), ((4, 2, 3, 2), -1, 3, 0), ((2, 2, 0, 3), 0, 0, 1),
)

# (x's shape, axis, index): first, last and negative indices, a negative axis, a 1-long axis (src 0-d),
# an empty x
SELECTS: tuple[tuple[tuple[int, ...], int, int], ...] = (
    ((3, 4), 0, 0), ((3, 4), 1, -1), ((3, 4), -1, 2), ((3, 4), 1, -4), ((3, 4), 0, 2), ((1,), 0, 0),
    ((1,), -1, -1), ((2, 0, 3), 2, 1), ((4, 2, 3), 1, -2), ((4, 2, 3), -3, 3))
# (x's shape, reps): more repeats than axes (leading ones), ones, a zero repeat, a 0-d x, an empty x
REPEATS: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = (
    ((3,), (2,)), ((2, 3), (1, 1)), ((2, 3), (2, 3)), ((2, 3), (0, 2)), ((2, 3), (3, 1, 2)), ((), ()),
    ((), (2, 3)), ((2, 0), (2, 2)), ((1, 2, 1), (2, 1, 3, 2)))


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
    shape: tuple[int, ...]
    if op == "SliceScatter":
        for n, start, end, step in SLICES:
            m = len(range(*slice(start, end, step).indices(n)))
            for axis, shape, sshape in ((1, (3, n), (3, m)), (-3, (n, 2, 2), (m, 2, 2))):
                bound = bound_fields(rule, {"axis": axis, "start": start, "end": end, "step": step}, shape)
                if bound is not None:
                    envs.append({**bound, "x": _values(rng, shape, dtype), "src": _values(rng, sshape, dtype)})
    elif op in ("Diagonal", "DiagonalScatter", "DiagonalBackward"):
        for shape, offset, d1, d2 in DIAGONALS:
            attrs = {"offset": offset, "dim1": d1, "dim2": d2}
            dshape = _diagonal_shape(attrs, shape)
            if op == "DiagonalBackward":
                bound = bound_fields(rule, {"shape": list(shape), **attrs}, dshape)
                if bound is not None:
                    envs.append({**bound, "g": _values(rng, dshape, dtype)})
                continue
            bound = bound_fields(rule, attrs, shape)
            if bound is not None:
                envs.append({**bound, "x": _values(rng, shape, dtype), "src": _values(rng, dshape, dtype)})
    elif op == "SelectScatter":
        for shape, axis, index in SELECTS:
            a = axis % len(shape)
            bound = bound_fields(rule, {"axis": axis, "index": index}, shape)
            if bound is not None:
                envs.append({**bound, "x": _values(rng, shape, dtype),
                             "src": _values(rng, shape[:a] + shape[a + 1:], dtype)})
    elif op == "Repeat":
        for shape, reps in REPEATS:
            bound = bound_fields(rule, {"reps": list(reps)}, shape)
            if bound is not None:
                envs.append({**bound, "x": _values(rng, shape, dtype)})
    return envs
