"""The domain of the grouped-query attention rules (`AttnGqa` & co., rules/attention_groups.py).

q [2, 2g, L, E] against k [2, 2, S, E], v [2, 2, S, 3] for g = 1, 2 and 4 (two kv heads: the
expansion must keep q's head h on kv head h // g), L < S and L > S (5 x 7, 6 x 3), causal both ways
where the rule's lhs leaves it open, and three masks: none (a scalar 0), a [L, S] one with a masked
position, a row that keeps only masked columns when causal, a fully masked row and finite biases
(not foldable: it varies along the rows), and a key-padding [2, 1, 1, S] one (foldable) with a masked
key in batch 0 and a bias and a masked key in batch 1. Logits of order 1 and up to ATTN_LOGIT_MAX in
batch 1, a q row of zeros, v of magnitudes 1e-3 to 30, dy of mixed magnitudes; out and lse are the
grouped forward's (lse in f32 for f16/bf16). Each environment binds the fields a loaded node of
those shapes gets (`bound_fields`); one whose literal fields differ from the lhs's (a folding rule on
a causal node or a row mask) is left out, as the rule would not match it.
"""

from __future__ import annotations

import math

import numpy as np

from ..dsl import App, Rule
from .base import ATTN_LOGIT_MAX, DY, MAX, Env, bound_fields, round_to

_OPS = {"AttentionGqa": "Attention", "AttnLseGqa": "AttentionLogSumExp", "AttnBwdQueryGqa": "AttentionBackwardQuery",
        "AttnBwdKeyGqa": "AttentionBackwardKey", "AttnBwdValueGqa": "AttentionBackwardValue"}
E, EV, HKV = 4, 3, 2


def _tensors(g: int, rows: int, cols: int, seed: int) -> dict[str, np.ndarray]:
    from ...opdefs.attention import default_scale

    rng = np.random.default_rng(seed)
    scale = default_scale(E)
    q = rng.standard_normal((2, HKV * g, rows, E))
    k = rng.standard_normal((2, HKV, cols, E))
    q[1] *= 5.0
    k[1] *= 5.0
    q[0, 0, 0] = 0.0
    kx = np.repeat(k, g, axis=-3)
    big = np.sum(np.abs(q[..., :, None, :] * kx[..., None, :, :]), axis=-1).max() * scale + 3.0
    if big > ATTN_LOGIT_MAX:
        q[1] *= math.sqrt((ATTN_LOGIT_MAX - 3.0) / big)
        k[1] *= math.sqrt((ATTN_LOGIT_MAX - 3.0) / big)
    v = rng.standard_normal((2, HKV, cols, EV)) * np.array([1e-3, 1.0, 30.0])
    dy = rng.choice(np.array(DY), size=(2, HKV * g, rows, EV)) * rng.uniform(0.5, 2.0, size=(2, HKV * g, rows, EV))
    return {"q": q, "k": k, "v": v, "dy": dy}


def _masks(rows: int, cols: int) -> dict[str, np.ndarray]:
    rowwise = np.zeros((rows, cols))
    rowwise[0, -1] = -np.inf
    rowwise[1, :2] = -np.inf
    rowwise[2, :] = -np.inf
    rowwise[3, 1], rowwise[3, 0] = -3.0, 2.0
    keys = np.zeros((2, 1, 1, cols))
    keys[0, 0, 0, -1] = -np.inf
    keys[1, 0, 0, 0], keys[1, 0, 0, 1] = 2.0, -np.inf
    return {"none": np.zeros(()), "rows": rowwise, "keys": keys}


def _cond(op: str, f: dict[str, np.ndarray], attrs: dict[str, object], scale: float) -> np.ndarray:
    """The magnitudes the result is summed from (the error scale), as the ungrouped domain's."""
    from ...opdefs.attention import probabilities
    from ...opdefs.attention_groups import repeat_heads, sum_heads

    kx, vx = repeat_heads(attrs, f["k"]), repeat_heads(attrs, f["v"])
    p, lse = probabilities(attrs, f["q"], kx, f["mask"])
    gm = np.matmul(np.abs(f["dy"]), np.abs(np.swapaxes(vx, -1, -2)))
    w = p * (gm + np.sum(p * gm, axis=-1, keepdims=True))
    kept = np.abs(np.matmul(f["q"] * scale, np.swapaxes(kx, -1, -2))) + np.where(np.isinf(f["mask"]), 0,
                                                                                 np.abs(f["mask"]))
    if op == "Attention":
        return np.matmul(p, np.abs(vx))
    if op == "AttentionLogSumExp":
        return np.abs(lse) + np.max(kept, axis=-1) + 1.0
    if op == "AttentionBackwardValue":
        return sum_heads(attrs, np.matmul(np.swapaxes(p, -1, -2), np.abs(f["dy"])))
    if op == "AttentionBackwardQuery":
        return np.matmul(w, np.abs(kx)) * scale
    return sum_heads(attrs, np.matmul(np.swapaxes(w, -1, -2), np.abs(f["q"]))) * scale


def _shapes(op: str, t: dict[str, np.ndarray]) -> tuple[tuple[int, ...], ...]:
    names = {"Attention": "q k v mask", "AttentionLogSumExp": "q k mask",
             "AttentionBackwardValue": "q k mask lse dy"}.get(op, "q k v mask out lse dy")
    return tuple(np.shape(t[n]) for n in names.split())


def attention_groups_domain(rule: Rule, dtype: str) -> list[Env]:
    from ...evaluate import apply
    from ...opdefs.attention import default_scale

    lhs = rule.lhs
    assert isinstance(lhs, App)
    op = _OPS[lhs.ctor]
    causals = (False, True) if lhs.params[1][:1].islower() else (lhs.params[1] == "1",)
    out: list[Env] = []
    for g in (1, 2, 4):
        for rows, cols, seed in ((5, 7, 7 + g), (6, 3, 8 + g)):
            base = _tensors(g, rows, cols, seed)
            for mname, mask in _masks(rows, cols).items():
                for causal in causals:
                    attrs: dict[str, object] = {"causal": causal, "groups": g}
                    t = {n: round_to(a, dtype).astype(np.float64) for n, a in dict(base, mask=mask).items()}
                    # dy scaled so that every product a lowering rounds is finite in d
                    dp = np.abs(t["dy"]).max() * np.abs(t["v"]).max() * cols
                    terms = 2 * dp * max(np.abs(t["k"]).sum(axis=-2).max(), np.abs(t["q"]).sum(axis=-2).max(), 1.0)
                    t["dy"] = round_to(t["dy"] * min(1.0, MAX[dtype] / (16 * terms)), dtype).astype(np.float64)
                    t["out"] = apply("Attention", attrs, [t["q"], t["k"], t["v"], t["mask"]], "f64")
                    t["lse"] = apply("AttentionLogSumExp", attrs, [t["q"], t["k"], t["mask"]], "f64")
                    fields = bound_fields(rule, attrs, t["q"].shape, _shapes(op, t))
                    if fields is None:
                        continue
                    env: Env = dict(fields)
                    for n in ("q", "k", "v", "mask", "dy", "out"):
                        env[n] = round_to(t[n], dtype)
                    env["lse"] = round_to(t["lse"], "f32" if dtype in ("f16", "bf16") else dtype)
                    env["cond"] = _cond(op, t, attrs, default_scale(E))
                    out.append(env)
    return out
