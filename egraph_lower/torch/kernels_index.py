"""The index ops (opdefs/index.py, nll.py, slicing.py) as PyTorch functions: dropout, Iota, Gather,
ScatterAdd, Take, embeddings, the NLL loss, slicing, padding and concatenation.

Torch's own kernels where one has the format's semantics (indices of any integer dtype are taken
as int64); a dropout mask is drawn as eager's CPU `native_dropout` draws it; slice bounds are
clamped as Python's are. The NLL loss, its backward and the embedding backward compute f16/bf16 in
float32 and round once (`in_float32`: torch's half kernels round each weighted term, or each row's
running sum).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from .common import FORMAT_TO_TORCH
from .kernels_half import in_float32


def dropout_mask(like: Tensor | None, shape: Sequence[int], dtype: str, p: float) -> Tensor:
    """A dropout mask drawn as eager's CPU `native_dropout` draws it: `empty_like(x).bernoulli_(1 - p)`."""
    device = like.device if like is not None else None
    return torch.empty(tuple(shape), dtype=FORMAT_TO_TORCH[dtype], device=device).bernoulli_(1.0 - p).to(torch.bool)


def random_tensor(like: Tensor | None, shape: Sequence[int], dtype: str, kind: str, device: str | None) -> Tensor:
    """eager's `torch.rand` (`kind` "uniform") or `torch.randn` ("normal") of `shape` and `dtype` on
    `device` (None: `like`'s), the same call so that the same generator state gives the same numbers."""
    draw = torch.rand if kind == "uniform" else torch.randn
    where = device if device is not None else (like.device if like is not None else None)
    return draw(tuple(shape), dtype=FORMAT_TO_TORCH[dtype], device=where)


def dropout(x: Tensor, mask: Tensor, scale: float) -> Tensor:
    return torch.where(mask, x * scale, torch.zeros((), dtype=x.dtype, device=x.device))


def iota(like: Tensor, axis: int, dtype: str) -> Tensor:
    axis %= max(like.dim(), 1)
    view = [1] * like.dim()
    view[axis] = like.shape[axis]
    idx = torch.arange(like.shape[axis], device=like.device).reshape(view)
    return idx.expand(like.shape).to(FORMAT_TO_TORCH[dtype])


def gather(x: Tensor, index: Tensor, axis: int) -> Tensor:
    return torch.gather(x, axis, index.long())


def scatter_add(x: Tensor, index: Tensor, src: Tensor, axis: int) -> Tensor:
    return torch.scatter_add(x, axis, index.long(), src)


def take(x: Tensor, indices: Tensor, axis: int) -> Tensor:
    axis %= max(x.dim(), 1)
    flat = torch.index_select(x, axis, indices.reshape(-1).long())
    return flat.reshape(x.shape[:axis] + indices.shape + x.shape[axis + 1:])


def embedding(weight: Tensor, indices: Tensor) -> Tensor:
    return torch.nn.functional.embedding(indices.long(), weight)


@in_float32
def embedding_backward(dy: Tensor, indices: Tensor, num_weights: int, padding_idx: int) -> Tensor:
    return torch.ops.aten.embedding_dense_backward(dy, indices.long(), num_weights, padding_idx, False)


def _nll_reduction(reduction: str) -> int:
    return {"none": 0, "mean": 1, "sum": 2}[reduction]


def _nll_forward(logp: Tensor, target: Tensor, weight: Tensor, reduction: str,
                 ignore_index: int) -> tuple[Tensor, Tensor]:
    red = _nll_reduction(reduction)
    if logp.dim() == 2:
        return torch.ops.aten.nll_loss_forward(logp, target, weight, red, ignore_index)
    if logp.dim() == 4:
        return torch.ops.aten.nll_loss2d_forward(logp, target, weight, red, ignore_index)
    loss = torch.nn.functional.nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    return loss, nll_loss_total_weight(target, weight, ignore_index)


@in_float32
def nll_loss(logp: Tensor, target: Tensor, weight: Tensor, reduction: str, ignore_index: int) -> Tensor:
    return _nll_forward(logp, target, weight, reduction, ignore_index)[0]


def nll_loss_total_weight(target: Tensor, weight: Tensor, ignore_index: int) -> Tensor:
    valid = target != ignore_index
    w = weight[torch.where(valid, target, torch.zeros_like(target))]
    return torch.where(valid, w, torch.zeros_like(w)).sum()


@in_float32
def nll_loss_backward(logp: Tensor, dy: Tensor, target: Tensor, weight: Tensor, total_weight: Tensor,
                      reduction: str, ignore_index: int) -> Tensor:
    g = dy / total_weight if reduction == "mean" else dy
    valid = target != ignore_index
    safe = torch.where(valid, target, torch.zeros_like(target))
    scale = torch.where(valid, -weight[safe] * g, torch.zeros((), dtype=logp.dtype, device=logp.device))
    out = torch.zeros_like(logp)
    return out.scatter_(1, safe.unsqueeze(1), scale.unsqueeze(1).to(logp.dtype))


def _along(x: Tensor, axis: int, sel: Any) -> tuple[Any, ...]:
    return (slice(None),) * (axis % x.dim()) + (sel,)


def slice_(x: Tensor, axis: int, start: int, end: int, step: int) -> Tensor:
    n = x.shape[axis]
    return x[_along(x, axis, slice(*slice(start, end, step).indices(n)))]


def pad(x: Tensor, axis: int, before: int, after: int) -> Tensor:
    shape = list(x.shape)
    parts = []
    for width in (before, 0, after):
        if width == 0:
            continue
        shape[axis] = width
        parts.append(torch.zeros(shape, dtype=x.dtype, device=x.device))
    parts.insert(1 if before else 0, x)
    return torch.cat(parts, dim=axis)


def concat(a: Tensor, b: Tensor, axis: int) -> Tensor:
    return torch.cat([a, b], dim=axis)


def slice_backward(dy: Tensor, axis: int, start: int, end: int, step: int, size: int) -> Tensor:
    shape = list(dy.shape)
    shape[axis] = size
    out = torch.zeros(shape, dtype=dy.dtype, device=dy.device)
    out[_along(out, axis, slice(*slice(start, end, step).indices(size)))] = dy
    return out
