"""Flip, advanced indexing, index-put and scatter-add in primitives (Gather, Take, Iota, Where, Compare,
Binary, Reduce, Reshape, Expand, and ScatterAdd where the backend runs it).

The fields of the left-hand sides (`opdefs/indexing.py`) are computed when the graph is loaded, from
the attributes and every input's shape. An index of aten may be negative (it counts from the end):
`w(i, n) = where(i < 0, i + n, i)` puts it in [0, n) first.

- `flip-gather`: flip(x) along an axis of n = Gather(x, (n - 1) - Iota(axis)).
- `index-take`: x[.., i, ..] = Take(x, w(i, n)) along the axis.
- `index2-take`, `index3-take`: two or three consecutive index tensors read what one flat index over the
  merged axes reads, w(i0) n1 + w(i1) (Horner for three): Take of x reshaped with the axes merged.
- `indexput-scatter` (accumulate): the values broadcast to what the indices read, with the index's M
  positions flattened onto the axis ([.., M, ..]), scatter-added into x at the index expanded to that
  shape (only where the backend runs ScatterAdd).
- `indexput-onehot` (accumulate): x plus the sum over the M positions of where(onehot, values, 0), the
  one-hot [n, M] (Iota_0 == the index's row) laid out [1.., n, M, ..1] against the values [.., 1, M, ..]:
  no scatter (WebGPU has no float atomics), a sum in any order (the float32 sum of a half-precision graph).
- `indexput-set-onehot` (no accumulate): of repeated positions the last in the index's row-major order
  wins, as the reference says: per position p of the axis, last = max_m where(onehot, m, -1) (-1: not
  written, x kept), and the values at the one m == last are summed (one term: exact).
- `indexput2-merge`, `indexput3-merge`: IndexPut over the merged axes at the flat index, reshaped back.
- `scatter-add-onehot`: ScatterAdd(x, index, src) = x + sum over index's positions q of
  where(flat(q) == p, src[q], 0) for each of x's N flat positions p, where flat(q) = Gather(F, index)
  of the flat positions F = Iota over x's elements in x's shape (Gather reads F at q with the axis
  coordinate replaced by index[q]: the position the scatter writes); `-cut` first slices src to the
  index's shape (Gather(src, Iota(axis) of the index's shape)) where src is larger.
"""

from __future__ import annotations

from .dsl import Rule, rule


def _w(i: str, n: str) -> str:
    return f"(where (< {i} 0) (+ {i} (lit {n})) {i})"


_GEOM = "rm icol rshape irow nmshape hot vm maxis ncol sflat sx snshape sall spaxes"
_PUT = f"(IndexPut axis {{acc}} n {_GEOM} x i v)"
_FLAT = {"wi": _w("i", "n"), "vals": "(Expand rshape v)"}
_ONEHOT = dict(_FLAT, row="(Reshape irow wi)", onehot="(== (Iota.i64 0 (Expand nmshape row)) row)")
# of repeated positions the last m wins: m's own Iota where the one-hot holds (-1 elsewhere), its max
# per position (-1: nothing written there), and the one m equal to it (-2 off the one-hot never is)
_LAST = dict(_ONEHOT, m="(Iota.i64 1 (Expand nmshape row))", last="(Reduce.Max [1] 1 (where onehot m -1))",
             sel="(== (where onehot m -2) last)")
_LINEAR = {2: f"(+ (* {_w('i0', 'n0')} (lit n1)) {_w('i1', 'n1')})",
           3: f"(+ (* (+ (* {_w('i0', 'n0')} (lit n1)) {_w('i1', 'n1')}) (lit n2)) {_w('i2', 'n2')})"}
_SCATTER = {"pos": "(Gather axis (Reshape xshape (Iota.i64 0 (Reshape flat x))) index)",
            "onehot": "(== (Iota.i64 0 (Expand nshape (Reduce.Max all 1 x))) pos)"}


def _multi(k: int) -> tuple[Rule, ...]:
    ns = " ".join(f"n{j}" for j in range(k))
    idx = " ".join(f"i{j}" for j in range(k))
    return (
        rule(f"index{k}-take", f"x[.., i0..i{k - 1}, ..] = take(x with the {k} axes merged, the flat index)",
             f"(Index{k} axis {ns} merged nm x {idx})", f"(Take axis (Reshape merged x) {_LINEAR[k]})",
             group="forward"),
        rule(f"indexput{k}-merge", f"index_put over {k} axes = index_put over them merged, at the flat index",
             f"(IndexPut{k} axis acc {ns} merged nm {_GEOM} xshape x {idx} v)",
             f"(Reshape xshape (IndexPut axis acc nm {_GEOM} (Reshape merged x) {_LINEAR[k]} v))", group="forward"),
    )


RULES: tuple[Rule, ...] = (
    rule("flip-gather", "flip(x) along an axis of n = gather(x, (n - 1) - iota)",
         "(Flip axis last x)", "(Gather axis x (- (lit last) (Iota.i64 axis x)))", group="forward"),
    rule("index-take", "x[.., i, ..] = take(x, where(i < 0, i + n, i)) along the axis",
         "(Index axis n x i)", f"(Take axis x {_w('i', 'n')})", group="forward"),
    rule("indexput-scatter", "index_put(x, i, v, accumulate) = scatter_add(x, i expanded, v broadcast) along the "
         "axis, the index's positions flattened", _PUT.format(acc=1),
         "(ScatterAddAt axis sflat sx snshape sall spaxes 0 x (Expand rm (Reshape icol wi)) (Reshape rm vals))", group="forward", lets=_FLAT),
    rule("indexput-onehot", "index_put(x, i, v, accumulate) = x + sum_m where(iota_n == i_m, v_m, 0)",
         _PUT.format(acc=1), "(+ x (Reduce.Sum maxis 0 (where (Reshape hot onehot) (Reshape vm vals) 0)))",
         group="forward", lets=_ONEHOT),
    rule("indexput-set-onehot", "index_put(x, i, v) = where(written, v at the last m with i_m == p, x), "
         "last = max_m where(iota_n == i_m, m, -1)", _PUT.format(acc=0),
         "(where (Reshape ncol (>= last 0)) (Reduce.Sum maxis 0 (where (Reshape hot sel) (Reshape vm vals) 0)) x)",
         group="forward", lets=_LAST),
) + _multi(2) + _multi(3) + (
    rule("scatter-add-onehot", "scatter_add(x, index, src) = x + sum_q where(flat position of q == p, src_q, 0)",
         "(ScatterAddAt axis flat xshape nshape all paxes 0 x index src)",
         "(+ x (Reshape xshape (sum paxes (where onehot src 0))))", group="forward", lets=_SCATTER),
    rule("scatter-add-onehot-cut", "scatter_add(x, index, src) = x + sum_q where(flat position of q == p, src_q, 0), "
         "src sliced to the index's shape", "(ScatterAddAt axis flat xshape nshape all paxes 1 x index src)",
         "(+ x (Reshape xshape (sum paxes (where onehot (Gather axis src (Iota.i64 axis index)) 0))))",
         group="forward", lets=_SCATTER),
)
