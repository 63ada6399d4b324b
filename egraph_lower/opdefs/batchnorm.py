"""Batch-norm inference, forward and backward.

Channels are the last axis of x; gamma, beta, mean and var have shape [C]. The
backward ops for gamma and beta carry a derived e-graph field `axes` (all but the
last axis of x) so the rules can state their reductions; it is no attribute.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..dtypes import FLOAT_DTYPES
from ..errors import LowerError
from .base import STRING, Attr, Ctor, Meta, OpDef, all_but_last, derived, head, number
from .meta import EPS, float_dtype, same_shape, show_shape


def _need_float(op: str, dtype: str) -> None:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"{op} needs a float dtype, not {dtype}")


def _eps(attrs: Attrs) -> float:
    eps = attrs["eps"]
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.number)):
        raise LowerError(f"eps must be a number, not {eps!r}")
    return float(eps)


def _op_bn(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _need_float("BatchNormInference", dtype)
    x, gamma, beta, mean, var = (_f(v) for v in args)
    return _round_float((x - mean) / np.sqrt(var + _eps(attrs)) * gamma + beta, dtype)


def _op_bn_input(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _need_float("BatchNormInferenceBackwardInput", dtype)
    x, gamma, mean, var, dy = (_f(v) for v in args)
    r = dy * gamma / np.sqrt(var + _eps(attrs))
    return _round_float(np.broadcast_to(r, np.broadcast_shapes(x.shape, r.shape)), dtype)


def _all_but_last(ndim: int) -> tuple[int, ...]:
    return tuple(range(max(ndim - 1, 0)))


def _op_bn_gamma(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _need_float("BatchNormInferenceBackwardGamma", dtype)
    x, mean, var, dy = (_f(v) for v in args)
    t = dy * (x - mean) / np.sqrt(var + _eps(attrs))
    return _round_float(np.sum(t, axis=_all_but_last(t.ndim)), dtype)


def _op_bn_beta(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _need_float("BatchNormInferenceBackwardBeta", dtype)
    dy = _f(args[0])
    return _round_float(np.sum(dy, axis=_all_but_last(dy.ndim)), dtype)


def _channels(names: Sequence[str], ins: Sequence[Meta]) -> Meta:
    """Batch-norm ops: x (the first input, rank >= 1), dy of the same shape, every other input of
    shape [C] with C the last axis of x, one float dtype. Gives x's shape and the dtype."""
    x = ins[0][0]
    if not x:
        raise ValueError(f"{names[0]} must have rank >= 1 (channels are on the last axis)")
    for name, (shape, _) in zip(names[1:], ins[1:]):
        if name == "dy":
            same_shape(x, shape)
        elif shape != x[-1:]:
            raise ValueError(f"{name} has shape {show_shape(shape)}, expected [{x[-1]}] (the last axis of x {show_shape(x)})")
    return x, float_dtype(ins)


def _per_channel(names: Sequence[str]) -> Callable[[Mapping[str, Any], Sequence[Meta]], Meta]:
    def infer_op(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        shape, dt = _channels(names, ins)
        return shape[-1:], dt
    return infer_op


_EPS = Attr("eps", EPS)
_AXES = derived("axes", STRING, all_but_last)
_X_GAMMA_BETA_MEAN_VAR = ("x", "gamma", "beta", "mean", "var")
_X_GAMMA_MEAN_VAR_DY = ("x", "gamma", "mean", "var", "dy")
_X_MEAN_VAR_DY = ("x", "mean", "var", "dy")

FORWARD = OpDef(
    "BatchNormInference", _X_GAMMA_BETA_MEAN_VAR, (_EPS,), lambda attrs, ins: _channels(_X_GAMMA_BETA_MEAN_VAR, ins),
    _op_bn, (Ctor("BN", "BatchNormInference", (number("eps"),), 5, (head("BatchNorm"),)),),
    domain="batchnorm", torch="batch_norm_inference",
          sample=({"eps": 1e-5}, (((4, 3), "f32"),) + (((3,), "f32"),) * 4))

BACKWARD: tuple[OpDef, ...] = (
    OpDef("BatchNormInferenceBackwardInput", _X_GAMMA_MEAN_VAR_DY, (_EPS,),
          lambda attrs, ins: _channels(_X_GAMMA_MEAN_VAR_DY, ins), _op_bn_input,
          (Ctor("BnBwdInput", "BatchNormInferenceBackwardInput", (number("eps"),), 5, (head("BnBackwardInput"),)),),
          domain="batchnorm", torch="batch_norm_backward_input", backward=True,
          sample=({"eps": 1e-5}, (((4, 3), "f32"),) + (((3,), "f32"),) * 3 + (((4, 3), "f32"),))),
    OpDef("BatchNormInferenceBackwardGamma", _X_MEAN_VAR_DY, (_EPS,), _per_channel(_X_MEAN_VAR_DY), _op_bn_gamma,
          (Ctor("BnBwdGamma", "BatchNormInferenceBackwardGamma", (number("eps"), _AXES), 4,
                (head("BnBackwardGamma"),)),),
          domain="batchnorm", torch="batch_norm_backward_gamma", backward=True,
          sample=({"eps": 1e-5}, (((4, 3), "f32"),) + (((3,), "f32"),) * 2 + (((4, 3), "f32"),))),
    OpDef("BatchNormInferenceBackwardBeta", ("dy",), (), _per_channel(("dy",)), _op_bn_beta,
          (Ctor("BnBwdBeta", "BatchNormInferenceBackwardBeta", (_AXES,), 1, (head("BnBackwardBeta"),)),),
          domain="batchnorm", torch="batch_norm_backward_beta", backward=True,
          sample=({}, (((4, 3), "f32"),))),
)
