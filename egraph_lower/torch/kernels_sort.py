"""Sort, ArgSort, TopK, ArgTopK (format version 3, opdefs/sort.py), KthValue, ArgKthValue, Median, ArgMedian,
Mode and ArgMode (opdefs/order_stats.py) as PyTorch functions.

torch's kernels have the format's order (checked against the reference in tests/test_sort.py): a NaN is
larger than every number, 0.0 and -0.0 tie; `stable` is passed on, so that with stable false the ties
are ordered as aten's own unstable sort orders them (a graph exported for PyTorch gives eager's indices).
Comparisons are exact in every dtype, so f16 and bf16 are sorted as they are (nothing is rounded). Mode is
computed from torch's stable sort, not torch.mode (see `_mode_index`)."""

from __future__ import annotations

import torch
from torch import Tensor


def sort(x: Tensor, axis: int, descending: bool, stable: bool) -> Tensor:
    return torch.sort(x, dim=axis, descending=bool(descending), stable=bool(stable)).values


def arg_sort(x: Tensor, axis: int, descending: bool, stable: bool) -> Tensor:
    return torch.sort(x, dim=axis, descending=bool(descending), stable=bool(stable)).indices


def top_k(x: Tensor, k: int, axis: int, largest: bool, sorted: bool) -> Tensor:
    return torch.topk(x, int(k), dim=axis, largest=bool(largest), sorted=bool(sorted)).values


def arg_top_k(x: Tensor, k: int, axis: int, largest: bool, sorted: bool) -> Tensor:
    return torch.topk(x, int(k), dim=axis, largest=bool(largest), sorted=bool(sorted)).indices


def kth_value(x: Tensor, k: int, axis: int, keep_dim: bool) -> Tensor:
    return torch.kthvalue(x, int(k), dim=axis, keepdim=bool(keep_dim)).values


def arg_kth_value(x: Tensor, k: int, axis: int, keep_dim: bool) -> Tensor:
    return torch.kthvalue(x, int(k), dim=axis, keepdim=bool(keep_dim)).indices


def median(x: Tensor, axis: int, keep_dim: bool, ignore_nan: bool) -> Tensor:
    fn = torch.nanmedian if ignore_nan else torch.median
    return fn(x, dim=axis, keepdim=bool(keep_dim)).values


def arg_median(x: Tensor, axis: int, keep_dim: bool, ignore_nan: bool) -> Tensor:
    fn = torch.nanmedian if ignore_nan else torch.median
    return fn(x, dim=axis, keepdim=bool(keep_dim)).indices


def _mode_index(x: Tensor, axis: int, keep_dim: bool) -> Tensor:
    """The format's ArgMode (not torch.mode, whose result on a row with a NaN depends on where its unstable
    sort leaves the NaN, and whose index is any of the value's): in the stable sort, c_r = r - (the last
    run start <= r) + 1 counts each run; the first r with the largest c_r ends the smallest most frequent
    value's run (NaNs one run), its last occurrence; ArgSort's index there."""
    s, perm = torch.sort(x, dim=axis, stable=True)
    s, perm = s.movedim(axis, -1), perm.movedim(axis, -1)
    same = s[..., 1:] == s[..., :-1]
    if s.is_floating_point():
        same |= torch.isnan(s[..., 1:]) & torch.isnan(s[..., :-1])
    r = torch.arange(s.shape[-1], device=x.device).expand(s.shape)
    starts = torch.ones(s.shape, dtype=torch.bool, device=x.device)
    starts[..., 1:] = ~same
    c = r - torch.cummax(torch.where(starts, r, 0), dim=-1).values + 1
    last = torch.where(c == c.amax(dim=-1, keepdim=True), r, s.shape[-1]).amin(dim=-1, keepdim=True)
    idx = perm.gather(-1, last).movedim(-1, axis)
    return idx if keep_dim else idx.squeeze(axis)


def mode(x: Tensor, axis: int, keep_dim: bool) -> Tensor:
    idx = _mode_index(x, axis, True)
    out = x.gather(axis, idx)
    return out if keep_dim else out.squeeze(axis)


def arg_mode(x: Tensor, axis: int, keep_dim: bool) -> Tensor:
    return _mode_index(x, axis, keep_dim)
