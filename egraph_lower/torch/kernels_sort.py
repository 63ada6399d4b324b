"""Sort, ArgSort, TopK, ArgTopK (format version 3, opdefs/sort.py), KthValue, ArgKthValue, Median, ArgMedian,
Mode and ArgMode (opdefs/order_stats.py) as PyTorch functions.

torch's kernels have the format's order (checked against the reference in tests/test_sort.py): a NaN is
larger than every number, 0.0 and -0.0 tie; `stable` is passed on, so that with stable false the ties
are ordered as aten's own unstable sort orders them (a graph exported for PyTorch gives eager's indices).
Comparisons are exact in every dtype, so f16 and bf16 are sorted as they are (nothing is rounded)."""

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


def mode(x: Tensor, axis: int, keep_dim: bool) -> Tensor:
    return torch.mode(x, dim=axis, keepdim=bool(keep_dim)).values


def arg_mode(x: Tensor, axis: int, keep_dim: bool) -> Tensor:
    return torch.mode(x, dim=axis, keepdim=bool(keep_dim)).indices
