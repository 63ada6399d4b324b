"""The domain of the pooling backward ops (max, average, adaptive average).

Overlapping windows (so one input position receives several gradients), dilation, padding and
ceil_mode (a last window clipped by the border); max pooling's indices come from x of small integers
(many ties), with a plane of equal values and one of -inf; average pooling excludes padding from its
divisor, so the divisor varies along the border; adaptive pooling maps 7 x 8 to 3 x 5, overlapping
windows (of unequal sizes along W).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...egraph import language
from ...opdefs.base import WHOLE, ints_text
from ..dsl import App, Rule
from .base import DY, lhs_ctor, round_to

def pool_domain(rule: Rule, dtype: str) -> dict[str, object] | list[dict[str, object]]:
    """Pooling backward ops on an input [2, 3, 7, 8] with overlapping windows (kernel 3 stride 2 over
    H; kernel 2 dilation 2 stride 1 over W), padding 1 and ceil_mode (a last, clipped window).
    Max pooling's indices come from x of small integers (many ties), planes of equal values and of
    -inf; it is also checked with windows that tile the plane (kernel = stride 2 x 3, two rows and
    columns past the last window), the only case for a rule that asks for tiling. Average pooling
    excludes padding from its divisor; adaptive pooling maps 7 x 8 to 3 x 5 (overlapping windows).
    dy as for batch norm."""
    ctor = language.CTORS[lhs_ctor(rule)]
    if ctor.op != "MaxPool2dBackward":
        return _env(dtype, ctor.op, OVERLAPPING)
    assert isinstance(rule.lhs, App)
    tiled_only = rule.lhs.params[[f.name for f in ctor.fields].index("tiled")] == "1"
    return [_env(dtype, ctor.op, attrs) for attrs in ([TILED] if tiled_only else [OVERLAPPING, TILED])]


ISHAPE = [2, 3, 7, 8]
OVERLAPPING: dict[str, Any] = {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "dilation": [1, 2], "ceil_mode": True,
               "count_include_pad": False, "divisor_override": None}
TILED: dict[str, Any] = {"kernel": [2, 3], "stride": [2, 3], "padding": [0, 0], "dilation": [1, 1], "ceil_mode": False}


def _env(dtype: str, op: str, attrs: dict[str, Any]) -> dict[str, object]:
    from ...opdefs import pool_math

    rng = np.random.default_rng(3)
    env: dict[str, object] = {"k": ints_text(attrs["kernel"]), "s": ints_text(attrs["stride"]),
                              "p": ints_text(attrs["padding"]), "c": int(bool(attrs["ceil_mode"])),
                              "cip": 0, "dv": 0, "ishape": ints_text(ISHAPE)}
    if op == "MaxPool2dBackward":
        env["d"] = ints_text(attrs["dilation"])
        x = rng.integers(-2, 3, size=ISHAPE).astype(np.float64)
        x[0, 1] = 0.5
        x[1, 2] = -np.inf
        out = pool_math.max_out(attrs, ISHAPE[2:])
        env["idx"] = pool_math.max_pool(attrs, x)[1]
        for f in language.CTORS[op].fields:  # the fields computed at load time, computed as the load does
            if f.derived:
                value = {**attrs, "input_shape": ISHAPE} if f.attr == WHOLE else ISHAPE
                env[f.name] = f.encode(value, (2, 3, *out) if f.shaped else len(ISHAPE))
    elif op == "AvgPool2dBackward":
        out = pool_math.avg_out(attrs, ISHAPE[2:])
    else:
        out = (3, 5)
    dy = rng.choice(np.array(DY), size=(2, 3) + tuple(out)) * rng.uniform(0.5, 2.0, size=(2, 3) + tuple(out))
    env["dy"] = round_to(dy, dtype)
    return env
