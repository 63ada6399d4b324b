"""The domain of Addmv and Addbmm (opdefs/blas.py) and the error scale of their rules.

Shapes: c of the output's shape, broadcast from [1] (and [1, p], [n, 1] for Addbmm) and from a 0-d c;
an empty inner axis (mat [n, 0], b1 [B, n, 0]: the product is 0, the result beta c) and an empty batch
for Addbmm. alpha, beta: (1, 1), (2, 0.5), (-3, 2), (0, 1) (no product: beta c alone, NaN of the product
still propagates) and beta 0 with alpha 1 and -0.5, where c holds NaN, inf and -inf that the result must
not show. Values of mixed signs over six decades with zeros and one large magnitude (sqrt(MAX) / 64 of
the dtype, so no product of two overflows), so sums cancel: the error is measured against
|beta| |c| + |alpha| (|mat| @ |vec|) (`cond`, `BLAS_SCALES`), the condition of the sum.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...egraph import language
from ..dsl import App, Rule
from .base import MAX, Env, bound_fields, round_to

_SCALARS = ((1.0, 1.0), (2.0, 0.5), (-3.0, 2.0), (0.0, 1.0), (1.0, 0.0), (-0.5, 0.0))
_MAGNITUDES = (0.0, 1e-3, -2e-2, 0.3, -1.0, 2.5, -7.0, 30.0)
# (c, mat or b1, vec or b2)
_MV: tuple[tuple[tuple[int, ...], ...], ...] = (((4,), (4, 5), (5,)), ((1,), (3, 2), (2,)), ((), (3, 4), (4,)),
                                                ((3,), (3, 0), (0,)))
_BMM: tuple[tuple[tuple[int, ...], ...], ...] = (((3, 4), (2, 3, 5), (2, 5, 4)), ((1, 4), (3, 2, 2), (3, 2, 4)),
                                                 ((3, 1), (1, 3, 4), (1, 4, 2)), ((), (2, 2, 3), (2, 3, 2)),
                                                 ((2, 3), (2, 2, 0), (2, 0, 3)), ((2, 3), (0, 2, 4), (0, 4, 3)))


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    big = math.sqrt(MAX[dtype] if dtype != "f64" else 1e300) / 64
    v = rng.choice(np.array(_MAGNITUDES + (big,)), size=shape) * rng.uniform(0.5, 1.5, size=shape)
    return round_to(v * rng.choice([1.0, -1.0], size=shape), dtype)


def _cond(op: str, alpha: float, beta: float, c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    prod = np.abs(a) @ np.abs(b)
    if op == "Addbmm":
        prod = np.sum(prod, axis=0)
    term = abs(beta) * np.nan_to_num(np.abs(c), posinf=0.0) if beta != 0 else 0.0
    return np.asarray(abs(alpha) * prod + term, dtype=np.float64)


def blas_domain(rule: Rule, dtype: str) -> list[Env]:
    assert isinstance(rule.lhs, App)
    op = language.CTORS[rule.lhs.ctor].op
    names = ("c", "mat", "vec") if op == "Addmv" else ("c", "b1", "b2")
    rng = np.random.default_rng(23)
    envs: list[Env] = []
    for alpha, beta in _SCALARS:
        attrs: dict[str, Any] = {"alpha": alpha, "beta": beta}
        for shapes in (_MV if op == "Addmv" else _BMM):
            bound = bound_fields(rule, attrs, shapes[0], shapes)
            if bound is None:
                continue
            c, a, b = (_values(rng, s, dtype) for s in shapes)
            if beta == 0 and c.size:  # beta 0 ignores c: its NaN and infinities must not show
                flat = c.reshape(-1)
                flat[:3] = np.array([math.nan, math.inf, -math.inf][:flat.size], dtype=c.dtype)[:3]
            cond = _cond(op, alpha, beta, *(np.asarray(v, dtype=np.float64) for v in (c, a, b)))
            envs.append({**bound, **dict(zip(names, (c, a, b))), "cond": cond})
    return envs


BLAS_SCALES: dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]] = {
    "Addmv": lambda f: f["cond"], "Addbmm": lambda f: f["cond"]}
