"""GluBackward and PreluBackward in primitives (`opdefs/gating.py` states the derivatives).

- `glu-bwd`: x = [a, b] along the axis (Slices [0, h) and [h, n)), s = sigmoid(b): dx = [dy s,
  (d sigmoid(b) applied to dy) a] concatenated; the second half is ActivationBackward{Sigmoid} times a,
  whose own rules expand it accurately where s is near 1 (s(1 - s) or its exp(-|b|) form), so a backend
  with that kernel keeps it; a multiplies last, so dy a cannot overflow where the gradient does not
  (dy s(1 - s) <= dy / 4).
- `prelu-bwd-input`, `prelu-bwd-weight`: prelu(x, w) = where(x > 0, x, w x), w broadcast to x: d/dx is 1
  where x > 0, else w (w at x = 0 and for a NaN x, as aten's kernel); d/dw is 0 where x > 0, else x. So
  dx = where(x > 0, dy, w dy) and the per-element dw = where(x > 0, 0, x dy), a Where of one product each
  (rounded once, as the reference); the sum of dw to w's shape is a Reduce of aten's own graph.
"""

from __future__ import annotations

from .dsl import Rule, rule

RULES: tuple[Rule, ...] = (
    rule("glu-bwd", "d glu = [dy s, (dy sigmoid'(b)) a] along the axis, x = [a, b] in halves, s = sigmoid(b)",
         "(GluBackward axis h n x dy)", "(Concat axis (* dy (Sigmoid b)) (* (Backward.Sigmoid b dy) a))",
         group="backward", lets={"a": "(Slice axis 0 h 1 x)", "b": "(Slice axis h n 1 x)"}),
    rule("prelu-bwd-input", "d prelu / dx = where(x > 0, dy, w dy), w broadcast to x",
         "(PreluBwdInput x w dy)", "(where (> x 0) dy (* w dy))", group="backward"),
    rule("prelu-bwd-weight", "d prelu / dw per element = where(x > 0, 0, x dy)",
         "(PreluBwdWeight x w dy)", "(where (> x 0) 0 (* x dy))", group="backward"),
)
