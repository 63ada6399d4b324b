"""The strided ops and masked scatter (opdefs/strided.py) as PyTorch functions: torch's own as_strided,
as_strided_scatter, masked_scatter and masked_scatter_backward on x read as a contiguous storage of its
own (flat, offset 0), and the index helpers from `opdefs/strided.py`. Each returns a tensor of its own
(never a view of an input: the exporter's aliasing, `VIEWS`)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from ..opdefs.strided import scatter_source_index, strided_positions

_A = torch.ops.aten


def _flat(x: Tensor) -> Tensor:
    """x's elements in row-major order, a fresh contiguous tensor at offset 0 of its own storage."""
    return x.reshape(-1).clone(memory_format=torch.contiguous_format)


def as_strided(x: Tensor, size: Sequence[int], stride: Sequence[int], offset: int) -> Tensor:
    flat = _flat(x)
    view = flat.as_strided([int(s) for s in size], [int(s) for s in stride], int(offset))
    return view.clone(memory_format=torch.contiguous_format)


def as_strided_scatter(x: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int], offset: int) -> Tensor:
    out = _A.as_strided_scatter(_flat(x), src.to(x.dtype), [int(s) for s in size], [int(s) for s in stride],
                                int(offset))
    return out.reshape(x.shape)  # type: ignore[no-any-return]


def masked_scatter(x: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    return torch.masked_scatter(x, mask, source.to(x.dtype))


def masked_scatter_backward(dy: Tensor, mask: Tensor, shape: Sequence[int]) -> Tensor:
    return _A.masked_scatter_backward(dy, mask, [int(s) for s in shape])  # type: ignore[no-any-return]


def strided_index(like: Tensor, size: Sequence[int], stride: Sequence[int], offset: int) -> Tensor:
    return torch.from_numpy(strided_positions(size, stride, offset)).to(like.device)


def strided_scatter_index(like: Tensor, size: Sequence[int], stride: Sequence[int], offset: int,
                          length: int) -> Tensor:
    return torch.from_numpy(scatter_source_index(size, stride, offset, length)).to(like.device)
