"""Group normalization and its backward ops (format version 3).

    GroupNorm{groups, eps}(x, weight, bias)    = xhat * w[c] + b[c]
        x [N, C, *] (rank >= 2), C divisible by `groups`; each of the N * groups groups of
        K = (C / groups) * prod(*) values is normalised by its own mean and biased variance:
        xhat = (x - mean_g) / sqrt(var_g + eps)
    GroupNormBackwardInput{groups}(x, weight, mean, rstd, dy)  = rstd (g - mean_g(g) - xhat mean_g(g xhat))
        g = dy * w[c], xhat = (x - mean) rstd; mean and rstd [N, groups], aten's saved statistics
    GroupNormBackwardWeight{groups}(x, mean, rstd, dy)          = sum over N and * of dy xhat   -> [C]

(The bias gradient, the sum of dy over every axis but the channel axis, is
`BatchNormTrainingBackwardBeta{axis: 1}`: the same meaning, so no op of its own.)

Derivation of the input gradient: within one group y_i = xhat_i w_i + b_i with xhat_i = (x_i - m) r,
m = mean(x), r = (mean((x - m)^2) + eps)^-1/2. dm/dx_j = 1/K, dr/dx_j = -r^3 (x_j - m) / K, so
dxhat_i/dx_j = r (delta_ij - 1/K) - xhat_i xhat_j r / K, and dL/dx_j = sum_i g_i dxhat_i/dx_j =
r (g_j - mean(g) - xhat_j mean(g xhat)) with g_i = dy_i w_i. A group of one element has xhat = 0 and
dx = r (g - g) = 0; a constant group has xhat = 0 and dx = r (g - mean g).

The statistics of a group are the statistics ops of layer norm (`Reduce{Mean}`, `InvStd`) over the
last axis of x reshaped to [N, groups, K], so the saved mean and rstd that aten hands to the backward
are the same e-nodes as the forward's. The e-graph constructors carry derived fields (no attributes)
computed from x's shape: `gshape` [N, groups, K], `gstat` [N, groups, 1], `xshape` x's own shape,
`cshape` [C, 1, ..., 1] (a [C] tensor broadcast along axis 1) and `others` (every axis but 1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..dtypes import FLOAT_DTYPES
from ..errors import LowerError
from .base import I64, STRING, Attr, Ctor, Field, Meta, OpDef, head, ints_text, number
from .meta import EPS, attr_check, float_dtype, is_int, same_shape, show, show_shape
from .norm import centred, inv_std


def _groups_ok(v: Any) -> bool:
    return is_int(v) and v >= 1


def _grouping(shape: Sequence[int], groups: Any, op: str) -> tuple[int, int, int]:
    """(N, C, K) of x: the batch, the channels and the values of one group."""
    if len(shape) < 2:
        raise LowerError(f"{op} needs x of rank >= 2 ([N, C, ...]), got {list(shape)}")
    n, c = int(shape[0]), int(shape[1])
    if not _groups_ok(groups) or c % int(groups):
        raise LowerError(f"{op}: {c} channels do not split into {groups!r} groups")
    return n, c, (c // int(groups)) * math.prod(shape[2:])


def _float(op: str, dtype: str) -> None:
    if dtype not in FLOAT_DTYPES:
        raise LowerError(f"{op} needs a float dtype, not {dtype}")


def _per_channel(v: np.ndarray, ndim: int) -> np.ndarray:
    """A [C] array shaped to broadcast along axis 1 of a rank-`ndim` array."""
    return v.reshape(v.shape + (1,) * (ndim - 2))


def _grouped(x: np.ndarray, groups: int, op: str) -> np.ndarray:
    n, _, k = _grouping(x.shape, groups, op)
    return x.reshape(n, groups, k)


def _xhat(x: np.ndarray, mean: np.ndarray, rstd: np.ndarray, groups: int, op: str) -> np.ndarray:
    """(x - mean) rstd in x's grouped shape [N, groups, K], from the saved [N, groups] statistics."""
    xg = _grouped(x, groups, op)
    return (xg - mean[..., None]) * rstd[..., None]


