"""The view-scatter and shape ops (opdefs/views.py) as PyTorch functions: aten's own ops, the bounds
clamped as Python's slices clamp them first (the format's `end` may be any int64)."""

from __future__ import annotations

import torch
from torch import Tensor


def slice_scatter(x: Tensor, src: Tensor, axis: int, start: int, end: int, step: int) -> Tensor:
    a = axis % x.dim()
    lo, hi, _ = slice(start, end, step).indices(x.shape[a])
    return torch.slice_scatter(x, src, a, lo, max(lo, hi), step)
