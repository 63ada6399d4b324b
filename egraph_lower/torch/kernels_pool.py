"""The pooling ops (opdefs/pool.py) as PyTorch functions: torch's own kernels for max, average and
adaptive average pooling and their backward ops, and the helpers the pooling rules expand into (the
one-hot of max pooling's indices, the window weights of average pooling) from `opdefs/pool_math.py`. The average pooling backward ops compute f16/bf16 in float32 and round
once (`in_float32`: torch's half kernels round each window's share as they add it).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from ..opdefs import pool_math
from .kernels_half import in_float32


def max_pool2d(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
               dilation: Sequence[int], ceil_mode: bool = False) -> Tensor:
    return torch.nn.functional.max_pool2d(x, list(kernel), list(stride), list(padding), list(dilation), ceil_mode)


def max_pool2d_indices(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                       dilation: Sequence[int], ceil_mode: bool = False) -> Tensor:
    return max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode)[1]


def max_pool2d_with_indices(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                            dilation: Sequence[int], ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """MaxPool2d and MaxPool2dIndices of one x in one call (the exporter's, where a graph has both: each
    alone runs this same kernel)."""
    return torch.ops.aten.max_pool2d_with_indices(x, list(kernel), list(stride), list(padding), list(dilation),
                                                  ceil_mode)  # type: ignore[no-any-return]


def max_pool2d_backward(dy: Tensor, indices: Tensor, kernel: Sequence[int], stride: Sequence[int],
                        padding: Sequence[int], dilation: Sequence[int], input_shape: Sequence[int],
                        ceil_mode: bool = False) -> Tensor:
    n, c, h, w = input_shape
    dx = torch.zeros((n, c, h * w), dtype=dy.dtype, device=dy.device)
    cells = indices.shape[2] * indices.shape[3]  # not -1: ambiguous when there are no elements
    dx.scatter_add_(2, indices.reshape(n, c, cells), dy.reshape(n, c, cells))
    return dx.reshape(n, c, h, w)


def avg_pool2d(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    return torch.nn.functional.avg_pool2d(x, list(kernel), list(stride), list(padding), ceil_mode, count_include_pad,
                                          divisor_override)


@in_float32
def avg_pool2d_backward(dy: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                        input_shape: Sequence[int], ceil_mode: bool = False, count_include_pad: bool = True,
                        divisor_override: int | None = None) -> Tensor:
    x = torch.empty(tuple(input_shape), dtype=dy.dtype, device=dy.device)
    return torch.ops.aten.avg_pool2d_backward(dy, x, list(kernel), list(stride), list(padding), ceil_mode,
                                              count_include_pad, divisor_override)


def adaptive_avg_pool2d(x: Tensor, output_size: Sequence[int]) -> Tensor:
    return torch.nn.functional.adaptive_avg_pool2d(x, (int(output_size[0]), int(output_size[1])))


@in_float32
def adaptive_avg_pool2d_backward(dy: Tensor, input_shape: Sequence[int]) -> Tensor:
    x = torch.empty(tuple(input_shape), dtype=dy.dtype, device=dy.device)
    return torch.ops.aten._adaptive_avg_pool2d_backward(dy, x)


def max_pool2d_one_hot(indices: Tensor, like: Tensor, part: str, input_shape: Sequence[int]) -> Tensor:
    w = int(input_shape[3])
    key = {"Plane": indices, "Row": indices // w, "Col": indices % w}[part]
    length = pool_math.part_length(part, input_shape)
    grid = torch.arange(length, device=indices.device).reshape((length,) + (1,) * indices.dim())
    return (grid == key.unsqueeze(0)).to(like.dtype)


def pool_weights(dy: Tensor, axis: int, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                 input_shape: Sequence[int], ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> Tensor:
    attrs = {"kernel": kernel, "stride": stride, "padding": padding, "ceil_mode": ceil_mode,
             "count_include_pad": count_include_pad, "divisor_override": divisor_override}
    return torch.tensor(pool_math.avg_weights(attrs, input_shape, axis), dtype=dy.dtype, device=dy.device)


def adaptive_pool_weights(dy: Tensor, axis: int, input_shape: Sequence[int]) -> Tensor:
    m = pool_math.adaptive_weights(int(input_shape[2 + axis]), int(dy.shape[2 + axis]))
    return torch.tensor(m, dtype=dy.dtype, device=dy.device)
