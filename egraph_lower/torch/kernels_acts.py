"""The activation ops (opdefs/activation.py, the parametrised kinds included) as PyTorch functions.

The kinds are `opdefs/kinds.py`'s formulas, evaluated over `TorchOps`: the reference evaluator's
conventions where a derivative is not defined, `f'(nan) = nan` for every kind. f16/bf16 compute in
float32 and round once, as PyTorch's activation kernels do.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..opdefs import kinds as K
from .kernels_half import HALF


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
    sinh = staticmethod(torch.sinh)  # (format version 3's kinds: kinds_math.py)
    cosh = staticmethod(torch.cosh)
    asinh = staticmethod(torch.asinh)
    acosh = staticmethod(torch.acosh)
    atanh = staticmethod(torch.atanh)
    exp2 = staticmethod(torch.exp2)
    trunc = staticmethod(torch.trunc)
    log2 = staticmethod(torch.log2)
    log10 = staticmethod(torch.log10)
    asin = staticmethod(torch.asin)
    acos = staticmethod(torch.acos)
    erfinv = staticmethod(torch.erfinv)

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


def _wide(t: Tensor) -> Tensor:
    """f16/bf16 as f32: an activation kernel computes in float32 and rounds once, as PyTorch's do
    (the formulas evaluated in the low dtype round every intermediate)."""
    return t.float() if t.dtype in HALF else t


def activation(x: Tensor, kind: str, **params: float) -> Tensor:
    w = _wide(x)
    return K.value(TorchOps(w), K.BY_NAME[kind], w, params).to(x.dtype)


def activation_backward(x: Tensor, dy: Tensor, kind: str, wrt: str = "input", **params: float) -> Tensor:
    w = _wide(x)
    g = K.grad(TorchOps(w), K.BY_NAME[kind], w, output=wrt == "output", params=params)
    return (_wide(dy) * g).to(dy.dtype)


def relu_backward(x: Tensor, dy: Tensor) -> Tensor:
    return torch.where(x > 0, dy, torch.zeros((), dtype=dy.dtype, device=dy.device))
