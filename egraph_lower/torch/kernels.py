"""Each op of the format as a PyTorch function, with the format's semantics.

The exporter emits one FX call per format node, to the function here that the op's
declaration names (`OpDef.torch`); attributes are keyword arguments. The activation
kinds are `opdefs/kinds.py`'s formulas, evaluated over `TorchOps`. The semantics follow the reference
evaluator (`egraph_lower.evaluate`): the spec's conventions where a derivative is not
defined, `f'(nan) = nan` for every kind, integer Div truncating (x / 0 = 0), Cast
truncating and saturating, Reduce over no axes the identity. Values are computed in
the node's dtype (a backend's kernel would), not in float64 as the evaluator does; the
activation kernels of f16/bf16 compute in float32 and round once, as PyTorch's do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from ..opdefs import OPDEFS
from ..opdefs import kinds as K
from ..opdefs import pool_math
from .common import FORMAT_TO_TORCH

class TorchOps:
    """The array namespace of `opdefs/kinds.py` over torch, computing in the dtype of the tensor it
    was made for (Python scalars become 0-d tensors of that dtype)."""

    exp = staticmethod(torch.exp)
    expm1 = staticmethod(torch.expm1)
    log = staticmethod(torch.log)
    log1p = staticmethod(torch.log1p)
    sqrt = staticmethod(torch.sqrt)
    tanh = staticmethod(torch.tanh)
    sin = staticmethod(torch.sin)
    cos = staticmethod(torch.cos)
    tan = staticmethod(torch.tan)
    atan = staticmethod(torch.atan)
    abs = staticmethod(torch.abs)
    floor = staticmethod(torch.floor)
    ceil = staticmethod(torch.ceil)
    rint = staticmethod(torch.round)  # half to even
    isinf = staticmethod(torch.isinf)
    isnan = staticmethod(torch.isnan)
    neg = staticmethod(torch.neg)
    erf = staticmethod(torch.erf)
    erfc = staticmethod(torch.erfc)

    def __init__(self, like: Tensor) -> None:
        self.dtype, self.device = like.dtype, like.device

    def _t(self, v: Any) -> Tensor:
        return v if isinstance(v, Tensor) else torch.tensor(v, dtype=self.dtype, device=self.device)

    @staticmethod
    def is_float(x: Tensor) -> bool:
        return x.is_floating_point()

    @staticmethod
    def sign(x: Tensor) -> Tensor:
        return torch.where(torch.isnan(x), x, torch.sign(x)) if x.is_floating_point() else torch.sign(x)

    def where(self, cond: Tensor, a: Any, b: Any) -> Tensor:
        return torch.where(cond, self._t(a), self._t(b))

    def maximum(self, a: Tensor, b: Any) -> Tensor:
        return torch.maximum(a, self._t(b))

    def minimum(self, a: Tensor, b: Any) -> Tensor:
        return torch.minimum(a, self._t(b))

    @staticmethod
    def clip(x: Tensor, lo: float, hi: float) -> Tensor:
        return torch.clamp(x, lo, hi)

    @staticmethod
    def full_like(x: Tensor, v: float) -> Tensor:
        return torch.full_like(x, v)


def _dtype(name: str) -> torch.dtype:
    return FORMAT_TO_TORCH[name]


# --------------------------------------------------------------------------- one function per op

def constant(value: Tensor, shape: Sequence[int]) -> Tensor:
    return value if tuple(value.shape) == tuple(shape) else value.expand(tuple(shape))


_HALF = (torch.float16, torch.bfloat16)


def _wide(t: Tensor) -> Tensor:
    """f16/bf16 as f32: an activation kernel computes in float32 and rounds once, as PyTorch's do
    (the formulas evaluated in the low dtype round every intermediate)."""
    return t.float() if t.dtype in _HALF else t


def activation(x: Tensor, kind: str, **params: float) -> Tensor:
    w = _wide(x)
    return K.value(TorchOps(w), K.BY_NAME[kind], w, params).to(x.dtype)


def activation_backward(x: Tensor, dy: Tensor, kind: str, wrt: str = "input", **params: float) -> Tensor:
    w = _wide(x)
    g = K.grad(TorchOps(w), K.BY_NAME[kind], w, output=wrt == "output", params=params)
    return (_wide(dy) * g).to(dy.dtype)


def relu_backward(x: Tensor, dy: Tensor) -> Tensor:
    return torch.where(x > 0, dy, torch.zeros((), dtype=dy.dtype, device=dy.device))


def _int_div(a: Tensor, b: Tensor) -> Tensor:
    zero = b == 0
    q = torch.div(a, torch.where(zero, torch.ones_like(b), b), rounding_mode="trunc")
    return torch.where(zero, torch.zeros_like(q), q)


def _int_pow(a: Tensor, b: Tensor) -> Tensor:
    neg = b < 0
    r = torch.pow(a, torch.clamp_min(b, 0))
    odd = torch.remainder(b, 2) == 1
    negval = torch.where(a == 1, torch.ones_like(r),
                         torch.where(a == -1, torch.where(odd, -torch.ones_like(r), torch.ones_like(r)),
                                     torch.zeros_like(r)))
    return torch.where(neg, negval, r)


_BINARY: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div,
    "Max": torch.maximum, "Min": torch.minimum, "Pow": torch.pow,
}
_BOOL_BINARY: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "Max": torch.logical_or, "Min": torch.logical_and, "Mul": torch.logical_and,
}


def binary(a: Tensor, b: Tensor, op: str) -> Tensor:
    if a.dtype == torch.bool:
        return _BOOL_BINARY[op](a, b)
    if not a.is_floating_point():
        if op == "Div":
            return _int_div(a, b)
        if op == "Pow":
            return _int_pow(a, b)
    return _BINARY[op](a, b).to(a.dtype)


_COMPARE: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "Eq": torch.eq, "Ne": torch.ne, "Lt": torch.lt, "Le": torch.le, "Gt": torch.gt, "Ge": torch.ge,
}


def compare(a: Tensor, b: Tensor, op: str) -> Tensor:
    return _COMPARE[op](a, b)


def where(cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
    return torch.where(cond if cond.dtype == torch.bool else cond != 0, a, b)


def cast(x: Tensor, to: str) -> Tensor:
    dtype = _dtype(to)
    if x.dtype == dtype:
        return x
    if to == "bool":
        return x != 0
    if x.is_floating_point() and not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        t = torch.trunc(x.double())
        lo, hi = float(info.min), float(info.max) + 1.0  # exact powers of two
        inside = (t >= lo) & (t < hi)
        r = torch.where(inside, t, torch.zeros_like(t)).to(dtype)
        big = torch.full_like(r, info.max)
        small = torch.full_like(r, info.min)
        return torch.where(t >= hi, big, torch.where(t < lo, small, r))
    return x.to(dtype)


def expand(x: Tensor, shape: Sequence[int]) -> Tensor:
    return x.expand(tuple(shape))


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    return x.reshape(tuple(shape))


def transpose(x: Tensor, perm: Sequence[int]) -> Tensor:
    return x.permute(tuple(perm))


def reduce(x: Tensor, op: str, axes: Sequence[int], keep_dim: bool = False) -> Tensor:
    dims = tuple(sorted({a % x.dim() for a in axes})) if x.dim() else ()
    if not dims:
        return x
    count = math.prod(x.shape[d] for d in dims)
    if x.dtype == torch.bool:
        fn = torch.any if op == "Max" else torch.all
        return fn(x, dim=dims, keepdim=keep_dim)
    if op in ("Max", "Min") and count == 0:
        shape = [1 if i in dims else s for i, s in enumerate(x.shape)] if keep_dim else \
            [s for i, s in enumerate(x.shape) if i not in dims]
        info = torch.finfo(x.dtype) if x.is_floating_point() else torch.iinfo(x.dtype)
        fill = (-math.inf if op == "Max" else math.inf) if x.is_floating_point() else \
            (info.min if op == "Max" else info.max)
        return torch.full(shape, fill, dtype=x.dtype, device=x.device)
    if op == "Max":
        return torch.amax(x, dim=dims, keepdim=keep_dim)
    if op == "Min":
        return torch.amin(x, dim=dims, keepdim=keep_dim)
    s = torch.sum(x, dim=dims, keepdim=keep_dim)
    if op == "Sum":
        return s.to(x.dtype)
    if x.is_floating_point():
        return torch.mean(x, dim=dims, keepdim=keep_dim)
    return _int_div(s, torch.tensor(count, dtype=s.dtype, device=s.device)).to(x.dtype)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    if a.dtype == torch.bool:
        return torch.matmul(a.long(), b.long()) != 0
    return torch.matmul(a, b)


def _bn_c(v: Tensor, x: Tensor, axis: int) -> Tensor:
    """A [C] tensor shaped to broadcast along `axis` of x."""
    return v.reshape(v.shape + (1,) * (x.dim() - 1 - axis % x.dim()))


def batch_norm_inference(x: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, var: Tensor,
                         eps: float, axis: int = -1) -> Tensor:
    return ((x - _bn_c(mean, x, axis)) / _bn_c(torch.sqrt(var + eps), x, axis) * _bn_c(gamma, x, axis)
            + _bn_c(beta, x, axis))


def batch_norm_backward_input(x: Tensor, gamma: Tensor, mean: Tensor, var: Tensor, dy: Tensor,
                              eps: float, axis: int = -1) -> Tensor:
    return (dy * _bn_c(gamma, x, axis) / _bn_c(torch.sqrt(var + eps), x, axis)).expand(x.shape)


def _all_but(t: Tensor, axis: int) -> Tensor:
    dims = tuple(i for i in range(t.dim()) if i != axis % t.dim())
    return torch.sum(t, dim=dims) if dims else t


def batch_norm_backward_gamma(x: Tensor, mean: Tensor, var: Tensor, dy: Tensor, eps: float,
                              axis: int = -1) -> Tensor:
    t = dy * (x - _bn_c(mean, x, axis)) / _bn_c(torch.sqrt(var + eps), x, axis)
    return _all_but(t, axis).to(dy.dtype)


def batch_norm_backward_beta(dy: Tensor, axis: int = -1) -> Tensor:
    return _all_but(dy, axis).to(dy.dtype)


# --- softmax, log-softmax, MSE: torch's own kernels, in the node's dtype (as torch computes them)

def softmax(x: Tensor, axis: int) -> Tensor:
    return torch._softmax(x, axis, False)


def softmax_backward(y: Tensor, dy: Tensor, axis: int) -> Tensor:
    return torch._softmax_backward_data(dy, y, axis, dy.dtype)


def log_softmax(x: Tensor, axis: int) -> Tensor:
    return torch._log_softmax(x, axis, False)


def log_softmax_backward(y: Tensor, dy: Tensor, axis: int) -> Tensor:
    return torch._log_softmax_backward_data(dy, y, axis, dy.dtype)


_REDUCTION = {"none": 0, "mean": 1, "sum": 2}  # torch's Reduction enum


def mse_loss(x: Tensor, target: Tensor, reduction: str) -> Tensor:
    return torch.ops.aten.mse_loss(x, target, _REDUCTION[reduction])


def mse_loss_backward(x: Tensor, target: Tensor, dy: Tensor, reduction: str) -> Tensor:
    return torch.ops.aten.mse_loss_backward(dy, x, target, _REDUCTION[reduction])


def empty(like: Tensor | None, shape: Sequence[int], dtype: str) -> Tensor:
    """A fresh empty tensor (on the device of `like`)."""
    device = like.device if like is not None else None
    return torch.empty(tuple(shape), dtype=_dtype(dtype), device=device)


# ---- dropout, index ops, embeddings, NLL loss (opdefs/index.py, opdefs/nll.py) ----


def dropout_mask(like: Tensor | None, shape: Sequence[int], dtype: str, p: float) -> Tensor:
    """A dropout mask drawn as eager's CPU `native_dropout` draws it: `empty_like(x).bernoulli_(1 - p)`."""
    device = like.device if like is not None else None
    return torch.empty(tuple(shape), dtype=_dtype(dtype), device=device).bernoulli_(1.0 - p).to(torch.bool)


