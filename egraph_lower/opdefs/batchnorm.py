"""Batch-norm inference, forward and backward.

Channels are on axis `axis` of x (an optional attribute of format version 2; without
it, the last axis, as in version 1); gamma, beta, mean and var have shape [C]. The
backward ops for gamma and beta carry a derived e-graph field `axes` (every axis of x
but the channel's) so the rules can state their reductions; it is no attribute.

A node without `axis` encodes to the version-1 constructor (`BN`, ...), so version-1
graphs load, lower and convert back exactly as before; a node with `axis` to a second
constructor (`BNAxis`, ...) that also carries `cshape` ([C, 1, ..., 1], so that a [C]
tensor broadcasts along the channel axis; derived from the first input's shape).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..dtypes import FLOAT_DTYPES
from ..errors import LowerError
from .base import STRING, Attr, Ctor, Field, Meta, OpDef, all_but_last, derived, head, integer, ints_text, number
from .meta import EPS, attr_check, float_dtype, is_int, same_shape, show_shape


def _need_float(op: str, dtype: str) -> None:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"{op} needs a float dtype, not {dtype}")


def _eps(attrs: Attrs) -> float:
    eps = attrs["eps"]
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.number)):
        raise LowerError(f"eps must be a number, not {eps!r}")
    return float(eps)


def _axis(attrs: Attrs, ndim: int, op: str) -> int:
    axis = attrs.get("axis", -1)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -ndim <= axis < ndim:
        raise LowerError(f"{op} axis {axis!r} is out of range for rank {ndim}")
    return axis % ndim


def _c(v: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A [C] array shaped to broadcast along `axis` of a rank-`ndim` array."""
    return v.reshape(v.shape + (1,) * (ndim - 1 - axis))


