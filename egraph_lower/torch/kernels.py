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


def activation(x: Tensor, kind: str) -> Tensor:
    w = _wide(x)
    return K.value(TorchOps(w), K.BY_NAME[kind], w).to(x.dtype)


def activation_backward(x: Tensor, dy: Tensor, kind: str, wrt: str = "input") -> Tensor:
    w = _wide(x)
    g = K.grad(TorchOps(w), K.BY_NAME[kind], w, output=wrt == "output")
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


def softmax(x: Tensor, axis: int) -> Tensor:
    return torch.softmax(x, dim=axis)


def softmax_backward(y: Tensor, dy: Tensor, axis: int) -> Tensor:
    p = dy * y
    return p - y * torch.sum(p, dim=axis, keepdim=True)


def empty(like: Tensor | None, shape: Sequence[int], dtype: str) -> Tensor:
    """A fresh empty tensor (on the device of `like`)."""
    device = like.device if like is not None else None
    return torch.empty(tuple(shape), dtype=_dtype(dtype), device=device)


# each op's function, as its declaration names it (`OpDef.torch`)
KERNELS: dict[str, Callable[..., Any]] = {d.name: globals()[d.torch] for d in OPDEFS.values() if d.torch}
