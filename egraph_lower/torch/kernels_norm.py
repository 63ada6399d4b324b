"""The normalization ops (opdefs/batchnorm.py, opdefs/norm.py) as PyTorch functions: batch norm in
inference and training, layer norm, RMS norm, their statistics and backward ops.

Written out in torch ops; for float16 and bfloat16 tensors computed in float32 and rounded once to
their dtype (`kernels_half.in_float32`: a backend's fused norm kernel accumulates in float32, as PyTorch's do; in
the tensors' dtype a bf16 batch norm rounded five times). The variance is taken of x less its mean, less the
mean of that again (`_centred`: the second pass removes most of the first mean's rounding error,
which matters where a large offset sits on a small spread).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from .kernels_half import in_float32


def _bn_c(v: Tensor, x: Tensor, axis: int) -> Tensor:
    """A [C] tensor shaped to broadcast along `axis` of x."""
    return v.reshape(v.shape + (1,) * (x.dim() - 1 - axis % x.dim()))


@in_float32
def batch_norm_inference(x: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, var: Tensor,
                         eps: float, axis: int = -1) -> Tensor:
    return ((x - _bn_c(mean, x, axis)) / _bn_c(torch.sqrt(var + eps), x, axis) * _bn_c(gamma, x, axis)
            + _bn_c(beta, x, axis))


@in_float32
def batch_norm_backward_input(x: Tensor, gamma: Tensor, mean: Tensor, var: Tensor, dy: Tensor,
                              eps: float, axis: int = -1) -> Tensor:
    return (dy * _bn_c(gamma, x, axis) / _bn_c(torch.sqrt(var + eps), x, axis)).expand(x.shape)


def _all_but(t: Tensor, axis: int) -> Tensor:
    dims = tuple(i for i in range(t.dim()) if i != axis % t.dim())
    return torch.sum(t, dim=dims) if dims else t


@in_float32
def batch_norm_backward_gamma(x: Tensor, mean: Tensor, var: Tensor, dy: Tensor, eps: float,
                              axis: int = -1) -> Tensor:
    t = dy * (x - _bn_c(mean, x, axis)) / _bn_c(torch.sqrt(var + eps), x, axis)
    return _all_but(t, axis).to(dy.dtype)


@in_float32
def batch_norm_backward_beta(dy: Tensor, axis: int = -1) -> Tensor:
    return _all_but(dy, axis).to(dy.dtype)


def _dims(x: Tensor, axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(a % x.dim() for a in axes)


def _centred(x: Tensor, dims: tuple[int, ...]) -> Tensor:
    d = x - x.mean(dim=dims, keepdim=True)
    return d - d.mean(dim=dims, keepdim=True)


@in_float32
def inv_std(x: Tensor, axes: Sequence[int], eps: float, keep_dim: bool = False) -> Tensor:
    dims = _dims(x, axes)
    d = _centred(x, dims)
    return torch.rsqrt((d * d).mean(dim=dims, keepdim=keep_dim) + eps)


@in_float32
def inv_rms(x: Tensor, axes: Sequence[int], eps: float, keep_dim: bool = False) -> Tensor:
    return torch.rsqrt((x * x).mean(dim=_dims(x, axes), keepdim=keep_dim) + eps)


def _tail(x: Tensor, axis: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    a = axis % x.dim()
    return tuple(range(a, x.dim())), tuple(range(a))


def _sum(t: Tensor, dims: tuple[int, ...]) -> Tensor:
    return t.sum(dim=dims) if dims else t


@in_float32
def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, axis: int, eps: float) -> Tensor:
    dims, _ = _tail(x, axis)
    return _centred(x, dims) * inv_std(x, dims, eps, True) * weight + bias


@in_float32
def layer_norm_backward_input(x: Tensor, weight: Tensor, mean: Tensor, rstd: Tensor, dy: Tensor,
                              axis: int) -> Tensor:
    dims, _ = _tail(x, axis)
    g, xhat = dy * weight, (x - mean) * rstd
    return rstd * (g - g.mean(dim=dims, keepdim=True) - xhat * (g * xhat).mean(dim=dims, keepdim=True))


@in_float32
def layer_norm_backward_weight(x: Tensor, mean: Tensor, rstd: Tensor, dy: Tensor, axis: int) -> Tensor:
    return _sum(dy * ((x - mean) * rstd), _tail(x, axis)[1])


@in_float32
def layer_norm_backward_bias(dy: Tensor, axis: int) -> Tensor:
    return _sum(dy, _tail(dy, axis)[1])


@in_float32
def rms_norm(x: Tensor, weight: Tensor, axis: int, eps: float) -> Tensor:
    return x * inv_rms(x, _tail(x, axis)[0], eps, True) * weight


@in_float32
def rms_norm_backward_input(x: Tensor, weight: Tensor, rstd: Tensor, dy: Tensor, axis: int) -> Tensor:
    dims, _ = _tail(x, axis)
    g, xhat = dy * weight, x * rstd
    return rstd * (g - xhat * (g * xhat).mean(dim=dims, keepdim=True))


@in_float32
def rms_norm_backward_weight(x: Tensor, rstd: Tensor, dy: Tensor, axis: int) -> Tensor:
    return _sum(dy * (x * rstd), _tail(x, axis)[1])


def _channel(x: Tensor, axis: int) -> tuple[int, tuple[int, ...]]:
    a = axis % x.dim()
    return a, tuple(i for i in range(x.dim()) if i != a)


def _per_channel(v: Tensor, a: int, ndim: int) -> Tensor:
    return v.reshape(v.shape + (1,) * (ndim - 1 - a))


@in_float32
def batch_norm_training(x: Tensor, gamma: Tensor, beta: Tensor, axis: int, eps: float) -> Tensor:
    a, dims = _channel(x, axis)
    return (_centred(x, dims) * inv_std(x, dims, eps, True) * _per_channel(gamma, a, x.dim())
            + _per_channel(beta, a, x.dim()))


def _bn_xhat(x: Tensor, mean: Tensor, invstd: Tensor, a: int) -> Tensor:
    return (x - _per_channel(mean, a, x.dim())) * _per_channel(invstd, a, x.dim())


@in_float32
def batch_norm_training_backward_input(x: Tensor, gamma: Tensor, mean: Tensor, invstd: Tensor, dy: Tensor,
                                       axis: int) -> Tensor:
    a, dims = _channel(x, axis)
    xhat = _bn_xhat(x, mean, invstd, a)
    inner = dy - dy.mean(dim=dims, keepdim=True) - xhat * (dy * xhat).mean(dim=dims, keepdim=True)
    return _per_channel(gamma * invstd, a, x.dim()) * inner


@in_float32
def batch_norm_training_backward_gamma(x: Tensor, mean: Tensor, invstd: Tensor, dy: Tensor, axis: int) -> Tensor:
    a, dims = _channel(x, axis)
    return _sum(dy * _bn_xhat(x, mean, invstd, a), dims)


@in_float32
def batch_norm_training_backward_beta(dy: Tensor, axis: int) -> Tensor:
    return _sum(dy, _channel(dy, axis)[1])
