"""Var, ArgReduce, Scan and LogCumSumExp (opdefs/reductions.py) in primitives, for backends without their
kernels.

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
- `scan-add-matmul`: the prefix sum as a MatMul by the lower-triangular ones L [n, n] (L_ij = 1 for
  j <= i, as pow(t, 0) of an [n, n] tensor of x's dtype: 1 for every t) of x as [P, n, Q]: 2 n^2 PQ
  flops in a kernel a backend runs fast, against the n^2 PQ elements the where-form writes. L times x
  itself would be NaN after any infinity of x (L's zeros times inf), so it is L times x's finite
  values, with three more MatMuls counting the NaNs, +infs and -infs of each prefix: a NaN where the
  prefix holds a NaN or both infinities, else +-inf where it holds one, else the finite sum (which
  overflows to +-inf where the scan's does). The cost model chooses between it and `scan-add-where`
  (the counts only need to be > 0, so their rounding in f16 or bf16 past 2048 or 256 is harmless).
- `logcumsumexp-where`: out_i = m_i + log(sum_j where(j <= i, exp(x_j - m_i), 0)), m_i = the max of
  the prefix (the same [.., n, n, ..] selection, -inf off it): each exp is at most 1 and the sum at least
  1, so nothing overflows or underflows to a wrong 0. Where m_i is not finite it is replaced by 0 in the
  shift: +inf gives exp(inf) = inf, so +inf; an all -inf prefix a sum of 0, so -inf; a NaN, NaN.

- `scan-max-where`, `scan-min-where`: the max (min) over j of where(j <= i, x_j, x_i): x_i is in the
  prefix, so filling with it changes nothing (no -inf literal, and integers have none); NaN propagates.
- `argscan-max-where`, `argscan-min-where`: aten's cummax / cummin indices, the largest j <= i with
  x_j NaN or x_j == m_i, m_i the prefix's max (min): where the prefix holds a NaN, m_i is NaN and only
  the NaNs match, so the last NaN; else the last of the ties.

Left out: a log-depth scan of shifted adds: ceil(log2 n) steps, a count no single rule of the notation
states.
"""

from __future__ import annotations

from .dsl import Rule, rule

_VAR_LETS = {"d": "(- x (Reduce.Mean axes 1 x))", "e": "(Reduce.Mean axes keep d)"}
_ARG = "(where (!= x x) i (where (== x (Reduce.{op} axes 1 x)) i (lit size)))"
_SCAN = "Scan.{op} axis jaxis xshape bshape ishape tshape jaxes pnq nn all"
_WHERE_LETS = {"t": "(Expand tshape (Reshape bshape x))",
               "mask": "(<= (Iota.i64 jaxis t) (Iota.i64 axis t))"}
_COUNT = "(MatMul tri (Reshape pnq (where {c} (pow x 0) 0)))"  # per prefix, how many elements hold c
_MATMUL_LETS = {"sq": "(Expand nn (Reshape [1,1] (Reduce.Max all 0 x)))",
                "tri": "(where (<= (Iota.i64 1 sq) (Iota.i64 0 sq)) (pow sq 0) 0)",
                "fin": "(== (- x x) 0)",
                "s": "(MatMul tri (Reshape pnq (where fin x 0)))",
                "nans": _COUNT.format(c="(!= x x)"),
                "pos": _COUNT.format(c="(> (where fin 0 x) 0)"),
                "neg": _COUNT.format(c="(< (where fin 0 x) 0)"),
                "inf": "(/ (pow s 0) 0)",
                "nan": "(- inf inf)"}

_LCSE_LETS = dict(_WHERE_LETS, sel="(where mask t (/ (- 0 (pow t 0)) 0))", m="(Reduce.Max jaxes 1 sel)",
                  shift="(where (== (- m m) 0) m 0)")

_EXT_LETS = dict(_WHERE_LETS, m="(Reduce.{op} jaxes 1 (where mask t (Reshape ishape x)))",
                 j="(Iota.i64 jaxis t)")


def _extremum_scans(op: str) -> tuple[Rule, Rule]:
    """cummax or cummin (op Max or Min) and its index: one statement for both."""
    name, scan = op.lower(), _SCAN.format(op=op) + " x"
    return (
        rule(f"scan-{name}-where", f"cum{name}(x)_i = {name}_j where(j <= i, x_j, x_i)", f"({scan})",
             f"(Reduce.{op} jaxes 0 (where mask t (Reshape ishape x)))", group="forward", lets=_WHERE_LETS),
        rule(f"argscan-{name}-where", f"cum{name} index_i = max_j where(j <= i and (x_j != x_j or x_j == m_i), j, "
             f"-1), m_i = cum{name}(x)_i", f"(Arg{scan})",
             "(Reduce.Max jaxes 0 (where mask (where (!= t t) j (where (== t m) j -1)) -1))", group="forward",
             lets={k: v.format(op=op) for k, v in _EXT_LETS.items()}),
    )


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
    rule("scan-add-matmul", "cumsum(x) = L where(finite, x, 0), L the lower-triangular ones, x as [P, n, Q]; "
         "NaN, +inf, -inf where the prefix's counts (L times the indicators) say so",
         f"({_SCAN.format(op='Add')} x)",
         "(Reshape xshape (where (> nans 0) nan (where (> pos 0) (where (> neg 0) nan inf) "
         "(where (> neg 0) (- 0 inf) s))))", group="forward", lets=_MATMUL_LETS),
    rule("scan-add-where", "cumsum(x)_i = sum_j where(j <= i, x_j, 0)",
         f"({_SCAN.format(op='Add')} x)", "(sum jaxes (where mask t 0))", group="forward", lets=_WHERE_LETS),
    rule("scan-mul-where", "cumprod(x)_i = prod_j where(j <= i, x_j, 1)",
         f"({_SCAN.format(op='Mul')} x)", "(Reduce.Prod jaxes 0 (where mask t 1))", group="forward",
         lets=_WHERE_LETS),
    rule("logcumsumexp-where", "logcumsumexp(x)_i = m_i + log(sum_j where(j <= i, exp(x_j - m_i), 0)), m_i = "
         "max_{j <= i} x_j (0 where not finite)", "(LogCumSumExp axis jaxis xshape bshape ishape tshape jaxes pnq nn all x)",
         "(+ (Reshape xshape shift) (Log (sum jaxes (Exp (- sel shift)))))", group="forward", lets=_LCSE_LETS),
    *_extremum_scans("Max"),
    *_extremum_scans("Min"),
)
