"""Softmax over one axis, and its backward, in primitives.

`axis` is the op's attribute and `axes` the one-axis list its e-graph
constructors carry for the reductions (kept: `(Reduce.Op axes 1 e)`).

Forms kept out on purpose:
- exp(x) / sum(exp(x)) without subtracting the maximum overflows as soon as a
  logit exceeds log(MAX) (88 in f32, 11 in f16), where softmax itself is fine.
- dy*y - y*sum(dy*y) (the op's own definition) rounds dy*y and y*s apart and
  cancels where dy ~ s; y*(dy - s) rounds dy - s once and keeps the same value.
"""

from __future__ import annotations

from .dsl import Rule, rule

_E = "(Exp (- x (Reduce.Max axes 1 x)))"  # exp(x - max x) in (0, 1]: no overflow

RULES: tuple[Rule, ...] = (
    rule("softmax-bwd", "d softmax: dx = y (dy - sum_axis(dy y)), y = softmax(x)",
         "(SoftmaxBackward axis axes y dy)", "(* y (- dy (Reduce.Sum axes 1 (* dy y))))", group="backward"),
    rule("softmax-lower", "softmax(x) = e / sum_axis(e), e = exp(x - max_axis(x))",
         "(Softmax axis axes x)", "(/ e (Reduce.Sum axes 1 e))", group="forward", lets={"e": _E}),
)
