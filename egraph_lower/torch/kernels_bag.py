"""The embedding-bag ops (opdefs/bag.py) as PyTorch functions, written as the NumPy reference is: the bag
of each position from the bag starts (bag(i) = #{starts <= i} - 1), a membership [B, N] of the counted
positions, and the sums, means and maxima over it; f16/bf16 computed in float32 and rounded once
(`in_float32`). The same values as aten's `_embedding_bag` (and its backward ops) where aten takes the
offsets (starting at 0, not decreasing)."""

from __future__ import annotations

import torch
from torch import Tensor

from .kernels_half import in_float32


def _member(indices: Tensor, offsets: Tensor, padding_idx: int, include_last_offset: bool) -> tuple[Tensor, Tensor]:
    """(bag of each position [N], membership [B, N] of the positions that count)."""
    starts = offsets[:offsets.shape[0] - int(bool(include_last_offset))].long()
    pos = torch.arange(indices.shape[0], device=indices.device)
    bag = (starts[:, None] <= pos[None, :]).long().sum(0) - 1
    member = (torch.arange(starts.shape[0], device=indices.device)[:, None] == bag[None, :])
    return bag, member & (indices != padding_idx)[None, :]


@in_float32
def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor, per_sample_weights: Tensor, mode: str,
                  padding_idx: int, include_last_offset: bool) -> Tensor:
    _, m = _member(indices, offsets, padding_idx, include_last_offset)
    rows = weight[indices.long()]
    if mode == "max":
        vals = torch.where(m[:, :, None], rows[None], torch.tensor(float("-inf"), dtype=weight.dtype))
        top = vals.amax(1) if vals.shape[1] else torch.zeros((m.shape[0], weight.shape[1]), dtype=weight.dtype)
        return torch.where(m.any(1)[:, None], top, torch.zeros((), dtype=weight.dtype))
    coef = m.to(weight.dtype) * (per_sample_weights if mode == "sum" else 1.0)
    out = coef @ rows
    if mode == "mean":
        out = out / m.sum(1, keepdim=True).clamp(min=1).to(weight.dtype)
    return out


def embedding_bag_offset2bag(indices: Tensor, offsets: Tensor, include_last_offset: bool) -> Tensor:
    return _member(indices, offsets, -1, include_last_offset)[0]


def embedding_bag_size(indices: Tensor, offsets: Tensor, padding_idx: int, include_last_offset: bool) -> Tensor:
    return _member(indices, offsets, padding_idx, include_last_offset)[1].long().sum(1)


def embedding_bag_max_indices(weight: Tensor, indices: Tensor, offsets: Tensor, padding_idx: int,
                              include_last_offset: bool) -> Tensor:
    _, m = _member(indices, offsets, padding_idx, include_last_offset)
    n = indices.shape[0]
    if n == 0:
        return torch.zeros((m.shape[0], weight.shape[1]), dtype=torch.long)
    vals = torch.where(m[:, :, None], weight[indices.long()][None].double(), torch.tensor(float("-inf"),
                                                                                         dtype=torch.float64))
    hit = m[:, :, None] & (vals == vals.amax(1, keepdim=True))
    pos = torch.arange(n)[None, :, None].expand_as(hit)
    first = torch.where(hit, pos, torch.full_like(pos, n)).amin(1)
    rows = indices.long()[first.clamp(max=n - 1)]
    return torch.where(m.any(1)[:, None], rows, torch.zeros_like(rows))


@in_float32
def embedding_bag_backward(dy: Tensor, indices: Tensor, offsets: Tensor, per_sample_weights: Tensor, mode: str,
                           num_weights: int, padding_idx: int, include_last_offset: bool) -> Tensor:
    _, m = _member(indices, offsets, padding_idx, include_last_offset)
    coef = m.to(dy.dtype)
    if mode == "sum":
        coef = coef * per_sample_weights
    else:
        coef = coef / m.sum(1, keepdim=True).clamp(min=1).to(dy.dtype)
    out = torch.zeros((num_weights, dy.shape[1]), dtype=dy.dtype)
    return out.index_add(0, indices.long(), coef.t() @ dy)


@in_float32
def embedding_bag_max_backward(dy: Tensor, max_indices: Tensor, bag_size: Tensor, num_weights: int) -> Tensor:
    src = torch.where((bag_size > 0)[:, None], dy, torch.zeros((), dtype=dy.dtype))
    return torch.zeros((num_weights, dy.shape[1]), dtype=dy.dtype).scatter_add(0, max_indices.long(), src)


@in_float32
def embedding_bag_psw_backward(dy: Tensor, weight: Tensor, indices: Tensor, offsets: Tensor, padding_idx: int,
                               include_last_offset: bool) -> Tensor:
    _, m = _member(indices, offsets, padding_idx, include_last_offset)
    return ((m.to(dy.dtype).t() @ dy) * weight[indices.long()]).sum(1)
