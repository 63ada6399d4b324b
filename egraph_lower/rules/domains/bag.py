"""The domain of the embedding-bag ops (opdefs/bag.py).

Bags over a weight [6, 3] of mixed signs and magnitudes whose rows 0 and 1 tie in two columns and row 4
repeats row 3 in one (ties in max: the first position wins), all negative in one column (an empty bag's
max is 0, not the fill): empty bags first, between and last; a bag of padding rows only; a padding row
among others; the same row twice in a bag; include_last_offset with positions after its last offset
(aten puts them in the last bag); one bag of everything; padding_idx -1 and rows 0, 2 and 5. dy and the
per-sample weights of mixed signs and magnitudes (a 0 weight among them); max_indices and bag_size as
the forward gives them and, for the max gradient alone, arbitrary rows with an empty bag among full ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...egraph import language
from ...evaluate import apply
from ..dsl import App, Rule
from .base import DY, Env, bound_fields, round_to

_WEIGHT = np.array([[1.5, -2.0, -0.25], [1.5, -2.0, -1.25], [2.5, 0.5, -1e-3], [-0.75, 2.0, -2.0],
                    [-0.75, 1.75, -0.5], [2e-3, -1.5, -0.0625]])  # |w| <= 2.5: dy w stays finite in f16

# (indices, offsets, include_last_offset, padding_idx values)
_CASES: tuple[tuple[list[int], list[int], bool, tuple[int, ...]], ...] = (
    ([1, 2, 2, 5, 0, 3, 2], [0, 0, 3, 7], False, (-1, 2)),
    ([2, 2, 1, 4, 2, 0], [0, 2, 2, 5], False, (-1, 2)),
    ([0, 1, 3, 4, 5, 1], [0, 2, 4], True, (-1, 5)),
    ([3, 4, 0, 1, 1, 0, 4], [0, 2, 4, 6, 7], True, (-1, 0)),
    ([4, 3, 1, 0, 5], [0], False, (-1, 5)),
    ([5, 5, 2], [0, 3], True, (-1, 2)),
)


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return round_to(rng.choice(np.array(DY), size=shape) * rng.uniform(0.5, 2.0, size=shape), dtype)


def bag_domain(rule: Rule, dtype: str) -> list[Env]:
    assert isinstance(rule.lhs, App)
    op = language.CTORS[rule.lhs.ctor].op
    rng = np.random.default_rng(20)
    weight = round_to(_WEIGHT, dtype)
    envs: list[Env] = []
    for idx, off, last, pads in _CASES:
        i, o = np.array(idx, dtype=np.int64), np.array(off, dtype=np.int64)
        n, b, w, d = len(idx), len(off) - int(last), weight.shape[0], weight.shape[1]
        for pad in pads:
            attrs: dict[str, Any] = {"padding_idx": pad, "include_last_offset": last}
            common: Env = {"indices": i, "offsets": o}
            psw = _values(rng, (n,), dtype)
            psw[1] = 0.0
            dy = _values(rng, (b, d), dtype)
            if op in ("EmbeddingBagOffset2Bag", "EmbeddingBagSize"):
                a = {"include_last_offset": last} if op == "EmbeddingBagOffset2Bag" else attrs
                bound = bound_fields(rule, a, i.shape, (i.shape, o.shape))
                env = {**common}
            elif op == "EmbeddingBag":
                a = dict(attrs, mode=_mode(rule))
                bound = bound_fields(rule, a, weight.shape, (weight.shape, i.shape, o.shape, psw.shape))
                env = {**common, "weight": weight, "psw": psw}
            elif op == "EmbeddingBagMaxIndices":
                bound = bound_fields(rule, attrs, weight.shape, (weight.shape, i.shape, o.shape))
                env = {**common, "weight": weight}
            elif op == "EmbeddingBagBackward":
                a = dict(attrs, mode=_mode(rule), num_weights=w)
                bound = bound_fields(rule, a, dy.shape, (dy.shape, i.shape, o.shape, psw.shape))
                env = {**common, "dy": dy, "psw": psw}
            elif op == "EmbeddingBagPerSampleWeightsBackward":
                bound = bound_fields(rule, attrs, dy.shape, (dy.shape, weight.shape, i.shape, o.shape))
                env = {**common, "dy": dy, "weight": weight}
            else:  # EmbeddingBagMaxBackward: the forward's max_indices and bag_size, then arbitrary ones
                mi = apply("EmbeddingBagMaxIndices", attrs, [weight, i, o], "i64")
                bs = apply("EmbeddingBagSize", attrs, [i, o], "i64")
                bound = bound_fields(rule, {"num_weights": w}, dy.shape, (dy.shape, mi.shape, bs.shape))
                if bound is not None:
                    envs.append({**bound, "dy": dy, "mi": mi, "bs": bs})
                    envs.append({**bound, "dy": dy, "mi": rng.integers(0, w, size=mi.shape),
                                 "bs": np.where(np.arange(b) == 0, 0, rng.integers(1, 4, size=b))})
                continue
            if bound is not None:
                envs.append({**bound, **env})
    return envs


def _mode(rule: Rule) -> str:
    """The mode the lhs fixes (its head `EmbeddingBag.sum`, ...: the first field, upper-cased in the e-graph)."""
    assert isinstance(rule.lhs, App)
    return rule.lhs.params[0].strip('"').lower()
