"""KthValue, ArgKthValue, Median, ArgMedian, Mode and ArgMode (opdefs/order_stats.py) in primitives or through a sort, for
backends without their kernels (none of the built-in ones but cpu has one).

Each selects the value at one position p of the ascending stable sort: p = k - 1 for KthValue; for
Median p = (n - 1) // 2, or, where the row holds NaNs (`nans` of them), its first NaN's position
n - nans; for Median{ignore_nan} p = (c - 1) // 2 of the c = n - nans values that are not NaN (0 for
c = 0), counted without a division as #{r in 0..n-1: r >= 1 and 2 r + 1 <= c} (r an Iota along the axis).

- `argkthvalue-rank`, `argmedian-rank`, `argmedian-rank-nan`: the index whose rank (rules/sort.py's
  comparison count, n^2 comparisons, ties by index) is p: sum_i where(rank_i == p, i, 0), one term.
- `argkthvalue-sort`, `argmedian-sort`, `argmedian-sort-nan`: position p of ArgSort (a Slice for the
  constant k - 1, a Gather at p for the median's), for a backend with a sort kernel (metal, tpu).
- `kthvalue-gather`, `median-gather`: the value is Gather(x, the index kept on the axis); `kthvalue-sort`:
  the Slice of Sort. The axis dropped by a Reshape unless keep_dim. The cost model chooses.
- `argmode-rank`: count_i = sum_j [x_j ties x_i] (n^2 comparisons, NaNs one value), m = max_i count_i; the
  most frequent values' least rank r* = min_i where(count_i == m, rank_i, n) is the first occurrence of
  the smallest of them, so its last occurrence has rank r* + m - 1 (ties are by index): the index of that
  rank, as above. `argmode-sort`: through a sort, with n log n work where the backend sorts (metal, tpu):
  in the sorted values s a run starts at r = 0 and where s_r does not tie s_{r-1} (s shifted by a Slice
  and a Pad); c_r = r - (the last run start <= r, a Scan Max) + 1 counts each run, so m = max_r c_r is
  the largest frequency and the first r with c_r == m ends the smallest most frequent value's run: its
  last occurrence (ties are by index), whose index is ArgSort's at r. `mode-gather`: the value at that
  index.
"""

from __future__ import annotations

from .dsl import Rule, rule
from .sort import _LESS, _PAIRS, _RANK

_SHAPES = "jaxis xshape ishape bshape tshape jaxes axes kshape"
_KTH = f"k axis keep {_SHAPES} oshape k0 kf"
_MED = f"axis keep {_SHAPES} oshape size half"
_SORT = "axis 0 1 jaxis xshape ishape bshape tshape jaxes"  # Sort / ArgSort{ascending, stable} of x
_BASE = dict(_PAIRS, less=_LESS["asc"], rank=_RANK, ix="(Iota.i64 axis x)", zx="(- ix ix)")
_PICK = "(Reshape oshape (Reduce.Sum axes 1 (where (== rank {p}) ix zx)))"
_NANS = {"nans": "(Reduce.Sum axes 1 (where (!= x x) 1 zx))"}
_P = {0: "(where (> nans 0) (- (lit size) nans) (lit half))",
      1: "(Reduce.Sum axes 1 (where (where (>= ix 1) (<= (+ (* ix 2) 1) (- (lit size) nans)) (>= ix 1)) 1 zx))"}
_HOW = {0: "p = n - nans where the row holds a NaN, else (n - 1) // 2",
        1: "p = (c - 1) // 2 of the c values that are not NaN (0 for none)"}


