"""The negative log-likelihood loss, its total weight and its backward (aten's nll_loss, nll_loss2d).

logp is [N, C, d1, ...] (rank >= 2, classes on axis 1), target [N, d1, ...] i64, weight [C].
A position counts when its target t != ignore_index; t must then be in [0, C) (else an
error of the evaluator). With w_n = weight[t_n] for a counted position and 0 otherwise:

    NllLoss{none}        = -w_n logp[n, t_n]                (0 where ignored)
    NllLoss{sum}         = sum_n -w_n logp[n, t_n]
    NllLoss{mean}        = NllLoss{sum} / NllLossTotalWeight (0/0 = nan when nothing counts, as torch)
    NllLossTotalWeight   = sum_n w_n
    NllLossBackward(logp, dy, target, weight, total_weight)[n, c]
                         = -w_n g_n [c == t_n],  g_n = dy[n] (none), dy (sum), dy / total_weight (mean)

The backward takes logp (read for its shape only, as in aten) first: the e-graph
constructor's fields are derived from the rank of the first input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..errors import LowerError
from .base import F64, STRING, Attr, Ctor, Field, Meta, OpDef, derived, head, ints_text
from .meta import attr_check, float_dtype, is_int, one_of, show_shape

REDUCTIONS: tuple[str, ...] = ("none", "mean", "sum")


def _swap01(rank: int) -> str:
    """The perm exchanging the batch and class axes (its own inverse): [1, 0, 2, ..., rank-1]."""
    return ints_text([1, 0, *range(2, rank)] if rank >= 2 else range(rank))


def _loss_axes(rank: int) -> str:
    """The axes of the per-position loss [N, d1, ...] (rank of logp - 1)."""
    return ints_text(range(max(rank - 1, 0)))


# ignore_index as an f64 field, so the rules can write it as a literal (`(lit ignore_index)`)
_IGNORE_FIELD = Field("ignore_index", F64, lambda v, rank: float(v), lambda v: int(v))
_PERM = derived("perm", "String", _swap01)
_AXES = derived("axes", "String", _loss_axes)
_TARGET_AXES = derived("axes", "String", lambda rank: ints_text(range(rank)))  # every axis of the target
_REDUCTION = Attr("reduction", one_of(REDUCTIONS, "reduction"))
_IGNORE = Attr("ignore_index", attr_check("ignore_index", is_int, "an integer"))


def _check_inputs(logp: Meta, target: Meta, weight: Meta) -> None:
    (sl, _), (st, dt), (sw, _) = logp, target, weight
    if len(sl) < 2:
        raise ValueError(f"logp must have rank >= 2 [N, C, ...], got {show_shape(sl)}")
    if st != sl[:1] + sl[2:]:
        raise ValueError(f"target has shape {show_shape(st)} but logp has {show_shape(sl)} (target must be logp's "
                         "shape without axis 1)")
    if dt is not None and dt != "i64":
        raise ValueError(f"target must be i64, got {dt}")
    if sw != sl[1:2]:
        raise ValueError(f"weight has shape {show_shape(sw)} but logp has {sl[1]} classes")


def _nll(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    _check_inputs(*ins)
    dt = float_dtype((ins[0], ins[2]))
    return (ins[1][0] if attrs["reduction"] == "none" else ()), dt


def _total_weight(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    (st, dt), (sw, dw) = ins
    if dt is not None and dt != "i64":
        raise ValueError(f"target must be i64, got {dt}")
    if len(sw) != 1:
        raise ValueError(f"weight must have rank 1 [C], got {show_shape(sw)}")
    return (), float_dtype(ins[1:])


def _nll_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    logp, dy, target, weight, total = ins
    _check_inputs(logp, target, weight)
    want = target[0] if attrs["reduction"] == "none" else ()
    if dy[0] != want:
        raise ValueError(f"dy has shape {show_shape(dy[0])}, expected {show_shape(want)} for reduction "
                         f"{attrs['reduction']!r}")
    if total[0] != ():
        raise ValueError(f"total_weight must be a scalar, got shape {show_shape(total[0])}")
    return logp[0], float_dtype((logp, dy, weight, total))


def _counted(target: np.ndarray, weight: np.ndarray, ignore: int, classes: int, op: str) -> tuple:
    """The counted positions, the targets made safe to index with, and w_n."""
    t = np.asarray(target).astype(np.int64)
    valid = t != ignore
    bad = t[valid & ((t < 0) | (t >= classes))]
    if bad.size:
        raise LowerError(f"{op}: target {int(bad.flat[0])} is out of range [0, {classes})")
    safe = np.where(valid, t, 0)
    return valid, safe, np.where(valid, _f(weight)[safe], 0.0)


def _picked(logp: np.ndarray, safe: np.ndarray) -> np.ndarray:
    return np.take_along_axis(logp, safe[:, None], axis=1)[:, 0]


def _op_nll(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    logp, target, weight = _f(args[0]), args[1], args[2]
    valid, safe, w = _counted(target, weight, attrs["ignore_index"], logp.shape[1], "NllLoss")
    loss = np.where(valid, -w * _picked(logp, safe), 0.0)
    if attrs["reduction"] == "none":
        return _round_float(loss, dtype)
    total = np.sum(loss)
    if attrs["reduction"] == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            total = total / np.sum(w)
    return _round_float(total, dtype)


def _op_total_weight(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    weight = _f(args[1])
    _, _, w = _counted(args[0], weight, attrs["ignore_index"], weight.shape[0], "NllLossTotalWeight")
    return _round_float(np.sum(w), dtype)


def _op_nll_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    logp, dy, target, weight, total = (np.asarray(a) for a in args)
    valid, safe, w = _counted(target, weight, attrs["ignore_index"], logp.shape[1], "NllLossBackward")
    g = _f(dy)
    if attrs["reduction"] == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            g = g / _f(total)
    scale = np.where(valid, -w * g, 0.0)
    onehot = np.arange(logp.shape[1]).reshape((1, -1) + (1,) * (logp.ndim - 2)) == safe[:, None]
    return _round_float(np.where(onehot, scale[:, None], 0.0), dtype)


# reduction capitalised in the e-graph ("None", "Mean", "Sum"): the rule notation reads a lower-case
# field value as a variable, and the heads `NllLoss.none` ... fix this field
_REDUCTION_FIELD = Field("reduction", STRING, lambda v, rank: str(v).capitalize(), lambda v: str(v).lower())
_LOSS_FIELDS = (_REDUCTION_FIELD, _IGNORE_FIELD, _PERM, _AXES)


def _heads(name: str) -> tuple:
    return tuple(head(f"{name}.{r}", reduction=r.capitalize()) for r in REDUCTIONS)


OPS: tuple[OpDef, ...] = (
    OpDef("NllLoss", ("logp", "target", "weight"), (_REDUCTION, _IGNORE), _nll, _op_nll,
          (Ctor("NllLoss", "NllLoss", _LOSS_FIELDS, 3, _heads("NllLoss")),),
          domain="nll", torch="nll_loss",
          sample=({"reduction": "mean", "ignore_index": -100}, (((4, 3), "f32"), ((4,), "i64"), ((3,), "f32")))),
    OpDef("NllLossTotalWeight", ("target", "weight"), (_IGNORE,), _total_weight, _op_total_weight,
          (Ctor("NllTotalWeight", "NllLossTotalWeight", (_IGNORE_FIELD, _TARGET_AXES), 2,
                (head("NllLossTotalWeight"),)),),
          domain="nll", torch="nll_loss_total_weight",
          sample=({"ignore_index": 1}, (((4, 2), "i64"), ((3,), "f32")))),
    OpDef("NllLossBackward", ("logp", "dy", "target", "weight", "total_weight"), (_REDUCTION, _IGNORE),
          _nll_backward, _op_nll_backward,
          (Ctor("NllLossBwd", "NllLossBackward", _LOSS_FIELDS, 5, _heads("NllLossBackward")),),
          domain="nll", torch="nll_loss_backward", backward=True,
          sample=({"reduction": "none", "ignore_index": 0},
                  (((4, 3, 2), "f32"), ((4, 2), "f32"), ((4, 2), "i64"), ((3,), "f32"), ((), "f32")))),
)
