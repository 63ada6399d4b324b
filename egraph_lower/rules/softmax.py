"""Softmax and log-softmax over one axis, and their backward ops, in primitives.

`axis` is the op's attribute and `axes` the one-axis list its e-graph
constructors carry for the reductions (kept: `(Reduce.Op axes 1 e)`), so the
forward's max and sum are the same e-classes as a backward's that reduces the
same value. Where two forms are both accurate, both are stated and extraction
chooses (`/` against `* Recip`; `y (dy - s)` against `y dy - y s`).

Forms kept out on purpose:
- exp(x) / sum(exp(x)) without subtracting the maximum overflows as soon as a
  logit exceeds log(MAX) (88 in f32, 11 in f16), where softmax itself is fine.
- log(softmax(x)) for log-softmax: softmax underflows to 0 (log gives -inf) for
  logits more than ~UNDERFLOW_X below the maximum, where log-softmax is finite.
- x - (max + log(sum(exp(s)))) (the logsumexp form): x - lse cancels when both
  are large (x = 1e4 in f32 leaves an absolute error of eps 1e4 in a y near 0).
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

_S = "(- x (Reduce.Max axes 1 x))"  # x - max x <= 0

# the other good forms of the same ops, and log-softmax (extraction chooses among them)
RULES += (
    rule("softmax-bwd-split", "d softmax: dx = y dy - y sum_axis(dy y), y = softmax(x)",
         "(SoftmaxBackward axis axes y dy)", "(- (* dy y) (* y (Reduce.Sum axes 1 (* dy y))))",
         group="backward"),
    rule("softmax-lower-recip", "softmax(x) = e * recip(sum_axis(e)), e = exp(x - max_axis(x))",
         "(Softmax axis axes x)", "(* e (Recip (Reduce.Sum axes 1 e)))", group="forward", lets={"e": _E}),
    rule("softmax-exp-log", "softmax(x) = exp(log_softmax(x))",
         "(Softmax axis axes x)", "(Exp (LogSoftmax axis axes x))", group="relation"),
    rule("log-softmax-lower", "log_softmax(x) = s - log(sum_axis(exp(s))), s = x - max_axis(x)",
         "(LogSoftmax axis axes x)", "(- s (Log (Reduce.Sum axes 1 (Exp s))))", group="forward", lets={"s": _S}),
    rule("log-softmax-bwd", "d log_softmax: dx = dy - exp(y) sum_axis(dy), y = log_softmax(x)",
         "(LogSoftmaxBackward axis axes y dy)", "(- dy (* (Exp y) (Reduce.Sum axes 1 dy)))", group="backward"),
)
