"""Trilinear (opdefs/trilinear.py) as a PyTorch function, written as the reference is (each input reshaped
with its axes inserted, the broadcast product summed: aten's own `_trilinear` differs where inputs broadcast),
f16/bf16 computed in float32 and rounded once (`in_float32`)."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from ..opdefs.trilinear import _positions, _shapes
from .kernels_half import in_float32


@in_float32
def trilinear(a: Tensor, b: Tensor, c: Tensor, expand1: Sequence[int], expand2: Sequence[int],
              expand3: Sequence[int], sumdim: Sequence[int]) -> Tensor:
    attrs = {"expand1": expand1, "expand2": expand2, "expand3": expand3}
    x, y, z = (t.reshape(s) for t, s in zip((a, b, c), _shapes(attrs, [tuple(t.shape) for t in (a, b, c)])))
    product = x * y * z
    axes = list(_positions(sumdim, product.dim(), "sumdim"))
    return product.sum(dim=axes) if axes else product  # torch's sum over dim=[] sums every axis