def dropout(x: Tensor, mask: Tensor, scale: float) -> Tensor:
    return torch.where(mask, x * scale, torch.zeros((), dtype=x.dtype, device=x.device))


def iota(like: Tensor, axis: int, dtype: str) -> Tensor:
    axis %= max(like.dim(), 1)
    view = [1] * like.dim()
    view[axis] = like.shape[axis]
    idx = torch.arange(like.shape[axis], device=like.device).reshape(view)
    return idx.expand(like.shape).to(_dtype(dtype))


def gather(x: Tensor, index: Tensor, axis: int) -> Tensor:
    return torch.gather(x, axis, index.long())


def scatter_add(x: Tensor, index: Tensor, src: Tensor, axis: int) -> Tensor:
    return torch.scatter_add(x, axis, index.long(), src)


def take(x: Tensor, indices: Tensor, axis: int) -> Tensor:
    axis %= max(x.dim(), 1)
    flat = torch.index_select(x, axis, indices.reshape(-1).long())
    return flat.reshape(x.shape[:axis] + indices.shape + x.shape[axis + 1:])


def embedding(weight: Tensor, indices: Tensor) -> Tensor:
    return torch.nn.functional.embedding(indices.long(), weight)


def embedding_backward(dy: Tensor, indices: Tensor, num_weights: int, padding_idx: int) -> Tensor:
    return torch.ops.aten.embedding_dense_backward(dy, indices.long(), num_weights, padding_idx, False)


