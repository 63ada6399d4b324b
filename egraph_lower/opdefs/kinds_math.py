"""The activation kinds of format version 3: hyperbolic functions and their inverses, exp2, expm1,
log1p and trunc, each f(x) and f'(x) once over the array namespace (as `kinds.py`'s).

Derivatives: sinh' = cosh, cosh' = sinh, asinh' = 1/sqrt(1 + x^2) (written (1/|x|)/sqrt(1 + 1/x^2)
for |x| > 1, so that x^2 does not overflow), acosh' = 1/(sqrt(x - 1) sqrt(x + 1)) (NaN below 1, inf
at 1), atanh' = 1/((1 - x)(1 + x)) (torch's formula, also outside [-1, 1] where atanh is NaN),
exp2' = ln 2 * 2^x, expm1' = e^x, log1p' = 1/(1 + x), trunc' = 0 (as floor's); logit(x) = log(x/(1 - x)),
logit' = 1/(x (1 - x)), NaN outside [0, 1] and inf at 0 and 1 (torch's logit_backward without eps). Trunc is also an
integer kind (the identity, f' = 0). log2' = 1/(x ln 2), log10' = 1/(x ln 10) (as Log's, 1/x for every x
scaled: inf at 0, negative below), asin' = 1/sqrt((1 - x)(1 + x)) = -acos' ((1 - x)(1 + x) rather than
torch's 1 - x^2: no cancellation near +-1; NaN outside [-1, 1], inf at +-1, as torch's); erfinv (the
inverse of erf on [-1, 1]: +-inf at +-1, NaN beyond), erfinv' = (sqrt(pi)/2) exp(erfinv(x)^2), torch's
(inf at +-1); erfc = 1 - erf, erfc' = -(2/sqrt(pi)) exp(-x^2). None has a wrt:
output form.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Formula = Callable[[Any, Any], Any]  # (xp, x) -> f(x), as kinds.py's
LN2 = math.log(2.0)
LN10 = math.log(10.0)
SQRT_PI_2 = math.sqrt(math.pi) / 2.0
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _const(v: float) -> Formula:
    return lambda xp, x: xp.full_like(x, v)


def _identity(xp: Any, x: Any) -> Any:
    return x


def _asinh_grad(xp: Any, x: Any) -> Any:
    a = xp.abs(x)
    big = a > 1.0
    r = 1.0 / xp.where(big, a, 1.0)
    return xp.where(big, r / xp.sqrt(1.0 + r * r), 1.0 / xp.sqrt(1.0 + x * x))


def _asin_grad(xp: Any, x: Any) -> Any:
    return 1.0 / xp.sqrt((1.0 - x) * (1.0 + x))  # NaN outside [-1, 1], inf at +-1


def _erfinv_grad(xp: Any, x: Any) -> Any:
    y = xp.erfinv(x)
    return SQRT_PI_2 * xp.exp(y * y)  # inf at +-1, NaN outside [-1, 1]


def _logit(xp: Any, x: Any) -> Any:
    return xp.log(x / (1.0 - x))


def _logit_grad(xp: Any, x: Any) -> Any:
    edge = (x == 0) | (x == 1)  # +inf at both, -0.0 included (torch's)
    return xp.where((x < 0) | (x > 1), math.nan, xp.where(edge, math.inf, 1.0 / xp.where(edge, 0.5, x * (1.0 - x))))


# (name, f, f', and for an integer kind its f and f' on integers): kinds.py makes its `Kind`s of these
FORMS: tuple[tuple[str, Formula, Formula, Formula | None, Formula | None], ...] = (
    ("Sinh", lambda xp, x: xp.sinh(x), lambda xp, x: xp.cosh(x), None, None),
    ("Cosh", lambda xp, x: xp.cosh(x), lambda xp, x: xp.sinh(x), None, None),
    ("Asinh", lambda xp, x: xp.asinh(x), _asinh_grad, None, None),
    ("Acosh", lambda xp, x: xp.acosh(x), lambda xp, x: 1.0 / (xp.sqrt(x - 1.0) * xp.sqrt(x + 1.0)), None, None),
    ("Atanh", lambda xp, x: xp.atanh(x), lambda xp, x: 1.0 / ((1.0 - x) * (1.0 + x)), None, None),
    ("Exp2", lambda xp, x: xp.exp2(x), lambda xp, x: LN2 * xp.exp2(x), None, None),
    ("Expm1", lambda xp, x: xp.expm1(x), lambda xp, x: xp.exp(x), None, None),
    ("Log1p", lambda xp, x: xp.log1p(x), lambda xp, x: 1.0 / (1.0 + x), None, None),
    ("Trunc", lambda xp, x: xp.trunc(x), _const(0.0), _identity, _const(0)),
    ("Logit", _logit, _logit_grad, None, None),
    ("Log2", lambda xp, x: xp.log2(x), lambda xp, x: 1.0 / (x * LN2), None, None),
    ("Log10", lambda xp, x: xp.log10(x), lambda xp, x: 1.0 / (x * LN10), None, None),
    ("Asin", lambda xp, x: xp.asin(x), _asin_grad, None, None),
    ("Acos", lambda xp, x: xp.acos(x), lambda xp, x: -_asin_grad(xp, x), None, None),
    ("Erfinv", lambda xp, x: xp.erfinv(x), _erfinv_grad, None, None),
    ("Erfc", lambda xp, x: xp.erfc(x), lambda xp, x: -TWO_OVER_SQRT_PI * xp.exp(-(x * x)), None, None),
)
