"""The coefficients of the erfc lowering (math_kinds.py's erfc-lower); ERFC_TAIL_P written by
`scripts/fit_erfc.py` (its output pasted here; do not edit by hand).

- |x| < 1/2: erfc(x) = 1 - x Q(x^2), Q = ERFC_SMALL_Q the Taylor series of erf(x)/x to x^26
  (2/sqrt(pi) (-1)^n / (n! (2n + 1)); the first term left out is below 1e-18 there), no cancellation
  (erfc > 0.47);
- a = |x| >= 1/2: T = t exp(-a^2 + P(t - 0.43)), t = 1 / (1 + a/2) (Numerical Recipes' erfcc
  form), P = ERFC_TAIL_P fitted to mpmath's erfc on a in [1/2, 28] (degree 20, relative error 9e-14);
  erfc(x) = T for x > 0, 2 - T for x < 0. a is clamped to 28 (erfc(28) = 6e-343 is 0 in f64). The
  exponent's -a^2 is -h^2 - (a - h)(a + h), h = floor(a): h^2 is exact in every dtype where erfc
  has not underflowed (in bf16 too: h <= 9), where a^2 rounded would be a relative error of a^2 eps.
So the lowering is accurate in float64 too, to about 1e-13 (the checker's bound takes the measured
error). Coefficients highest degree first (Horner's order).
"""

ERFC_SPLIT = 0.5
ERFC_CLAMP = 28.0
ERFC_CENTRE = 0.43
ERFC_SMALL_Q: tuple[float, ...] = (-6.7113668551641105e-12, 9.422759064650411e-11, -1.2290555301717926e-09, 1.4807192815879218e-08, -1.6365844691234924e-07, 1.6462114365889246e-06, -1.492565035840625e-05, 0.00012055332981789664, -0.0008548327023450852, 0.005223977625442188, -0.026866170645131252, 0.11283791670955126, -0.37612638903183754, 1.1283791670955126)
ERFC_TAIL_P: tuple[float, ...] = (0.003751120917765036, 0.306229093555183, 0.037034242285969354, 0.2719837167789268, 0.11535165737586878, -0.6474676364721793, -0.020960603304940945, 0.612995882309224, -0.1500153392949518, -0.44503261052133913, 0.23754636446181474, 0.29987482438667906, -0.25300195149524507, -0.21765339121493862, 0.24444809120543287, 0.20600291661925252, -0.2450609576980259, -0.31811530786760134, 0.2625960274958753, 1.313508521328671, -0.7649117766827126)

# Measured max relative error of the lowering evaluated in each dtype (every op rounded to it) on the
# checker's domain (`python -m egraph_lower.rules.check --rule erfc-lower`); the checker's bound uses it.
# (f64: 408 eps; in the other dtypes the fit's error is far below their rounding, which the default
# bound covers: 12.4 eps(f32), 2.5 eps(f16), 9.7 eps(bf16) measured)
ERFC_MAX_REL_ERROR: dict[str, float] = {"f64": 9.1e-14, "f32": 9.1e-14, "f16": 9.1e-14, "bf16": 9.1e-14}
