"""The activation kinds of format version 3 (opdefs/kinds_math.py): each kind's derivative in
primitives (`backward`), and each kind in terms of wgpu's (`forward`; metal, tpu and cpu run them).

Forms (every one exact in real arithmetic; in floating point within a few roundings of the result,
and no intermediate overflows where the result does not):
- expm1(x) = u - 1 where u = e^x < 1/2 or > 2 (no cancellation there), else Kahan's
  (u - 1) (x / log u), x where u rounds to 1; log1p(x) = log(u) where u = 1 + x > 2, else Goldberg's
  log(u) (x / (u - 1)), x where u rounds to 1.
- sinh(x) = sign(x) (e + e / (e + 1)) / 2, e = expm1(|x|), for |x| < 1; beyond, (h/2) h - (1/2)/(h h),
  h = e^(|x|/2) (so e^|x| / 2 does not overflow before sinh does). cosh(x) = (h/2) h + (1/2)/(h h).
- asinh(x) = sign(x) log1p(a + a / (1/a + sqrt(1 + 1/a^2))), a = |x| (that is log(a + sqrt(1 + a^2))
  with sqrt(1 + a^2) - 1 = a^2 / (1 + sqrt(1 + a^2)), no a^2 to overflow); for a > 16384, log(a) +
  ln 2 + 1/(4 a^2), whose next term (3/(32 a^4)) is below f64's eps there.
- acosh(x) = log1p(t + sqrt(t) sqrt(x + 1)), t = x - 1 (exact for x in [1, 2]); for x > 16384,
  log(x) + ln 2 - 1/(4 x^2).
- atanh(x) = sign(x) log1p(2a / (1 - a)) / 2.
- log2(x) = log(x) / ln 2, log10(x) = log(x) / ln 10 (log's rounding is relative, and so is the
  division's); asin(x) = atan2(x, sqrt((1 - x)(1 + x))), acos(x) = atan2(sqrt((1 - x)(1 + x)), x)
  (1 - x is exact near 1 and 1 + x near -1, so no cancellation where the root is small; NaN outside
  [-1, 1] from the root).
- erfinv(x) = x P(t), w = -log((1 - x)(1 + x)), in three pieces (approx_erfinv.py: fits at Giles'
  split points, accurate in float64), +-inf at +-1 as x / 0; its measured error is in the
  checker's bound. Its derivative
  (sqrt(pi)/2) exp(y^2), y = erfinv(x), is torch's (exp turns y's rounding into a relative error of
  about 2 y^2 eps, y^2 up to 15.9 in f32: measured 9.6 eps).
- erfc(x) = 1 - x Q(x^2) for |x| < 1/2 (erf's Taylor series), else t exp(-a^2 + P(t)),
  t = 1/(1 + a/2), a = |x| (2 minus it for x < 0), with -a^2 as -h^2 - (a - h)(a + h), h = floor(a)
  (h^2 exact): approx_erfc.py, accurate in float64 too.
- exp2(x) = pow(2, x) (exp(x ln 2) would turn the rounding of x ln 2 into a relative error of
  |x ln 2| eps); trunc(x) = sign(x) floor(|x|).
The derivatives are kinds_math.py's formulas; asinh' and acosh' are written so that x^2 does not
overflow (f16 overflows x^2 at |x| > 256).
"""

from __future__ import annotations

from .approx_erfc import ERFC_CENTRE, ERFC_CLAMP, ERFC_SMALL_Q, ERFC_SPLIT, ERFC_TAIL_P
from .approx_erfinv import ERFINV_P1, ERFINV_P2, ERFINV_P3, ERFINV_SPLITS
from .dsl import Rule, rule

LN2 = 0.6931471805599453
LN10 = 2.302585092994046
SQRT_PI_2 = 0.886226925452758
TWO_OVER_SQRT_PI = 1.1283791670955126


def _horner(coeffs: tuple[float, ...], t: str) -> str:
    """c0 t^n + ... + cn (highest degree first) by Horner's rule, as a dsl term."""
    out = f"{coeffs[0]!r}"
    for c in coeffs[1:]:
        out = f"(+ {c!r} (* {out} {t}))"
    return out


def _b(name: str, identity: str, lhs: str, rhs: str, **lets: str) -> Rule:
    return rule(name, identity, lhs, rhs, group="backward", lets=lets)


def _f(name: str, identity: str, lhs: str, rhs: str, **lets: str) -> Rule:
    return rule(name, identity, lhs, rhs, group="forward", lets=lets)


