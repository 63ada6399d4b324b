"""The elementwise losses and their backward ops (opdefs/loss.py) in primitives, one rule per loss
and reduction (none: the elementwise loss; sum, mean: its Reduce over `axes`, every axis of x), and
per backward op and reduction (dy times the elementwise gradient; mean divides by N, stated as in
rules/mse.py as the sum of ones over x's axes).

Each rhs tests the branches as torch's CPU kernels do: smooth L1 and Huber select the quadratic
branch where |d| < beta (delta), and their gradients test d <= -beta, then d >= beta, so |d| == beta
takes the outer branch and beta = 0, d = 0 gives -1 (opdefs/loss.py). Huber's gradient has a second
form, d clamped to [-delta, delta] (Max and Min propagate nan, as the Wheres do). BCE clamps its logs
with Max (-inf at x = 0 or 1 becomes -100) and its backward's denominator at 1e-12. The soft margin
loss is softplus(-t x) as max(z, 0) + log1p(exp(-|z|)), or the Softplus kind (linear above 20, as
torch's: within 2e-9 relative there), and its gradient -t sigmoid(-t x): neither overflows.
-beta and beta / 2 are the constructors' derived fields `nbeta` and `hbeta` (`ndelta`, `hdelta`).
"""

from __future__ import annotations

from .dsl import Rule, rule

_N = "(Reduce.Sum axes 1 (pow x 0))"  # N = numel(x), kept as [1, ..., 1]
_REDUCED = {"none": "{}", "sum": "(Reduce.Sum axes 0 {})", "mean": "(Reduce.Mean axes 0 {})"}
_SCALED = {"none": "{}", "sum": "{}", "mean": "(/ {} n)"}

_D = {"d": "(- x t)", "ad": "(Abs d)"}
_SMOOTH = "(where (< ad (lit beta)) (/ (* 0.5 (* d d)) (lit beta)) (- ad (lit hbeta)))"
_SMOOTH_G = "(where (<= d (lit nbeta)) -1 (where (>= d (lit beta)) 1 (/ d (lit beta))))"
_HUBER = "(where (< ad (lit delta)) (* 0.5 (* d d)) (* (lit delta) (- ad (lit hdelta))))"
_HUBER_G = "(where (<= d (lit ndelta)) (lit ndelta) (where (>= d (lit delta)) (lit delta) d))"
_HUBER_CLAMP = "(max (min d (lit delta)) (lit ndelta))"
_BCE = "(* w (- (* (- t 1) (max (Log1p (Neg x)) -100)) (* t (max (Log x) -100))))"
_BCE_G = "(* w (/ (- x t) (max (* (- 1 x) x) 9.999999960041972e-13)))"  # float32's 1e-12, as torch
_Z = {"z": "(Neg (* x t))"}
_MARGIN = "(+ (max z 0) (Log1p (Exp (Neg (Abs z)))))"
_MARGIN_SOFTPLUS = "(Softplus z)"
_MARGIN_G = "(* (Neg t) (Sigmoid z))"


def _loss(name: str, op: str, params: str, inputs: str, identity: str, body: str, lets: dict[str, str],
          tag: str = "") -> tuple[Rule, ...]:
    return tuple(rule(f"{name}-{r}{tag}", f"{name}_{r}({inputs}) = {identity}" if r == "none"
                      else f"{name}_{r}({inputs}) = {r}({identity})",
                      f"({op}.{r} {params}axes {inputs.replace(',', '')})", _REDUCED[r].format(body),
                      group="forward", lets=lets)
                 for r in _REDUCED)


def _grad(name: str, op: str, params: str, inputs: str, identity: str, g: str, lets: dict[str, str],
          tag: str = "") -> tuple[Rule, ...]:
    return tuple(rule(f"{name}-bwd-{r}{tag}", f"d {name}_{r}: dx = dy {identity}" + (" / N" if r == "mean" else ""),
                      f"({op}.{r} {params}axes {inputs.replace(',', '')} dy)", _SCALED[r].format(f"(* dy {g})"),
                      group="backward", lets={**lets, **({"n": _N} if r == "mean" else {})})
                 for r in _SCALED)


RULES: tuple[Rule, ...] = (
    _loss("smoothl1", "SmoothL1Loss", "beta nbeta hbeta ", "x, t", "where(|d| < beta, 0.5 d^2 / beta, |d| - 0.5 beta), d = x - t",
          _SMOOTH, _D)
    + _grad("smoothl1", "SmoothL1LossBackward", "beta nbeta hbeta ", "x, t",
            "where(d <= -beta, -1, where(d >= beta, 1, d / beta)), d = x - t", _SMOOTH_G, {"d": "(- x t)"})
    + _loss("huber", "HuberLoss", "delta ndelta hdelta ", "x, t", "where(|d| < delta, 0.5 d^2, delta (|d| - 0.5 delta)), d = x - t",
            _HUBER, _D)
    + _grad("huber", "HuberLossBackward", "delta ndelta hdelta ", "x, t",
            "where(d <= -delta, -delta, where(d >= delta, delta, d)), d = x - t", _HUBER_G, {"d": "(- x t)"})
    + _grad("huber", "HuberLossBackward", "delta ndelta hdelta ", "x, t", "max(min(d, delta), -delta), d = x - t", _HUBER_CLAMP,
            {"d": "(- x t)"}, "-clamp")
    + _loss("bce", "BinaryCrossEntropy", "", "x, t, w", "w ((t - 1) max(log1p(-x), -100) - t max(log x, -100))",
            _BCE, {})
    + _grad("bce", "BinaryCrossEntropyBackward", "", "x, t, w", "w (x - t) / max((1 - x) x, float32(1e-12))",
            _BCE_G, {})
    + _loss("softmargin", "SoftMarginLoss", "", "x, t", "max(z, 0) + log1p(exp(-|z|)), z = -x t", _MARGIN, _Z)
    + _loss("softmargin", "SoftMarginLoss", "", "x, t", "softplus(z), z = -x t", _MARGIN_SOFTPLUS, _Z, "-softplus")
    + _grad("softmargin", "SoftMarginLossBackward", "", "x, t", "(-t) sigmoid(z), z = -x t", _MARGIN_G, _Z)
)
