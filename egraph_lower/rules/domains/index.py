"""The domains of the index ops: dropout, embeddings, the NLL loss and slicing.

Dropout: x over `x_domain` with a mask keeping about 70%. Embedding: indices with repeats, rows never
used and rows used by every index, with a padding row or none, so the scatter-add of a lowering meets
collisions, empty rows and the zeroed padding row. NLL: log-probabilities down to about -2e3, targets
partly ignored (ignore_index -100) and class weights 1e-3 to 50, so the total weight and the mean meet
ignored positions. Slicing: Python's clamping of negative and out-of-range bounds, steps that fill the
axis, leave zeros after the run or run past its end, and empty slices.
"""

from __future__ import annotations

import numpy as np

from ..dsl import App, Rule
from .base import DY, MAX, Env, bound_fields, round_to, x_domain

def nll_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """logp [16, 5, 3] (nll_loss2d's layout: classes on axis 1) = log_softmax of logit rows of spreads
    1e-3 to 1e3 (large logits: logp down to about -2e3), rows of equal logits and one dominant logit; target
    with about one position in five ignored (ignore_index -100); class weights of mixed magnitudes
    (1e-3 to 50); g mixed as dy (per position for `none`, a scalar otherwise); total = the counted weight."""
    rng = np.random.default_rng(11)
    rows = [rng.standard_normal(5) * s for s in (1e-3, 1.0, 30.0, 1e3) for _ in range(9)]
    rows += [np.full(5, v) for v in (0.0, 7.0, -300.0)] + [np.where(np.arange(5) == k, 60.0, 0.0) for k in range(5)]
    rows += [rng.standard_normal(5) for _ in range(48 - len(rows))]
    x = np.array(rows).reshape(16, 3, 5)
    m = x.max(axis=-1, keepdims=True)
    logp = np.transpose(x - m - np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)), (0, 2, 1))
    target = rng.integers(0, 5, size=(16, 3))
    target[rng.random((16, 3)) < 0.2] = -100
    weight = np.array([0.1, 1.0, 3.0, 1e-3, 50.0])
    reduction = rule.lhs.params[0] if isinstance(rule.lhs, App) else "none"
    g = rng.choice(np.array(DY), size=(16, 3)) if reduction == "none" else np.array(-2.75)
    counted = target != -100
    total = np.sum(np.where(counted, weight[np.where(counted, target, 0)], 0.0))
    env: dict[str, object] = {"ignore": -100.0, "perm": "[1,0,2]", "axes": "[0,1]", "target": target}
    for name, v in (("logp", logp), ("weight", weight), ("g", g), ("total", total)):
        env[name] = round_to(v, dtype)
    return env


def dropout_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """x and dy over `x_domain` below MAX/4 (x scale stays finite), a mask keeping about 70%, scale 1/0.7."""
    x = x_domain(dtype)
    x = x[np.abs(x) <= MAX[dtype] / 4]
    mask = np.random.default_rng(5).random(x.shape) < 0.7
    v = round_to(x, dtype)
    return {"scale": 1.0 / 0.7, "x": v, "dy": v, "mask": mask}


def embedding_domain(rule: Rule, dtype: str) -> list[Env]:
    """weight [6, 4] of mixed magnitudes; indices [3, 5] with repeats and one row never used, with
    padding row 1 (used three times), row 0 and none (-1); indices [7] over 4 rows (3 used, the
    padding row the last); indices [2, 2, 3] all equal (one row gets every dy). dy of mixed signs
    and magnitudes. Each case only for the rules whose lhs matches it (a padding row or none)."""
    rng = np.random.default_rng(3)
    weight = round_to(rng.standard_normal((6, 4)) * np.array([1e-3, 1.0, 30.0, 1e3]), dtype)
    cases = [(np.array([[0, 1, 1, 2, 3], [3, 3, 3, 4, 0], [2, 1, 0, 4, 4]]), 6, 4, pad) for pad in (1, 0, -1)]
    cases += [(np.array([0, 2, 2, 3, 0, 3, 3]), 4, 3, pad) for pad in (3, -1)]
    cases += [(np.full((2, 2, 3), 2), 5, 4, pad) for pad in (-1, 4)]
    envs: list[Env] = []
    for i, w, d, pad in cases:
        dy = rng.choice(np.array(DY), size=i.shape + (d,)) * rng.uniform(0.5, 2.0, size=i.shape + (d,))
        bound = bound_fields(rule, {"num_weights": w, "padding_idx": pad}, tuple(dy.shape))
        if bound is not None:
            envs.append({**bound, "weight": weight[:w, :d], "i": i, "indices": i, "g": round_to(dy, dtype)})
    return envs


# (size, start, end, step) of the slices whose gradients the slicing rules are checked on: Python's
# clamping of negative and too large bounds, steps that fill the axis exactly, leave zeros after the
# run or run past the end (a cut), a step larger than the axis, and empty slices
_SLICES = (
    (9, -7, 6, 1), (6, 0, 6, 1), (6, 4, 2, 1), (8, 0, 8, 2), (8, 1, 8, 2), (9, 0, 9, 2), (10, 0, 5, 2),
    (7, 0, 100, 3), (5, 2, 3, 7), (6, -100, -2, 4), (5, 1, 50, 2), (10, -9, -1, 3), (6, -1, -5, 2),
    (4, 3, 2**62, 5),
)


def slice_domain(rule: Rule, dtype: str) -> list[Env]:
    """g the gradient of each slice of `_SLICES`, on axis 1 of a rank-2 input [3, size] and on axis 0
    of a rank-3 one [size, 2, 2] (axis -3); only the slices the rule's lhs matches (`slice-bwd-pad`:
    step 1)."""
    rng = np.random.default_rng(3)
    envs: list[Env] = []
    for size, start, end, step in _SLICES:
        n = len(range(*slice(start, end, step).indices(size)))
        for axis, shape in ((1, (3, n)), (-3, (n, 2, 2))):
            attrs = {"axis": axis, "start": start, "end": end, "step": step, "size": size}
            bound = bound_fields(rule, attrs, shape)
            if bound is not None:
                g = rng.choice(np.array(DY), size=shape) * rng.uniform(0.5, 2.0, size=shape)
                envs.append({**bound, "g": round_to(g, dtype)})
    return envs
