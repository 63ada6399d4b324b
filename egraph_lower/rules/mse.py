"""The mean-squared-error loss and its backward op, in primitives.

`axes` is every axis of x (a derived field of the constructors). The mean's N is
stated as the sum of ones over x's axes (`(pow x 0)` is 1 for every element, nan
and inf included, as IEEE pow is, and has x's dtype, which a literal has not): the
e-graph has no field holding N. The sum is exact below
2^24 in f32 (2^11 in f16, 2^8 in bf16, where it is N rounded once; in f16 it
overflows past 65504 elements, so a half-precision graph computes in f32).

The product is 2 (dy d), not (2 d) dy: dy d overflows only where the result does,
2 d already for |d| > MAX/2.
"""

from __future__ import annotations

from .dsl import Rule, rule

_D = "(- x t)"
_N = "(Reduce.Sum axes 1 (pow x 0))"  # N = numel(x), kept as [1, ..., 1]

RULES: tuple[Rule, ...] = (
    rule("mse-none", "mse_none(x, t) = (x - t)^2", "(MseLoss.none axes x t)", "(* d d)", group="forward",
         lets={"d": _D}),
    rule("mse-sum", "mse_sum(x, t) = sum((x - t)^2)", "(MseLoss.sum axes x t)", "(Reduce.Sum axes 0 (* d d))",
         group="forward", lets={"d": _D}),
    rule("mse-mean", "mse_mean(x, t) = mean((x - t)^2)", "(MseLoss.mean axes x t)",
         "(Reduce.Mean axes 0 (* d d))", group="forward", lets={"d": _D}),
    rule("mse-bwd-none", "d mse_none: dx = dy 2 (x - t)", "(MseLossBackward.none axes x t dy)",
         "(* 2 (* dy d))", group="backward", lets={"d": _D}),
    rule("mse-bwd-none-add", "d mse_none: dx = dy ((x - t) + (x - t))", "(MseLossBackward.none axes x t dy)",
         "(* dy (+ d d))", group="backward", lets={"d": _D}),
    rule("mse-bwd-sum", "d mse_sum: dx = dy 2 (x - t)", "(MseLossBackward.sum axes x t dy)",
         "(* 2 (* dy d))", group="backward", lets={"d": _D}),
    rule("mse-bwd-mean", "d mse_mean: dx = 2 (dy (x - t)) / N, N = sum(ones)", "(MseLossBackward.mean axes x t dy)",
         "(/ (* 2 (* dy d)) n)", group="backward", lets={"d": _D, "n": _N}),
)
