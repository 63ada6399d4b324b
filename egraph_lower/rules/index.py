"""Dropout, embeddings and the NLL loss in primitives (Where, Binary, Compare, Reduce, Transpose,
MatMul, and the index primitives Iota, Take, Gather, ScatterAdd).

The rules cannot compute a shape: every tensor of the right-hand side takes its shape
from a child by broadcasting or from a field of the e-node, computed when the graph is
loaded from the op's attributes and its first input's rank (or shape). Embedding's
backward has three forms: a one-hot [W, 1.., i1..ik] selecting dy, summed over the index
axes (`embedding-bwd-onehot`); a scatter-add of dy's rows [M, D] into zeros [W, D]
(`embedding-bwd-scatter`, only where the backend runs ScatterAdd); the one-hot [W, M] as a
float times dy's rows, a MatMul (`embedding-bwd-matmul`); the last two in a form with and
one without a padding row (a literal field).

For the NLL loss the class axis is moved first with `perm` ([1, 0, 2, ...], its own
inverse): in logp^T [C, N, d...] the one-hot `Iota_0(logp^T) == t` broadcasts against
the target [N, d...] as it is. With t' = where(t != ignore, t, 0) (a safe index) and
w = where(t != ignore, weight[t'], 0):

    nll-*-onehot   picked = sum_0(where(onehot, logp^T, 0))
    nll-*-gather   picked = sum_0(Gather_0(logp^T, z + t')), z = min_0,keep(Iota_0(logp^T)) = 0 of
                   shape [1, N, d...] (the only way to give t' its leading axis without a shape)
    loss_n = where(t_n != ignore, -(w_n picked_n), 0); sum: sum(loss); mean: sum(loss) / sum(w)
    d logp  = (where(onehot, -where(t != ignore, w g, 0), 0))^T, g = dy, dy, dy / total_weight

Where keeps an ignored position at 0 even where logp is -inf (0 * -inf would be nan).
"""

from __future__ import annotations

from .dsl import Rule, rule

_SAFE = {
    "valid": "(!= target (lit ignore))",
    "safe": "(where valid target 0)",
    "lt": "(Transpose perm logp)",
    "onehot": "(== (Iota.i64 0 lt) safe)",
    "w": "(where valid (Take 0 weight safe) 0)",
}
_ONEHOT = dict(_SAFE, picked="(sum [0] (where onehot lt 0))", loss="(where valid (- 0 (* w picked)) 0)")
_GATHER = dict(_SAFE, picked="(sum [0] (Gather 0 lt (+ (Reduce.Min [0] 1 (Iota.i64 0 lt)) safe)))",
               loss="(where valid (- 0 (* w picked)) 0)")
_LOSS_RHS = {"none": "loss", "sum": "(sum axes loss)", "mean": "(/ (sum axes loss) (sum axes w))"}
_G = {"none": "g", "sum": "g", "mean": "(/ g total)"}


def _nll_rules() -> tuple[Rule, ...]:
    out = []
    for red, rhs in _LOSS_RHS.items():
        lhs = f"(NllLoss.{red} ignore perm axes logp target weight)"
        out.append(rule(f"nll-{red}-onehot", f"nll {red}: -weight[t] logp[t] picked by a one-hot (Iota == t)",
                        lhs, rhs, group="forward", lets=_ONEHOT))
        out.append(rule(f"nll-{red}-gather", f"nll {red}: -weight[t] logp[t] picked by Gather along the classes",
                        lhs, rhs, group="forward", lets=_GATHER))
    for red, g in _G.items():
        out.append(rule(f"nll-bwd-{red}", f"d nll {red}: -weight[t] {g} at class t, 0 elsewhere and where ignored",
                        f"(NllLossBackward.{red} ignore perm axes logp g target weight total)",
                        f"(Transpose perm (where onehot (- 0 (where valid (* w {g}) 0)) 0))",
                        group="backward", lets=_SAFE))
    out.append(rule("nll-total-weight", "total weight = sum of weight[t] over the counted targets",
                    "(NllLossTotalWeight ignore axes target weight)", "(sum axes (where valid (Take 0 weight safe) 0))",
                    group="forward", lets={k: _SAFE[k] for k in ("valid", "safe")}))
    return tuple(out)