def _median_rules() -> tuple[Rule, ...]:
    out = []
    for nan, (suffix, h) in enumerate((("", "propagate"), ("-nan", "nan"))):
        out.append(rule(f"argmedian-rank{suffix}", f"argmedian(x) = the i with rank_i == p, {_HOW[nan]}",
                        f"(ArgMedian.{h} {_MED} x)", _PICK.format(p="p"), group="forward",
                        lets=dict(_BASE, **_NANS, p=_P[nan])))
        out.append(rule(f"argmedian-sort{suffix}", f"argmedian(x) = argsort(x)[p], {_HOW[nan]}",
                        f"(ArgMedian.{h} {_MED} x)", f"(Reshape oshape (Gather axis (ArgSort {_SORT} x) p))",
                        group="forward", lets={"ix": "(Iota.i64 axis x)", "zx": "(- ix ix)", **_NANS, "p": _P[nan]}))
    return tuple(out)


_MODE = f"axis keep {_SHAPES} oshape size pnq nn all"
_RUNS = {"perm": f"(ArgSort {_SORT} x)", "s": "(Gather axis x perm)", "prev": "(Pad axis 1 0 (Slice axis 0 -1 1 s))",
         "r": "(Iota.i64 axis x)", "zr": "(- r r)",
         "same": "(where (== r 0) (!= r r) (where (!= s s) (!= prev prev) (== s prev)))",
         "start": "(Scan.Max axis jaxis xshape bshape ishape tshape jaxes pnq nn all (where same zr r))",
         "c": "(+ (- r start) 1)", "m": "(Reduce.Max axes 1 c)"}
_MODE_LETS = dict(_BASE, count="(sum jaxes (where eq 1 zero))", m="(Reduce.Max axes 1 count)",
                  first="(Reduce.Min axes 1 (where (== count m) rank (lit size)))")

RULES: tuple[Rule, ...] = (
    rule("argkthvalue-rank", "argkthvalue(x, k) = the i with rank_i == k - 1", f"(ArgKthValue {_KTH} x)",
         _PICK.format(p="(lit kf)"), group="forward", lets=_BASE),
    rule("argkthvalue-sort", "argkthvalue(x, k) = argsort(x)[k - 1]", f"(ArgKthValue {_KTH} x)",
         f"(Reshape oshape (Slice axis k0 k 1 (ArgSort {_SORT} x)))", group="forward"),
    rule("kthvalue-gather", "kthvalue(x, k) = gather(x, argkthvalue(x, k))", f"(KthValue {_KTH} x)",
         "(Reshape oshape (Gather axis x (ArgKthValue k axis 1 jaxis xshape ishape bshape tshape jaxes axes kshape "
         "kshape k0 kf x)))", group="forward"),
    rule("kthvalue-sort", "kthvalue(x, k) = sort(x)[k - 1]", f"(KthValue {_KTH} x)",
         f"(Reshape oshape (Slice axis k0 k 1 (Sort {_SORT} x)))", group="forward"),
) + _median_rules() + (
    rule("median-gather", "median(x) = gather(x, argmedian(x))", f"(Median axis keep nan {_SHAPES} oshape size half x)",
         f"(Reshape oshape (Gather axis x (ArgMedian axis 1 nan {_SHAPES} kshape size half x)))", group="forward"),
    rule("argmode-rank", "argmode(x) = the i with rank_i == r* + m - 1, m = max count, r* = min_i where(count_i == m, "
         "rank_i, n), count_i = #{j: x_j ties x_i}", f"(ArgMode {_MODE} x)", _PICK.format(p="(- (+ first m) 1)"),
         group="forward", lets=_MODE_LETS),
    rule("argmode-sort", "argmode(x) = argsort(x)[the first r with c_r == max c], c_r = r - (the last run start <= r) + 1 "
         "in the sorted values", f"(ArgMode {_MODE} x)",
         "(Reshape oshape (Gather axis perm (Reduce.Min axes 1 (where (== c m) r (lit size)))))", group="forward",
         lets=_RUNS),
    rule("mode-gather", "mode(x) = gather(x, argmode(x))", f"(Mode {_MODE} x)",
         f"(Reshape oshape (Gather axis x (ArgMode axis 1 {_SHAPES} kshape size pnq nn all x)))", group="forward"),
)
