"""The domain of the pooling backward ops (max, average, adaptive average, adaptive max; 2-D and 3-D).

Overlapping windows (so one input position receives several gradients), dilation, padding and
ceil_mode (a last window clipped by the border); max pooling's indices come from x of small integers
(many ties), with a plane of equal values and one of -inf; average pooling excludes padding from its
divisor, so the divisor varies along the border; adaptive pooling maps 7 x 8 to 3 x 5 (5 x 6 x 7 to
2 x 4 x 5), overlapping windows of unequal sizes; adaptive max pooling's indices come from the same
tied x.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...egraph import language
from ...opdefs.base import WHOLE
from ..dsl import App, Rule
from .base import DY, lhs_ctor, round_to


def pool_domain(rule: Rule, dtype: str) -> dict[str, object] | list[dict[str, object]]:
    """Pooling backward ops on an input [2, 3, 7, 8] (3-D: [2, 2, 5, 6, 7]) with overlapping windows
    (2-D: kernel 3 stride 2 over H; kernel 2 dilation 2 stride 1 over W; 3-D likewise with a kernel-2
    stride-2 D axis), padding 1 and ceil_mode (a last, clipped window). Max pooling's indices come
    from x of small integers (many ties), planes of equal values and of -inf; it is also checked with
    windows that tile the volume (kernel = stride 2 x 3 (2 x 2 x 3), rows and columns past the last
    window), the only case for a rule that asks for tiling. Average pooling excludes padding from its
    divisor; adaptive pooling maps 7 x 8 to 3 x 5 (5 x 6 x 7 to 2 x 4 x 5: overlapping windows).
    dy as for batch norm."""
    ctor = language.CTORS[lhs_ctor(rule)]
    nd = 3 if "3d" in ctor.op else 2
    assert isinstance(rule.lhs, App)
    if not ctor.op.startswith("MaxPool"):
        return _env(dtype, rule.lhs, OVERLAPPING[nd], nd)
    tiled_only = rule.lhs.params[[f.name for f in ctor.fields].index("tiled")] == "1"
    return [_env(dtype, rule.lhs, attrs, nd) for attrs in ([TILED[nd]] if tiled_only else [OVERLAPPING[nd], TILED[nd]])]


ISHAPE = {2: [2, 3, 7, 8], 3: [2, 2, 5, 6, 7]}
ADAPTIVE_OUT = {2: (3, 5), 3: (2, 4, 5)}
OVERLAPPING: dict[int, dict[str, Any]] = {
    2: {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "dilation": [1, 2], "ceil_mode": True,
        "count_include_pad": False, "divisor_override": None},
    3: {"kernel": [2, 3, 2], "stride": [2, 2, 1], "padding": [1, 1, 1], "dilation": [1, 1, 2], "ceil_mode": True,
        "count_include_pad": False, "divisor_override": None}}
TILED: dict[int, dict[str, Any]] = {
    2: {"kernel": [2, 3], "stride": [2, 3], "padding": [0, 0], "dilation": [1, 1], "ceil_mode": False},
    3: {"kernel": [2, 2, 3], "stride": [2, 2, 3], "padding": [0, 0, 0], "dilation": [1, 1, 1], "ceil_mode": False}}


def _tied_x(rng: np.random.Generator, shape: list[int]) -> np.ndarray:
    x = rng.integers(-2, 3, size=shape).astype(np.float64)
    x[0, 1] = 0.5
    x[1, -1] = -np.inf
    return x


def _env(dtype: str, lhs: App, attrs: dict[str, Any], nd: int) -> dict[str, object]:
    """The lhs's fields, each bound to the variable the rule names it by, and idx, dy."""
    from ...opdefs import pool_math

    rng = np.random.default_rng(3)
    ishape = ISHAPE[nd]
    ctor = language.CTORS[lhs.ctor]
    op = ctor.op
    env: dict[str, object] = {}
    if op.startswith("MaxPool"):
        out = pool_math.max_out(attrs, ishape[2:])
        env["idx"] = pool_math.max_pool(attrs, _tied_x(rng, ishape))[1]
    elif op.startswith("AdaptiveMaxPool"):
        out = ADAPTIVE_OUT[nd]
        env["idx"] = pool_math.adaptive_max_pool(out, _tied_x(rng, ishape))[1]
    elif op.startswith("AvgPool"):
        out = pool_math.avg_out(attrs, ishape[2:])
    else:
        out = ADAPTIVE_OUT[nd]
    given = {**attrs, "input_shape": ishape}
    for var, f in zip(lhs.params, ctor.fields):  # each field encoded as the load encodes it
        if not (isinstance(var, str) and var.isidentifier()):
            continue  # a literal the rule fixes (tiled 1)
        value = given if f.attr == WHOLE else given.get(f.attr, f.default)
        env[var] = f.encode(value, (*ishape[:2], *out) if f.shaped else len(ishape))
    dy = rng.choice(np.array(DY), size=(*ishape[:2], *out)) * rng.uniform(0.5, 2.0, size=(*ishape[:2], *out))
    env["dy"] = round_to(dy, dtype)
    return env


UNPOOL = {2: {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 0], "dilation": [1, 1], "ceil_mode": True},
          3: {"kernel": [2, 3, 2], "stride": [2, 2, 1], "padding": [1, 1, 0], "dilation": [1, 1, 1], "ceil_mode": True}}


def unpool_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """Max unpooling of max pooling's values and indices on x [2, 3, 7, 8] (3-D: [2, 2, 5, 6, 7]) of
    small integers (ties) with a -inf plane, overlapping windows (kernel 3 stride 2; positions named
    by several windows: the last writer must win) and a clipped ceil-mode window; x, the unpooled
    values, as dy for batch norm with an infinity and a NaN (written where they are and nowhere else)."""
    from ...opdefs import pool_math

    assert isinstance(rule.lhs, App)
    ctor = language.CTORS[rule.lhs.ctor]
    nd = 3 if "3d" in ctor.op else 2
    rng = np.random.default_rng(5)
    ishape = ISHAPE[nd]
    idx = pool_math.max_pool(UNPOOL[nd], _tied_x(rng, ishape))[1]
    x = rng.choice(np.array(DY), size=idx.shape) * rng.uniform(0.5, 2.0, size=idx.shape)
    x.reshape(-1)[[3, 17]] = [np.inf, np.nan]
    env: dict[str, object] = {"x": round_to(x, dtype), "idx": idx}
    given = {"output_size": ishape[2:]}
    for var, f in zip(rule.lhs.params, ctor.fields):
        if isinstance(var, str) and var.isidentifier():
            env[var] = f.encode(given if f.attr == WHOLE else given[f.attr], (idx.shape, idx.shape))
    return env