# EmbeddingBackward: iota [W, 1, 1..1] == indices [i1..ik] is the one-hot [W, 1, i1..ik]; against
# dy^T [D, i1..ik] it selects dy's rows, summed over the index axes; then the padding row is zeroed
_EMBEDDING = {
    "iota": "(Iota.i64 0 (Expand wshape (Reduce.Max iaxes 0 indices)))",
    "rows": "(sum paxes (where (== iota indices) (Transpose dperm g) 0))",
    "keep": "(!= (Reduce.Max paxes 0 iota) (lit pad))",
}

_EMBEDDING_LHS = "(EmbeddingBackward nw pad wshape dperm paxes iaxes {padded} flat icol irow wm g indices)"
# dy flattened to rows [M, D], the indices as a column [M, 1] and a row [1, M]; the notation has no
# constant tensors, so zeros of dy's dtype are an empty slice of dy padded with zeros (W rows [W, D]),
# or summed ([1, 1], which broadcasts)
_FLAT = {
    "src": "(Reshape flat g)",
    "col": "(Reshape icol indices)",
    "row": "(Reshape irow indices)",
    "zeros": "(Pad 0 nw 0 (Slice 0 0 0 1 src))",
    "zero": "(Reduce.Sum [0,1] 1 (Slice 0 0 0 1 src))",
}
# the one-hot [W, M] (Iota_0 == the indices' row) as a float in dy's dtype, for a MatMul by dy's rows;
# with a padding row, the indices equal to it become -1 first, which no row's Iota equals
_MATMUL = dict(_FLAT, hot="(== (Iota.i64 0 (Expand wm row)) row)", onehot="(where hot 1 zero)")
_MATMUL_PAD = dict(_MATMUL, hot="(== (Iota.i64 0 (Expand wm row)) (where (== row (lit pad)) -1 row))")


def _embedding_rules() -> tuple[Rule, ...]:
    scatter = "(ScatterAdd 0 zeros (Expand flat col) {src})"
    return (
        rule("embedding-bwd-scatter", "d embedding (no padding row): scatter-add dy's rows into zeros [W, D] at the "
             "indices", _EMBEDDING_LHS.format(padded=0), scatter.format(src="src"), group="backward", lets=_FLAT),
        rule("embedding-bwd-scatter-pad", "d embedding: scatter-add dy's rows, those at padding_idx zeroed, into "
             "zeros [W, D]", _EMBEDDING_LHS.format(padded=1),
             scatter.format(src="(where (== col (lit pad)) 0 src)"), group="backward", lets=_FLAT),
        rule("embedding-bwd-matmul", "d embedding (no padding row) = onehot^T [W, M] x dy's rows [M, D]",
             _EMBEDDING_LHS.format(padded=0), "(MatMul onehot src)", group="backward", lets=_MATMUL),
        rule("embedding-bwd-matmul-pad", "d embedding = onehot^T [W, M] x dy's rows [M, D], the indices equal to "
             "padding_idx left out of the one-hot", _EMBEDDING_LHS.format(padded=1), "(MatMul onehot src)",
             group="backward", lets=_MATMUL_PAD),
    )


RULES: tuple[Rule, ...] = (
    rule("dropout-lower", "dropout(x, mask) = where(mask, x scale, 0)",
         "(Dropout scale x mask)", "(where mask (* x (lit scale)) 0)", group="forward"),
    rule("dropout-bwd", "d dropout: where(mask, dy scale, 0)",
         "(DropoutBackward scale dy mask)", "(where mask (* dy (lit scale)) 0)", group="backward"),
    rule("embedding-take", "embedding(weight, i) = take(weight, i, axis 0)",
         "(Embedding weight i)", "(Take 0 weight i)", group="forward"),
    rule("embedding-bwd-onehot", "d embedding: row w = sum of dy where indices == w (a one-hot), padding row 0",
         _EMBEDDING_LHS.format(padded="padded"), "(where keep rows 0)", group="backward", lets=_EMBEDDING),
) + _embedding_rules() + _nll_rules()
