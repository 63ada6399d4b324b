"""Addmv and Addbmm (format version 3, opdefs/blas.py) as PyTorch functions: aten's own addmv and addbmm,
which have the format's semantics (beta == 0 ignores c, NaN and inf included); f16/bf16 computed in
float32 and rounded once (aten's CPU half kernels round the product before scaling it); alpha and beta
passed as integers for an integer dtype."""

from __future__ import annotations

import torch
from torch import Tensor

from .kernels_half import in_float32


def _scalar(v: float, t: Tensor) -> float | int:
    return v if t.is_floating_point() else int(v)


@in_float32
def addmv(c: Tensor, mat: Tensor, vec: Tensor, alpha: float = 1.0, beta: float = 1.0) -> Tensor:
    return torch.addmv(c, mat, vec, beta=_scalar(beta, mat), alpha=_scalar(alpha, mat))


@in_float32
def addbmm(c: Tensor, b1: Tensor, b2: Tensor, alpha: float = 1.0, beta: float = 1.0) -> Tensor:
    return torch.addbmm(c, b1, b2, beta=_scalar(beta, b1), alpha=_scalar(alpha, b1))
