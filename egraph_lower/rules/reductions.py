"""Var, ArgReduce and Scan (opdefs/reductions.py) in primitives, for backends without their kernels.

- `var-lower`: the corrected two-pass form of rules/norm.py, as a sum over the divisor:
  (sum(d^2) - sum(d) mean(d)) / div, d = x - mean(x), div = max(n - correction, 0) (a field: a
  divisor of 0 gives inf, or NaN where the sum is 0, as aten). The plain sum(d^2) / div loses the
  spread of rows far from 0 (x ~ 1e4 + 1e-3 in f32: norm.py says why); the one-pass form cancels.
- `argmax-lower`, `argmin-lower`: the first index i along the axis with x_i == max (min), or the
  first NaN where there is one (a NaN counts as the extreme, as aten's): min over i of where(x != x,
  i, where(x == m, i, n)), m = Reduce.Max (Min), which is NaN on a row with a NaN (so x == m holds
  nowhere there) and n the axis' length. Ties of 0.0 and -0.0 are equal, as in aten.
- `scan-add-where`, `scan-mul-where`: out_i = sum (product) over j of where(j <= i, x_j, 0 (1)), over a
  [.., n, n, ..] expansion of x: n^2 elements, exact per element (one reduction each, a NaN or inf of
  x reaches exactly the prefixes holding it).

Left out: cumsum as a MatMul by the lower-triangular ones L [n, n] of x as [P, n, Q] (one fast kernel,
n^2 PQ multiply-adds): the zeros of L times an infinity of x are NaN, so every output after an inf or
-inf of x would be NaN where the scan gives +-inf (rules --check failed it at x = inf in every dtype).
A log-depth scan of shifted adds needs ceil(log2 n) steps, a count no single rule of the notation states.
"""

from __future__ import annotations

from .dsl import Rule, rule

_VAR_LETS = {"d": "(- x (Reduce.Mean axes 1 x))", "e": "(Reduce.Mean axes keep d)"}
_ARG = "(where (!= x x) i (where (== x (Reduce.{op} axes 1 x)) i (lit size)))"
_SCAN = "Scan.{op} axis jaxis xshape bshape tshape jaxes pnq nn all"
_WHERE_LETS = {"t": "(Expand tshape (Reshape bshape x))",
               "mask": "(<= (Iota.i64 jaxis t) (Iota.i64 axis t))"}
RULES: tuple[Rule, ...] = (
    rule("var-lower", "var(x) = (sum(d^2) - sum(d) mean(d)) / max(n - correction, 0), d = x - mean x",
         "(Var axes c keep div x)",
         "(/ (- (Reduce.Sum axes keep (* d d)) (* (Reduce.Sum axes keep d) e)) (lit div))",
         group="forward", lets=_VAR_LETS),
    rule("argmax-lower", "argmax(x) = min_i where(x_i != x_i, i, where(x_i == max x, i, n))",
         "(ArgReduce.Max axis keep axes size x)", f"(Reduce.Min axes keep {_ARG.format(op='Max')})",
         group="forward", lets={"i": "(Iota.i64 axis x)"}),
    rule("argmin-lower", "argmin(x) = min_i where(x_i != x_i, i, where(x_i == min x, i, n))",
         "(ArgReduce.Min axis keep axes size x)", f"(Reduce.Min axes keep {_ARG.format(op='Min')})",
         group="forward", lets={"i": "(Iota.i64 axis x)"}),
    rule("scan-add-where", "cumsum(x)_i = sum_j where(j <= i, x_j, 0)",
         f"({_SCAN.format(op='Add')} x)", "(sum jaxes (where mask t 0))", group="forward", lets=_WHERE_LETS),
    rule("scan-mul-where", "cumprod(x)_i = prod_j where(j <= i, x_j, 1)",
         f"({_SCAN.format(op='Mul')} x)", "(Reduce.Prod jaxes 0 (where mask t 1))", group="forward",
         lets=_WHERE_LETS),
)
