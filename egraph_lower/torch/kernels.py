"""Each op of the format as a PyTorch function, with the format's semantics.

The exporter emits one FX call per format node, to the function here named after
the op; attributes are keyword arguments. The semantics follow the reference
evaluator (`egraph_lower.evaluate`): the spec's conventions where a derivative is not
defined, `f'(nan) = nan` for every kind, integer Div truncating (x / 0 = 0), Cast
truncating and saturating, Reduce over no axes the identity. Values are computed in
the node's dtype (a backend's kernel would), not in float64 as the evaluator does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from .common import FORMAT_TO_TORCH

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


def _sigmoid_prod(x: Tensor) -> Tensor:
    """sigmoid(x) * sigmoid(-x) without cancellation."""
    e = torch.exp(-torch.abs(x))
    return e / ((1.0 + e) * (1.0 + e))


def _softplus(x: Tensor) -> Tensor:
    return torch.clamp_min(x, 0.0) + torch.log1p(torch.exp(-torch.abs(x)))


def _sech2(x: Tensor) -> Tensor:
    return 4.0 * _sigmoid_prod(2.0 * x)


def _xmul(x: Tensor, g: Tensor) -> Tensor:
    """x * g, with the limit 0 where x is infinite and g is 0."""
    return torch.where(torch.isinf(x) & (g == 0), torch.zeros_like(g), x * g)


def _gelu_approx_grad(x: Tensor) -> Tensor:
    u = _GELU_C * (x + _GELU_A * (x * x * x))
    s = _sigmoid_prod(2.0 * u)
    du = _GELU_C * (1.0 + 3.0 * _GELU_A * (x * x))
    g = torch.where(s == 0, torch.zeros_like(s), 2.0 * s * du)
    return torch.sigmoid(2.0 * u) + _xmul(x, g)


def _positive(x: Tensor, fn: Callable[[Tensor], Tensor]) -> Tensor:
    pos = x > 0
    return torch.where(pos, fn(torch.where(pos, x, torch.ones_like(x))), torch.zeros_like(x))


def _mish_grad(x: Tensor) -> Tensor:
    sp = _softplus(x)
    return torch.tanh(sp) + _xmul(x, _sech2(sp) * torch.sigmoid(x))


ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "Gelu": F.gelu,
    "GeluApprox": lambda x: F.gelu(x, approximate="tanh"),
    "Silu": F.silu,
    "Relu": torch.relu,
    "Sigmoid": torch.sigmoid,
    "Tanh": torch.tanh,
    "Exp": torch.exp,
    "Log": torch.log,
    "Sqrt": torch.sqrt,
    "Rsqrt": torch.rsqrt,
    "Neg": torch.neg,
    "Abs": torch.abs,
    "Sin": torch.sin,
    "Cos": torch.cos,
    "Tan": torch.tan,
    "Atan": torch.atan,
    "Recip": torch.reciprocal,
    "Round": torch.round,  # half to even, like the format
    "Floor": torch.floor,
    "Ceil": torch.ceil,
    "Sign": lambda x: torch.where(torch.isnan(x), x, torch.sign(x)) if x.is_floating_point() else torch.sign(x),
    "Softplus": _softplus,  # exact: torch's F.softplus is linear above its threshold
    "Elu": F.elu,
    "Erf": torch.erf,
    "HardSwish": F.hardswish,
    "HardSigmoid": F.hardsigmoid,
    "Mish": F.mish,
    "Softsign": F.softsign,
    "LogSigmoid": F.logsigmoid,
}

# f'(x) of each kind, with the spec's conventions where it is not defined
DERIVATIVES: dict[str, Callable[[Tensor], Tensor]] = {
    "Gelu": lambda x: 0.5 * torch.erfc(-x * _SQRT1_2) + _xmul(x, torch.exp(-0.5 * x * x) * _INV_SQRT_2PI),
    "GeluApprox": _gelu_approx_grad,
    "Silu": lambda x: torch.sigmoid(x) + _xmul(x, _sigmoid_prod(x)),
    "Relu": lambda x: (x > 0).to(x.dtype),
    "Sigmoid": _sigmoid_prod,
    "Tanh": _sech2,
    "Exp": torch.exp,
    "Log": torch.reciprocal,
    "Sqrt": lambda x: _positive(x, lambda v: 0.5 / torch.sqrt(v)),
    "Rsqrt": lambda x: _positive(x, lambda v: -0.5 / (v * torch.sqrt(v))),
    "Neg": lambda x: -torch.ones_like(x),
    "Abs": torch.sign,
    "Sin": torch.cos,
    "Cos": lambda x: -torch.sin(x),
    "Tan": lambda x: 1.0 + torch.tan(x) ** 2,
    "Atan": lambda x: 1.0 / (1.0 + x * x),
    "Recip": lambda x: -1.0 / (x * x),
    "Round": torch.ones_like,  # straight-through
    "Floor": torch.zeros_like,
    "Ceil": torch.zeros_like,
    "Sign": torch.zeros_like,
    "Softplus": torch.sigmoid,
    "Elu": lambda x: torch.where(x > 0, torch.ones_like(x), torch.exp(x)),
    "Erf": lambda x: _TWO_OVER_SQRT_PI * torch.exp(-(x * x)),
    "HardSwish": lambda x: torch.where(x <= -3.0, torch.zeros_like(x),
                                       torch.where(x < 3.0, x / 3.0 + 0.5, torch.ones_like(x))),
    "HardSigmoid": lambda x: torch.where((x > -3.0) & (x < 3.0), torch.full_like(x, 1.0 / 6.0),
                                         torch.zeros_like(x)),
    "Mish": _mish_grad,
    "Softsign": lambda x: 1.0 / ((1.0 + torch.abs(x)) * (1.0 + torch.abs(x))),
    "LogSigmoid": lambda x: torch.sigmoid(-x),
}

# the derivative written in y = f(x) (wrt: output)
DERIVATIVES_FROM_OUTPUT: dict[str, Callable[[Tensor], Tensor]] = {
    "Sigmoid": lambda y: y * (1.0 - y),
    "Tanh": lambda y: 1.0 - y * y,
    "Exp": lambda y: y,
    "Relu": lambda y: (y > 0).to(y.dtype),
    "Sqrt": lambda y: _positive(y, lambda v: 1.0 / (2.0 * v)),
    "Rsqrt": lambda y: torch.where(y > 0, -(y * y * y) / 2.0, torch.zeros_like(y)),
    "Recip": lambda y: -(y * y),
    "Elu": lambda y: torch.where(y > 0, torch.ones_like(y), y + 1.0),
}


def _dtype(name: str) -> torch.dtype:
    return FORMAT_TO_TORCH[name]


# --------------------------------------------------------------------------- one function per op

def constant(value: Tensor, shape: Sequence[int]) -> Tensor:
    return value if tuple(value.shape) == tuple(shape) else value.expand(tuple(shape))


def activation(x: Tensor, kind: str) -> Tensor:
    return ACTIVATIONS[kind](x)


def activation_backward(x: Tensor, dy: Tensor, kind: str, wrt: str = "input") -> Tensor:
    g = (DERIVATIVES if wrt == "input" else DERIVATIVES_FROM_OUTPUT)[kind](x)
    if x.is_floating_point():
        g = torch.where(torch.isnan(x), torch.full_like(g, math.nan), g)
    return (dy * g).to(dy.dtype)


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


def batch_norm_inference(x: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, var: Tensor,
                         eps: float) -> Tensor:
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def batch_norm_backward_input(x: Tensor, gamma: Tensor, mean: Tensor, var: Tensor, dy: Tensor,
                              eps: float) -> Tensor:
    return (dy * gamma / torch.sqrt(var + eps)).expand(x.shape)


def _all_but_last(t: Tensor) -> Tensor:
    return torch.sum(t, dim=tuple(range(t.dim() - 1))) if t.dim() > 1 else t


def batch_norm_backward_gamma(x: Tensor, mean: Tensor, var: Tensor, dy: Tensor, eps: float) -> Tensor:
    return _all_but_last(dy * (x - mean) / torch.sqrt(var + eps)).to(dy.dtype)


def batch_norm_backward_beta(dy: Tensor) -> Tensor:
    return _all_but_last(dy).to(dy.dtype)


def empty(like: Tensor | None, shape: Sequence[int], dtype: str) -> Tensor:
    """A fresh empty tensor (on the device of `like`)."""
    device = like.device if like is not None else None
    return torch.empty(tuple(shape), dtype=_dtype(dtype), device=device)


KERNELS: dict[str, Callable[..., Any]] = {
    "Activation": activation,
    "ActivationBackward": activation_backward,
    "ReluBackward": relu_backward,
    "Binary": binary,
    "Compare": compare,
    "Where": where,
    "Cast": cast,
    "Expand": expand,
    "Reshape": reshape,
    "Transpose": transpose,
    "Reduce": reduce,
    "MatMul": matmul,
    "BatchNormInference": batch_norm_inference,
    "BatchNormInferenceBackwardInput": batch_norm_backward_input,
    "BatchNormInferenceBackwardGamma": batch_norm_backward_gamma,
    "BatchNormInferenceBackwardBeta": batch_norm_backward_beta,
}
