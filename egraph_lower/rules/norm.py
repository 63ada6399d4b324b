"""Normalization (opdefs/norm.py) in primitives: statistics, layer norm, RMS norm, batch norm in training.

Fields the constructors carry (no attributes): `axes` (the normalised axes: [axis, rank) for layer and
RMS norm, every axis but the channel for batch norm), `lead` (the axes a weight gradient sums over) and
`cshape` ([C, 1, ..., 1], so a per-channel [C] tensor broadcasts along the channel axis).

The forward expansions use the statistics ops themselves (`InvStd`, `Reduce.Mean`), so that the saved
mean and reciprocal std that aten hands to the backward are the same e-nodes as the forward's.

Forms kept out on purpose:
- var = mean(x^2) - mean(x)^2 (one pass) cancels catastrophically for x ~ 1e4 + small (its error is
  eps * mean(x)^2, not eps * var).
- the plain two-pass var = mean(d^2), d = x - m, and the plain centred x - m: the mean m rounded to the
  dtype is off by up to 0.5 eps |m|, which is the whole spread of a row 1e4 + 1e-3 in f32 (rules --check
  measured 4e4 eps on InvStd, 4e6 eps on LayerNorm). The corrected forms subtract mean(d) (= the
  rounding error of m, computed accurately since d is exact by Sterbenz's lemma): var = mean(d^2) -
  mean(d)^2 and the centred value d - mean(d). They cost one more reduction.
- the batch-norm gamma gradient as sum(dy (x - mean)) * invstd (the scale outside the sum): the
  unnormalised products overflow f16 where the result does not (rules/batchnorm.py says how).
"""

from __future__ import annotations

from .dsl import Rule, rule

_XC = "(- x (Reduce.Mean axes 1 x))"  # x - mean, the normalised axes kept as 1
_M = "(Reduce.Mean axes 1 x)"


def _r(cshape_var: str) -> str:
    return f"(Reshape cshape {cshape_var})"


_VAR = "(- (Reduce.Mean axes keep (* d d)) (* e e))"  # corrected two-pass variance
_VAR_LETS = {"d": _XC, "e": "(Reduce.Mean axes keep d)"}

STATS: tuple[Rule, ...] = (
    rule("invstd-lower", "invstd = rsqrt(mean(d^2) - mean(d)^2 + eps), d = x - mean x (corrected two-pass)",
         "(InvStd axes eps keep x)", f"(Rsqrt (+ {_VAR} (lit eps)))", group="forward", lets=_VAR_LETS),
    rule("invstd-lower-sqrt", "invstd = 1 / sqrt(mean(d^2) - mean(d)^2 + eps), d = x - mean x",
         "(InvStd axes eps keep x)", f"(/ 1 (Sqrt (+ {_VAR} (lit eps))))", group="forward", lets=_VAR_LETS),
    rule("invrms-lower", "invrms = rsqrt(mean(x^2) + eps)",
         "(InvRms axes eps keep x)", "(Rsqrt (+ (Reduce.Mean axes keep (* x x)) (lit eps)))", group="forward"),
)

LAYER: tuple[Rule, ...] = (
    rule("ln-lower", "layer_norm(x) = ((d - mean d) invstd) w + b, d = x - mean x, over [axis, rank)",
         "(LayerNorm axis eps axes x w b)", "(+ (* (* (- d (Reduce.Mean axes 1 d)) (InvStd axes eps 1 x)) w) b)",
         group="forward", lets={"d": _XC}),
    rule("ln-bwd-input", "dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy w, xhat = (x - mean) rstd",
         "(LnBwdInput axis axes x w mean rstd dy)",
         "(* rstd (- (- g (Reduce.Mean axes 1 g)) (* xhat (Reduce.Mean axes 1 (* g xhat)))))",
         group="backward", lets={"g": "(* dy w)", "xhat": "(* (- x mean) rstd)"}),
    rule("ln-bwd-weight", "dw = sum_lead(dy xhat), xhat = (x - mean) rstd",
         "(LnBwdWeight axis lead x mean rstd dy)", "(sum lead (* dy (* (- x mean) rstd)))", group="backward"),
    rule("ln-bwd-bias", "db = sum_lead(dy)", "(LnBwdBias axis lead dy)", "(sum lead dy)", group="backward"),
    rule("rms-lower", "rms_norm(x) = (x invrms) w", "(RmsNorm axis eps axes x w)",
         "(* (* x (InvRms axes eps 1 x)) w)", group="forward"),
    rule("rms-bwd-input", "dx = r (g - (x r) (r mean(g x))), g = dy w (r^2 alone overflows f16)",
         "(RmsBwdInput axis axes x w r dy)", "(* r (- g (* (* x r) (* r (Reduce.Mean axes 1 (* g x))))))",
         group="backward", lets={"g": "(* dy w)"}),
    rule("rms-bwd-input-xhat", "dx = r (g - xhat mean(g xhat)), xhat = x r (shared with the forward)",
         "(RmsBwdInput axis axes x w r dy)", "(* r (- g (* xhat (Reduce.Mean axes 1 (* g xhat)))))",
         group="backward", lets={"g": "(* dy w)", "xhat": "(* x r)"}),
    rule("rms-bwd-weight", "dw = sum_lead(dy x r)", "(RmsBwdWeight axis lead x r dy)",
         "(sum lead (* dy (* x r)))", group="backward"),
)

_BN_M = _r("(Reduce.Mean axes 0 x)")  # the saved mean [C], broadcast along the channel axis
_BN_D = f"(- x {_BN_M})"
_BN_XC = "(- d (Reduce.Mean axes 1 d))"  # d - mean(d): corrects the rounding of the mean
_BN_R = "(InvStd axes eps 0 x)"  # the saved invstd [C]
_BN_XHAT = f"(* (- x {_r('mean')}) {_r('invstd')})"

BATCH: tuple[Rule, ...] = (
    rule("bnt-lower", "bn(x) = ((x - mean) invstd) gamma + beta, batch statistics over every axis but `axis`",
         "(BnTrain axis eps axes cshape x gamma beta)",
         f"(+ (* (* {_BN_XC} {_r(_BN_R)}) {_r('gamma')}) {_r('beta')})", group="forward", lets={"d": _BN_D}),
    rule("bnt-lower-scale", "bn(x) = (x - mean) (gamma invstd) + beta (per-channel scale first)",
         "(BnTrain axis eps axes cshape x gamma beta)",
         f"(+ (* {_BN_XC} {_r(f'(* gamma {_BN_R})')}) {_r('beta')})", group="forward", lets={"d": _BN_D}),
    rule("bnt-bwd-input", "dx = gamma invstd (dy - mean(dy) - xhat mean(dy xhat)), xhat = (x - mean) invstd",
         "(BnTrainBwdInput axis axes cshape x gamma mean invstd dy)",
         f"(* {_r('(* gamma invstd)')} (- (- dy (Reduce.Mean axes 1 dy)) (* xhat (Reduce.Mean axes 1 (* dy xhat)))))",
         group="backward", lets={"xhat": _BN_XHAT}),
    rule("bnt-bwd-gamma", "dgamma = sum_axes(dy xhat)", "(BnTrainBwdGamma axis axes cshape x mean invstd dy)",
         "(sum axes (* dy xhat))", group="backward", lets={"xhat": _BN_XHAT}),
    rule("bnt-bwd-beta", "dbeta = sum_axes(dy)", "(BnTrainBwdBeta axis axes dy)", "(sum axes dy)",
         group="backward"),
)

RULES: tuple[Rule, ...] = STATS + LAYER + BATCH
