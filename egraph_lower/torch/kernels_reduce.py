"""Var, ArgReduce, Scan and Reduce{Prod} (format version 3, opdefs/reductions.py) as PyTorch functions.

torch's own kernels have the format's semantics here (checked against the reference in
tests/test_reductions.py): `torch.var` divides by max(n - correction, 0) and computes f16/bf16 in
float32, rounding once; `torch.argmax`/`argmin` give the first extreme, a NaN counting as both;
`torch.cumsum`/`cumprod` in the tensor's own dtype (integers wrap as the reference's int64 values
reduced to the dtype do); Scan and Reduce{Prod} compute f16/bf16 in float32 and round once
(`kernels_half.in_float32`: torch's half cumprod rounds each partial product, its bf16 prod is off too)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import torch
from torch import Tensor

from .kernels_half import in_float32


def _dims(x: Tensor, axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(sorted({a % x.dim() for a in axes})) if x.dim() else ()


def _kept(x: Tensor, dims: tuple[int, ...], keep: bool) -> list[int]:
    if keep:
        return [1 if i in dims else s for i, s in enumerate(x.shape)]
    return [s for i, s in enumerate(x.shape) if i not in dims]


def var(x: Tensor, axes: Sequence[int], correction: float, keep_dim: bool = False) -> Tensor:
    dims = _dims(x, axes)
    if not dims:  # no reduced axis: one element each, (x - x)^2 / max(1 - correction, 0)
        d = x - x
        return d * d / max(1.0 - float(correction), 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "degrees of freedom is <= 0": the format's inf / NaN
        return torch.var(x, dim=dims, correction=correction, keepdim=keep_dim)


def arg_reduce(x: Tensor, op: str, axis: int, keep_dim: bool = False) -> Tensor:
    if x.dim() == 0:
        return torch.zeros((), dtype=torch.int64, device=x.device)
    fn = torch.argmax if op == "Max" else torch.argmin
    return fn(x, dim=axis % x.dim(), keepdim=keep_dim)


@in_float32  # torch's half cumprod rounds each partial product
def scan(x: Tensor, op: str, axis: int) -> Tensor:
    if op in ("Max", "Min"):
        return (torch.cummax if op == "Max" else torch.cummin)(x, dim=axis % x.dim()).values
    fn = torch.cumsum if op == "Add" else torch.cumprod
    return fn(x, dim=axis % x.dim(), dtype=x.dtype)


def arg_scan(x: Tensor, op: str, axis: int) -> Tensor:
    return (torch.cummax if op == "Max" else torch.cummin)(x, dim=axis % x.dim()).indices


def log_cum_sum_exp(x: Tensor, axis: int) -> Tensor:
    """torch.logcumsumexp, f16/bf16 computed in float32 and rounded once."""
    wide = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    return torch.logcumsumexp(wide, dim=axis % x.dim()).to(x.dtype)


@in_float32  # torch's bfloat16 prod is not its float32 result rounded once
def prod(x: Tensor, axes: Sequence[int], keep_dim: bool = False) -> Tensor:
    """Reduce{Prod}: the reduced axes moved last and flattened, one torch.prod (f16/bf16 in float32, rounded
    once, as the reference)."""
    dims = _dims(x, axes)
    if not dims:
        return x
    rest = [i for i in range(x.dim()) if i not in dims]
    flat = x.permute(rest + list(dims)).reshape([x.shape[i] for i in rest] + [math.prod(x.shape[d] for d in dims)])
    return torch.prod(flat, dim=-1).to(x.dtype).reshape(_kept(x, dims, keep_dim))
