"""Forward activations in terms of others, for backends that lack them (wgpu).

These run only when a target backend lacks the kind (`rules.select`). A rhs may
use another lowered kind (HardSwish uses HardSigmoid, Mish uses Softplus): the
closure of the lowerings reaches wgpu's kinds (Relu Sigmoid Tanh Exp Log Sqrt
Rsqrt Neg Abs Sin Cos Recip Round Floor Ceil Sign), which tests/test_rules.py
checks.

Accuracy: every lowering is exact in real arithmetic except Erf and Atan, which
are fitted approximations accurate to about one f32 ulp (see `approximations.py`
for the coefficients, the forms and their measured error; the spec asks wgpu for
an Erf "accurate to f32", and f64 graphs lowered for wgpu get that accuracy too). The others are written to stay
accurate in floating point:
- log1p(e) and expm1(x) are not primitives; they are computed accurately with
  Goldberg's and Kahan's tricks (the rounding error of u = 1+e or u = exp(x)
  cancels between u - 1 and log(u)):
      log1p(e) = where(u == 1, e, log(u) * (e / (u - 1))),    u = 1 + e
      expm1(x) = where(u == 1, x, (u - 1) * (x / log(u))),     u = exp(x)
  (the division is done first so that no product underflows in f16). expm1 is
  only needed for x in (-ln 2, 0]: below that, u - 1 is already accurate
  (u <= 1/2, no cancellation), and that branch also covers u = 0 (x very
  negative), where Kahan's form would give x / log(0) = -0 instead of -1.
- GeluApprox is x * sigmoid(2u), u = c(x + a x^3): equal to 0.5 x (1 + tanh(u))
  (since (1 + tanh u)/2 = sigmoid(2u)) without the cancellation of 1 + tanh(u)
  at negative x; x^3 overflowing gives sigmoid(+-inf), still exact.
- Gelu is 0.5 x (1 + erf(x/sqrt2)): for x << 0 it cancels (1 + erf -> 0) and
  has an error of about eps * |x| / 2 absolute, not relative; no stable form of
  similar cost exists without erfc. The checker measures it against |x|.
"""

from __future__ import annotations

from .activations import GELU_2C, GELU_A, SQRT1_2
from .approximations import ATAN_P, ERF_CLAMP, ERF_SMALL_P, ERF_SPLIT, ERF_TAIL_P, ERF_TAIL_Q
from .dsl import Rule, rule

PI_2 = 1.5707963267948966  # pi/2


def _f(name: str, identity: str, lhs: str, rhs: str, **lets: str) -> Rule:
    return rule(name, identity, lhs, rhs, group="forward", lets=lets)


def _horner(coeffs: tuple[float, ...], t: str) -> str:
    """c0 + t (c1 + t (c2 + ...)) in the rule notation."""
    acc = repr(float(coeffs[-1]))
    for c in reversed(coeffs[:-1]):
        acc = f"(+ {float(c)!r} (* {t} {acc}))"
    return acc


_LOG1P_EXP_NEG_ABS = "(where (== u 1) e (* (Log u) (/ e (- u 1))))"  # log1p(e), u = 1 + e, e = exp(-|x|)
_LOG1P_LETS = {"e": "(Exp (Neg (Abs x)))", "u": "(+ 1 e)"}

RULES: tuple[Rule, ...] = (
    _f("silu-lower", "silu(x) = x * sigmoid(x)", "(Silu x)", "(* x (Sigmoid x))"),
    _f("gelu-lower", "gelu(x) = (0.5 x)(1 + erf(x / sqrt2)) (absolute error ~eps |x| at x << 0)", "(Gelu x)",
       f"(* (* 0.5 x) (+ 1 (Erf (* x {SQRT1_2}))))"),
    _f("geluapprox-lower", "gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = c x (1 + a x^2)",
       "(GeluApprox x)", f"(* x (Sigmoid (* {GELU_2C} (* x (+ 1 (* {GELU_A} (* x x)))))))"),
    _f("tan-lower", "tan(x) = sin(x) / cos(x)", "(Tan x)", "(/ (Sin x) (Cos x))"),
    _f("atan-lower",
       "atan(x) = sign(x) where(|x| > 1, pi/2 - r, r), r = z P(z^2) ~ atan(z), z = min(|x|, 1/|x|) "
       "(fitted, f32-accurate)",
       "(Atan x)", f"(* (Sign x) (where (> a 1) (- {PI_2} r) r))",
       a="(Abs x)", z="(min a (Recip a))", t="(* z z)", r=f"(* z {_horner(ATAN_P, 't')})"),
    _f("erf-lower",
       f"erf(x) = where(|x| < {ERF_SPLIT:g}, x P(x^2), sign(x) (1 - exp(-a^2) S(a - {ERF_SPLIT:g}))), "
       f"a = min(|x|, {ERF_CLAMP:g}), S ~ erfc(a) exp(a^2) (fitted, f32-accurate)",
       "(Erf x)", f"(where (< (Abs x) {ERF_SPLIT}) (* x {_horner(ERF_SMALL_P, 't')}) (* (Sign x) (- 1 (* e s))))",
       t="(* x x)", a=f"(min (Abs x) {ERF_CLAMP})", e="(Exp (Neg (* a a)))", u=f"(- a {ERF_SPLIT})",
       s=f"(/ {_horner(ERF_TAIL_P, 'u')} {_horner(ERF_TAIL_Q, 'u')})"),
    _f("softplus-lower", "softplus(x) = max(x, 0) + log1p(exp(-|x|)) (log1p by Goldberg's form)",
       "(Softplus x)", f"(+ (max x 0) {_LOG1P_EXP_NEG_ABS})", **_LOG1P_LETS),
    _f("logsigmoid-lower", "logsigmoid(x) = min(x, 0) - log1p(exp(-|x|)) (log1p by Goldberg's form)",
       "(LogSigmoid x)", f"(- (min x 0) {_LOG1P_EXP_NEG_ABS})", **_LOG1P_LETS),
    _f("elu-lower",
       "elu(x) = where(x > 0, x, expm1(x)); expm1 = where(u < 1/2, u - 1, where(u == 1, x, (u - 1)(x / log u))), "
       "u = exp(x) (Kahan's form near 0)",
       "(Elu x)", "(where (> x 0) x (where (< u 0.5) (- u 1) (where (== u 1) x (* (- u 1) (/ x (Log u))))))",
       u="(Exp x)"),
    _f("hardsigmoid-lower", "hardsigmoid(x) = min(max(x + 3, 0), 6) / 6", "(HardSigmoid x)",
       "(/ (min (max (+ x 3) 0) 6) 6)"),
    _f("hardswish-lower", "hardswish(x) = x * hardsigmoid(x)", "(HardSwish x)", "(* x (HardSigmoid x))"),
    _f("mish-lower", "mish(x) = x * tanh(softplus(x))", "(Mish x)", "(* x (Tanh (Softplus x)))"),
    _f("softsign-lower", "softsign(x) = x / (1 + |x|)", "(Softsign x)", "(/ x (+ 1 (Abs x)))"),
)
