"""Trilinear (opdefs/trilinear.py) as a PyTorch function, written as the reference is (each input reshaped
with its axes inserted, the broadcast product summed: aten's own `_trilinear` differs where inputs broadcast),
f16/bf16 computed in float32 and rounded once (`in_float32`)."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from .kernels_half import in_float32


def _expanded(shape: tuple[int, ...], expand: Sequence[int], rank: int) -> tuple[int, ...]:
    axes = {d % rank for d in expand}
    rest = iter(shape)
    return tuple(1 if d in axes else next(rest) for d in range(rank))


@in_float32
def trilinear(a: Tensor, b: Tensor, c: Tensor, expand1: Sequence[int], expand2: Sequence[int],
              expand3: Sequence[int], sumdim: Sequence[int]) -> Tensor:
    rank = a.dim() + len(expand1)
    x, y, z = (t.reshape(_expanded(tuple(t.shape), e, rank)) for t, e in ((a, expand1), (b, expand2), (c, expand3)))
    axes = sorted({d % rank for d in sumdim})
    product = x * y * z
    return product.sum(dim=axes) if axes else product  # torch's sum over dim=[] sums every axis
