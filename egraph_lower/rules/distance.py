"""VectorNorm (opdefs/distance.py) in primitives, for backends without its kernel. One rule per order,
the head fixing the order's kind:

- `vnorm-l2`: sqrt(sum x^2) (the sum of squares overflows where |x| > sqrt(MAX / n), as aten's kernel's
  does in the same dtype: a lowered f16/bf16 graph computes it in f32);
- `vnorm-l1`: sum |x|;
- `vnorm-inf`, `vnorm-neginf`: max |x|, min |x| (NaN propagates: Reduce Max/Min do);
- `vnorm-l0`: sum where(x == 0, 0, 1), the 1 as pow(x, 0) (1 for every element, NaN and inf included:
  a NaN counts as nonzero, as aten's);
- `vnorm-p`: (sum |x|^p)^q, q = 1/p (fields of the constructor: no literal division); for p < 0 a zero
  gives |0|^p = inf, the sum inf and inf^q = 0, aten's value.

- `dist-{kind}` (one per kind): Dist(a, b) = the VectorNorm of the same kind of a - b over every axis
  (the Sub broadcasts a and b; aten's dist is that norm of the difference).

Left out: a scaled form (m = max |x|, m (sum (|x| / m)^p)^q) that would not overflow where the plain
sum does: aten's kernel has the plain sum's range, and the half graphs compute in f32.
"""

from __future__ import annotations

from ..opdefs.distance import NORM_KINDS
from .dsl import Rule, rule

_NORM = "VectorNorm.{k} ord p q axes keep x"

RULES: tuple[Rule, ...] = (
    rule("vnorm-l2", "||x||_2 = sqrt(sum_axes(x x))", f"({_NORM.format(k='L2')})",
         "(Sqrt (Reduce.Sum axes keep (* x x)))", group="forward"),
    rule("vnorm-l1", "||x||_1 = sum_axes(|x|)", f"({_NORM.format(k='L1')})",
         "(Reduce.Sum axes keep (Abs x))", group="forward"),
    rule("vnorm-inf", "||x||_inf = max_axes(|x|)", f"({_NORM.format(k='Inf')})",
         "(Reduce.Max axes keep (Abs x))", group="forward"),
    rule("vnorm-neginf", "||x||_-inf = min_axes(|x|)", f"({_NORM.format(k='NegInf')})",
         "(Reduce.Min axes keep (Abs x))", group="forward"),
    rule("vnorm-l0", "||x||_0 = sum_axes(where(x == 0, 0, 1)) (NaN counts as nonzero)", f"({_NORM.format(k='L0')})",
         "(Reduce.Sum axes keep (where (== x 0) 0 (pow x 0)))", group="forward"),
    rule("vnorm-p", "||x||_p = sum_axes(|x|^p)^(1/p) (p < 0: 0 where x holds a zero)", f"({_NORM.format(k='P')})",
         "(pow (Reduce.Sum axes keep (pow (Abs x) (lit p))) (lit q))", group="forward"),
)

RULES += tuple(
    rule(f"dist-{k.lower()}", f"dist_p(a, b) = ||a - b||_p over every axis ({k})", f"(Dist.{k} ord p q axes a b)",
         f"(VectorNorm.{k} ord p q axes 0 (- a b))", group="forward")
    for k in NORM_KINDS)
