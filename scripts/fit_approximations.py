"""Fit the rational approximations of `erf` and `atan` used by the forward lowerings.

    python scripts/fit_approximations.py            # fit, measure, print the module
    python scripts/fit_approximations.py --write    # ... and rewrite egraph_lower/rules/approximations.py

Both functions are odd and are fitted as `x * P(x^2) / Q(x^2)` with Q(0) = 1:

- erf on x in [0, 4] (the lowering clamps x to [-4, 4]; erf(4) = 1 - 1.5e-8 rounds
  to 1 in f32, so the clamp costs nothing at f32 precision);
- atan on z in [0, 1] (the lowering reduces |x| > 1 by atan(|x|) = pi/2 - atan(1/|x|)).

The fit is a discrete minimax of the *relative* error |P/Q - g| / g, g = f(x)/x,
on a dense grid, by bisection on the error level d: each step is the linear
feasibility problem |P(t) - g(t) Q(t)| <= d g(t) Q(t), Q(t) >= 1/2, solved with
scipy's HiGHS. Relative error bounds the absolute error too (|f| <= 1 here, or the
reduced atan <= pi/4) and keeps erf(x) accurate near 0. Everything is in float64;
the polynomial is fitted in the scaled variable t / t_max and converted afterwards.

The measured errors are of the approximation as the lowering evaluates it: every
coefficient and every operation rounded to the dtype (NumPy's IEEE arithmetic in
f32; in f16/bf16 each op computed in f64 and rounded once, as the hardware does).
The f32 evaluation is what the targets are for (<= about 1 f32 ulp of 1, 1.2e-7).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
from scipy.optimize import linprog

ERF_CLAMP = 4.0
ERF_DEGREES = (5, 5)  # degrees of P and Q in t = x^2
ATAN_DEGREES = (8, 0)
MODULE = Path(__file__).resolve().parent.parent / "egraph_lower" / "rules" / "approximations.py"

_erf = np.vectorize(math.erf, otypes=[np.float64])
_atan = np.arctan


def _g_erf(t: np.ndarray) -> np.ndarray:
    x = np.sqrt(t)
    out = np.full_like(t, 2 / math.sqrt(math.pi))
    nz = x > 1e-6
    out[nz] = _erf(x[nz]) / x[nz]
    small = ~nz  # erf(x)/x = 2/sqrt(pi) (1 - t/3 + ...)
    out[small] *= 1 - t[small] / 3
    return out


def _g_atan(t: np.ndarray) -> np.ndarray:
    x = np.sqrt(t)
    out = np.ones_like(t)
    nz = x > 1e-6
    out[nz] = _atan(x[nz]) / x[nz]
    out[~nz] = 1 - t[~nz] / 3
    return out


def fit(g, t_max: float, m: int, n: int, points: int = 3000) -> tuple[list[float], list[float], float]:
    """Minimax-relative P/Q ~ g on [0, t_max]; returns (p, q, max relative error on the grid)."""
    # Chebyshev-like grid in s = t / t_max, dense at both ends
    s = (1 - np.cos(np.linspace(0, math.pi, points))) / 2
    gs = g(s * t_max)
    vp = np.vander(s, m + 1, increasing=True)  # columns s^0..s^m
    vq = np.vander(s, n + 1, increasing=True)[:, 1:]  # s^1..s^n (q0 = 1)

    def feasible(d: float):
        # variables: p (m+1), q (n); constraints A z <= b
        gq = gs[:, None] * vq
        # P - g Q <= d g Q   ->  P - g(1+d) q.s  <= g(1+d)
        a1 = np.hstack([vp, -(1 + d) * gq])
        b1 = (1 + d) * gs
        # -(P - g Q) <= d g Q  ->  -P + g(1-d) q.s <= -g(1-d)
        a2 = np.hstack([-vp, (1 - d) * gq])
        b2 = -(1 - d) * gs
        # Q >= 1/2  ->  -q.s <= 1/2
        a3 = np.hstack([np.zeros_like(vp), -vq])
        b3 = np.full(points, 0.5)
        res = linprog(
            np.zeros(m + 1 + n), A_ub=np.vstack([a1, a2, a3]), b_ub=np.concatenate([b1, b2, b3]),
            bounds=[(None, None)] * (m + 1 + n), method="highs",
            options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
        )
        return res.x if res.status == 0 else None

    lo, hi = 0.0, 1e-2
    best = feasible(hi)
    assert best is not None, "no fit at 1e-2"
    for _ in range(60):
        mid = math.sqrt(lo * hi) if lo > 0 else hi / 16
        z = feasible(mid)
        if z is None:
            lo = mid
        else:
            hi, best = mid, z
        if lo > 0 and hi / lo < 1.02:
            break
    p = [float(c / t_max**k) for k, c in enumerate(best[: m + 1])]
    q = [1.0] + [float(c / t_max ** (k + 1)) for k, c in enumerate(best[m + 1 :])]
    return p, q, hi


def horner(coeffs: list[float], t, rnd):
    acc = rnd(np.full_like(t, coeffs[-1]))
    for c in reversed(coeffs[:-1]):
        acc = rnd(rnd(acc * t) + rnd(np.full_like(t, c)))
    return acc


def _rounder(dtype):
    def rnd(v):
        return np.asarray(v, dtype=np.float64).astype(dtype).astype(np.float64)

    return rnd


DTYPES = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def erf_lowered(x: np.ndarray, p, q, dtype) -> np.ndarray:
    """The lowering `(* xc (/ P(t) Q(t)))`, t = xc*xc, xc = clamp(x, -4, 4), every op rounded to dtype."""
    rnd = _rounder(dtype)
    x = rnd(x)
    xc = np.clip(x, -ERF_CLAMP, ERF_CLAMP)
    t = rnd(xc * xc)
    return rnd(xc * rnd(horner(p, t, rnd) / horner(q, t, rnd)))


def atan_lowered(x: np.ndarray, p, q, dtype) -> np.ndarray:
    """sign(x) * where(a > 1, pi/2 - r, r), r = z P(z^2)/Q(z^2), z = min(a, 1/a), a = |x|."""
    rnd = _rounder(dtype)
    x = rnd(x)
    a = np.abs(x)
    with np.errstate(divide="ignore"):
        z = np.minimum(a, rnd(1 / a))
    t = rnd(z * z)
    r = rnd(z * rnd(horner(p, t, rnd) / horner(q, t, rnd)))
    r = np.where(a > 1, rnd(rnd(np.full_like(x, math.pi / 2)) - r), r)
    return np.sign(x) * r  # a NaN only where x is NaN


def measure(lowered, exact, xs: np.ndarray, p, q, dtype) -> tuple[float, float, float]:
    """(max absolute error, max relative error, worst x) of `lowered` in dtype against float64 `exact`."""
    x = _rounder(dtype)(xs)
    got = lowered(x, p, q, dtype)
    ref = exact(x)
    err = np.abs(got - ref)
    rel = err / np.maximum(np.abs(ref), np.finfo(np.float64).tiny)
    rel[ref == 0] = np.where(got[ref == 0] == 0, 0.0, np.inf)
    i = int(np.argmax(err))
    return float(err.max()), float(rel.max()), float(x[i])


def _samples(limit: float) -> np.ndarray:
    rng = np.random.default_rng(0)
    dense = np.linspace(0, limit, 2_000_001)
    tiny = np.logspace(-30, 0, 20_001)
    rand = rng.uniform(0, limit, 1_000_000)
    pos = np.concatenate([dense, tiny, rand])
    return np.concatenate([pos, -pos])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite {MODULE.name}")
    args = ap.parse_args(argv)

    ep, eq, erf_fit = fit(_g_erf, ERF_CLAMP**2, *ERF_DEGREES)
    ap_, aq, atan_fit = fit(_g_atan, 1.0, *ATAN_DEGREES)
    exact_erf = np.vectorize(math.erf, otypes=[np.float64])
    lines = [f"erf  {ERF_DEGREES}: max relative fit error in float64 {erf_fit:.3g}",
             f"atan {ATAN_DEGREES}: max relative fit error in float64 {atan_fit:.3g}"]
    xs_erf = _samples(6.0)
    xs_atan = np.concatenate([_samples(4.0), np.logspace(0, 30, 100_001), -np.logspace(0, 30, 100_001)])
    measured: dict[str, dict[str, tuple[float, float, float]]] = {"erf": {}, "atan": {}}
    for name in DTYPES:
        measured["erf"][name] = measure(erf_lowered, exact_erf, xs_erf, ep, eq, DTYPES[name])
        measured["atan"][name] = measure(atan_lowered, np.arctan, xs_atan, ap_, aq, DTYPES[name])
    for fn in ("erf", "atan"):
        for name, (ae, re, wx) in measured[fn].items():
            lines.append(f"{fn:4} evaluated in {name:4}: max abs error {ae:.3g}, max rel error {re:.3g} (at x = {wx:.6g})")
    print("\n".join(lines))
    text = module_text(ep, eq, ap_, aq, erf_fit, atan_fit, measured)
    if args.write:
        MODULE.write_text(text)
        print(f"wrote {MODULE}")
    return 0


def _fmt(cs: list[float]) -> str:
    return "(" + ", ".join(repr(float(np.float64(c))) for c in cs) + ",)"


def module_text(ep, eq, ap_, aq, erf_fit, atan_fit, measured) -> str:
    def table(fn: str) -> str:
        rows = [f"    {name:4}  {ae:9.2e}  {re:9.2e}" for name, (ae, re, _) in measured[fn].items()]
        return "    dtype  max abs    max rel\n" + "\n".join(rows)

    return f'''"""Fitted coefficients of the `erf` and `atan` approximations (forward lowerings).

