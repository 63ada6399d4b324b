"""Fit the coefficients of the erfinv lowering (egraph_lower/rules/approx_erfinv.py) and print them.

    python scripts/fit_erfinv.py

erfinv(x) / x as a polynomial in three pieces of w = -log((1 - x)(1 + x)) (the split points of Giles'
double-precision approximation): (w - 3.125) / 4 for w < 6.25, sqrt(w) - 3.25 for w < 16, sqrt(w) - 5
beyond (to w = 38, past float64's largest value below 1). Each is a least-squares fit in relative error
against mpmath's erfinv at 40 digits on 800 Chebyshev nodes of its w interval, the monomial
coefficients highest degree first (Horner's order); the printed error is the largest relative error
of the fit evaluated in float64 on 3000 evenly spaced w.
"""

from __future__ import annotations

from collections.abc import Callable

import mpmath
import numpy as np

mpmath.mp.dps = 40

PIECES: tuple[tuple[str, float, float, Callable[[float], float], int], ...] = (
    ("ERFINV_P1", 0.0, 6.25, lambda w: (w - 3.125) * 0.25, 20),
    ("ERFINV_P2", 6.25, 16.0, lambda w: float(np.sqrt(w)) - 3.25, 18),
    ("ERFINV_P3", 16.0, 38.0, lambda w: float(np.sqrt(w)) - 5.0, 16),
)


def _ratio(w: float) -> float:
    """erfinv(x) / x where (1 - x)(1 + x) = e^-w, x > 0, in 40 digits."""
    x = mpmath.sqrt(1 - mpmath.e ** (-mpmath.mpf(w)))
    return float(mpmath.erfinv(x) / x)


def fit(lo: float, hi: float, var: Callable[[float], float], deg: int, n: int = 800) -> tuple[np.ndarray, float]:
    ws = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (np.arange(n) + 0.5) / n)
    t = np.array([var(w) for w in ws])
    y = np.array([_ratio(w) for w in ws])
    c, *_ = np.linalg.lstsq(np.vander(t, deg + 1) / y[:, None], np.ones_like(y), rcond=None)
    wt = np.linspace(max(lo, 1e-12), hi, 3000)
    tt, yt = np.array([var(w) for w in wt]), np.array([_ratio(w) for w in wt])
    p = np.zeros_like(tt)
    for k in c:
        p = k + p * tt
    return c, float(np.max(np.abs(p - yt) / yt))


def main() -> None:
    for name, lo, hi, var, deg in PIECES:
        c, err = fit(lo, hi, var, deg)
        print(f"# w in [{lo:g}, {hi:g}): degree {deg}, relative error {err:.2g}")
        print(f"{name}: tuple[float, ...] = {tuple(float(v) for v in c)!r}")


if __name__ == "__main__":
    main()