BACKWARD: tuple[Rule, ...] = (
    _b("sinh-bwd", "d sinh = dy * cosh(x)", "(Backward.Sinh x dy)", "(* dy (Cosh x))"),
    _b("cosh-bwd", "d cosh = dy * sinh(x)", "(Backward.Cosh x dy)", "(* dy (Sinh x))"),
    _b("asinh-bwd", "d asinh = dy / sqrt(1 + x^2) = where(|x| > 1, (dy/|x|) / sqrt(1 + 1/x^2), ...)",
       "(Backward.Asinh x dy)",
       "(where (> a 1) (* (/ dy a) (Rsqrt (+ 1 (* r r)))) (* dy (Rsqrt (+ 1 (* x x)))))",
       a="(Abs x)", r="(Recip a)"),
    _b("acosh-bwd", "d acosh = dy / (sqrt(x - 1) sqrt(x + 1))", "(Backward.Acosh x dy)",
       "(* (* dy (Rsqrt (- x 1))) (Rsqrt (+ x 1)))"),
    _b("atanh-bwd", "d atanh = dy / ((1 - x)(1 + x))", "(Backward.Atanh x dy)", "(/ dy (* (- 1 x) (+ 1 x)))"),
    _b("exp2-bwd", "d exp2 = dy * (ln2 * exp2(x))", "(Backward.Exp2 x dy)", f"(* dy (* {LN2} (Exp2 x)))"),
    _b("expm1-bwd", "d expm1 = dy * exp(x)", "(Backward.Expm1 x dy)", "(* dy (Exp x))"),
    _b("log1p-bwd", "d log1p = dy / (1 + x)", "(Backward.Log1p x dy)", "(/ dy (+ 1 x))"),
    _b("logit-bwd", "d logit = dy / (x (1 - x)) = (dy r) r, r = rsqrt(x (1 - x)) (NaN outside [0, 1])",
       "(Backward.Logit x dy)", "(* (* dy r) r)", r="(Rsqrt (* x (- 1 x)))"),
    _b("trunc-bwd", "d trunc = dy * 0 (finite dy)", "(Backward.Trunc x dy)", "(* dy 0)"),
    # (x ln b would lose bits where x is subnormal; dy / x overflows only where the result does for
    # log2, 1/ln2 > 1; for log10, dy (1/ln10) cannot overflow)
    _b("log2-bwd", "d log2 = dy / (x ln2) = (dy / x) (1/ln2)", "(Backward.Log2 x dy)", f"(* (/ dy x) {1 / LN2})"),
    _b("log10-bwd", "d log10 = dy / (x ln10) = (dy (1/ln10)) / x", "(Backward.Log10 x dy)",
       f"(/ (* dy {1 / LN10}) x)"),
    _b("asin-bwd", "d asin = dy / sqrt((1 - x)(1 + x)) (NaN outside [-1, 1], inf at +-1)", "(Backward.Asin x dy)",
       "(* dy (Rsqrt (* (- 1 x) (+ 1 x))))"),
    _b("acos-bwd", "d acos = -dy / sqrt((1 - x)(1 + x))", "(Backward.Acos x dy)",
       "(* (Neg dy) (Rsqrt (* (- 1 x) (+ 1 x))))"),
    _b("erfinv-bwd", "d erfinv = dy * (sqrt(pi)/2) exp(y^2), y = erfinv(x) (torch's formula)", "(Backward.Erfinv x dy)",
       f"(* dy (* {SQRT_PI_2} (Exp (* y y))))", y="(Erfinv x)"),
    _b("erfc-bwd", "d erfc = -dy * (2/sqrt(pi)) exp(-x^2)", "(Backward.Erfc x dy)",
       f"(* dy (* {-TWO_OVER_SQRT_PI} (Exp (* (Neg x) x))))"),
)

