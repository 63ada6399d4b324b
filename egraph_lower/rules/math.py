"""The Binary ops of format version 3 in terms of others, for backends that lack them (metal: FloorDiv,
Rem, Hypot, Xlogy; wgpu: also Copysign, FMax, FMin).

Every rule is exact in real arithmetic given its operands, and each but fmod-lower is exact or within
a few roundings in floating point too:
- FloorDiv is torch's own formula (`opdefs/binary_math.py`) over Fmod, and Rem is Fmod plus b where
  the signs differ: both exact where Fmod is (a kernel's fmod is exact).
- Fmod has no expansion: C's fmod is exact, and a - b trunc(a / b) is not where b q rounds (a / b
  rounding up to an integer flips the result between about 0 and about |b|; telling which needs the
  exact product, a fused multiply-add or a wider type). Every built-in backend runs it (WebGPU's `%`
  on floats is specified as that formula, so a real WebGPU kernel has to correct it).
- Hypot scales by the larger magnitude, so nothing overflows where the result does not; Copysign
  reads b's sign as b < 0 or 1/b < 0 (-0.0: 1/b = -inf), so a NaN b counts as positive whatever its
  sign bit; Xlogy, FMax, FMin test NaN as x != x.
- inf is tested as 1/|x| == 0 (exactly the infinities).
"""

from __future__ import annotations

from .dsl import Rule, rule


def _f(name: str, identity: str, lhs: str, rhs: str, **lets: str) -> Rule:
    return rule(name, identity, lhs, rhs, group="forward", lets=lets)


RULES: tuple[Rule, ...] = (
    _f("floordiv-fmod",
       "floordiv(a, b) = where(b == 0, a / b, where(d != 0, round_half_up(floor(d)), 0 * (a / b))), "
       "d = (a - m) / b - [m != 0 and sign(m) != sign(b)], m = fmod(a, b) (torch's div_floor_floating)",
       "(floordiv a b)",
       "(where (== b 0) (/ a b) (where (!= d 0) (where (> (- d fl) 0.5) (+ fl 1) fl) (* 0 (/ a b))))",
       m="(fmod a b)", d0="(/ (- a m) b)", d="(where (and (!= m 0) (xor (< b 0) (< m 0))) (- d0 1) d0)",
       fl="(Floor d)"),
    _f("rem-fmod", "rem(a, b) = where(m != 0 and sign(m) != sign(b), m + b, m), m = fmod(a, b)", "(rem a b)",
       "(where (and (!= m 0) (xor (< b 0) (< m 0))) (+ m b) m)", m="(fmod a b)"),
    _f("hypot-lower", "hypot(a, b) = m sqrt(1 + (n/m)^2), m = max(|a|, |b|), n = min; inf if either is inf",
       "(hypot a b)", "(where (== (Recip aa) 0) aa (where (== (Recip ab) 0) ab (where (== m 0) m "
       "(* m (Sqrt (+ 1 (* r r)))))))",
       aa="(Abs a)", ab="(Abs b)", m="(max aa ab)", r="(/ (min aa ab) m)"),
    _f("copysign-lower", "copysign(a, b) = where(b < 0 or 1/b < 0, -|a|, |a|) (a NaN b counts as positive)",
       "(copysign a b)", "(where (or (< b 0) (< (Recip b) 0)) (Neg (Abs a)) (Abs a))"),
    _f("xlogy-lower", "xlogy(a, b) = where(b != b, b, where(a == 0, 0, a log(b)))", "(xlogy a b)",
       "(where (!= b b) b (where (== a 0) 0 (* a (Log b))))"),
    _f("fmax-lower", "fmax(a, b) = where(a != a, b, where(b != b, a, max(a, b)))", "(fmax a b)",
       "(where (!= a a) b (where (!= b b) a (max a b)))"),
    _f("fmin-lower", "fmin(a, b) = where(a != a, b, where(b != b, a, min(a, b)))", "(fmin a b)",
       "(where (!= a a) b (where (!= b b) a (min a b)))"),
)
