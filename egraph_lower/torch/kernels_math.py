"""The Binary ops of format version 3 (opdefs/binary_math.py) as PyTorch functions: the same
formulas as the reference, over torch; f16/bf16 compute in float32 and round once."""

from __future__ import annotations

import torch
from torch import Tensor

from ..opdefs import binary_math as BM
from .kernels_acts import TorchOps, _wide


class TorchMathOps(TorchOps):
    """`TorchOps` with the operations the Binary formulas use."""

    fmod = staticmethod(torch.fmod)
    atan2 = staticmethod(torch.atan2)
    hypot = staticmethod(torch.hypot)
    copysign = staticmethod(torch.copysign)
    fmax = staticmethod(torch.fmax)
    fmin = staticmethod(torch.fmin)
    floor_divide = staticmethod(torch.floor_divide)
    bitwise_and = staticmethod(torch.bitwise_and)
    bitwise_or = staticmethod(torch.bitwise_or)
    bitwise_xor = staticmethod(torch.bitwise_xor)
    zeros_like = staticmethod(torch.zeros_like)
    ones_like = staticmethod(torch.ones_like)


def binary_new(a: Tensor, b: Tensor, op: str) -> Tensor:
    """A version-3 Binary op of two tensors of one dtype."""
    a, b = torch.broadcast_tensors(a, b)
    if a.dtype == torch.bool:
        return BM.BOOL[op](TorchMathOps(a), a, b)
    if not a.is_floating_point():
        return BM.INTEGER[op](TorchMathOps(a), a, b).to(a.dtype)
    wa, wb = _wide(a), _wide(b)
    return BM.FLOAT[op](TorchMathOps(wa), wa, wb).to(a.dtype)