def _op_bn(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _need_float("BatchNormInference", dtype)
    x, gamma, beta, mean, var = (_f(v) for v in args)
    a, n = _axis(attrs, x.ndim, "BatchNormInference"), x.ndim
    return _round_float((x - _c(mean, a, n)) / _c(np.sqrt(var + _eps(attrs)), a, n) * _c(gamma, a, n)
                        + _c(beta, a, n), dtype)


def _op_bn_input(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _need_float("BatchNormInferenceBackwardInput", dtype)
    x, gamma, mean, var, dy = (_f(v) for v in args)
    a = _axis(attrs, x.ndim, "BatchNormInferenceBackwardInput")
    r = dy * _c(gamma, a, dy.ndim) / _c(np.sqrt(var + _eps(attrs)), a, dy.ndim)
    return _round_float(np.broadcast_to(r, np.broadcast_shapes(x.shape, r.shape)), dtype)


def _others(ndim: int, axis: int) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i != axis)


def _op_bn_gamma(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _need_float("BatchNormInferenceBackwardGamma", dtype)
    x, mean, var, dy = (_f(v) for v in args)
    a = _axis(attrs, x.ndim, "BatchNormInferenceBackwardGamma")
    t = dy * (x - _c(mean, a, x.ndim)) / _c(np.sqrt(var + _eps(attrs)), a, x.ndim)
    return _round_float(np.sum(t, axis=_others(t.ndim, a)), dtype)


def _op_bn_beta(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _need_float("BatchNormInferenceBackwardBeta", dtype)
    dy = _f(args[0])
    a = _axis(attrs, dy.ndim, "BatchNormInferenceBackwardBeta")
    return _round_float(np.sum(dy, axis=_others(dy.ndim, a)), dtype)


def _channels(names: Sequence[str], ins: Sequence[Meta], attrs: Mapping[str, Any]) -> tuple[Meta, int]:
    """Batch-norm ops: x (the first input, rank >= 1), dy of the same shape, every other input of
    shape [C] with C the channel axis of x, one float dtype. Gives (x's shape and the dtype, the axis)."""
    x = ins[0][0]
    if not x:
        raise ValueError(f"{names[0]} must have rank >= 1 (channels are on the last axis)")
    axis = attrs.get("axis", -1)
    if not -len(x) <= axis < len(x):
        raise ValueError(f"axis {axis} is out of range for rank {len(x)}")
    a = axis % len(x)
    where = "the last axis" if "axis" not in attrs else f"axis {a}"
    for name, (shape, _) in zip(names[1:], ins[1:]):
        if name == "dy":
            same_shape(x, shape)
        elif shape != (x[a],):
            raise ValueError(f"{name} has shape {show_shape(shape)}, expected [{x[a]}] ({where} of x {show_shape(x)})")
    return (x, float_dtype(ins)), a


def _same_as_x(names: Sequence[str]) -> Callable[[Mapping[str, Any], Sequence[Meta]], Meta]:
    return lambda attrs, ins: _channels(names, ins, attrs)[0]


def _per_channel(names: Sequence[str]) -> Callable[[Mapping[str, Any], Sequence[Meta]], Meta]:
    def infer_op(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        (shape, dt), a = _channels(names, ins, attrs)
        return (shape[a],), dt
    return infer_op


_EPS = Attr("eps", EPS)
_AXIS = Attr("axis", attr_check("axis", is_int, "an integer"), required=False)
_AXES = derived("axes", STRING, all_but_last)
_X_GAMMA_BETA_MEAN_VAR = ("x", "gamma", "beta", "mean", "var")
_X_GAMMA_MEAN_VAR_DY = ("x", "gamma", "mean", "var", "dy")
_X_MEAN_VAR_DY = ("x", "mean", "var", "dy")
_NO_AXIS = (("axis", None),)  # the version-1 constructor: a node without `axis` (no attribute decoded)


def _cshape(axis: Any, shape: tuple[int, ...]) -> str:
    a = axis % len(shape) if shape else 0
    return ints_text([shape[a] if shape else 1] + [1] * (len(shape) - 1 - a))


def _others_text(axis: Any, rank: int) -> str:
    return ints_text(_others(rank, axis % rank if rank else 0))


_AXIS_F = integer("axis")
_CSHAPE = Field("cshape", STRING, _cshape, None, source="axis", shaped=True)
_OTHERS = Field("axes", STRING, _others_text, None, source="axis")


def _ctors(name: str, op: str, fields: tuple[Field, ...], axis_fields: tuple[Field, ...], arity: int,
           spelling: str) -> tuple[Ctor, ...]:
    return (Ctor(name, op, fields, arity, (head(spelling),), implies=_NO_AXIS),
            Ctor(f"{name}Axis", op, axis_fields, arity, (head(f"{spelling}Axis"),)))


FORWARD = OpDef(
    "BatchNormInference", _X_GAMMA_BETA_MEAN_VAR, (_EPS, _AXIS), _same_as_x(_X_GAMMA_BETA_MEAN_VAR),
    _op_bn, _ctors("BN", "BatchNormInference", (number("eps"),), (number("eps"), _AXIS_F, _CSHAPE), 5, "BatchNorm"),
    domain="batchnorm", torch="batch_norm_inference",
          sample=({"eps": 1e-5}, (((4, 3), "f32"),) + (((3,), "f32"),) * 4))

BACKWARD: tuple[OpDef, ...] = (
    OpDef("BatchNormInferenceBackwardInput", _X_GAMMA_MEAN_VAR_DY, (_EPS, _AXIS),
          _same_as_x(_X_GAMMA_MEAN_VAR_DY), _op_bn_input,
          _ctors("BnBwdInput", "BatchNormInferenceBackwardInput", (number("eps"),),
                 (number("eps"), _AXIS_F, _CSHAPE), 5, "BnBackwardInput"),
          domain="batchnorm", torch="batch_norm_backward_input", backward=True,
          sample=({"eps": 1e-5}, (((4, 3), "f32"),) + (((3,), "f32"),) * 3 + (((4, 3), "f32"),))),
    OpDef("BatchNormInferenceBackwardGamma", _X_MEAN_VAR_DY, (_EPS, _AXIS), _per_channel(_X_MEAN_VAR_DY),
          _op_bn_gamma,
          _ctors("BnBwdGamma", "BatchNormInferenceBackwardGamma", (number("eps"), _AXES),
                 (number("eps"), _AXIS_F, _OTHERS, _CSHAPE), 4, "BnBackwardGamma"),
          domain="batchnorm", torch="batch_norm_backward_gamma", backward=True,
          sample=({"eps": 1e-5, "axis": 0}, (((3, 4), "f32"),) + (((3,), "f32"),) * 2 + (((3, 4), "f32"),))),
    OpDef("BatchNormInferenceBackwardBeta", ("dy",), (_AXIS,), _per_channel(("dy",)), _op_bn_beta,
          _ctors("BnBwdBeta", "BatchNormInferenceBackwardBeta", (_AXES,), (_AXIS_F, _OTHERS), 1, "BnBackwardBeta"),
          domain="batchnorm", torch="batch_norm_backward_beta", backward=True,
          sample=({}, (((4, 3), "f32"),))),
)
