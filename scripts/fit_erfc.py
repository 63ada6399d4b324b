"""Fit the coefficients of the erfc lowering's tail (egraph_lower/rules/approx_erfc.py) and print them.

    python scripts/fit_erfc.py

For a = |x| >= 1/2: erfc(a) = t exp(-a^2 + P(t - 0.43)), t = 1 / (1 + a/2) (the form of Numerical
Recipes' erfcc), P fitted by least squares (absolute error in the exponent: the relative error of
erfc) against mpmath's erfc at 40 digits on 600 Chebyshev nodes of a in [1/2, 28], monomial
coefficients highest degree first (Horner's order); the printed error is the largest of the fit
evaluated in float64 on 3000 evenly spaced a.
"""

from __future__ import annotations

import mpmath
import numpy as np

mpmath.mp.dps = 40
LO, HI, DEGREE, CENTRE = 0.5, 28.0, 20, 0.43


def _exponent(a: float) -> float:
    t = 1 / (1 + mpmath.mpf(a) / 2)
    return float(mpmath.log(mpmath.erfc(a) * mpmath.exp(mpmath.mpf(a) ** 2) / t))


def _var(a: float) -> float:
    return 1 / (1 + a / 2) - CENTRE


def main() -> None:
    n = 600
    xs = (LO + HI) / 2 + (HI - LO) / 2 * np.cos(np.pi * (np.arange(n) + 0.5) / n)
    c, *_ = np.linalg.lstsq(np.vander(np.array([_var(x) for x in xs]), DEGREE + 1),
                            np.array([_exponent(x) for x in xs]), rcond=None)
    xt = np.linspace(LO, HI, 3000)
    tt, yt = np.array([_var(x) for x in xt]), np.array([_exponent(x) for x in xt])
    p = np.zeros_like(tt)
    for k in c:
        p = k + p * tt
    print(f"# a in [{LO:g}, {HI:g}]: degree {DEGREE}, error {float(np.max(np.abs(p - yt))):.2g}")
    print(f"ERFC_TAIL_P: tuple[float, ...] = {tuple(float(v) for v in c)!r}")


if __name__ == "__main__":
    main()
