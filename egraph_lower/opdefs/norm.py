"""Normalization: statistics (InvStd, InvRms), LayerNorm, RmsNorm, BatchNormTraining, their backward ops.

    InvStd{axes, eps, keep_dim}(x) = 1/sqrt(mean_axes((x - mean_axes x)^2) + eps)   (biased variance)
    InvRms{axes, eps, keep_dim}(x) = 1/sqrt(mean_axes(x^2) + eps)
    LayerNorm{axis, eps}(x, w, b)  = (x - mean) * rstd * w + b       over axes [axis, rank)
    RmsNorm{axis, eps}(x, w)       = x * InvRms * w                   over axes [axis, rank)
    BatchNormTraining{axis, eps}(x, gamma, beta) = (x - mean) * invstd * gamma + beta
                                     statistics over every axis but `axis`; gamma, beta of shape [C]

The backward ops take the statistics the forward saved (aten's mean and rstd/invstd) as inputs;
docs/format.md ("Normalization") derives each one. The e-graph constructors carry derived fields the
rules need and that are no attributes: `axes` (the normalised axes), `lead` (the axes the weight
gradients sum over) and, for batch norm, `cshape` ([C, 1, ..., 1]: a [C] tensor reshaped so that it
broadcasts along `axis`; derived from the first input's shape).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..dtypes import FLOAT_DTYPES
from ..errors import LowerError
from .base import I64, STRING, Attr, Ctor, Field, Meta, OpDef, head, integer, ints_text, number
from .meta import EPS, attr_check, boolean, float_dtype, int_list, is_int, same_shape, show, show_shape

# ---- axes -----------------------------------------------------------------------------------------


def _axis_of(axis: Any, rank: int, op: str) -> int:
    if not is_int(axis) or not -rank <= axis < rank:
        raise LowerError(f"{op} axis {axis!r} is out of range for rank {rank}")
    return int(axis) % rank


def _float(op: str, dtype: str) -> None:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"{op} needs a float dtype, not {dtype}")


def _stat_axes(attrs: Attrs, ndim: int, op: str) -> tuple[int, ...]:
    out = []
    for ax in attrs["axes"]:
        if not is_int(ax) or not -ndim <= ax < ndim:
            raise LowerError(f"{op} axis {ax!r} is out of range for rank {ndim}")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise LowerError(f"{op} axes {list(attrs['axes'])} repeat an axis")
    return tuple(sorted(out))


def _eps(attrs: Attrs) -> float:
    return float(attrs["eps"])


# ---- reference semantics (float64, rounded once) ---------------------------------------------------


def centred(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """x - mean(x) in float64, corrected for the rounding of the mean: d - mean(d), d = x - mean(x)."""
    d = x - np.mean(x, axis=axes, keepdims=True)
    return d - np.mean(d, axis=axes, keepdims=True)


def inv_std(x: np.ndarray, axes: tuple[int, ...], eps: float, keep: bool = True) -> np.ndarray:
    d = centred(x, axes)
    return 1.0 / np.sqrt(np.mean(d * d, axis=axes, keepdims=keep) + eps)


def inv_rms(x: np.ndarray, axes: tuple[int, ...], eps: float, keep: bool = True) -> np.ndarray:
    return 1.0 / np.sqrt(np.mean(x * x, axis=axes, keepdims=keep) + eps)


def _op_inv_std(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _float("InvStd", dtype)
    x = _f(args[0])
    axes = _stat_axes(attrs, x.ndim, "InvStd")
    return _round_float(inv_std(x, axes, _eps(attrs), bool(attrs.get("keep_dim", False))), dtype)


def _op_inv_rms(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _float("InvRms", dtype)
    x = _f(args[0])
    axes = _stat_axes(attrs, x.ndim, "InvRms")
    return _round_float(inv_rms(x, axes, _eps(attrs), bool(attrs.get("keep_dim", False))), dtype)


def _trailing(attrs: Attrs, ndim: int, op: str, dtype: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(normalised axes [axis, ndim), leading axes [0, axis)) of a layer/RMS-norm op."""
    _float(op, dtype)
    axis = _axis_of(attrs["axis"], ndim, op)
    return tuple(range(axis, ndim)), tuple(range(axis))


