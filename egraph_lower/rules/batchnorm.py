"""Batch-norm inference, forward and backward, in primitives.

Conventions (graph-format.md): channels are the last axis of x; gamma, beta,
mean and var have shape [C] and broadcast against x. `eps` is the op's attribute
(an f64 primitive in the e-graph; `(lit eps)` makes it a broadcast scalar), and
`axes` is the all-but-last axis list the e-graph's constructors carry for the
reductions (Reduce Sum, keep_dim false).

Forms kept out on purpose:
- x * scale + (beta - mean * scale), scale = gamma/sqrt(var+eps), looks cheaper
  (one fused multiply-add per element) but cancels when x ~ mean and |mean| is
  large: its error is eps * |mean * scale|, not eps * |(x - mean) * scale|.
- sum(dy * (x - mean)) * rsqrt(var + eps) (the per-channel scale outside the sum,
  one elementwise multiply fewer) and (dy * gamma) / sqrt(var + eps): the
  unnormalised product overflows f16 (65504) when the result, smaller by
  sqrt(var + eps), does not: with loss-scaled gradients (|dy| ~ 1e4) a channel
  with |x - mean| ~ 10 already overflows. Every form below scales per channel
  first (gamma * rsqrt, (x - mean) * rsqrt), so no intermediate exceeds the
  result by more than the factor |dy| or |x - mean|/std.
"""

from __future__ import annotations

from .dsl import Rule, rule

_INV_STD = "(Rsqrt (+ var (lit eps)))"  # 1/sqrt(var + eps), per channel
_STD = "(Sqrt (+ var (lit eps)))"


def _rule(name: str, identity: str, lhs: str, rhs: str, group: str) -> Rule:
    return rule(name, identity, lhs, rhs, group=group)


FORWARD: tuple[Rule, ...] = (
    _rule("bn-lower", "bn(x) = (x - mean) (gamma rsqrt(var + eps)) + beta (per-channel scale first)",
          "(BatchNorm eps x gamma beta mean var)", f"(+ (* (- x mean) (* gamma {_INV_STD})) beta)", "forward"),
    _rule("bn-lower-literal", "bn(x) = ((x - mean) rsqrt(var + eps)) gamma + beta (the spec's order)",
          "(BatchNorm eps x gamma beta mean var)", f"(+ (* (* (- x mean) {_INV_STD}) gamma) beta)", "forward"),
)

BACKWARD: tuple[Rule, ...] = (
    _rule("bn-bwd-input", "d bn / dx = dy (gamma rsqrt(var + eps))",
          "(BnBackwardInput eps x gamma mean var dy)", f"(* dy (* gamma {_INV_STD}))", "backward"),
    _rule("bn-bwd-input-sqrt", "d bn / dx = dy (gamma / sqrt(var + eps))",
          "(BnBackwardInput eps x gamma mean var dy)", f"(* dy (/ gamma {_STD}))", "backward"),
    _rule("bn-bwd-gamma", "d bn / dgamma = sum_axes(dy ((x - mean) rsqrt(var + eps)))",
          "(BnBackwardGamma eps axes x mean var dy)", f"(sum axes (* dy (* (- x mean) {_INV_STD})))", "backward"),
    _rule("bn-bwd-gamma-div", "d bn / dgamma = sum_axes(dy ((x - mean) / sqrt(var + eps)))",
          "(BnBackwardGamma eps axes x mean var dy)", f"(sum axes (* dy (/ (- x mean) {_STD})))", "backward"),
    _rule("bn-bwd-beta", "d bn / dbeta = sum_axes(dy)", "(BnBackwardBeta axes dy)", "(sum axes dy)", "backward"),
)

# With the channel on axis `axis` (format version 2): the same forms, each [C] value reshaped to `cshape`
# ([C, 1, ..., 1]) so that it broadcasts along the channel axis.
_R_INV = "(Reshape cshape (* gamma (Rsqrt (+ var (lit eps)))))"  # gamma/std, per channel, then broadcast
_XC = "(- x (Reshape cshape mean))"

AXIS: tuple[Rule, ...] = (
    _rule("bn-axis-lower", "bn(x) = (x - mean) (gamma rsqrt(var + eps)) + beta, [C] values along `axis`",
          "(BatchNormAxis eps axis cshape x gamma beta mean var)", f"(+ (* {_XC} {_R_INV}) (Reshape cshape beta))",
          "forward"),
    _rule("bn-axis-bwd-input", "d bn / dx = dy (gamma rsqrt(var + eps)), along `axis`",
          "(BnBackwardInputAxis eps axis cshape x gamma mean var dy)", f"(* dy {_R_INV})", "backward"),
    _rule("bn-axis-bwd-gamma", "d bn / dgamma = sum_axes(dy ((x - mean) rsqrt(var + eps))), along `axis`",
          "(BnBackwardGammaAxis eps axis axes cshape x mean var dy)",
          f"(sum axes (* dy (* {_XC} (Reshape cshape {_INV_STD}))))", "backward"),
    _rule("bn-axis-bwd-beta", "d bn / dbeta = sum_axes(dy), along `axis`", "(BnBackwardBetaAxis axis axes dy)",
          "(sum axes dy)", "backward"),
)

RULES: tuple[Rule, ...] = BACKWARD + FORWARD + AXIS
