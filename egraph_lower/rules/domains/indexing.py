"""The domain of the indexing ops: Flip, Index(2, 3), IndexPut(2, 3), ScatterAdd, Scatter and ScatterReduce.

Values of mixed signs and magnitudes with NaN, +-inf and -0.0 among them (a data movement must carry
each as it is; a one-hot sum must not turn 0 * inf into NaN where nothing is written); indices with
repeats (the accumulation of colliding positions), negative ones down to -n (aten counts them from
the end), positions never written, an empty index and a 0-d one; index tensors that broadcast; values
that broadcast against what the indices read; axes first, inner and last (negative too); a scatter
whose index is smaller than x and src off its axis (the `-cut` form).
"""

from __future__ import annotations

import numpy as np

from ..dsl import App, Rule
from .base import DY, Env, bound_fields, round_to

_SPECIAL = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-3, -7.5, 3e4])


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, special: bool = True) -> np.ndarray:
    v = rng.choice(np.array(DY), size=shape) * rng.uniform(0.5, 2.0, size=shape)
    if special and v.size:
        flat = v.reshape(-1)
        flat[: min(len(_SPECIAL), flat.size // 3)] = _SPECIAL[: min(len(_SPECIAL), flat.size // 3)]
        rng.shuffle(flat)
    return round_to(v, dtype)


def _index(rng: np.random.Generator, n: int, shape: tuple[int, ...]) -> np.ndarray:
    """Indices in [-n, n) with repeats (aten's negative ones included)."""
    return rng.integers(-n, n, size=shape) if n else np.zeros(shape, dtype=np.int64)


def _flip(rule: Rule, dtype: str, rng: np.random.Generator) -> list[Env]:
    envs: list[Env] = []
    for shape, axis in (((3, 5), 1), ((3, 5), -2), ((2, 1, 4), 1), ((2, 0, 3), 2), ((7,), 0)):
        bound = bound_fields(rule, {"axis": axis}, shape)
        if bound is not None:
            envs.append({**bound, "x": _values(rng, shape, dtype)})
    return envs


# (x shape, axis, index shapes, values shape) of the Index and IndexPut cases
_INDEX_CASES = {
    1: (((4, 5, 3), 1, ((6,),), (6, 1)), ((4, 5, 3), -1, ((2, 3),), (4, 5, 2, 3)), ((6, 2), 0, ((9,),), (9, 2)),
        ((4, 5), 0, ((),), (5,)), ((4, 5), 1, ((0,),), (4, 0)), ((3, 4), 1, ((2, 2),), ())),
    2: (((4, 5, 3), 0, ((3, 1), (4,)), (3, 4, 3)), ((2, 4, 5), 1, ((6,), (6,)), (1, 6)),
        ((3, 4, 2), -2, ((2, 1), (1, 3)), (3, 2, 3))),
    3: (((3, 4, 2, 5), 0, ((3, 1), (1, 4), (4,)), (3, 4, 5)), ((2, 3, 4, 5), 1, ((7,), (7,), (1,)), (7,))),
}


def _put(rule: Rule, dtype: str, rng: np.random.Generator, k: int, put: bool) -> list[Env]:
    envs: list[Env] = []
    for xs, axis, ishapes, vshape in _INDEX_CASES[k]:
        ax = axis % len(xs)
        idx = [_index(rng, xs[ax + j], s) for j, s in enumerate(ishapes)]
        attrs: dict[str, object] = {"axis": axis}
        shapes = (xs, *ishapes)
        if put:
            shapes += (vshape,)
        for acc in (True, False) if put else (None,):
            if acc is not None:
                attrs["accumulate"] = acc
            bound = bound_fields(rule, attrs, xs, shapes)
            if bound is not None:
                break
        if bound is None:
            continue
        env: Env = {**bound, "x": _values(rng, xs, dtype)}
        names = ["i"] if k == 1 else [f"i{j}" for j in range(k)]
        env.update(zip(names, idx))
        if put:
            env["v"] = _values(rng, vshape, dtype, special=False)
        envs.append(env)
    return envs


# (x shape, axis, index shape, src shape) of the ScatterAdd cases
_SCATTER_CASES = (((4, 5), 0, (6, 5), (6, 5)), ((4, 5), 1, (4, 7), (4, 7)), ((3, 4, 2), -2, (3, 6, 2), (3, 6, 2)),
                  ((4, 5), 0, (2, 3), (3, 5)), ((3, 4, 2), 1, (2, 3, 1), (2, 3, 2)), ((4, 3), 0, (0, 3), (0, 3)))


def _scatter_attrs(ctor: str) -> list[dict[str, object]]:
    """The attributes beyond the axis a node of the scatter constructor may have (the rule's literals pick)."""
    if ctor != "ScatterReduce":
        return [{}]
    return [{"reduce": r, "include_self": keep} for r in ("sum", "prod", "mean", "amax", "amin")
            for keep in (True, False)]


def _scatter(rule: Rule, dtype: str, rng: np.random.Generator) -> list[Env]:
    """ScatterAdd, Scatter, ScatterReduce: the sums over values without NaN or infinities (their error is
    measured against the sum of magnitudes), the others (a selection, max and min) with them."""
    assert isinstance(rule.lhs, App)
    envs: list[Env] = []
    for xs, axis, ishape, sshape in _SCATTER_CASES:
        for extra in _scatter_attrs(rule.lhs.ctor):
            bound = bound_fields(rule, {"axis": axis, **extra}, xs, (xs, ishape, sshape))
            if bound is None:
                continue
            special = extra.get("reduce", "sum" if rule.lhs.ctor == "ScatterAddAt" else "") in ("amax", "amin", "", "mean")
            index = rng.integers(0, xs[axis % len(xs)], size=ishape)
            envs.append({**bound, "x": _values(rng, xs, dtype, special), "index": index,
                         "src": _values(rng, sshape, dtype, special)})
    return envs


def indexing_domain(rule: Rule, dtype: str) -> list[Env]:
    """The cases of the rule's lhs op (module docstring)."""
    assert isinstance(rule.lhs, App)
    ctor = rule.lhs.ctor
    rng = np.random.default_rng(19)
    if ctor == "Flip":
        return _flip(rule, dtype, rng)
    if ctor.startswith("Scatter"):
        return _scatter(rule, dtype, rng)
    put = ctor.startswith("IndexPut")
    k = int(ctor[-1]) if ctor[-1].isdigit() else 1
    return _put(rule, dtype, rng, k, put)