FORWARD: tuple[Rule, ...] = (
    _f("expm1-lower", "expm1(x) = where(u < 1/2 or u > 2, u - 1, where(u == 1, x, (u - 1)(x / log u))), u = e^x",
       "(Expm1 x)", "(where (< u 0.5) (- u 1) (where (> u 2) (- u 1) (where (== u 1) x (* (- u 1) (/ x (Log u))))))",
       u="(Exp x)"),
    _f("log1p-lower", "log1p(x) = where(u > 2, log u, where(u == 1, x, log(u) (x / (u - 1)))), u = 1 + x",
       "(Log1p x)", "(where (> u 2) (Log u) (where (== u 1) x (* (Log u) (/ x (- u 1)))))", u="(+ 1 x)"),
    _f("sinh-lower", "sinh(x) = sign(x) where(a < 1, (e + e/(e + 1))/2, (h/2) h - (1/2)/(h h)), a = |x|, "
       "e = expm1(a), h = exp(a/2)",
       "(Sinh x)", "(* (Sign x) (where (< a 1) (* 0.5 (+ e (/ e (+ e 1)))) (- (* (* 0.5 h) h) (/ 0.5 (* h h)))))",
       a="(Abs x)", e="(Expm1 a)", h="(Exp (* 0.5 a))"),
    _f("cosh-lower", "cosh(x) = (h/2) h + (1/2)/(h h), h = exp(|x|/2)", "(Cosh x)",
       "(+ (* (* 0.5 h) h) (/ 0.5 (* h h)))", h="(Exp (* 0.5 (Abs x)))"),
    _f("asinh-lower", "asinh(x) = sign(x) where(a > 16384, log(a) + ln2 + 1/(4a^2), "
       "log1p(a + a / (1/a + sqrt(1 + 1/a^2)))), a = |x|",
       "(Asinh x)", f"(* (Sign x) (where (> a 16384) (+ (Log a) (+ {LN2} (/ 0.25 (* a a)))) "
       "(Log1p (+ a (/ a (+ r (Sqrt (+ 1 (* r r)))))))))",
       a="(Abs x)", r="(Recip a)"),
    _f("acosh-lower", "acosh(x) = where(x > 16384, log(x) + ln2 - 1/(4x^2), log1p(t + sqrt(t) sqrt(x + 1))), "
       "t = x - 1",
       "(Acosh x)", f"(where (> x 16384) (+ (Log x) (- {LN2} (/ 0.25 (* x x)))) "
       "(Log1p (+ t (* (Sqrt t) (Sqrt (+ x 1))))))", t="(- x 1)"),
    _f("atanh-lower", "atanh(x) = sign(x) log1p(2a / (1 - a)) / 2, a = |x|", "(Atanh x)",
       "(* (Sign x) (* 0.5 (Log1p (/ (* 2 a) (- 1 a)))))", a="(Abs x)"),
    _f("exp2-lower", "exp2(x) = pow(2, x)", "(Exp2 x)", "(pow 2 x)"),
    _f("logit-lower", "logit(x) = where(|x - 1/2| < 0.2, 2 atanh(2x - 1), log(x / (1 - x))) (2x - 1 is exact "
       "there; beyond, |logit| > 0.8 and log's rounding is relative)",
       "(Logit x)", "(where (< (Abs (- x 0.5)) 0.2) (* 2 (Atanh (- (* 2 x) 1))) (Log (/ x (- 1 x))))"),
    _f("trunc-lower", "trunc(x) = sign(x) floor(|x|)", "(Trunc x)", "(* (Sign x) (Floor (Abs x)))"),
    _f("log2-lower", "log2(x) = log(x) / ln2", "(Log2 x)", f"(/ (Log x) {LN2})"),
    _f("log10-lower", "log10(x) = log(x) / ln10", "(Log10 x)", f"(/ (Log x) {LN10})"),
    _f("asin-lower", "asin(x) = atan2(x, sqrt((1 - x)(1 + x)))", "(Asin x)",
       "(atan2 x (Sqrt (* (- 1 x) (+ 1 x))))"),
    _f("acos-lower", "acos(x) = atan2(sqrt((1 - x)(1 + x)), x)", "(Acos x)",
       "(atan2 (Sqrt (* (- 1 x) (+ 1 x))) x)"),
    _f("erfinv-lower",
       f"erfinv(x) = where(|x| == 1, x / 0, x where(w < {ERFINV_SPLITS[0]:g}, P1((w - 3.125) / 4), where(w < "
       f"{ERFINV_SPLITS[1]:g}, P2(sqrt(w) - 3.25), P3(sqrt(w) - 5)))), w = -log((1 - x)(1 + x)) (fitted, "
       "f64-accurate: approx_erfinv.py)",
       "(Erfinv x)",
       f"(where (== (Abs x) 1) (/ x 0) (* x (where (< w {ERFINV_SPLITS[0]}) {_horner(ERFINV_P1, 'u')} "
       f"(where (< w {ERFINV_SPLITS[1]}) {_horner(ERFINV_P2, 'v')} {_horner(ERFINV_P3, 'z')}))))",
       w="(Neg (Log (* (- 1 x) (+ 1 x))))", u="(* (- w 3.125) 0.25)", r="(Sqrt w)", v="(- r 3.25)", z="(- r 5)"),
    _f("erfc-lower",
       f"erfc(x) = where(|x| < {ERFC_SPLIT:g}, 1 - x Q(x^2), where(x > 0, T, 2 - T)), T = t exp(-h^2) "
       f"exp(P(t - {ERFC_CENTRE:g}) - (a - h)(a + h)), t = 1/(1 + a/2), a = min(|x|, {ERFC_CLAMP:g}), "
       "h = floor(a) (h^2 exact: a^2's rounding would be a relative error of a^2 eps; fitted, "
       "f64-accurate: approx_erfc.py)",
       "(Erfc x)",
       f"(where (< (Abs x) {ERFC_SPLIT}) (- 1 (* x {_horner(ERFC_SMALL_Q, 's')})) (where (> x 0) T (- 2 T)))",
       s="(* x x)", a=f"(min (Abs x) {ERFC_CLAMP})", t="(Recip (+ 1 (* 0.5 a)))", h="(Floor a)",
       p=_horner(ERFC_TAIL_P, f"(- t {ERFC_CENTRE})"),
       T="(* (* t (Exp (Neg (* h h)))) (Exp (- p (* (- a h) (+ a h)))))"),
)

RULES: tuple[Rule, ...] = BACKWARD + FORWARD
