"""Sort, ArgSort, TopK and ArgTopK (opdefs/sort.py) in primitives, for backends without a sort kernel
(WebGPU has none).

The expansions compare every pair along the axis, over [.., n_i, n_j, ..] (x as the i, `ishape`, and as
the j, `bshape`, expanded to `tshape`): j comes before i in aten's order when x_j < x_i with NaN the
largest (ascending: x_i NaN and x_j not, or x_j < x_i; descending: x_j NaN and x_i not, or x_j > x_i),
or when they tie (equal, or both NaN; 0.0 and -0.0 are equal) and j < i. So rank_i = sum_j [j before i]
(an i64 count) is a permutation of 0..n-1, ties broken by index as the reference breaks them (the stable
order); n^2 comparisons, exact in every dtype.

- `argsort-rank-asc`, `argsort-rank-desc`: the permutation inverted: out_r = sum_i where(rank_i == r, i, 0)
  (one term per r: exact), over [.., n_r, n_i, ..].
- `sort-gather`: Sort(x) = Gather(x, ArgSort(x)): the values copied (a -0.0 stays -0.0, a NaN its NaN).
- `topk-sort`, `argtopk-sort`: TopK is the first k of the sort in its order (Slice{0, k} of Sort / ArgSort
  with descending = largest, stable).
- `argtopk-rank-asc`, `argtopk-rank-desc`: the inversion for the first k ranks only, over [.., k, n, ..]
  (`kshape`): k n selections where the sort's inversion takes n^2; `topk-gather`: TopK = Gather(x,
  ArgTopK(x)). The cost model chooses between these and the sort's Slice.

Left out: a sorting network (bitonic: log^2 n compare-exchange stages, n log^2 n comparisons), a count of
stages no single rule of the notation states; for a long axis the rank's n^2 comparisons are the cost.
"""

from __future__ import annotations

from .dsl import Rule, rule

_SORT = "axis stable jaxis xshape ishape bshape tshape jaxes"
_TOP = "k axis sorted jaxis xshape ishape bshape tshape jaxes kshape"
_PAIRS = {"ti": "(Expand tshape (Reshape ishape x))", "tj": "(Expand tshape (Reshape bshape x))",
          "i": "(Iota.i64 axis ti)", "j": "(Iota.i64 jaxis ti)", "zero": "(- j j)",
          "eq": "(where (!= ti ti) (!= tj tj) (== tj ti))"}
_RANK = "(sum jaxes (where (where eq (< j i) less) 1 zero))"
# j before i by value: ascending x_j < x_i with NaN the largest; descending x_j > x_i
_LESS = {"asc": "(where (!= ti ti) (== tj tj) (< tj ti))", "desc": "(where (!= tj tj) (== ti ti) (> tj ti))"}
_INVERT = "(sum jaxes (where (== (Expand {shape} (Reshape bshape rank)) (Iota.i64 axis {like})) (Iota.i64 jaxis {like}) " \
          "(- (Iota.i64 jaxis {like}) (Iota.i64 jaxis {like}))))"
_TOP_LETS = {"kr": "(Expand kshape (Reshape bshape rank))"}


def _rank_rules() -> tuple[Rule, ...]:
    out = []
    for order, flag in (("asc", "smallest"), ("desc", "largest")):
        lets = dict(_PAIRS, less=_LESS[order], rank=_RANK)
        sign = "<" if order == "asc" else ">"
        out.append(rule(f"argsort-rank-{order}", f"argsort(x)_r = the i with rank_i == r, rank_i = #{{j: x_j {sign} x_i, "
                        "NaN the largest, or tied and j < i}",
                        f"(ArgSort.{order} {_SORT} x)", _INVERT.format(shape="tshape", like="ti"), group="forward",
                        lets=lets))
        out.append(rule(f"argtopk-rank-{order}", f"argtopk(x)_r = the i with rank_i == r for r < k (the {flag}), "
                        "rank_i as argsort's", f"(ArgTopK.{flag} {_TOP} x)", _INVERT.format(shape="kshape", like="kr"),
                        group="forward", lets=dict(lets, **_TOP_LETS)))
    return tuple(out)


RULES: tuple[Rule, ...] = _rank_rules() + (
    rule("sort-gather", "sort(x) = gather(x, argsort(x))", "(Sort axis d stable jaxis xshape ishape bshape tshape jaxes x)",
         "(Gather axis x (ArgSort axis d stable jaxis xshape ishape bshape tshape jaxes x))", group="forward"),
    rule("topk-sort", "topk(x, k) = sort(x, descending: largest)[:k]",
         "(TopK k axis l s jaxis xshape ishape bshape tshape jaxes kshape x)",
         "(Slice axis 0 k 1 (Sort axis l 1 jaxis xshape ishape bshape tshape jaxes x))", group="forward"),
    rule("argtopk-sort", "argtopk(x, k) = argsort(x, descending: largest, stable)[:k]",
         "(ArgTopK k axis l s jaxis xshape ishape bshape tshape jaxes kshape x)",
         "(Slice axis 0 k 1 (ArgSort axis l 1 jaxis xshape ishape bshape tshape jaxes x))", group="forward"),
    rule("topk-gather", "topk(x, k) = gather(x, argtopk(x, k))",
         "(TopK k axis l s jaxis xshape ishape bshape tshape jaxes kshape x)",
         "(Gather axis x (ArgTopK k axis l s jaxis xshape ishape bshape tshape jaxes kshape x))", group="forward"),
)
