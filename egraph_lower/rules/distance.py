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

- `cdist-{kind}`: Cdist(x1, x2) = the VectorNorm over the last axis of x1 [.., r1, 1, c] - x2 [.., 1, r2, c]
  (the direct form, aten's kernel's where the importer maps it);
- `cdist-bwd-{kind}`: dx1 = sum over the r2 axis of dy g(d, D) with d as above and dy, D given a
  trailing axis (opdefs/distance.py's g): 0 (a Where whose condition |d| < 0 never holds, so d gives
  its shape and dtype and a NaN or inf in it does not show); dy sign(d); where(D == 0, 0, dy (d / D)); where(|d| ==
  max_k |d|, dy sign(d), 0) (D recomputed from d as its own max, so a tie is one in the precision the
  expansion computes d in, not missed where dist was rounded to f16); where(d == 0, 0, dy sign(d) (|d| / D)^(p - 1)).

- `pdist-{kind}`: Pdist(x) = MaskedScatterBackward (the values at a mask's true positions, row-major) of
  Cdist(x, x) at the mask j > i (two Iotas compared);
- `pdist-bwd-{kind}`: dx = CdistBackward(S, x, x, D), S = G + G^T, G the MaskedScatter of dy into zeros of
  [n, n] at that mask, D the given pdist spread and mirrored the same way (0 on the diagonal): x is both
  operands of the cdist, and the gradient is linear in dy.

Left out: for p = 2, the matrix-product form sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)) aten's kernel takes past
25 rows: at equal or near rows its cancellation leaves an error of about sqrt(eps) |a| where the distance
is 0 (in f32 some 3e-4 |a|, thousands of eps), so it is no rewrite of Cdist's value, and the importer
leaves that case to PyTorch.

Left out too: a scaled form (m = max |x|, m (sum (|x| / m)^p)^q) that would not overflow where the plain
sum does: aten's kernel has the plain sum's range, and the half graphs compute in f32.
"""

from __future__ import annotations

from ..opdefs.distance import CDIST_KINDS, NORM_KINDS
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

_D = "(- (Reshape s1 x1) (Reshape s2 x2))"
_LETS = {"d": _D, "g": "(Reshape sg dy)", "dd": "(Reshape sg dist)"}
_BWD = "(CdistBackward.{k} ord p q pm1 s1 s2 sg dy x1 x2 dist)"
_TERMS = {
    "L0": "(where (< (Abs d) 0) d 0)",  # never true (NaN included): 0 in d's shape and dtype
    "L1": "(* g (Sign d))",
    "L2": "(where (== dd 0) 0 (* g (/ d dd)))",
    "Inf": "(where (== (Abs d) (Reduce.Max [-1] 1 (Abs d))) (* g (Sign d)) 0)",
    "P": "(where (== d 0) 0 (* g (* (Sign d) (pow (/ (Abs d) dd) (lit pm1)))))",
}
_WHY = {"L0": "0", "L1": "dy sign(d)", "L2": "dy d / D, 0 where D = 0", "Inf": "dy sign(d) where |d| = D",
        "P": "dy sign(d) (|d| / D)^(p - 1), 0 where d = 0"}

RULES += tuple(
    rule(f"cdist-{k.lower()}", f"cdist_p(x1, x2)[i, j] = ||x1_i - x2_j||_p ({k})", f"(Cdist.{k} ord p q s1 s2 x1 x2)",
         f"(VectorNorm.{k} ord p q [-1] 0 {_D})", group="forward")
    for k in CDIST_KINDS)
RULES += tuple(
    rule(f"cdist-bwd-{k.lower()}", f"d cdist_p / d x1: dx1_i = sum_j {_WHY[k]}, d = x1_i - x2_j ({k})",
         _BWD.format(k=k), f"(Reduce.Sum [-2] 0 {_TERMS[k]})", group="backward", lets=_LETS)
    for k in CDIST_KINDS)

_SELF = "(Cdist.{k} ord p q s1 s2 x x)"
_TRIU = "(> (Iota.i64 1 dd) (Iota.i64 0 dd))"  # j > i on [n, n]: the strict upper triangle
_MS = "MaskedScatter nflat nb ni nt npnq n xshape sflat"
_PDIST_LETS = {"g": f"({_MS} (where (< (Abs dd) 0) dd 0) {_TRIU} dy)",
               "gd": f"({_MS} (where (< (Abs dd) 0) dd 0) {_TRIU} pd)"}

RULES += tuple(
    rule(f"pdist-{k.lower()}", f"pdist_p(x) = cdist_p(x, x) at j > i, row-major ({k})",
         f"(Pdist.{k} ord p q s1 s2 shape nflat nb ni nt npnq n mn x)",
         f"(MaskedScatterBackward shape nflat nb ni nt npnq n mn dd {_TRIU})", group="forward",
         lets={"dd": _SELF.format(k=k)})
    for k in CDIST_KINDS)
RULES += tuple(
    rule(f"pdist-bwd-{k.lower()}", f"d pdist_p / dx = CdistBackward(S, x, x, D), S = dy at j > i plus its"
         f" mirror, D the same of pdist: x is both operands ({k})",
         f"(PdistBackward.{k} ord p q pm1 s1 s2 sg nflat nb ni nt npnq n xshape sflat dy x pd)",
         f"(CdistBackward.{k} ord p q pm1 s1 s2 sg (+ g (Transpose [1,0] g)) x x (+ gd (Transpose [1,0] gd)))",
         group="backward",
         lets={"dd": _SELF.format(k=k), **_PDIST_LETS})
    for k in CDIST_KINDS)