def _nll_reduction(reduction: str) -> int:
    return {"none": 0, "mean": 1, "sum": 2}[reduction]


def _nll_forward(logp: Tensor, target: Tensor, weight: Tensor, reduction: str,
                 ignore_index: int) -> tuple[Tensor, Tensor]:
    red = _nll_reduction(reduction)
    if logp.dim() == 2:
        return torch.ops.aten.nll_loss_forward(logp, target, weight, red, ignore_index)
    if logp.dim() == 4:
        return torch.ops.aten.nll_loss2d_forward(logp, target, weight, red, ignore_index)
    loss = torch.nn.functional.nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    return loss, nll_loss_total_weight(target, weight, ignore_index)


def nll_loss(logp: Tensor, target: Tensor, weight: Tensor, reduction: str, ignore_index: int) -> Tensor:
    return _nll_forward(logp, target, weight, reduction, ignore_index)[0]


def nll_loss_total_weight(target: Tensor, weight: Tensor, ignore_index: int) -> Tensor:
    valid = target != ignore_index
    w = weight[torch.where(valid, target, torch.zeros_like(target))]
    return torch.where(valid, w, torch.zeros_like(w)).sum()


def nll_loss_backward(logp: Tensor, dy: Tensor, target: Tensor, weight: Tensor, total_weight: Tensor,
                      reduction: str, ignore_index: int) -> Tensor:
    g = dy / total_weight if reduction == "mean" else dy
    valid = target != ignore_index
    safe = torch.where(valid, target, torch.zeros_like(target))
    scale = torch.where(valid, -weight[safe] * g, torch.zeros((), dtype=logp.dtype, device=logp.device))
    out = torch.zeros_like(logp)
    return out.scatter_(1, safe.unsqueeze(1), scale.unsqueeze(1).to(logp.dtype))


