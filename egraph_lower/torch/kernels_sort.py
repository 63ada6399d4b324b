"""Sort, ArgSort, TopK and ArgTopK (format version 3, opdefs/sort.py) as PyTorch functions.

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
