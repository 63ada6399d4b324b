"""The domain of the mode paddings: ModePad and ModePadBackward (Reflect, Replicate, Circular).

Every valid padding of axes of 1, 2, 3 and 5 positions by (before, after) in [-5, 5]^2: a pad of 0 on
one side or both, a reflection as long as it can be (n - 1), a replication of an axis of one
position, a circular band as long as the axis, and negative pads (Reflect and Replicate crop; a crop
past the padded band on the other side included), each on axis 1 of a rank-2 input [3, n], on the
middle axis of a rank-3 one [2, n, 3] and on axis -3 of [n, 2, 2]. x and dy are gradients of mixed
signs and magnitudes (`DY`), so a sum that adds a band into an edge is measured against terms both
tiny and large. Only the cases whose fields match the rule's literal ones (its band case, crop or
not) are kept.
"""

from __future__ import annotations

import numpy as np

from ...egraph import language
from ...opdefs.padding import check_padding
from ..dsl import App, Rule
from .base import DY, Env, bound_fields, round_to

_SIZES = (1, 2, 3, 5)
_PADS = range(-5, 6)


def padding_domain(rule: Rule, dtype: str) -> list[Env]:
    assert isinstance(rule.lhs, App)
    ctor = language.CTORS[rule.lhs.ctor]
    mode = dict(ctor.implies)["mode"]
    backward = ctor.op == "ModePadBackward"
    rng = np.random.default_rng(17)
    envs: list[Env] = []
    for n in _SIZES:
        for before in _PADS:
            for after in _PADS:
                try:
                    m = check_padding(mode, n, before, after)
                except ValueError:
                    continue
                w = m if backward else n
                for axis, shape in ((1, (3, w)), (1, (2, w, 3)), (-3, (w, 2, 2))):
                    attrs = {"axis": axis, "mode": mode, "before": before, "after": after}
                    bound = bound_fields(rule, attrs, shape)
                    if bound is None:
                        continue
                    v = rng.choice(np.array(DY), size=shape) * rng.uniform(0.5, 2.0, size=shape)
                    envs.append({**bound, "dy" if backward else "x": round_to(v, dtype)})
    return envs
