"""The domain of the activations with a tensor operand: GluBackward, PreluBackward.

GluBackward: every combination of a first-half value a (0, -0.0, small, of either sign, up to 100),
a second-half value b where sigmoid saturates or is near 1/2 (0, +-1e-4, +-1, +-5, 16 and 17, where
1 - s rounds away in f32, +-20 ... +-100, +-1e4) and dy (`DY`), as rows [a, b] of x [m, 2] split on
axis 1; and x of [2, 6, 3] split on its middle axis (h = 3) and of [4, 3] on axis -2, so the Slices
and the Concat are checked off the last axis. An error is measured against |dy| (the first half) and
|dy| max(1, |a|) (the second: at least |dx| there), as an activation gradient's against |dy|
(`GATING_SCALES`).

PreluBackward: every combination of x (0, -0.0, d's smallest normal of either sign, small and large of
either sign), w (0, -0.0, 0.25, -0.5, 1, 3, -40) and dy (`DY`) as flat [m] vectors with w of the same
shape; x of [2, 3, 4] with w [1, 3, 1] (aten's channel weight viewed for broadcasting), and x of [5]
with a 0-d w (one weight for all), so the broadcast of w in the rules' products is checked.
"""

from __future__ import annotations

import numpy as np

from ...egraph import language
from ..dsl import App, Rule
from .base import DY, TINY, Env, bound_fields, grid, round_to

_A = (0.0, -0.0, 1e-3, -0.5, 1.0, -2.75, 30.0, -100.0)
_B = (0.0, -0.0, 1e-4, -1e-4, 0.5, -1.0, 1.0, 3.0, -5.0, 5.0, 16.0, 17.0, -17.0, 20.0, -20.0, 30.0, -50.0, 50.0,
      100.0, -100.0, 1e4, -1e4)


def _glu(rule: Rule, dtype: str) -> list[Env]:
    rng = np.random.default_rng(20)
    envs: list[Env] = []
    a, b, dy = grid(np.array(_A), np.array(_B), np.array(DY))
    cases = [(1, np.stack([a, b], axis=1), dy[:, None])]
    for axis, shape in ((1, (2, 6, 3)), (-2, (4, 3))):
        x = rng.choice(np.array(_A + _B), size=shape)
        dshape = list(shape)
        dshape[axis] //= 2
        cases.append((axis, x, rng.choice(np.array(DY), size=dshape)))
    for axis, x, d in cases:
        bound = bound_fields(rule, {"axis": axis}, x.shape)
        if bound is not None:
            envs.append({**bound, "x": round_to(x, dtype), "dy": round_to(d, dtype)})
    return envs


def _glu_scale(f: dict[str, np.ndarray]) -> np.ndarray:
    """|dy| for the first half of dx (dy s), |dy| max(1, |a|) for the second (dy a s(1 - s), at most
    |dy a| / 4): dy is half x's size on the split axis, the one where their shapes differ."""
    x, dy = f["x"], f["dy"]
    axis = next(i for i, (m, k) in enumerate(zip(x.shape, dy.shape)) if m != k)
    a = np.split(x, 2, axis=axis)[0]
    return np.concatenate([np.abs(dy), np.abs(dy) * np.maximum(1.0, np.abs(a))], axis=axis)


# the error scale of GluBackward: an element's error against |dy| and |dy a|, the terms of its products
GATING_SCALES = {"GluBwd": _glu_scale}


_PX = (0.0, -0.0, 1e-30, -1e-30, 1e-4, -1e-4, 0.5, -1.0, 2.0, -3.0, 100.0, -250.0, 1e4, -1e4)
_PW = (0.0, -0.0, 0.25, -0.5, 1.0, 3.0, -40.0)


def _prelu(rule: Rule, dtype: str) -> list[Env]:
    rng = np.random.default_rng(21)
    tiny = TINY[dtype]
    x, w, dy = grid(np.array(_PX + (tiny, -tiny)), np.array(_PW), np.array(DY))
    cases = [(x, w, dy)]
    for xs, ws in (((2, 3, 4), (1, 3, 1)), ((5,), ())):
        cases.append((rng.choice(np.array(_PX), size=xs), rng.choice(np.array(_PW), size=ws),
                      rng.choice(np.array(DY), size=xs)))
    envs: list[Env] = []
    for xv, wv, dv in cases:
        envs.append({"x": round_to(xv, dtype), "w": round_to(np.asarray(wv), dtype),
                         "dy": round_to(dv, dtype)})
    return envs


def gating_domain(rule: Rule, dtype: str) -> list[Env]:
    assert isinstance(rule.lhs, App)
    op = language.CTORS[rule.lhs.ctor].op
    if op == "GluBackward":
        return _glu(rule, dtype)
    if op == "PreluBackward":
        return _prelu(rule, dtype)
    raise ValueError(f"no gating domain for {op}")
