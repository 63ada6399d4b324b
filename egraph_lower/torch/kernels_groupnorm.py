"""The group-norm ops (opdefs/groupnorm.py) as PyTorch functions; f16/bf16 computed in float32 and
rounded once, as kernels_norm's (`in_float32`).

Each works on x reshaped to [N, groups, K] (a group is the last axis), with the corrected two-pass
centring of kernels_norm (`_centred`). `reshape`, not `view`: x may be channels_last, which has no
view of that shape.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .kernels_half import in_float32
from .kernels_norm import _centred


def _c(v: Tensor, ndim: int) -> Tensor:
    return v.reshape(v.shape + (1,) * (ndim - 2))


def _grouped(x: Tensor, groups: int) -> Tensor:
    return x.reshape(x.shape[0], groups, -1)


@in_float32
def group_norm(x: Tensor, weight: Tensor, bias: Tensor, groups: int, eps: float) -> Tensor:
    xg = _grouped(x, groups)
    d = _centred(xg, (2,))
    xhat = (d * torch.rsqrt((d * d).mean(dim=2, keepdim=True) + eps)).reshape(x.shape)
    return xhat * _c(weight, x.dim()) + _c(bias, x.dim())


def _xhat(x: Tensor, mean: Tensor, rstd: Tensor, groups: int) -> Tensor:
    return (_grouped(x, groups) - mean[..., None]) * rstd[..., None]


@in_float32
def group_norm_backward_input(x: Tensor, weight: Tensor, mean: Tensor, rstd: Tensor, dy: Tensor,
                              groups: int) -> Tensor:
    xhat = _xhat(x, mean, rstd, groups)
    g = _grouped(dy * _c(weight, x.dim()), groups)
    dx = rstd[..., None] * (g - g.mean(dim=2, keepdim=True) - xhat * (g * xhat).mean(dim=2, keepdim=True))
    return dx.reshape(x.shape)


@in_float32
def group_norm_backward_weight(x: Tensor, mean: Tensor, rstd: Tensor, dy: Tensor, groups: int) -> Tensor:
    t = dy * _xhat(x, mean, rstd, groups).reshape(x.shape)
    return t.sum(dim=(0,) + tuple(range(2, x.dim())))
