"""What a lowered module owes the code that runs after it: the FX graph's layouts and aliasing.

The format is about values; PyTorch's graphs are also about memory. An FX node's
`meta["val"]` promises its result's strides (its memory format: restated from the real
kernel's layout where PyTorch's fake kernel states another, `kernel_strides.py`) and which
storage it lives in, and the PyTorch code after a lowered graph or piece relies on both: kernels
that read their input's memory in the layout they were traced with (group norm's
backward in channels_last), `as_strided` relative to a value's storage, and in-place
updates that must not reach another tensor. So every result of an exported module
goes through `as_layout`: it gets the promised strides (a restride where only size-1
dims differ, a copy where the memory differs, nothing where it already matches), and,
where the graph promised a value of its own that the lowered graph computes as (a view
of) an argument, a constant's buffer or another result, a copy (`aliases`).

Views whose storage is larger than they are (a slice consumed by PyTorch code) cannot
be given their storage by a copy: the backend runs those nodes in PyTorch on their base
(`partition.plan`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def _same_memory(shape: Sequence[int], got: Sequence[int], want: Sequence[int]) -> bool:
    """Whether two stride tuples place every element of `shape` at the same offset."""
    if any(n == 0 for n in shape):
        return True
    return all(n == 1 or a == b for n, a, b in zip(shape, got, want))


def as_layout(t: Tensor, stride: Sequence[int], copy: bool = False) -> Tensor:
    """`t` with strides `stride`: itself when they are its strides, a restrided view of it when only
    size-1 dims differ, else (or when `copy`) a fresh tensor of that layout holding its values."""
    got = t.stride()
    if not copy:
        if got == tuple(stride):
            return t
        if _same_memory(t.shape, got, stride):
            return t.as_strided(t.shape, stride)
    out = torch.empty_strided(t.shape, tuple(stride), dtype=t.dtype, device=t.device)
    dst, src = out, t
    for d, (n, s) in enumerate(zip(t.shape, stride)):
        if s == 0 and n > 1:  # an expanded dim: its elements are one, write it once
            dst, src = dst.narrow(d, 0, 1), src.narrow(d, 0, 1)
    dst.copy_(src)
    return out

