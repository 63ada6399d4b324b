"""The domain of Trilinear and the error scale of its rules.

aten's own calls (bilinear's forward and its three gradients, each a Trilinear with other expand and
sum axes), an inner-product form (every axis summed: a 0-d result), no axis summed (the product
alone), negative positions, inputs that broadcast along a kept axis (size 1 where another has N) and
along a summed one, and an empty summed axis (a sum of nothing: 0). Values of mixed signs spread over
six decades with zeros, so sums cancel: the error is measured against the Trilinear of |a|, |b|, |c|
(`cond`, `TRILINEAR_SCALES`), the condition of the sum.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...opdefs.trilinear import _op_trilinear
from ..dsl import Rule
from .base import Env, bound_fields, round_to

_BILINEAR = ([1, 3], [0], [1, 2], [2, 3])
# (expand1, expand2, expand3, sumdim), the three shapes
_CASES: tuple[tuple[tuple[list[int], ...], tuple[tuple[int, ...], ...]], ...] = (
    (_BILINEAR, ((4, 3), (2, 3, 5), (4, 5))),
    (([2, 3], [0], [1, 2], [1, 3]), ((4, 2), (2, 3, 5), (4, 5))),  # bilinear's gradient of x1
    (([1, 3], [2, 3], [1, 2], [0]), ((4, 3), (4, 2), (4, 5))),  # of W
    (([1, 3], [0], [2, 3], [1, 2]), ((4, 3), (2, 3, 5), (4, 2))),  # of x2
    (([], [], [], [0, -1]), ((3, 4), (3, 4), (1, 4))),  # an inner product, c broadcast along axis 0
    (([0], [1], [], []), ((5,), (3,), (3, 5))),  # nothing summed
    (([-1], [0], [0], [1]), ((1, 3), (3, 2), (1, 2))),  # negative positions, a broadcast kept axis
    (_BILINEAR, ((4, 0), (2, 0, 5), (4, 5))),  # an empty summed axis
)
_MAGNITUDES = np.array([0.0, 1e-3, -2e-2, 0.3, -1.0, 2.5, -7.0, 30.0])


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return round_to(rng.choice(_MAGNITUDES, size=shape) * rng.uniform(0.5, 1.5, size=shape), dtype)


def trilinear_domain(rule: Rule, dtype: str) -> list[Env]:
    rng = np.random.default_rng(11)
    envs: list[Env] = []
    for (e1, e2, e3, sumdim), shapes in _CASES:
        attrs: dict[str, Any] = {"expand1": e1, "expand2": e2, "expand3": e3, "sumdim": sumdim}
        bound = bound_fields(rule, attrs, shapes[0], shapes)
        if bound is None:
            continue
        a, b, c = (_values(rng, s, dtype) for s in shapes)
        cond = _op_trilinear(attrs, [np.abs(a), np.abs(b), np.abs(c)], "f64", None)
        envs.append({**bound, "a": a, "b": b, "c": c, "cond": cond})
    return envs


TRILINEAR_SCALES: dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]] = {"Trilinear": lambda f: f["cond"]}
