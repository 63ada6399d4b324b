"""Embedding bags (opdefs/bag.py) in primitives: Iota, Slice, Compare, Where, Reduce, Take, Binary.

The bag of position i is the number of bag starts <= i, less 1 (a Compare of the starts [B, 1] against
the positions [1, N] summed over the bags: the scan aten's offset2bag is); the membership mk [B, N] is
that bag equal to b (an Iota of the starts) at a position whose index is not padding_idx (a literal:
-1 matches no index). Every sum over a bag is a Where of the membership and a Reduce over the positions,
not a one-hot MatMul, so that an infinite row or gradient stays in its own bag (0 x inf would be NaN in
every other). A 1 of a float dtype is x^0 (1 for NaN and infinities too), an i64 1 is pos * 0 + 1, and
-inf is -1 / 0 of a 0-d zero (x^0 - x^0 summed): the notation has no typed constants.

- `embedding-bag-sum`: sum over the bag of psw_i rows_i; `-mean`: the sum of rows over max(count, 1)
  (0 for an empty bag); `-max`: the max over the bag's rows, -inf off the bag, 0 where the bag counts
  none. max_indices: the first position holding the max (a Min of where(hit, position, N)), its index,
  0 for an empty bag, as aten (a NaN row is outside the domain: aten's scan skips it, the max keeps it).
- the backward ops: g [N, D], the gradient at each position (dy of its bag times psw, or over its bag's
  count; 0 off every bag and at padding), then summed onto the rows by a one-hot [W, N] of the indices;
  max: dy[b, d] at row max_indices[b, d] by a one-hot [W, B, D], where the bag counts a row; per-sample
  weights: the dot of dy[bag(i)] with rows_i.
- the scalable forms, O(N D) beyond offset2bag's O(B N) (the forms above hold [B, N, D]): each position's
  bag as a column [N, 1] (0 where it counts in none, its value 0 there); `embedding-bag-sum-scatter`,
  `-mean-scatter` scatter-add the (weighted) rows into zeros [B, D] (a Pad of an empty Slice), for backends
  that run ScatterAdd; `embedding-bag-sum-matmul`, `-mean-matmul` are the one-hot MatMul of the
  membership by the rows (where there is no ScatterAdd: an infinite row then gives NaN in the other bags,
  0 x inf, as `embedding-bwd-matmul` does for an infinite dy); `embedding-bag-bwd-sum-take`, `-mean-take` Take dy's row of each position's bag
  (times psw_i, over its bag's count) and hand it to EmbeddingBackward, whose own rules put it onto the
  rows (a scatter-add, a one-hot MatMul or a one-hot sum, as the backend runs); `embedding-bag-bwd-psw-take`
  is the dot of that Take with rows_i.
"""

from __future__ import annotations

from .dsl import Rule, rule

_BAGS = {
    "pos": "(Reshape row (Iota.i64 0 indices))",
    "ione": "(+ (* pos 0) 1)",
    "starts": "(Reshape col (Slice 0 0 nb 1 offsets))",
    "o2b": "(- (sum [0] (where (<= starts pos) ione 0)) 1)",
    "member": "(== (Iota.i64 0 starts) (Reshape row o2b))",
    "keep": "(!= (Reshape row indices) (lit pad))",
    "mk": "(where keep member keep)",
    "m3": "(Reshape bn1 mk)",
}
_ROWS = dict(_BAGS, rows="(Take 0 weight indices)", r3="(Reshape n1d rows)")
_FWD = dict(_ROWS, one="(pow (Reshape row psw) 0)", count="(Reduce.Sum [1] 1 (where mk one 0))",
            ninf="(/ -1 (sum [0,1] (- one one)))")
_MAXI = dict(_ROWS, ninf="(/ -1 (sum [0,1] (- (pow rows 0) (pow rows 0))))", vals="(where m3 r3 ninf)",
             hit="(where m3 (== vals (Reduce.Max [1] 1 vals)) m3)",
             first="(Reduce.Min [1] 0 (where hit (Reshape n11 (Iota.i64 0 indices)) (lit n)))",
             has="(< first (lit n))")
