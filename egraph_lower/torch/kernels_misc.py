"""The ops of opdefs/index_reduce.py and opdefs/misc_math.py as PyTorch functions: aten's own kernels,
f16/bf16 computed in float32 and rounded once (`in_float32`: torch's half kernels round each reduced
value)."""

from __future__ import annotations

import torch
from torch import Tensor

from .kernels_half import in_float32


def index_reduce(x: Tensor, index: Tensor, src: Tensor, axis: int, reduce: str, include_self: bool) -> Tensor:
    return _index_reduce(x, index.long(), src.to(x.dtype), axis, reduce, bool(include_self))


@in_float32
def _index_reduce(x: Tensor, index: Tensor, src: Tensor, axis: int, reduce: str, include_self: bool) -> Tensor:
    return torch.index_reduce(x, axis % x.dim(), index, src, reduce, include_self=include_self)
