"""Scatter and ScatterReduce in primitives, for backends without their kernels (WebGPU: no scatter).

The fields (`opdefs/scatter.py`) are ScatterAdd's (x's N flat positions, its shape, [N, 1, .., 1], its
axes, the axes 1..r, `cut`: src larger than the index) and the index's M elements and shape. As in
`scatter-add-onehot` (rules/indexing.py), pos = Gather(F, index) is the flat position of x each index
position q writes (F: the flat positions of x in x's shape) and onehot [N, *index.shape] = (p == pos_q);
s is src, or src sliced to the index's shape (`-cut`).

- `scatter-onehot`: of the positions q writing p the last in row-major order wins, as the reference
  says: Q = the flat number of q, last_p = max_q where(onehot, Q, -1) (-1: p not written, x kept), and
  p takes the sum of s over the one q with Q == last_p (one term: exact).
- `scatter-reduce-sum-self`: with include_self a sum-reduction is a scatter-add (ScatterAdd's own
  expansions follow); `scatter-reduce-sum`: without, the written positions (last_p >= 0, as above: the
  any of an empty one-hot would not say "none") are the one-hot sums alone.
- `scatter-reduce-amax-self`, `-amin-self`: max(x, max_q where(onehot, s, x_p)): where nothing is written
  that is x, and an empty index's max (-inf, +inf for min) gives x too; NaN propagates, as aten's.
  Without include_self (`scatter-reduce-amax`, `-amin`) the one-hot is filled with the value the last q
  writes to p (one of those reduced, so the max is unchanged; NaN if that one is), x kept where nothing is.
- `scatter-reduce-mean-self`, `scatter-reduce-mean`: the one-hot sum over the count, counted as the sum of
  src^0 (1 for every value, NaN and infinities included: a 1 in src's dtype without a Cast). For float
  dtypes: the importer maps an integer mean (floor division) only where the backend runs ScatterReduce.
- `scatter-reduce-prod-self`: the one-hot product prod_q where(onehot, src_q, 1) where written, x
  multiplied into the factor of the last q writing p (`sel`), so that x is in the one reduction: x
  times a product taken first overflows f16 where the whole product does not (rules --check found it);
  x where nothing is written. `scatter-reduce-prod`: without include_self, the product alone where
  written, else x (`Reduce{Prod}`, format version 3).
"""

from __future__ import annotations

from .dsl import Rule, rule

_FIELDS = "axis flat xshape nshape all paxes {cut} iflat ishape"
_BASE = {"pos": "(Gather axis (Reshape xshape (Iota.i64 0 (Reshape flat x))) index)",
         "onehot": "(== (Iota.i64 0 (Expand nshape (Reduce.Max all 1 x))) pos)"}
_LAST = dict(_BASE, q="(Reshape ishape (Iota.i64 0 (Reshape iflat index)))",
             last="(Reduce.Max paxes 0 (where onehot q -1))", sel="(== (where onehot q -2) (Reshape nshape last))")
_SRC = {0: "src", 1: "(Gather axis src (Iota.i64 axis index))"}


def _cut(name: str, identity: str, lhs: str, rhs: str, lets: dict[str, str]) -> tuple[Rule, ...]:
    """The rule for src of the index's shape, and its `-cut` twin for a larger src."""
    out = []
    for cut, suffix in ((0, ""), (1, "-cut")):
        fields = _FIELDS.format(cut=cut)
        out.append(rule(f"{name}{suffix}", identity + (", src sliced to the index's shape" if cut else ""),
                        lhs.format(fields=fields), rhs.format(s=_SRC[cut]), group="forward", lets=lets))
    return tuple(out)