Generated by `scripts/fit_approximations.py --write`; do not edit by hand.

Both are odd functions written as `x * P(x^2) / Q(x^2)`, Q(0) = 1, coefficients
lowest degree first, fitted in float64 as a minimax of the relative error:

- `erf(x) ~ xc * P(xc^2) / Q(xc^2)`, xc = x clamped to [-{ERF_CLAMP:g}, {ERF_CLAMP:g}]
  (|erf(x) - erf(4)| < 1.6e-8 beyond the clamp, under half an f32 ulp of 1).
  Max relative error of the fit itself: {erf_fit:.2e}.
- `atan(z) ~ z * P(z^2) / Q(z^2)` on z in [0, 1]; the lowering reduces
  atan(x) = sign(x) * (|x| <= 1 ? r(|x|) : pi/2 - r(1/|x|)), computing z = min(|x|, 1/|x|).
  Max relative error of the fit itself: {atan_fit:.2e}.

Measured accuracy of the lowering as the backend evaluates it (coefficients and
every operation rounded to the dtype), over millions of points (see the script):

erf on [-6, 6]:
{table("erf")}

atan on [-1e30, 1e30]:
{table("atan")}

So both are accurate to f32 (about one f32 ulp of 1, 1.2e-7) and to within
rounding in f16 and bf16; in f64 they are f32-accurate approximations, not
f64-accurate: a backend lowering f64 Erf or Atan this way loses precision.
"""

ERF_CLAMP = {ERF_CLAMP!r}
ERF_P: tuple[float, ...] = {_fmt(ep)}
ERF_Q: tuple[float, ...] = {_fmt(eq)}
ATAN_P: tuple[float, ...] = {_fmt(ap_)}
ATAN_Q: tuple[float, ...] = {_fmt(aq)}

# Measured max absolute error of each lowering evaluated in each dtype (the checker's bound).
ERF_MAX_ABS_ERROR: dict[str, float] = {{{", ".join(f'"{k}": {v[0]:.3g}' for k, v in measured["erf"].items())}}}
ATAN_MAX_ABS_ERROR: dict[str, float] = {{{", ".join(f'"{k}": {v[0]:.3g}' for k, v in measured["atan"].items())}}}
'''


if __name__ == "__main__":
    sys.exit(main())
