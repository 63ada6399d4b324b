"""The domain of the pooling backward ops (max, average, adaptive average).

Overlapping windows (so one input position receives several gradients), dilation, padding and
ceil_mode (a last window clipped by the border); max pooling's indices come from x of small integers
(many ties), with a plane of equal values and one of -inf; average pooling excludes padding from its
divisor, so the divisor varies along the border; adaptive pooling maps 7 x 8 to 3 x 5, overlapping
windows (of unequal sizes along W).
"""

from __future__ import annotations

import numpy as np

from ...egraph import language
from ..dsl import Rule
from .base import DY, lhs_ctor, round_to

def pool_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """Pooling backward ops on an input [2, 3, 7, 8] with overlapping windows (kernel 3 stride 2 over
    H; kernel 2 dilation 2 stride 1 over W), padding 1 and ceil_mode (a last, clipped window).
    Max pooling's indices come from x of small integers (many ties), planes of equal values and of
    -inf; average pooling excludes padding from its divisor; adaptive pooling maps 7 x 8 to 3 x 5
    (overlapping windows). dy as for batch norm."""
    from ...opdefs import pool_math

    ishape = [2, 3, 7, 8]
    attrs = {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "dilation": [1, 2], "ceil_mode": True,
             "count_include_pad": False, "divisor_override": None}
    op = language.CTORS[lhs_ctor(rule)].op
    rng = np.random.default_rng(3)
    env: dict[str, object] = {"k": "[3,2]", "s": "[2,1]", "p": "[1,1]", "d": "[1,2]", "c": 1, "cip": 0, "dv": 0,
                              "ishape": "[2,3,7,8]"}
    if op == "MaxPool2dBackward":
        x = rng.integers(-2, 3, size=ishape).astype(np.float64)
        x[0, 1] = 0.5
        x[1, 2] = -np.inf
        out = pool_math.max_out(attrs, ishape[2:])
        env["idx"] = pool_math.max_pool(attrs, x)[1]
        env.update(dflat=f"[2,3,{out[0] * out[1]}]", plane=ishape[2] * ishape[3])
    elif op == "AvgPool2dBackward":
        out = pool_math.avg_out(attrs, ishape[2:])
    else:
        out = (3, 5)
    dy = rng.choice(np.array(DY), size=(2, 3) + tuple(out)) * rng.uniform(0.5, 2.0, size=(2, 3) + tuple(out))
    env["dy"] = round_to(dy, dtype)
    return env