# ---- normalization (opdefs/norm.py) ---------------------------------------------------------------

def _dims(x: Tensor, axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(a % x.dim() for a in axes)


def _centred(x: Tensor, dims: tuple[int, ...]) -> Tensor:
    d = x - x.mean(dim=dims, keepdim=True)
    return d - d.mean(dim=dims, keepdim=True)


def inv_std(x: Tensor, axes: Sequence[int], eps: float, keep_dim: bool = False) -> Tensor:
    dims = _dims(x, axes)
    d = _centred(x, dims)
    return torch.rsqrt((d * d).mean(dim=dims, keepdim=keep_dim) + eps)


def inv_rms(x: Tensor, axes: Sequence[int], eps: float, keep_dim: bool = False) -> Tensor:
    return torch.rsqrt((x * x).mean(dim=_dims(x, axes), keepdim=keep_dim) + eps)


def _tail(x: Tensor, axis: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    a = axis % x.dim()
    return tuple(range(a, x.dim())), tuple(range(a))


def _sum(t: Tensor, dims: tuple[int, ...]) -> Tensor:
    return t.sum(dim=dims) if dims else t


def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, axis: int, eps: float) -> Tensor:
    dims, _ = _tail(x, axis)
    return _centred(x, dims) * inv_std(x, dims, eps, True) * weight + bias


def layer_norm_backward_input(x: Tensor, weight: Tensor, mean: Tensor, rstd: Tensor, dy: Tensor,
                              axis: int) -> Tensor:
    dims, _ = _tail(x, axis)
    g, xhat = dy * weight, (x - mean) * rstd
    return rstd * (g - g.mean(dim=dims, keepdim=True) - xhat * (g * xhat).mean(dim=dims, keepdim=True))


def layer_norm_backward_weight(x: Tensor, mean: Tensor, rstd: Tensor, dy: Tensor, axis: int) -> Tensor:
    return _sum(dy * ((x - mean) * rstd), _tail(x, axis)[1])


def layer_norm_backward_bias(dy: Tensor, axis: int) -> Tensor:
    return _sum(dy, _tail(dy, axis)[1])


def rms_norm(x: Tensor, weight: Tensor, axis: int, eps: float) -> Tensor:
    return x * inv_rms(x, _tail(x, axis)[0], eps, True) * weight


def rms_norm_backward_input(x: Tensor, weight: Tensor, rstd: Tensor, dy: Tensor, axis: int) -> Tensor:
    dims, _ = _tail(x, axis)
    g, xhat = dy * weight, x * rstd
    return rstd * (g - xhat * (g * xhat).mean(dim=dims, keepdim=True))


def rms_norm_backward_weight(x: Tensor, rstd: Tensor, dy: Tensor, axis: int) -> Tensor:
    return _sum(dy * (x * rstd), _tail(x, axis)[1])


def _channel(x: Tensor, axis: int) -> tuple[int, tuple[int, ...]]:
    a = axis % x.dim()
    return a, tuple(i for i in range(x.dim()) if i != a)


def _per_channel(v: Tensor, a: int, ndim: int) -> Tensor:
    return v.reshape(v.shape + (1,) * (ndim - 1 - a))


def batch_norm_training(x: Tensor, gamma: Tensor, beta: Tensor, axis: int, eps: float) -> Tensor:
    a, dims = _channel(x, axis)
    return (_centred(x, dims) * inv_std(x, dims, eps, True) * _per_channel(gamma, a, x.dim())
            + _per_channel(beta, a, x.dim()))


def _bn_xhat(x: Tensor, mean: Tensor, invstd: Tensor, a: int) -> Tensor:
    return (x - _per_channel(mean, a, x.dim())) * _per_channel(invstd, a, x.dim())


def batch_norm_training_backward_input(x: Tensor, gamma: Tensor, mean: Tensor, invstd: Tensor, dy: Tensor,
                                       axis: int) -> Tensor:
    a, dims = _channel(x, axis)
    xhat = _bn_xhat(x, mean, invstd, a)
    inner = dy - dy.mean(dim=dims, keepdim=True) - xhat * (dy * xhat).mean(dim=dims, keepdim=True)
    return _per_channel(gamma * invstd, a, x.dim()) * inner


def batch_norm_training_backward_gamma(x: Tensor, mean: Tensor, invstd: Tensor, dy: Tensor, axis: int) -> Tensor:
    a, dims = _channel(x, axis)
    return _sum(dy * _bn_xhat(x, mean, invstd, a), dims)


def batch_norm_training_backward_beta(dy: Tensor, axis: int) -> Tensor:
    return _sum(dy, _channel(dy, axis)[1])


# --------------------------------------------------------------------------- slicing (acts)

def _along(x: Tensor, axis: int, sel: Any) -> tuple[Any, ...]:
    return (slice(None),) * (axis % x.dim()) + (sel,)


def slice_(x: Tensor, axis: int, start: int, end: int, step: int) -> Tensor:
    n = x.shape[axis]
    return x[_along(x, axis, slice(*slice(start, end, step).indices(n)))]


def pad(x: Tensor, axis: int, before: int, after: int) -> Tensor:
    shape = list(x.shape)
    parts = []
    for width in (before, 0, after):
        if width == 0:
            continue
        shape[axis] = width
        parts.append(torch.zeros(shape, dtype=x.dtype, device=x.device))
    parts.insert(1 if before else 0, x)
    return torch.cat(parts, dim=axis)


def concat(a: Tensor, b: Tensor, axis: int) -> Tensor:
    return torch.cat([a, b], dim=axis)


def slice_backward(dy: Tensor, axis: int, start: int, end: int, step: int, size: int) -> Tensor:
    shape = list(dy.shape)
    shape[axis] = size
    out = torch.zeros(shape, dtype=dy.dtype, device=dy.device)
    out[_along(out, axis, slice(*slice(start, end, step).indices(size)))] = dy
    return out


# ---- pooling (opdefs/pool.py): torch's own kernels, and the two helpers from pool_math

def max_pool2d(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
               dilation: Sequence[int], ceil_mode: bool = False) -> Tensor:
    return torch.nn.functional.max_pool2d(x, list(kernel), list(stride), list(padding), list(dilation), ceil_mode)


def max_pool2d_indices(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                       dilation: Sequence[int], ceil_mode: bool = False) -> Tensor:
    return torch.ops.aten.max_pool2d_with_indices(x, list(kernel), list(stride), list(padding), list(dilation),
                                                  ceil_mode)[1]


def max_pool2d_backward(dy: Tensor, indices: Tensor, kernel: Sequence[int], stride: Sequence[int],
                        padding: Sequence[int], dilation: Sequence[int], input_shape: Sequence[int],
                        ceil_mode: bool = False) -> Tensor:
    n, c, h, w = input_shape
    dx = torch.zeros((n, c, h * w), dtype=dy.dtype, device=dy.device)
    dx.scatter_add_(2, indices.reshape(n, c, -1), dy.reshape(n, c, -1))
    return dx.reshape(n, c, h, w)


def avg_pool2d(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    return torch.nn.functional.avg_pool2d(x, list(kernel), list(stride), list(padding), ceil_mode, count_include_pad,
                                          divisor_override)


def avg_pool2d_backward(dy: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                        input_shape: Sequence[int], ceil_mode: bool = False, count_include_pad: bool = True,
                        divisor_override: int | None = None) -> Tensor:
    x = torch.empty(tuple(input_shape), dtype=dy.dtype, device=dy.device)
    return torch.ops.aten.avg_pool2d_backward(dy, x, list(kernel), list(stride), list(padding), ceil_mode,
                                              count_include_pad, divisor_override)


def adaptive_avg_pool2d(x: Tensor, output_size: Sequence[int]) -> Tensor:
    return torch.nn.functional.adaptive_avg_pool2d(x, (int(output_size[0]), int(output_size[1])))


def adaptive_avg_pool2d_backward(dy: Tensor, input_shape: Sequence[int]) -> Tensor:
    x = torch.empty(tuple(input_shape), dtype=dy.dtype, device=dy.device)
    return torch.ops.aten._adaptive_avg_pool2d_backward(dy, x)


def max_pool2d_one_hot(indices: Tensor, like: Tensor, part: str, input_shape: Sequence[int]) -> Tensor:
    w = int(input_shape[3])
    key = {"Plane": indices, "Row": indices // w, "Col": indices % w}[part]
    length = pool_math.part_length(part, input_shape)
    grid = torch.arange(length, device=indices.device).reshape((length,) + (1,) * indices.dim())
    return (grid == key.unsqueeze(0)).to(like.dtype)


def pool_weights(dy: Tensor, axis: int, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                 input_shape: Sequence[int], ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> Tensor:
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "ceil_mode": ceil_mode,
             "count_include_pad": count_include_pad, "divisor_override": divisor_override}
    return torch.tensor(pool_math.avg_weights(attrs, input_shape, axis), dtype=dy.dtype, device=dy.device)


def adaptive_pool_weights(dy: Tensor, axis: int, input_shape: Sequence[int]) -> Tensor:
    m = pool_math.adaptive_weights(int(input_shape[2 + axis]), int(dy.shape[2 + axis]))
    return torch.tensor(m, dtype=dy.dtype, device=dy.device)


# ---- convolution (opdefs/conv.py) ----------------------------------------------------------------

def conv2d(x: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
           groups: int) -> Tensor:
    return torch.nn.functional.conv2d(x, w, None, list(stride), list(padding), list(dilation), groups)


def conv2d_backward_input(dy: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int],
                          dilation: Sequence[int], groups: int, input_shape: Sequence[int]) -> Tensor:
    x = torch.empty(tuple(input_shape), dtype=dy.dtype, device=dy.device)
    return torch.ops.aten.convolution_backward(dy, x, w, None, list(stride), list(padding), list(dilation), False,
                                               [0, 0], groups, [True, False, False])[0]


def conv_transpose2d(dy: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int],
                     dilation: Sequence[int], groups: int, output_shape: Sequence[int]) -> Tensor:
    extra = [output_shape[2 + i] - ((dy.shape[2 + i] - 1) * stride[i] - 2 * padding[i]
                                    + dilation[i] * (w.shape[2 + i] - 1) + 1) for i in (0, 1)]
    return torch.nn.functional.conv_transpose2d(dy, w, None, list(stride), list(padding), extra, groups,
                                                list(dilation))


def conv2d_backward_weight(x: Tensor, dy: Tensor, stride: Sequence[int], padding: Sequence[int],
                           dilation: Sequence[int], groups: int, weight_shape: Sequence[int]) -> Tensor:
    w = torch.empty(tuple(weight_shape), dtype=dy.dtype, device=dy.device)
    return torch.ops.aten.convolution_backward(dy, x, w, None, list(stride), list(padding), list(dilation), False,
                                               [0, 0], groups, [False, True, False])[1]


def im2col(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
           dilation: Sequence[int], groups: int) -> Tensor:
    cols = torch.nn.functional.unfold(x, tuple(kernel), tuple(dilation), tuple(padding), tuple(stride))
    return cols.reshape(x.shape[0], groups, cols.shape[1] // groups, cols.shape[2])


def conv2d_flip_weight(w: Tensor, groups: int) -> Tensor:
    o, cg, kh, kw = w.shape
    wg = torch.flip(w.reshape(groups, o // groups, cg, kh, kw), dims=(3, 4))
    return wg.transpose(1, 2).reshape(groups * cg, o // groups, kh, kw)


def conv2d_dilate_pad(dy: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int],
                      dilation: Sequence[int], input_shape: Sequence[int]) -> Tensor:
    size = [input_shape[2 + i] + dilation[i] * (w.shape[2 + i] - 1) for i in (0, 1)]
    out = dy.new_zeros((dy.shape[0], dy.shape[1], size[0], size[1]))
    pos = [dilation[i] * (w.shape[2 + i] - 1) - padding[i]
           + stride[i] * torch.arange(dy.shape[2 + i], device=dy.device) for i in (0, 1)]
    keep = [(q >= 0) & (q < size[i]) for i, q in enumerate(pos)]
    out[:, :, pos[0][keep[0]][:, None], pos[1][keep[1]][None, :]] = dy[:, :, keep[0]][:, :, :, keep[1]]
    return out


def conv2d_columns(x: Tensor, w: Tensor, stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                   groups: int) -> Tensor:
    cols = im2col(x, w.shape[2:], stride, padding, dilation, groups)  # [N, G, R, OH*OW]
    oh = (x.shape[2] + 2 * padding[0] - dilation[0] * (w.shape[2] - 1) - 1) // stride[0] + 1
    return cols.reshape(cols.shape[0], groups, cols.shape[2], oh, -1).transpose(2, 3)


def conv2d_weight_matrix(w: Tensor, groups: int) -> Tensor:
    return w.reshape(groups, 1, w.shape[0] // groups, -1)


def conv2d_merge_groups(t: Tensor) -> Tensor:
    n, g, oh, og, ow = t.shape
    return t.transpose(2, 3).reshape(n, g * og, oh, ow)


# the attention ops' functions (a module of their own: flash attention's kernels and the same math)
from .kernels_attention import (attention, attention_backward_key, attention_backward_query,  # noqa: E402
                                attention_backward_value, attention_lse, safe_softmax)

ATTENTION_KERNELS = (attention, attention_lse, attention_backward_query, attention_backward_key,
                     attention_backward_value, safe_softmax)

# each op's function, as its declaration names it (`OpDef.torch`)
KERNELS: dict[str, Callable[..., Any]] = {d.name: globals()[d.torch] for d in OPDEFS.values() if d.torch}
