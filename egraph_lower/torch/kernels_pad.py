"""The mode paddings (opdefs/padding.py) as PyTorch functions: x read at each output position's
source along the axis (`padding.sources`, the one statement of each mode the NumPy reference reads
too), and the gradient as those reads' sum, an `index_add` computed in float32 for f16/bf16 and
rounded once (`in_float32`), as torch's own padding backward kernels accumulate in float."""

from __future__ import annotations

import torch
from torch import Tensor

from ..opdefs.padding import sources
from .kernels_half import in_float32


def _sources(mode: str, n: int, before: int, after: int, device: torch.device) -> Tensor:
    return torch.from_numpy(sources(mode, n, before, after)).to(device)


def mode_pad(x: Tensor, axis: int, mode: str, before: int, after: int) -> Tensor:
    a = axis % x.dim()
    return torch.index_select(x, a, _sources(mode, x.shape[a], before, after, x.device))


@in_float32
def mode_pad_backward(dy: Tensor, axis: int, mode: str, before: int, after: int) -> Tensor:
    a = axis % dy.dim()
    n = dy.shape[a] - before - after
    shape = list(dy.shape)
    shape[a] = n
    out = torch.zeros(shape, dtype=dy.dtype, device=dy.device)
    return out.index_add_(a, _sources(mode, n, before, after, dy.device), dy)
