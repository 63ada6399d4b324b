"""Fit the approximations of `erf` and `atan` used by the forward lowerings.

    python scripts/fit_approximations.py            # fit, measure, print the summary
    python scripts/fit_approximations.py --write    # ... and rewrite egraph_lower/rules/approximations.py

erf, in two pieces split at |x| = 1 (both evaluated, a `where` picks one):
- |x| < 1:  erf(x) = x * P(x^2), P a polynomial (relative accuracy near 0);
- |x| >= 1: erf(x) = sign(x) * (1 - exp(-a^2) * S(a - 1)), a = min(|x|, 4), S = P/Q a
  rational approximation of erfc(a) exp(a^2), which is smooth (~ 1/(a sqrt(pi))).
  Computing the small erfc and subtracting it from 1 keeps the rounding errors of
  S's evaluation relative to erfc (<= 0.16), not to erf: a single rational
  x P(x^2)/Q(x^2) for erf on [-4, 4] has ~4 f32 ulps of error near erf = 1 from
  its own ~20 roundings. The clamp at 4 costs erfc(4) = 1.5e-8, under half an f32
  ulp of 1.
atan: atan(z) = z * P(z^2) on z in [0, 1] (degree 8 in z^2); the lowering reduces
|x| > 1 by atan(|x|) = pi/2 - atan(1/|x|) and restores the sign.

The fits are discrete minimax fits of the *relative* error |P/Q - g| / g on a dense
grid, by bisection on the error level d: each step is the linear feasibility
problem |P(t) - g(t) Q(t)| <= d g(t) Q(t), Q(t) >= 1/2, solved with scipy's HiGHS,
in float64. The polynomials are fitted in a variable scaled to [0, 1] and
converted afterwards.

The measured errors are of the lowerings as they are evaluated: every coefficient
and every operation rounded to the dtype (each op computed in float64 and rounded
once, which is IEEE arithmetic in that dtype), on millions of points. The f32
evaluation is what the targets are for (<= about 1 f32 ulp of 1, 1.2e-7).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
from scipy.optimize import linprog

ERF_SPLIT = 1.0
ERF_CLAMP = 4.0
ERF_SMALL_DEGREE = 5  # P in t = x^2 on [0, 1]
ERF_TAIL_DEGREES = (3, 3)  # S = P/Q in s = a - 1 on [0, 3]
ATAN_DEGREES = (8, 0)
MODULE = Path(__file__).resolve().parent.parent / "egraph_lower" / "rules" / "approximations.py"

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
_atan = np.arctan


def _g_erf_tail(s: np.ndarray) -> np.ndarray:
    a = ERF_SPLIT + s
    return _erfc(a) * np.exp(a * a)


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


def erf_lowered(x: np.ndarray, small, tail_p, tail_q, dtype) -> np.ndarray:
    """The lowering (forward.py's erf-lower), every coefficient and op rounded to dtype."""
    rnd = _rounder(dtype)
    x = rnd(x)
    c = lambda v: rnd(np.full_like(x, v))  # noqa: E731  a literal of the dtype
    a = np.abs(x)
    t = rnd(x * x)
    inner = rnd(x * horner(small, t, rnd))
    ac = np.minimum(a, c(ERF_CLAMP))
    s = rnd(ac - c(ERF_SPLIT))
    tail = rnd(horner(tail_p, s, rnd) / horner(tail_q, s, rnd))
    e = rnd(np.exp(-rnd(ac * ac)))
    outer = np.sign(x) * rnd(c(1.0) - rnd(e * tail))
    return np.where(a < ERF_SPLIT, inner, outer)


def atan_lowered(x: np.ndarray, p, dtype) -> np.ndarray:
    """sign(x) * where(a > 1, pi/2 - r, r), r = z P(z^2), z = min(a, 1/a), a = |x| (forward.py's atan-lower)."""
    rnd = _rounder(dtype)
    x = rnd(x)
    a = np.abs(x)
    with np.errstate(divide="ignore"):
        z = np.minimum(a, rnd(1 / a))
    t = rnd(z * z)
    r = rnd(z * horner(p, t, rnd))
    r = np.where(a > 1, rnd(rnd(np.full_like(x, math.pi / 2)) - r), r)
    return np.sign(x) * r  # a NaN only where x is NaN


def measure(lowered, exact, xs: np.ndarray, coeffs: tuple, dtype) -> tuple[float, float, float]:
    """(max absolute error, max relative error, worst x) of `lowered` in dtype against float64 `exact`."""
    x = _rounder(dtype)(xs)
    got = lowered(x, *coeffs, dtype)
    ref = exact(x)
    err = np.abs(got - ref)
    # relative error against max(|ref|, smallest normal): subnormal results are rounded absolutely
    rel = err / np.maximum(np.abs(ref), _TINY[dtype])
    i = int(np.argmax(err))
    return float(err.max()), float(rel.max()), float(x[i])


_TINY = {np.float64: 2.0**-1022, np.float32: 2.0**-126, np.float16: 2.0**-14, ml_dtypes.bfloat16: 2.0**-126}


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

    small, _, small_fit = fit(_g_erf, ERF_SPLIT**2, ERF_SMALL_DEGREE, 0)
    tp, tq, tail_fit = fit(_g_erf_tail, ERF_CLAMP - ERF_SPLIT, *ERF_TAIL_DEGREES)
    ap_, _, atan_fit = fit(_g_atan, 1.0, *ATAN_DEGREES)
    lines = [f"erf |x| < 1: degree {ERF_SMALL_DEGREE} in x^2, max relative fit error {small_fit:.3g}",
             f"erf tail S: degrees {ERF_TAIL_DEGREES}, max relative fit error {tail_fit:.3g}",
             f"atan: degree {ATAN_DEGREES[0]} in z^2, max relative fit error {atan_fit:.3g}"]
    xs_erf = _samples(6.0)
    xs_atan = np.concatenate([_samples(4.0), np.logspace(0, 30, 100_001), -np.logspace(0, 30, 100_001)])
    measured: dict[str, dict[str, tuple[float, float, float]]] = {"erf": {}, "atan": {}}
    for name in DTYPES:
        measured["erf"][name] = measure(erf_lowered, _erf, xs_erf, (small, tp, tq), DTYPES[name])
        measured["atan"][name] = measure(atan_lowered, np.arctan, xs_atan, (ap_,), DTYPES[name])
    for fn in ("erf", "atan"):
        for name, (ae, re, wx) in measured[fn].items():
            lines.append(f"{fn:4} evaluated in {name:4}: max abs error {ae:.3g}, max rel error {re:.3g} (at x = {wx:.6g})")
    print("\n".join(lines))
    text = module_text(small, tp, tq, ap_, small_fit, tail_fit, atan_fit, measured)
    if args.write:
        MODULE.write_text(text)
        print(f"wrote {MODULE}")
    return 0


def _fmt(cs: list[float]) -> str:
    return "(" + ", ".join(repr(float(np.float64(c))) for c in cs) + ",)"


def module_text(small, tp, tq, ap_, small_fit, tail_fit, atan_fit, measured) -> str:
    def table(fn: str) -> str:
        rows = [f"    {name:4}  {ae:9.2e}  {re:9.2e}  {_ulps(ae, name)}" for name, (ae, re, _) in measured[fn].items()]
        return "    dtype  max abs    max rel    ulps of 1\n" + "\n".join(rows)

    return f'''"""Fitted coefficients of the `erf` and `atan` approximations (forward lowerings).

Generated by `scripts/fit_approximations.py --write`; do not edit by hand. Coefficients
are listed lowest degree first.

erf (forward.py's erf-lower), two pieces split at |x| = {ERF_SPLIT:g}:
- |x| < {ERF_SPLIT:g}:  x * P(x^2), P = ERF_SMALL_P (max relative fit error {small_fit:.2e});
- |x| >= {ERF_SPLIT:g}: sign(x) * (1 - exp(-a^2) * S(a - {ERF_SPLIT:g})), a = min(|x|, {ERF_CLAMP:g}),
  S = ERF_TAIL_P / ERF_TAIL_Q ~ erfc(a) exp(a^2) (max relative fit error {tail_fit:.2e});
  erfc({ERF_CLAMP:g}) = 1.5e-8 is under half an f32 ulp of 1, so the clamp costs nothing in f32.
atan (atan-lower): z * P(z^2) ~ atan(z) on z in [0, 1], P = ATAN_P (max relative fit
error {atan_fit:.2e}); the lowering takes z = min(|x|, 1/|x|), uses pi/2 - r for |x| > 1,
and restores the sign.

Measured error of each lowering as a backend evaluates it (coefficients and every
operation rounded to the dtype), on millions of points (see the script):

erf on [-6, 6]:
{table("erf")}

atan on [-1e30, 1e30]:
{table("atan")}

So both are accurate to about one f32 ulp of 1 in f32 and to about one ulp in f16
and bf16; in f64 they remain f32-accurate approximations, not f64-accurate: a
backend that lowers f64 Erf or Atan this way computes them to ~1e-8.
"""

ERF_SPLIT = {ERF_SPLIT!r}
ERF_CLAMP = {ERF_CLAMP!r}
ERF_SMALL_P: tuple[float, ...] = {_fmt(small)}
ERF_TAIL_P: tuple[float, ...] = {_fmt(tp)}
ERF_TAIL_Q: tuple[float, ...] = {_fmt(tq)}
ATAN_P: tuple[float, ...] = {_fmt(ap_)}

# Measured max absolute error of each lowering evaluated in each dtype (the checker's bound uses it).
ERF_MAX_ABS_ERROR: dict[str, float] = {{{", ".join(f'"{k}": {v[0]:.3g}' for k, v in measured["erf"].items())}}}
ATAN_MAX_ABS_ERROR: dict[str, float] = {{{", ".join(f'"{k}": {v[0]:.3g}' for k, v in measured["atan"].items())}}}
'''


ULP1 = {"f64": 2.0**-52, "f32": 2.0**-23, "f16": 2.0**-10, "bf16": 2.0**-7}


def _ulps(err: float, dtype: str) -> str:
    return "    -" if dtype == "f64" else f"{err / ULP1[dtype]:5.2f}"


if __name__ == "__main__":
    sys.exit(main())
