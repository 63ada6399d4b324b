"""GluBackward and PreluBackward in primitives (`opdefs/gating.py` states the derivatives).

- `glu-bwd`: x = [a, b] along the axis (Slices [0, h) and [h, n)), s = sigmoid(b): dx = [dy s,
  (d sigmoid(b) applied to dy) a] concatenated; the second half is ActivationBackward{Sigmoid} times a,
  whose own rules expand it accurately where s is near 1 (s(1 - s) or its exp(-|b|) form), so a backend
  with that kernel keeps it; a multiplies last, so dy a cannot overflow where the gradient does not
  (dy s(1 - s) <= dy / 4).
"""

from __future__ import annotations

from .dsl import Rule, rule

RULES: tuple[Rule, ...] = (
    rule("glu-bwd", "d glu = [dy s, (dy sigmoid'(b)) a] along the axis, x = [a, b] in halves, s = sigmoid(b)",
         "(GluBackward axis h n x dy)", "(Concat axis (* dy (Sigmoid b)) (* (Backward.Sigmoid b dy) a))",
         group="backward", lets={"a": "(Slice axis 0 h 1 x)", "b": "(Slice axis h n 1 x)"}),
)