def _op_layer_norm(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, w, b = (_f(v) for v in args)
    axes, _ = _trailing(attrs, x.ndim, "LayerNorm", dtype)
    return _round_float(centred(x, axes) * inv_std(x, axes, _eps(attrs)) * w + b, dtype)


def _op_ln_input(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, w, mean, rstd, dy = (_f(v) for v in args)
    axes, _ = _trailing(attrs, x.ndim, "LayerNormBackwardInput", dtype)
    g = dy * w
    xhat = (x - mean) * rstd
    return _round_float(rstd * (g - np.mean(g, axis=axes, keepdims=True)
                                - xhat * np.mean(g * xhat, axis=axes, keepdims=True)), dtype)


def _op_ln_weight(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, mean, rstd, dy = (_f(v) for v in args)
    _, lead = _trailing(attrs, x.ndim, "LayerNormBackwardWeight", dtype)
    return _round_float(np.sum(dy * ((x - mean) * rstd), axis=lead), dtype)


def _op_ln_bias(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy = _f(args[0])
    _, lead = _trailing(attrs, dy.ndim, "LayerNormBackwardBias", dtype)
    return _round_float(np.sum(dy, axis=lead), dtype)


def _op_rms_norm(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, w = (_f(v) for v in args)
    axes, _ = _trailing(attrs, x.ndim, "RmsNorm", dtype)
    return _round_float(x * inv_rms(x, axes, _eps(attrs)) * w, dtype)


def _op_rms_input(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, w, r, dy = (_f(v) for v in args)
    axes, _ = _trailing(attrs, x.ndim, "RmsNormBackwardInput", dtype)
    g = dy * w
    return _round_float(r * (g - x * (r * r) * np.mean(g * x, axis=axes, keepdims=True)), dtype)


def _op_rms_weight(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, r, dy = (_f(v) for v in args)
    _, lead = _trailing(attrs, x.ndim, "RmsNormBackwardWeight", dtype)
    return _round_float(np.sum(dy * (x * r), axis=lead), dtype)


def _channel(attrs: Attrs, ndim: int, op: str, dtype: str) -> tuple[int, tuple[int, ...]]:
    """(channel axis, the other axes) of a batch-norm op."""
    _float(op, dtype)
    if ndim < 1:
        raise LowerError(f"{op} needs an input of rank >= 1")
    axis = _axis_of(attrs["axis"], ndim, op)
    return axis, tuple(a for a in range(ndim) if a != axis)


def _bcast(v: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A [C] array shaped to broadcast along `axis` of a rank-`ndim` array."""
    return v.reshape(v.shape + (1,) * (ndim - 1 - axis))


def _op_bn_training(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, gamma, beta = (_f(v) for v in args)
    axis, others = _channel(attrs, x.ndim, "BatchNormTraining", dtype)
    y = centred(x, others) * inv_std(x, others, _eps(attrs)) * _bcast(gamma, axis, x.ndim) + _bcast(beta, axis, x.ndim)
    return _round_float(y, dtype)


def _xhat(x: np.ndarray, mean: np.ndarray, invstd: np.ndarray, axis: int) -> np.ndarray:
    return (x - _bcast(mean, axis, x.ndim)) * _bcast(invstd, axis, x.ndim)


def _op_bnt_input(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, gamma, mean, invstd, dy = (_f(v) for v in args)
    axis, others = _channel(attrs, x.ndim, "BatchNormTrainingBackwardInput", dtype)
    xhat = _xhat(x, mean, invstd, axis)
    inner = dy - np.mean(dy, axis=others, keepdims=True) - xhat * np.mean(dy * xhat, axis=others, keepdims=True)
    return _round_float(_bcast(gamma * invstd, axis, x.ndim) * inner, dtype)


def _op_bnt_gamma(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    x, mean, invstd, dy = (_f(v) for v in args)
    axis, others = _channel(attrs, x.ndim, "BatchNormTrainingBackwardGamma", dtype)
    return _round_float(np.sum(dy * _xhat(x, mean, invstd, axis), axis=others), dtype)


def _op_bnt_beta(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy = _f(args[0])
    _, others = _channel(attrs, dy.ndim, "BatchNormTrainingBackwardBeta", dtype)
    return _round_float(np.sum(dy, axis=others), dtype)


# ---- shape and dtype inference ---------------------------------------------------------------------


def _axis_in(attrs: Mapping[str, Any], shape: tuple[int, ...]) -> int:
    axis, rank = attrs["axis"], len(shape)
    if not -rank <= axis < rank:
        raise ValueError(f"axis {show(axis)} is out of range for rank {rank}")
    return int(axis) % rank


def _expect(name: str, shape: tuple[int, ...], want: tuple[int, ...], why: str) -> None:
    if shape != want:
        raise ValueError(f"{name} has shape {show_shape(shape)}, expected {show_shape(want)} ({why})")


def _stats(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, rank = ins[0][0], len(ins[0][0])
    for a in attrs["axes"]:
        if not -rank <= a < rank:
            raise ValueError(f"axis {a} is out of range for rank {rank}")
    axes = {a % rank for a in attrs["axes"]}
    if len(axes) != len(attrs["axes"]):
        raise ValueError(f"axes {show(attrs['axes'])} repeat an axis")
    dt = float_dtype(ins)
    if attrs.get("keep_dim", False):
        return tuple(1 if i in axes else d for i, d in enumerate(shape)), dt
    return tuple(d for i, d in enumerate(shape) if i not in axes), dt


def _trailing_infer(names: Sequence[str], out: str) -> Callable[[Mapping[str, Any], Sequence[Meta]], Meta]:
    """Layer/RMS norm: x first (or dy alone); weights of shape x[axis:], statistics of x[:axis] + [1]*k,
    dy of x's shape. `out` is "x" (x's shape) or "w" (x[axis:])."""
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        x = ins[0][0]
        axis = _axis_in(attrs, x)
        tail, stat = x[axis:], x[:axis] + (1,) * (len(x) - axis)
        for name, (shape, _) in zip(names[1:], ins[1:]):
            if name == "dy":
                same_shape(x, shape)
            elif name in ("weight", "bias"):
                _expect(name, shape, tail, f"the normalised axes of x {show_shape(x)}")
            else:
                _expect(name, shape, stat, f"x {show_shape(x)} with the normalised axes kept as 1")
        return (x if out == "x" else tail), float_dtype(ins)
    return infer


def _channel_infer(names: Sequence[str], out: str) -> Callable[[Mapping[str, Any], Sequence[Meta]], Meta]:
    """Batch norm: x first (or dy alone), dy of x's shape, every other input [C], C = x.shape[axis]."""
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        x = ins[0][0]
        if not x:
            raise ValueError(f"{names[0]} must have rank >= 1")
        axis = _axis_in(attrs, x)
        for name, (shape, _) in zip(names[1:], ins[1:]):
            if name == "dy":
                same_shape(x, shape)
            else:
                _expect(name, shape, (x[axis],), f"the channel axis {axis} of x {show_shape(x)}")
        return (x if out == "x" else (x[axis],)), float_dtype(ins)
    return infer


# ---- e-graph fields --------------------------------------------------------------------------------


def _decode_ints(text: Any) -> Any:
    return json.loads(text)


def _norm_axes(axes: Any, rank: int) -> str:
    return ints_text(sorted({ax % rank if rank else ax for ax in axes}))


def _from_axis(fn: Callable[[int, int], Sequence[int]]) -> Callable[[Any, int], str]:
    return lambda axis, rank: ints_text(fn(axis % rank if rank else 0, rank))


def _cshape(axis: Any, shape: tuple[int, ...]) -> str:
    """[C, 1, ..., 1]: a [C] tensor reshaped to broadcast along `axis` of `shape`."""
    a = axis % len(shape) if shape else 0
    return ints_text([shape[a] if shape else 1] + [1] * (len(shape) - 1 - a))


_STAT_FIELDS = (Field("axes", STRING, _norm_axes, _decode_ints), number("eps"),
                Field("keep_dim", I64, lambda v, rank: int(bool(v)), bool, default=False))
_TAIL = Field("axes", STRING, _from_axis(lambda a, r: range(a, r)), None, source="axis")  # normalised axes
_LEAD = Field("lead", STRING, _from_axis(lambda a, r: range(a)), None, source="axis")  # the weight gradients'
_OTHERS = Field("axes", STRING, _from_axis(lambda a, r: [i for i in range(r) if i != a]), None, source="axis")
_CSHAPE = Field("cshape", STRING, _cshape, None, source="axis", shaped=True)

_AXIS = Attr("axis", attr_check("axis", is_int, "an integer"))
_EPS = Attr("eps", EPS)
_STAT_ATTRS = (Attr("axes", int_list("axes")), _EPS, Attr("keep_dim", boolean("keep_dim"), required=False))
_F = "f32"


def _ctor(name: str, op: str, fields: tuple[Field, ...], arity: int) -> tuple[Ctor, ...]:
    return (Ctor(name, op, fields, arity, (head(name),)),)


def _s(*shapes: tuple[int, ...]) -> tuple[Meta, ...]:
    return tuple((s, _F) for s in shapes)


_LN_IN = ("x", "weight", "mean", "rstd", "dy")
_LN_W = ("x", "mean", "rstd", "dy")
_RMS_IN = ("x", "weight", "rstd", "dy")
_RMS_W = ("x", "rstd", "dy")
_BN_IN = ("x", "gamma", "mean", "invstd", "dy")
_BN_G = ("x", "mean", "invstd", "dy")
_AXIS_F, _EPS_F = integer("axis"), number("eps")

STATS: tuple[OpDef, ...] = (
    OpDef("InvStd", ("x",), _STAT_ATTRS, _stats, _op_inv_std, _ctor("InvStd", "InvStd", _STAT_FIELDS, 1),
          domain="layernorm", torch="inv_std", sample=({"axes": [-1], "eps": 1e-5, "keep_dim": True}, _s((2, 3)))),
    OpDef("InvRms", ("x",), _STAT_ATTRS, _stats, _op_inv_rms, _ctor("InvRms", "InvRms", _STAT_FIELDS, 1),
          domain="layernorm", torch="inv_rms", sample=({"axes": [1], "eps": 1e-5}, _s((2, 3)))),
)

LAYER: tuple[OpDef, ...] = (
    OpDef("LayerNorm", ("x", "weight", "bias"), (_AXIS, _EPS), _trailing_infer(("x", "weight", "bias"), "x"),
          _op_layer_norm, _ctor("LayerNorm", "LayerNorm", (_AXIS_F, _EPS_F, _TAIL), 3),
          domain="layernorm", torch="layer_norm", sample=({"axis": 1, "eps": 1e-5}, _s((2, 3, 4), (3, 4), (3, 4)))),
    OpDef("LayerNormBackwardInput", _LN_IN, (_AXIS,), _trailing_infer(_LN_IN, "x"), _op_ln_input,
          _ctor("LnBwdInput", "LayerNormBackwardInput", (_AXIS_F, _TAIL), 5), domain="layernorm",
          torch="layer_norm_backward_input", backward=True,
          sample=({"axis": -1}, _s((2, 3), (3,), (2, 1), (2, 1), (2, 3)))),
    OpDef("LayerNormBackwardWeight", _LN_W, (_AXIS,), _trailing_infer(_LN_W, "w"), _op_ln_weight,
          _ctor("LnBwdWeight", "LayerNormBackwardWeight", (_AXIS_F, _LEAD), 4), domain="layernorm",
          torch="layer_norm_backward_weight", backward=True,
          sample=({"axis": 1}, _s((2, 3), (2, 1), (2, 1), (2, 3)))),
    OpDef("LayerNormBackwardBias", ("dy",), (_AXIS,), _trailing_infer(("dy",), "w"), _op_ln_bias,
          _ctor("LnBwdBias", "LayerNormBackwardBias", (_AXIS_F, _LEAD), 1), domain="layernorm",
          torch="layer_norm_backward_bias", backward=True, sample=({"axis": 1}, _s((2, 3)))),
    OpDef("RmsNorm", ("x", "weight"), (_AXIS, _EPS), _trailing_infer(("x", "weight"), "x"), _op_rms_norm,
          _ctor("RmsNorm", "RmsNorm", (_AXIS_F, _EPS_F, _TAIL), 2), domain="layernorm", torch="rms_norm",
          sample=({"axis": -1, "eps": 1e-6}, _s((2, 3), (3,)))),
    OpDef("RmsNormBackwardInput", _RMS_IN, (_AXIS,), _trailing_infer(_RMS_IN, "x"), _op_rms_input,
          _ctor("RmsBwdInput", "RmsNormBackwardInput", (_AXIS_F, _TAIL), 4), domain="layernorm",
          torch="rms_norm_backward_input", backward=True, sample=({"axis": 1}, _s((2, 3), (3,), (2, 1), (2, 3)))),
    OpDef("RmsNormBackwardWeight", _RMS_W, (_AXIS,), _trailing_infer(_RMS_W, "w"), _op_rms_weight,
          _ctor("RmsBwdWeight", "RmsNormBackwardWeight", (_AXIS_F, _LEAD), 3), domain="layernorm",
          torch="rms_norm_backward_weight", backward=True, sample=({"axis": 1}, _s((2, 3), (2, 1), (2, 3)))),
)

BATCH: tuple[OpDef, ...] = (
    OpDef("BatchNormTraining", ("x", "gamma", "beta"), (_AXIS, _EPS),
          _channel_infer(("x", "gamma", "beta"), "x"), _op_bn_training,
          _ctor("BnTrain", "BatchNormTraining", (_AXIS_F, _EPS_F, _OTHERS, _CSHAPE), 3), domain="bntrain",
          torch="batch_norm_training", sample=({"axis": 1, "eps": 1e-5}, _s((2, 3, 4), (3,), (3,)))),
    OpDef("BatchNormTrainingBackwardInput", _BN_IN, (_AXIS,), _channel_infer(_BN_IN, "x"), _op_bnt_input,
          _ctor("BnTrainBwdInput", "BatchNormTrainingBackwardInput", (_AXIS_F, _OTHERS, _CSHAPE), 5),
          domain="bntrain", torch="batch_norm_training_backward_input", backward=True,
          sample=({"axis": 1}, _s((2, 3, 4), (3,), (3,), (3,), (2, 3, 4)))),
    OpDef("BatchNormTrainingBackwardGamma", _BN_G, (_AXIS,), _channel_infer(_BN_G, "c"), _op_bnt_gamma,
          _ctor("BnTrainBwdGamma", "BatchNormTrainingBackwardGamma", (_AXIS_F, _OTHERS, _CSHAPE), 4),
          domain="bntrain", torch="batch_norm_training_backward_gamma", backward=True,
          sample=({"axis": 1}, _s((2, 3, 4), (3,), (3,), (2, 3, 4)))),
    OpDef("BatchNormTrainingBackwardBeta", ("dy",), (_AXIS,), _channel_infer(("dy",), "c"), _op_bnt_beta,
          _ctor("BnTrainBwdBeta", "BatchNormTrainingBackwardBeta", (_AXIS_F, _OTHERS), 1),
          domain="bntrain", torch="batch_norm_training_backward_beta", backward=True,
          sample=({"axis": 0}, _s((2, 3)))),
)

OPS: tuple[OpDef, ...] = STATS + LAYER + BATCH