_BWD = dict(_BAGS, one="(pow (Reshape row psw) 0)", count="(Reduce.Sum [1] 1 (where mk one 0))",
            irow="(Reshape row indices)", hot="(Reshape wn1 (== (Iota.i64 0 (Expand wn irow)) irow))")
_ONTO_ROWS = "(sum [1] (where hot (Reshape n1d g) 0))"
# the scalable forms: each position's bag as a column [N, 1] (0 where it counts in none), its row or its
# bag's gradient by a Take, summed into the bags by a ScatterAdd (backends that run it) and onto the rows
# by an EmbeddingBackward (whose own rules pick a scatter-add, a one-hot MatMul or a one-hot sum)
_COLUMN = dict(_BAGS, bagc="(Reshape ncol o2b)", keepc="(!= (Reshape ncol indices) (lit pad))",
               valid="(where keepc (>= bagc 0) keepc)", safe="(where valid bagc 0)")
_SCATTER = dict(_COLUMN, rows="(Take 0 weight indices)", one="(pow (Reshape row psw) 0)",
                count="(Reduce.Sum [1] 1 (where mk one 0))", into="(Pad 0 nb 0 (Slice 0 0 0 1 rows))")
_TAKE = dict(_COLUMN, dyrows="(Reshape nd (Take 0 dy safe))", one="(pow (Reshape row psw) 0)",
             count="(Reduce.Sum [1] 1 (where mk one 0))", per="(Reshape ncol (Take 0 (max count 1) safe))")
_EMB_BWD = "(EmbeddingBackward nw pad ewshape edperm epaxes eiaxes epadded eflat eicol eirow ewm {g} indices)"

_BAG = "(EmbeddingBag.{mode} pad last nb n row col bn1 n1d n11 ncol nd weight indices offsets psw)"
_BAG_BWD = ("(EmbeddingBagBackward.{mode} nw pad last nb n row col bn1 n1d n11 b1d b11 ncol nd wn wn1 ewshape edperm "
            "epaxes eiaxes epadded eflat eicol eirow ewm dy indices offsets psw)")

