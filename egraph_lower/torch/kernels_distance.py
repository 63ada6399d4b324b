"""VectorNorm (format version 3, opdefs/distance.py) as a PyTorch function.

`torch.linalg.vector_norm` has the format's semantics (checked against the reference in
tests/test_distance.py): ord 0 counts the nonzero elements (a NaN among them), a negative ord gives 0
where x holds a zero, NaN propagates; f16/bf16 are computed in float32 and rounded once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from .kernels_half import in_float32


@in_float32
def vector_norm(x: Tensor, ord: Any, axes: Sequence[int], keep_dim: bool = False) -> Tensor:
    p = float(ord)
    dims = tuple(sorted({a % x.dim() for a in axes})) if x.dim() else ()
    if not dims:  # no reduced axis: the norm of each element alone
        return torch.linalg.vector_norm(x.unsqueeze(-1), p, dim=-1)
    return torch.linalg.vector_norm(x, p, dim=dims, keepdim=keep_dim)


@in_float32
def dist(a: Tensor, b: Tensor, ord: Any) -> Tensor:
    """aten's dist: the ord-norm of a - b (broadcast) over every element."""
    return torch.dist(a, b, float(ord))


@in_float32
def cdist(x1: Tensor, x2: Tensor, ord: Any) -> Tensor:
    """aten's cdist in its direct form (never the matrix-product form of p = 2 past 25 rows)."""
    return torch.cdist(x1, x2, float(ord), compute_mode="donot_use_mm_for_euclid_dist")


@in_float32
def cdist_backward(dy: Tensor, x1: Tensor, x2: Tensor, dist: Tensor, ord: Any) -> Tensor:
    """aten's _cdist_backward: the gradient of x1, the broadcast batch's shape."""
    return torch.ops.aten._cdist_backward(dy.contiguous(), x1, x2, float(ord), dist)


@in_float32
def pdist(x: Tensor, ord: Any) -> Tensor:
    """aten's _pdist_forward: cdist(x, x)'s strict upper triangle, row-major."""
    return torch.ops.aten._pdist_forward(x.contiguous(), float(ord))


@in_float32
def pdist_backward(dy: Tensor, x: Tensor, pdist: Tensor, ord: Any) -> Tensor:
    """aten's _pdist_backward: the gradient of x."""
    return torch.ops.aten._pdist_backward(dy.contiguous(), x.contiguous(), float(ord), pdist.contiguous())
