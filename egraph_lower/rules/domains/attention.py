"""The domain of the attention rules (forward, log-sum-exp and the backward ops) and their error scales.

Query rows longer and shorter than the key rows; a masked position, a row that keeps only masked
columns when causal and a fully masked row (its P is 0), finite biases in the mask, a q row of zeros
(its scores are the mask's alone), logits of order 1 and up to ATTN_LOGIT_MAX (some P
underflow d), v of magnitudes 1e-3 to 30; dy scaled so that every product a lowering rounds is finite
in d. Each result is summed from terms of both signs, so its error is measured against the magnitudes
it is computed from (`ATTENTION_SCALES`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..dsl import App, Rule
from .base import ATTN_LOGIT_MAX, DY, MAX, Env, round_to

def _attention_env(dtype: str, rows: int, cols: int, seed: int) -> Env:
    """One environment of the attention domain: q [2, rows, 4], k [2, cols, 4], v [2, cols, 3], mask
    [rows, cols] (broadcast over the batch), dy [2, rows, 3]; out and lse are the forward's."""
    from ...opdefs.attention import default_scale, probabilities

    rng = np.random.default_rng(seed)
    scale = default_scale(4)
    q = rng.standard_normal((2, rows, 4))
    k = rng.standard_normal((2, cols, 4))
    # batch 0: logits of order 1; batch 1: logits up to ATTN_LOGIT_MAX (some P underflow d); one q row 0
    q[1] *= 5.0
    k[1] *= 5.0
    q[0, 0] = 0.0
    big = np.sum(np.abs(q[:, :, None, :] * k[:, None, :, :]), axis=-1).max() * scale + 3.0
    q[1] *= math.sqrt((ATTN_LOGIT_MAX - 3.0) / big) if big > ATTN_LOGIT_MAX else 1.0
    k[1] *= math.sqrt((ATTN_LOGIT_MAX - 3.0) / big) if big > ATTN_LOGIT_MAX else 1.0
    v = rng.standard_normal((2, cols, 3)) * np.array([1e-3, 1.0, 30.0])
    mask = np.zeros((rows, cols))
    mask[0, -1] = -np.inf  # a masked position
    mask[1, :2] = -np.inf  # row 1: its first columns masked (all it keeps when causal)
    mask[2, :] = -np.inf  # row 2: fully masked
    mask[3, 1] = -3.0
    mask[3, 0] = 2.0  # finite biases
    dy = rng.choice(np.array(DY), size=(2, rows, 3)) * rng.uniform(0.5, 2.0, size=(2, rows, 3))
    # dy scaled so that every product a lowering rounds (dP = dy v^T, dS k, ...) is finite in d
    dp = np.matmul(np.abs(dy), np.abs(np.swapaxes(v, -1, -2)))
    terms = 2 * dp.max() * max(np.abs(k).sum(axis=-2).max(), np.abs(q).sum(axis=-2).max(), 1.0)
    dy = dy * min(1.0, MAX[dtype] / (16 * terms))
    env: Env = {"scale": scale, "axes": "[2]", "perm": "[0,2,1]", "lshape": f"[2,{rows}]",
                "lkeep": f"[2,{rows},1]"}
    for name, a in (("q", q), ("k", k), ("v", v), ("mask", mask), ("dy", dy)):
        env[name] = round_to(a, dtype)
    f = {n: np.asarray(env[n], dtype=np.float64) for n in ("q", "k", "v", "mask", "dy")}
    for causal in (False, True):
        p, lse = probabilities({"scale": scale, "causal": causal}, f["q"], f["k"], f["mask"])
        tag = "c" if causal else "n"
        env[f"out_{tag}"] = round_to(np.matmul(p, f["v"]), dtype)
        env[f"lse_{tag}"] = round_to(lse, "f32" if dtype in ("f16", "bf16") else dtype)
        # the error scales (see SCALES): the magnitudes each result is summed from
        g = np.matmul(np.abs(f["dy"]), np.abs(np.swapaxes(f["v"], -1, -2)))
        w = p * (g + np.sum(p * g, axis=-1, keepdims=True))
        kept = np.abs(np.matmul(f["q"] * scale, np.swapaxes(f["k"], -1, -2))) + np.where(np.isinf(f["mask"]), 0,
                                                                                          np.abs(f["mask"]))
        env[f"cond_{tag}"] = {
            "Attention": np.matmul(p, np.abs(f["v"])),
            "AttnLse": np.abs(lse) + np.max(kept, axis=-1) + 1.0,
            "AttnBwdValue": np.matmul(np.swapaxes(p, -1, -2), np.abs(f["dy"])),
            "AttnBwdQuery": np.matmul(w, np.abs(f["k"])) * scale,
            "AttnBwdKey": np.matmul(np.swapaxes(w, -1, -2), np.abs(f["q"])) * scale,
        }
    return env


def attention_domain(rule: Rule, dtype: str) -> list[Env]:
    """Attention and its backward ops over two environments: L < S (5 x 7) and L > S (6 x 3, where a
    causal row keeps every column from row 2 on), each with a masked position, a row that keeps only
    masked columns when causal, a fully masked row (its P is 0), finite biases, a q row of zeros, logits
    of order 1 and up to ATTN_LOGIT_MAX, v of magnitudes 1e-3 to 30, dy mixed; out and lse are the
    forward's (lse in f32 for f16/bf16, as torch keeps it), scale the default 1/sqrt(E)."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    if lhs.ctor.endswith("Gqa"):  # grouped-query attention: its own shapes (attention_groups.py)
        from .attention_groups import attention_groups_domain

        return attention_groups_domain(rule, dtype)
    causal = lhs.params[1] == "1"
    tag = "c" if causal else "n"
    out = []
    for rows, cols, seed in ((5, 7, 7), (6, 3, 8)):
        env = _attention_env(dtype, rows, cols, seed)
        env["out"], env["lse"] = env.pop(f"out_{tag}"), env.pop(f"lse_{tag}")
        conds = env.pop(f"cond_{tag}")
        assert isinstance(conds, dict)
        env["cond"] = conds[lhs.ctor]
        for other in ("out", "lse", "cond"):
            env.pop(f"{other}_{'n' if causal else 'c'}")
        out.append(env)
    return out


# The error scale of an attention rule, by its lhs constructor: the magnitudes its result is summed
# from, computed with the domain (its `cond`).
ATTENTION_SCALES: dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]] = {
    name: lambda f: f["cond"] for base in ("Attention", "AttnLse", "AttnBwdValue", "AttnBwdQuery", "AttnBwdKey")
    for name in (base, f"{base}Gqa")
}