RULES: tuple[Rule, ...] = (
    rule("embedding-bag-offset2bag", "bag(i) = #{b : offsets[b] <= i} - 1, a Compare of the starts against the "
         "positions summed over the bags", "(EmbeddingBagOffset2Bag last nb n row col indices offsets)", "o2b",
         group="forward", lets=_BAGS),
    rule("embedding-bag-size", "bag_size[b] = the positions of bag b whose index is not padding_idx",
         "(EmbeddingBagSize pad last nb n row col indices offsets)", "(sum [1] (where mk ione 0))",
         group="forward", lets=_BAGS),
    rule("embedding-bag-sum", "embedding_bag sum = sum over the bag's positions of psw_i weight[indices_i]",
         _BAG.format(mode="sum"), "(sum [1] (where m3 (* r3 (Reshape n11 psw)) 0))", group="forward", lets=_FWD),
    rule("embedding-bag-mean", "embedding_bag mean = the bag's sum of weight[indices_i] / max(count, 1)",
         _BAG.format(mode="mean"), "(/ (sum [1] (where m3 r3 0)) (max count 1))", group="forward", lets=_FWD),
    rule("embedding-bag-max", "embedding_bag max = the max of the bag's rows (-inf off the bag), 0 for a bag "
         "counting none", _BAG.format(mode="max"), "(where (> count 0) (Reduce.Max [1] 0 (where m3 r3 ninf)) 0)",
         group="forward", lets=_FWD),
    rule("embedding-bag-max-indices", "max_indices = the index at the first position of the bag holding its max, "
         "0 for a bag counting none",
         "(EmbeddingBagMaxIndices pad last nb n row col bn1 n1d n11 weight indices offsets)",
         "(where has (Take 0 indices (where has first 0)) 0)", group="forward", lets=_MAXI),
    rule("embedding-bag-bwd-sum", "d embedding_bag sum: row w = sum over the counted positions i with index w "
         "of psw_i dy[bag(i)]", _BAG_BWD.format(mode="sum"), _ONTO_ROWS, group="backward",
         lets=dict(_BWD, g="(sum [0] (where m3 (* (Reshape n11 psw) (Reshape b1d dy)) 0))")),
    rule("embedding-bag-bwd-mean", "d embedding_bag mean: row w = sum over the counted positions i with index "
         "w of dy[bag(i)] / max(count, 1)", _BAG_BWD.format(mode="mean"), _ONTO_ROWS, group="backward",
         lets=dict(_BWD, g="(sum [0] (where m3 (/ (Reshape b1d dy) (Reshape b11 (max count 1))) 0))")),
    rule("embedding-bag-bwd-max", "d embedding_bag max: dy[b, d] onto row max_indices[b, d] where bag b counts "
         "a row", "(EmbeddingBagMaxBackward nw w11 col dy mi bs)",
         "(sum [1] (where (== (Iota.i64 0 (Expand w11 (Reduce.Max [0,1] 0 mi))) mi) "
         "(where (> (Reshape col bs) 0) dy 0) 0))", group="backward"),
    rule("embedding-bag-bwd-psw", "d embedding_bag / d per_sample_weights_i = dot(dy[bag(i)], weight[indices_i]), "
         "0 off every bag and at padding", "(EmbeddingBagPswBackward pad last nb n row col bn1 n1d b1d ncol nd dy "
         "weight indices offsets)", "(sum [1] (sum [0] (where m3 (* (Reshape b1d dy) r3) 0)))", group="backward",
         lets=_ROWS),
    rule("embedding-bag-sum-scatter", "embedding_bag sum = scatter-add of psw_i weight[indices_i] into zeros [B, D] "
         "at bag(i), the positions counting in no bag 0", _BAG.format(mode="sum"),
         "(ScatterAdd 0 into (Expand nd safe) (where valid (* rows (Reshape ncol psw)) 0))", group="forward",
         lets=_SCATTER),
    rule("embedding-bag-mean-scatter", "embedding_bag mean = scatter-add of weight[indices_i] into zeros [B, D] at "
         "bag(i), over max(count, 1)", _BAG.format(mode="mean"),
         "(/ (ScatterAdd 0 into (Expand nd safe) (where valid rows 0)) (max count 1))", group="forward",
         lets=_SCATTER),
    rule("embedding-bag-sum-matmul", "embedding_bag sum = where(mk, psw, 0) [B, N] x weight[indices] [N, D] (an "
         "infinite row is NaN in the other bags, as embedding-bwd-matmul's dy)", _BAG.format(mode="sum"),
         "(MatMul (where mk (Reshape row psw) 0) rows)", group="forward", lets=_SCATTER),
    rule("embedding-bag-mean-matmul", "embedding_bag mean = where(mk, 1, 0) [B, N] x weight[indices] [N, D] over "
         "max(count, 1)", _BAG.format(mode="mean"), "(/ (MatMul (where mk one 0) rows) (max count 1))",
         group="forward", lets=_SCATTER),
    rule("embedding-bag-bwd-sum-take", "d embedding_bag sum = embedding_backward of g_i = psw_i dy[bag(i)] (a Take "
         "of dy's rows; 0 where i counts in no bag)", _BAG_BWD.format(mode="sum"),
         _EMB_BWD.format(g="(where valid (* dyrows (Reshape ncol psw)) 0)"), group="backward", lets=_TAKE),
    rule("embedding-bag-bwd-mean-take", "d embedding_bag mean = embedding_backward of g_i = dy[bag(i)] / "
         "max(count, 1) of bag(i)", _BAG_BWD.format(mode="mean"),
         _EMB_BWD.format(g="(where valid (/ dyrows per) 0)"), group="backward", lets=_TAKE),
    rule("embedding-bag-bwd-psw-take", "d embedding_bag / d psw_i = dot(dy[bag(i)], weight[indices_i]) by a Take of "
         "dy's rows, 0 where i counts in no bag", "(EmbeddingBagPswBackward pad last nb n row col bn1 n1d b1d ncol nd "
         "dy weight indices offsets)", "(sum [1] (where valid (* (Reshape nd (Take 0 dy safe)) (Take 0 weight "
         "indices)) 0))", group="backward", lets=_COLUMN),
)
