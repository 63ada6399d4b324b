"""The view-scatter and shape ops (opdefs/views.py) as PyTorch functions: aten's own ops, the bounds
clamped as Python's slices clamp them first (the format's `end` may be any int64)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def slice_scatter(x: Tensor, src: Tensor, axis: int, start: int, end: int, step: int) -> Tensor:
    a = axis % x.dim()
    lo, hi, _ = slice(start, end, step).indices(x.shape[a])
    return torch.slice_scatter(x, src, a, lo, max(lo, hi), step)


def diagonal(x: Tensor, offset: int, dim1: int, dim2: int) -> Tensor:
    return torch.diagonal(x, offset, dim1, dim2).clone(memory_format=torch.contiguous_format)


def diagonal_scatter(x: Tensor, src: Tensor, offset: int, dim1: int, dim2: int) -> Tensor:
    return torch.diagonal_scatter(x, src.to(x.dtype), offset, dim1, dim2)


def diagonal_backward(dy: Tensor, shape: Sequence[int], offset: int, dim1: int, dim2: int) -> Tensor:
    return torch.ops.aten.diagonal_backward(dy, [int(s) for s in shape], offset, dim1, dim2)  # type: ignore[no-any-return]


def select_scatter(x: Tensor, src: Tensor, axis: int, index: int) -> Tensor:
    return torch.select_scatter(x, src.to(x.dtype), axis, index)


def repeat(x: Tensor, reps: Sequence[int]) -> Tensor:
    return x.repeat([int(r) for r in reps]) if len(reps) else x.clone(memory_format=torch.contiguous_format)