RULES: tuple[Rule, ...] = (
    _cut("scatter-onehot", "scatter(x, index, src)_p = src at the last q writing p (where(onehot, Q, -1) max), "
         "else x_p", "(Scatter {fields} x index src)",
         "(Reshape xshape (where (>= last 0) (sum paxes (where sel {s} 0)) (Reshape flat x)))", _LAST)
    + (rule("scatter-reduce-sum-self", "scatter_reduce(x, index, src, sum, include_self) = scatter_add(x, index, src)",
            "(ScatterReduce.sum 1 axis flat xshape nshape all paxes cut iflat ishape x index src)",
            "(ScatterAddAt axis flat xshape nshape all paxes cut x index src)", group="forward"),)
    + _cut("scatter-reduce-sum", "scatter_reduce(sum, not include_self)_p = sum_q where(onehot, src_q, 0) where "
           "written, else x_p", "(ScatterReduce.sum 0 {fields} x index src)",
           "(Reshape xshape (where (>= last 0) (sum paxes (where onehot {s} 0)) (Reshape flat x)))", _LAST)
    + _cut("scatter-reduce-amax-self", "scatter_reduce(amax, include_self) = max(x, max_q where(onehot, src_q, x_p))",
           "(ScatterReduce.amax 1 {fields} x index src)",
           "(max x (Reshape xshape (Reduce.Max paxes 0 (where onehot {s} (Reshape nshape x)))))", _BASE)
    + _cut("scatter-reduce-amax", "scatter_reduce(amax, not include_self)_p = max_q where(onehot, src_q, the last "
           "value written to p) where written, else x_p", "(ScatterReduce.amax 0 {fields} x index src)",
           "(Reshape xshape (where (>= last 0) (Reduce.Max paxes 0 (where onehot {s} (Reshape nshape (sum paxes "
           "(where sel {s} 0))))) (Reshape flat x)))", _LAST)
    + _cut("scatter-reduce-amin", "scatter_reduce(amin, not include_self)_p = min_q where(onehot, src_q, the last "
           "value written to p) where written, else x_p", "(ScatterReduce.amin 0 {fields} x index src)",
           "(Reshape xshape (where (>= last 0) (Reduce.Min paxes 0 (where onehot {s} (Reshape nshape (sum paxes "
           "(where sel {s} 0))))) (Reshape flat x)))", _LAST)
    + _cut("scatter-reduce-mean-self", "scatter_reduce(mean, include_self) = (x + sum_q where(onehot, src_q, 0)) / "
           "(1 + count_p), count_p = sum_q where(onehot, src_q^0, 0)", "(ScatterReduce.mean 1 {fields} x index src)",
           "(/ (+ x (Reshape xshape (sum paxes (where onehot {s} 0)))) "
           "(+ (Reshape xshape (sum paxes (where onehot (pow {s} 0) 0))) 1))", _BASE)
    + _cut("scatter-reduce-mean", "scatter_reduce(mean, not include_self)_p = sum_q where(onehot, src_q, 0) / count_p "
           "where written, else x_p", "(ScatterReduce.mean 0 {fields} x index src)",
           "(Reshape xshape (where (>= last 0) (/ (sum paxes (where onehot {s} 0)) (sum paxes (where onehot "
           "(pow {s} 0) 0))) (Reshape flat x)))", _LAST)
    + _cut("scatter-reduce-amin-self", "scatter_reduce(amin, include_self) = min(x, min_q where(onehot, src_q, x_p))",
           "(ScatterReduce.amin 1 {fields} x index src)",
           "(min x (Reshape xshape (Reduce.Min paxes 0 (where onehot {s} (Reshape nshape x)))))", _BASE)
    + _cut("scatter-reduce-prod-self", "scatter_reduce(prod, include_self)_p = prod_q where(onehot, src_q, 1), the "
           "last q writing p's factor times x_p, where written, else x_p", "(ScatterReduce.prod 1 {fields} x index src)",
           "(Reshape xshape (where (>= last 0) (Reduce.Prod paxes 0 (where sel (* {s} (Reshape nshape x)) "
           "(where onehot {s} 1))) (Reshape flat x)))", _LAST)
    + _cut("scatter-reduce-prod", "scatter_reduce(prod, not include_self)_p = prod_q where(onehot, src_q, 1) where "
           "written, else x_p", "(ScatterReduce.prod 0 {fields} x index src)",
           "(Reshape xshape (where (>= last 0) (Reduce.Prod paxes 0 (where onehot {s} 1)) (Reshape flat x)))", _LAST)
)