def _op_group_norm(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _float("GroupNorm", dtype)
    x, w, b = (_f(v) for v in args)
    groups = int(attrs["groups"])
    xg = _grouped(x, groups, "GroupNorm")
    xhat = (centred(xg, (2,)) * inv_std(xg, (2,), float(attrs["eps"]))).reshape(x.shape)
    return _round_float(xhat * _per_channel(w, x.ndim) + _per_channel(b, x.ndim), dtype)


def _op_gn_input(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _float("GroupNormBackwardInput", dtype)
    x, w, mean, rstd, dy = (_f(v) for v in args)
    groups = int(attrs["groups"])
    xhat = _xhat(x, mean, rstd, groups, "GroupNormBackwardInput")
    g = _grouped(dy * _per_channel(w, x.ndim), groups, "GroupNormBackwardInput")
    dx = rstd[..., None] * (g - g.mean(axis=2, keepdims=True) - xhat * (g * xhat).mean(axis=2, keepdims=True))
    return _round_float(dx.reshape(x.shape), dtype)


def _op_gn_weight(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    _float("GroupNormBackwardWeight", dtype)
    x, mean, rstd, dy = (_f(v) for v in args)
    xhat = _xhat(x, mean, rstd, int(attrs["groups"]), "GroupNormBackwardWeight").reshape(x.shape)
    return _round_float(np.sum(dy * xhat, axis=(0,) + tuple(range(2, x.ndim))), dtype)


# ---- shape and dtype inference ---------------------------------------------------------------------


def _expect(name: str, shape: tuple[int, ...], want: tuple[int, ...], why: str) -> None:
    if shape != want:
        raise ValueError(f"{name} has shape {show_shape(shape)}, expected {show_shape(want)} ({why})")


def _infer(names: Sequence[str], out: str) -> Any:
    """x first; dy of x's shape, weight and bias [C], mean and rstd [N, groups]. `out`: "x" or "c"."""
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        x, groups = ins[0][0], attrs["groups"]
        if len(x) < 2:
            raise ValueError(f"x must have rank >= 2 ([N, C, ...]), got {show_shape(x)}")
        if x[1] % groups:
            raise ValueError(f"{x[1]} channels do not split into {show(groups)} groups")
        for name, (shape, _) in zip(names[1:], ins[1:]):
            if name == "dy":
                same_shape(x, shape)
            elif name in ("weight", "bias"):
                _expect(name, shape, (x[1],), f"the channels (axis 1) of x {show_shape(x)}")
            else:
                _expect(name, shape, (x[0], groups), f"[N, groups] of x {show_shape(x)}")
        return (x if out == "x" else (x[1],)), float_dtype(ins)
    return infer


# ---- e-graph fields (from x's shape; none is an attribute) ----------------------------------------


def _shape_field(name: str, fn: Any) -> Field:
    return Field(name, STRING, lambda groups, shape: ints_text(fn(int(groups), tuple(shape))), None,
                 source="groups", shaped=True)


def _k(groups: int, s: tuple[int, ...]) -> int:
    return (s[1] // groups if groups else 0) * math.prod(s[2:])


_GSHAPE = _shape_field("gshape", lambda g, s: [s[0], g, _k(g, s)])
_GSTAT = _shape_field("gstat", lambda g, s: [s[0], g, 1])
_XSHAPE = _shape_field("xshape", lambda g, s: s)
_CSHAPE = _shape_field("cshape", lambda g, s: [s[1]] + [1] * (len(s) - 2))
_OTHERS = _shape_field("others", lambda g, s: [0] + list(range(2, len(s))))
_GROUPS_F = Field("groups", I64, lambda v, rank: int(v), int)

_GROUPS = Attr("groups", attr_check("groups", _groups_ok, "an integer >= 1"))
_EPS = Attr("eps", EPS)
_F = "f32"


def _s(*shapes: tuple[int, ...]) -> tuple[Meta, ...]:
    return tuple((s, _F) for s in shapes)


def _ctor(name: str, op: str, fields: tuple[Field, ...], arity: int) -> tuple[Ctor, ...]:
    return (Ctor(name, op, fields, arity, (head(name),)),)


_IN = ("x", "weight", "mean", "rstd", "dy")
_W = ("x", "mean", "rstd", "dy")

OPS: tuple[OpDef, ...] = (
    OpDef("GroupNorm", ("x", "weight", "bias"), (_GROUPS, _EPS), _infer(("x", "weight", "bias"), "x"),
          _op_group_norm,
          _ctor("GroupNorm", "GroupNorm", (_GROUPS_F, number("eps"), _GSHAPE, _GSTAT, _XSHAPE, _CSHAPE), 3),
          domain="groupnorm", torch="group_norm",
          sample=({"groups": 2, "eps": 1e-5}, _s((2, 4, 3), (4,), (4,)))),
    OpDef("GroupNormBackwardInput", _IN, (_GROUPS,), _infer(_IN, "x"), _op_gn_input,
          _ctor("GnBwdInput", "GroupNormBackwardInput", (_GROUPS_F, _GSHAPE, _GSTAT, _XSHAPE, _CSHAPE), 5),
          domain="groupnorm", torch="group_norm_backward_input", backward=True,
          sample=({"groups": 2}, _s((2, 4, 3), (4,), (2, 2), (2, 2), (2, 4, 3)))),
    OpDef("GroupNormBackwardWeight", _W, (_GROUPS,), _infer(_W, "c"), _op_gn_weight,
          _ctor("GnBwdWeight", "GroupNormBackwardWeight", (_GROUPS_F, _GSHAPE, _GSTAT, _XSHAPE, _OTHERS), 4),
          domain="groupnorm", torch="group_norm_backward_weight", backward=True,
          sample=({"groups": 2}, _s((2, 4, 3), (2, 2), (2, 2), (2, 4, 3)))),
)
