"""The checker's domain of the strided ops and masked scatter (`opdefs/strided.py`).

AsStrided at the awkward windows: an offset past 0, zero strides (one position read several times),
overlapping windows (a stride smaller than the window along the next axis), transposed strides,
contiguous runs (the whole of x and a run at an offset: `as-strided-slice`), empty sizes and a 0-d
window. AsStridedScatter at windows that write each position once: strided, at an offset, contiguous
runs, zero strides on axes of one, empty and 0-d windows. MaskedScatter and its backward at random, all-false
and all-true masks, a source of exactly the trues and a larger one (all-false: an empty source), an empty
x. Values of mixed signs and magnitudes with 0, -0.0, infinities and NaN (a selection: exact).
"""

from __future__ import annotations

import math

import numpy as np

from ...egraph import language
from ..dsl import Rule
from .base import DY, Env, bound_fields, lhs_ctor, round_to

_SPECIAL = (0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-30)

# (x's shape, size, stride, offset)
_READS: tuple[tuple[tuple[int, ...], list[int], list[int], int], ...] = (
    ((12,), [2, 3], [1, 2], 1), ((3, 4), [3, 4], [4, 1], 0), ((3, 4), [2, 3], [3, 1], 2), ((2, 5), [2, 3], [0, 1], 5),
    ((2, 5), [4], [2], 1), ((3, 4), [4, 3], [1, 4], 0), ((3, 4), [0, 3], [3, 1], 0), ((3, 4), [], [], 7),
    ((2, 3, 2), [2, 2, 2], [5, 0, 3], 1), ((1,), [3, 1], [0, 4], 0),
)
_WRITES: tuple[tuple[tuple[int, ...], list[int], list[int], int], ...] = (
    ((2, 4), [2, 2], [1, 3], 1), ((3, 4), [2, 3], [3, 1], 2), ((3, 4), [3, 4], [4, 1], 0), ((3, 4), [1, 3], [0, 2], 5),
    ((3, 4), [0, 2], [1, 1], 0), ((3, 4), [], [], 11), ((2, 3, 2), [2, 3], [1, 4], 0), ((5,), [2, 1], [3, 0], 1),
)
_MASKS = ("random", "none", "all")


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, special: bool = True) -> np.ndarray:
    v = rng.choice(np.array(DY), size=shape) * rng.uniform(0.5, 2.0, size=shape)
    if special and v.size:
        flat = v.reshape(-1)
        k = min(len(_SPECIAL), flat.size // 3)
        flat[:k] = _SPECIAL[:k]
        rng.shuffle(flat)
    with np.errstate(all="ignore"):
        return round_to(v, dtype)


def _mask(rng: np.random.Generator, shape: tuple[int, ...], kind: str) -> np.ndarray:
    if kind == "none":
        return np.zeros(shape, dtype=bool)
    if kind == "all":
        return np.ones(shape, dtype=bool)
    return rng.uniform(size=shape) < 0.5


def strided_domain(rule: Rule, dtype: str) -> list[Env]:
    """The cases of the rule's lhs op (module docstring)."""
    op = language.CTORS[lhs_ctor(rule)].op
    rng = np.random.default_rng(23)
    envs: list[Env] = []
    if op in ("AsStrided", "AsStridedScatter"):
        for xs, size, stride, offset in _READS if op == "AsStrided" else _WRITES:
            attrs = {"size": size, "stride": stride, "offset": offset}
            shapes = (xs,) if op == "AsStrided" else (xs, tuple(size))
            bound = bound_fields(rule, attrs, xs, shapes)
            if bound is None:
                continue
            env: Env = {**bound, "x": _values(rng, xs, dtype)}
            if op == "AsStridedScatter":
                env["src"] = _values(rng, tuple(size), dtype)
            envs.append(env)
        return envs
    for xs in ((3, 4), (2, 3, 2), (0, 3)):
        for kind in _MASKS:
            mask = _mask(rng, xs, kind)
            count = int(mask.sum())
            for room in (count, count + 3):
                if op == "MaskedScatter":
                    sshape: tuple[int, ...] = (room,) if room % 2 else (room // 2, 2) if room else (0,)
                    bound = bound_fields(rule, {}, xs, (xs, xs, sshape))
                    if bound is None:
                        continue
                    envs.append({**bound, "x": _values(rng, xs, dtype), "mask": mask,
                                 "source": _values(rng, sshape, dtype)})
                else:
                    out = [room] if room % 2 else [room // 2, 2] if room else [0]
                    bound = bound_fields(rule, {"shape": out}, xs, (xs, xs))
                    if bound is None:
                        continue
                    assert math.prod(out) >= count
                    envs.append({**bound, "g": _values(rng, xs, dtype), "mask": mask})
    return envs
